#include "plan_tab.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <utility>
#include <vector>

#include "config/config_fields.h"
#include "config/url_fragment.h"

namespace {

using Clock = std::chrono::steady_clock;

// Points per step() call between clock readings: one (a kimi-k3 estimate costs ~0.1-0.3 ms in
// wasm; reading the clock costs far less), so a slice ends within one estimate of its budget.
constexpr std::int64_t points_per_step = 1;
// Activation tensors of a confirmation's allocator replay per call: a kimi-k3 stage replays about
// 0.4 us per tensor natively through fragmented free lists, so a call stays near a millisecond
// or two in wasm, and a slice ends within one call of its budget.
constexpr std::int64_t confirmation_allocations_per_call = 4096;

bool parse_list(std::string_view text, std::vector<std::int64_t>& out, const char* name,
                std::string& error) {
  out.clear();
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc{} || end != item.data() + item.size() || value < 1 ||
        value > (std::int64_t{1} << 32)) {
      error = std::string(name) + ": '" + std::string(item.substr(0, 16)) +
              "' is not a positive integer (comma-separated list)";
      return false;
    }
    out.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return true;
}

// A comma list of names as the field table reads `key` (its aliases too); `read` takes the
// value from the scratch configuration. A repeated value is kept once (as `stagemem plan` does).
// `label` names the input in the error.
template <typename T, typename Read>
bool parse_names(std::string_view text, std::string_view key, Read read, std::vector<T>& out,
                 const char* label, std::string& error) {
  out.clear();
  const stagemem::ConfigField& field = *stagemem::find_field_by_key(key);
  while (!text.empty()) {
    const auto comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    stagemem::Config scratch;
    stagemem::Diagnostics d;
    if (!stagemem::parse_field_text(field, item, scratch, d, label)) {
      error = d.errors.front().field + ": " + d.errors.front().message;
      return false;
    }
    const T value = read(scratch);
    if (std::find(out.begin(), out.end(), value) == out.end()) out.push_back(value);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return true;
}

// The recipes as the field table reads fp8_recipe (Megatron's tensorwise and blockwise too).
bool parse_recipes(std::string_view text, std::vector<stagemem::Fp8Recipe>& out,
                   std::string& error) {
  return parse_names(
      text, "fp8_recipe", [](const stagemem::Config& c) { return c.training.low_precision.recipe; },
      out, "fp8 recipes", error);
}

// The strategies as the field table reads sharding (ddp, zero1..zero3, full_shard too).
bool parse_sharding(std::string_view text, std::vector<stagemem::ShardingStrategy>& out,
                    std::string& error) {
  return parse_names(
      text, "sharding", [](const stagemem::Config& c) { return c.training.sharding.strategy; }, out,
      "sharding", error);
}

// A list of names as a link carries it: lowercase names, underscores and commas only.
bool names_link_safe(std::string_view text) {
  return text.size() <= 96 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ',';
         });
}

bool parse_one(std::string_view text, std::int64_t& out, std::int64_t fallback, const char* name,
               std::string& error) {
  std::vector<std::int64_t> values;
  if (!parse_list(text, values, name, error)) return false;
  if (values.size() > 1) {
    error = std::string(name) + ": one integer";
    return false;
  }
  out = values.empty() ? fallback : values.front();
  return true;
}

struct LinkKey {
  std::string_view key;
  std::string PlanInputs::*text;
};
constexpr std::array<LinkKey, 8> link_keys = {{
    {"plan_gpn", &PlanInputs::gpus_per_node},
    {"plan_min", &PlanInputs::min_gpus},
    {"plan_max", &PlanInputs::max_gpus},
    {"plan_tp", &PlanInputs::tp},
    {"plan_pp", &PlanInputs::pp},
    {"plan_vpp", &PlanInputs::vpp},
    {"plan_ep", &PlanInputs::ep},
    {"plan_mbs", &PlanInputs::mbs},
}};

// The link's text of a list: digits and commas only (nothing to escape).
bool link_safe(std::string_view text) {
  return text.size() <= 200 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || c == ',';
         });
}

}  // namespace

bool plan_bounds_from_inputs(const PlanInputs& in, stagemem::PlanBounds& b, std::string& e) {
  b = {};
  e.clear();
  const bool ok = parse_one(in.gpus_per_node, b.gpus_per_node, 8, "GPUs per node", e) &&
                  parse_one(in.min_gpus, b.min_gpus, 1, "min GPUs", e) &&
                  parse_one(in.max_gpus, b.max_gpus, 0, "max GPUs", e) &&
                  parse_list(in.tp, b.tp, "TP", e) && parse_list(in.pp, b.pp, "PP", e) &&
                  parse_list(in.vpp, b.vpp, "VPP", e) && parse_list(in.ep, b.ep, "EP", e) &&
                  parse_list(in.mbs, b.mbs, "mbs", e) && parse_recipes(in.recipes, b.recipe, e) &&
                  parse_sharding(in.sharding, b.sharding, e);
  if (!ok) return false;
  using stagemem::RecomputePolicy;
  const std::array<RecomputePolicy, 3> policies = {
      RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
  for (std::size_t i = 0; i < policies.size(); ++i) {
    if (in.recompute[i]) b.recompute.push_back(policies[i]);
  }
  if (b.recompute.empty()) {
    e = "recompute: choose at least one policy";
    return false;
  }
  stagemem::Diagnostics d;
  const auto margin = stagemem::parse_plan_margin(in.margin, "margin", d);
  if (!margin) {
    e = d.errors.front().field + ": " + d.errors.front().message;
    return false;
  }
  b.margin = *margin;
  b.top = 2;
  return true;
}

void set_plan_inputs(PlanTab& tab, PlanInputs inputs) {
  tab.inputs = std::move(inputs);
  stagemem::PlanBounds ignored;
  plan_bounds_from_inputs(tab.inputs, ignored, tab.input_error);
}

void stop_plan_search(PlanTab& tab) {
  tab.confirmation.reset();
  tab.search.reset();
}

void start_plan_search(PlanTab& tab, const stagemem::Config& config) {
  stop_plan_search(tab);
  stagemem::PlanBounds bounds;
  if (!plan_bounds_from_inputs(tab.inputs, bounds, tab.input_error)) return;
  stagemem::Diagnostics d;
  auto model = stagemem::resolve_model(config, d);
  if (!model) {
    tab.input_error = d.errors.empty() ? "the model does not resolve"
                                       : d.errors[0].field + ": " + d.errors[0].message;
    return;
  }
  tab.model = std::make_unique<stagemem::Model>(std::move(*model));
  tab.bounds = bounds;
  tab.searched_config = config;
  tab.search = std::make_unique<stagemem::PlanSearch>(config, *tab.model, bounds);
  if (!tab.search->diagnostics().ok()) {
    const auto& first = tab.search->diagnostics().errors[0];
    tab.input_error = first.field + ": " + first.message;
    tab.search.reset();
    return;
  }
  tab.elapsed_ms = 0.0;
  tab.longest_slice_ms = 0.0;
  tab.slices = 0;
}

bool advance_plan_search(PlanTab& tab) {
  if (!tab.search) return false;
  const auto start = Clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  };
  bool more = true;
  if (!tab.confirmation) {
    while (more && elapsed() < tab.slice_budget_ms) more = tab.search->step(points_per_step);
    if (!more) {
      tab.confirmation = std::make_unique<stagemem::PlanConfirmation>(
          tab.search->entries(), tab.bounds.top, tab.searched_config, *tab.model);
      more = true;
    }
  }
  // A piece of a full estimate per call: its terms, or part of its allocator replay.
  while (tab.confirmation && more && elapsed() < tab.slice_budget_ms) {
    more = tab.confirmation->advance(confirmation_allocations_per_call);
  }
  const double slice = elapsed();
  tab.elapsed_ms += slice;
  tab.longest_slice_ms = std::max(tab.longest_slice_ms, slice);
  ++tab.slices;
  if (more) return true;
  stagemem::PlanResult result = tab.confirmation->result();
  result.device_bytes = tab.search->device_bytes();
  result.margin_bytes = tab.search->margin_bytes();
  result.configurations_searched = tab.search->searched();
  result.configurations_estimated = tab.search->estimated();
  result.configurations_pruned = tab.search->pruned();
  tab.result = std::move(result);
  tab.result_config = tab.searched_config;
  tab.result_bounds = tab.bounds;
  tab.applied_row = -1;
  tab.has_result = true;
  stop_plan_search(tab);
  return false;
}

double plan_progress(const PlanTab& tab) {
  return tab.search ? tab.search->progress() : 1.0;
}

std::int64_t plan_current_row(const PlanTab& tab, const stagemem::Config& config) {
  if (!tab.has_result || tab.applied_row < 0 ||
      tab.applied_row >= static_cast<std::int64_t>(tab.result.frontier.size()))
    return -1;
  const auto& row = tab.result.frontier[static_cast<std::size_t>(tab.applied_row)];
  return stagemem::candidate_config(tab.result_config, row.candidate) == config ? tab.applied_row
                                                                                : -1;
}

std::pair<std::int64_t, std::int64_t> plan_axis_gpus(const PlanTab& tab) {
  std::int64_t low = 0, high = 0;
  for (const auto& e : tab.result.frontier) {
    low = low == 0 ? e.gpus : std::min(low, e.gpus);
    high = std::max(high, e.gpus);
  }
  // The searched range where the bounds set it (min 1 is no bound: the frontier's start).
  if (tab.result_bounds.min_gpus > 1) low = tab.result_bounds.min_gpus;
  if (tab.result_bounds.max_gpus > 0) high = tab.result_bounds.max_gpus;
  if (low < 1) low = 1;
  if (high < low) high = low;
  return {low, high};
}

std::string plan_link_keys(const PlanInputs& inputs) {
  const PlanInputs defaults;
  std::string out;
  for (const LinkKey& k : link_keys) {
    const std::string& value = inputs.*k.text;
    if (value != defaults.*k.text && link_safe(value)) {
      out += "&" + std::string(k.key) + "=" + value;
    }
  }
  if (inputs.recompute != defaults.recompute) {
    std::string value;
    const std::array<const char*, 3> names = {"none", "selective", "full"};
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (inputs.recompute[i]) value += std::string(value.empty() ? "" : ",") + names[i];
    }
    out += "&plan_recompute=" + value;
  }
  if (!inputs.recipes.empty() && names_link_safe(inputs.recipes)) {
    out += "&plan_recipes=" + inputs.recipes;
  }
  if (!inputs.sharding.empty() && names_link_safe(inputs.sharding)) {
    out += "&plan_sharding=" + inputs.sharding;
  }
  // "20%" travels as 20%25: the margin is the one input that may need escaping.
  if (!inputs.margin.empty() && inputs.margin.size() <= 32) {
    out += "&plan_margin=" + stagemem::percent_encode(inputs.margin);
  }
  return out;
}

std::string take_plan_link_keys(std::string_view fragment, PlanInputs& inputs) {
  std::string kept;
  std::size_t start = 0;
  if (const auto hash = fragment.find('#'); hash != std::string_view::npos) start = hash + 1;
  std::string_view rest = fragment.substr(start);
  while (!rest.empty()) {
    const auto amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const auto eq = pair.find('=');
    const std::string_view key = pair.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    bool taken = false;
    for (const LinkKey& k : link_keys) {
      if (key == k.key && link_safe(value)) {
        inputs.*k.text = std::string(value);
        taken = true;
      }
    }
    if (key == "plan_margin") {
      std::string decoded;
      if (value.size() <= 96 && stagemem::percent_decode(value, decoded) && decoded.size() <= 32)
        inputs.margin = decoded;
      taken = true;
    }
    if (key == "plan_recipes") {
      taken = true;
      if (names_link_safe(value)) inputs.recipes = std::string(value);
    }
    if (key == "plan_sharding") {
      taken = true;
      if (names_link_safe(value)) inputs.sharding = std::string(value);
    }
    if (key == "plan_recompute") {
      taken = true;
      inputs.recompute = {value.find("none") != std::string_view::npos,
                          value.find("selective") != std::string_view::npos,
                          value.find("full") != std::string_view::npos};
    }
    if (!taken && !pair.empty()) kept += (kept.empty() ? "" : "&") + std::string(pair);
    if (amp == std::string_view::npos) break;
    rest.remove_prefix(amp + 1);
  }
  return kept;
}
