#include "plan_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "command_steps.h"
#include "config/config_json.h"
#include "config/url_fragment.h"
#include "plan/plan.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

using json = nlohmann::ordered_json;
using stagemem_cli::CommandLine;

constexpr int exit_nothing_fits = 1;

constexpr std::array<stagemem_cli::CommandOption, 13> plan_options = {{
    {"--gpus-per-node", "N", "GPUs per node, [1, 1024] (default 8): TP stays inside a node"},
    {"--min-gpus", "N", "smallest GPU count searched (default 1)"},
    {"--max-gpus", "N", "largest GPU count searched (default: what the global batch allows)"},
    {"--min-nodes", "N", "--min-gpus N x GPUs per node"},
    {"--max-nodes", "N", "--max-gpus N x GPUs per node"},
    {"--tp-across-nodes", "", "allow TP sizes that do not divide a node"},
    {"--top", "N", "frontier entries per factor per GPU count, [1, 100] (default 2)"},
    {"--margin", "M",
     "safety margin kept free: an amount (8GiB) or a share of the capacity (20%: the 80 % rule, "
     "peak <= 80 % of capacity); default 0"},
    {"--all", "", "list every valid configuration estimated (fits or not) instead of the frontier"},
    {"--threads", "N", "split the search over N threads, [1, 64] (default 1)"},
    {"--base", "URL", "prefix of the links (default: the fragment alone, '#v=1&...')"},
    {"--json", "", "JSON: minimum, frontier[], configurations_searched, ..._per_second"},
    {"--format", "F", "text | json | csv | markdown (default text)"},
}};

constexpr std::array<std::string_view, 4> plan_formats = {"text", "json", "csv", "markdown"};

constexpr const char* plan_help =
    "usage: stagemem plan [options] (the parallel flags take comma-separated lists)\n\n"
    "The smallest GPU count at which some configuration fits every stage, and at each GPU\n"
    "count the best few configurations by each derived cost factor (never combined):\n"
    "  bubble fraction     (P-1)/(v M) interleaved, (P-1)/M 1F1B (M micro-batches per step)\n"
    "  recompute overhead  recomputed forward FLOPs / (3 x forward FLOPs), from shapes\n"
    "  headroom            device bytes - the binding stage's peak reserved (the allocator\n"
    "                      replayed for every configuration shown; the device figure when\n"
    "                      the runtime-context and communication-buffers rows are measured;\n"
    "                      the search itself prefilters on the peak allocated); the table's\n"
    "                      peak is the binding stage's peak allocated, fit the figure headroom\n"
    "                      is measured against and fit_basis which (reserved | device)\n"
    "With --margin (8GiB, or 20% for the 80 % rule) a configuration fits only when every\n"
    "stage's peak is at most the device's bytes minus the margin.\n"
    "e.g.\n"
    "  stagemem plan --preset kimi-k3 --device mi355x --seq 8192 --gbs 896 \\\n"
    "    --optimizer distributed-muon --tp 1,2,4,8 --pp 4,5,6,7,8,9,10,11,12,13,14,15,16 \\\n"
    "    --vpp 1,2,3,4 --mbs 1,2,3,4 --recompute none,selective,full\n"
    "Searched: --tp --pp --vpp --cp --ep --etp --dp --mbs --recompute --sp --optimizer\n"
    "--fp8-recipe (e.g. none,tensor,mxfp8: each recipe, none being the bf16 twin)\n"
    "--sharding (e.g. optim,optim_grads_params: ZeRO-1 with the distributed optimizer and\n"
    "ZeRO-3 with Megatron-FSDP under megatron-core; torchtitan runs FSDP2); a\n"
    "list allows its values, one value fixes it, an absent flag takes the default range\n"
    "(TP: powers of 2 within a node; PP 1..32; VPP 1..4; CP 1; EP: divisors of the experts;\n"
    "ETP 1; DP: divisors of gbs/mbs; mbs 1..4; recompute none,selective,full; SP on with TP\n"
    "> 1; optimizer: the configuration's). Layers split evenly; `stagemem layout` advises\n"
    "uneven splits. Exit codes: 0 something fits, 1 nothing fits, 2 bad input.\n\n"
    "options:\n";

// The flag spellings (flag_key: no "--", '-' as '_') that bound one searched dimension.
struct SearchedFlag {
  std::string_view key;
  std::array<std::string_view, 3> spellings;
};
constexpr std::array<SearchedFlag, 13> searched_flags = {{
    {"fp8_recipe", {"fp8_recipe", "fp4_recipe", ""}},
    {"sharding", {"sharding", "data_parallel_sharding_strategy", ""}},
    {"tp", {"tp", "tensor_model_parallel_size", ""}},
    {"pp", {"pp", "pipeline_model_parallel_size", ""}},
    {"vpp", {"vpp", "virtual_pipeline_model_parallel_size", ""}},
    {"cp", {"cp", "context_parallel_size", ""}},
    {"ep", {"ep", "expert_model_parallel_size", ""}},
    {"etp", {"etp", "expert_tensor_parallel_size", ""}},
    {"dp", {"dp", "data_parallel_size", ""}},
    {"mbs", {"mbs", "micro_batch_size", ""}},
    {"recompute", {"recompute", "recompute_granularity", ""}},
    {"sp", {"sp", "sequence_parallel", "no_sp"}},
    {"optimizer", {"optimizer", "use_distributed_optimizer", ""}},
}};
// Fields the plan derives or replaces: giving them is an error that says what to use instead.
constexpr std::array<std::string_view, 12> derived_flags = {"world",
                                                            "world_size",
                                                            "stages",
                                                            "layers_per_stage",
                                                            "first_layers",
                                                            "last_layers",
                                                            "layout",
                                                            "layout_string",
                                                            "pipeline_model_parallel_layout",
                                                            "split",
                                                            "decoder_first_pipeline_num_layers",
                                                            "decoder_last_pipeline_num_layers"};

std::string fraction(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", value);
  return buffer;
}

std::string thousands(std::int64_t n) {
  return stagemem::group_digits(n);
}

std::string recompute_name(stagemem::RecomputePolicy policy) {
  return std::string(stagemem::enum_name(policy));
}

std::int64_t nodes_of(std::int64_t gpus, std::int64_t per_node) {
  return (gpus + per_node - 1) / per_node;
}

// ---- Reading the request: the output format, the searched space and its bounds.

struct PlanRequest {
  std::string format;
  stagemem::PlanBounds bounds;
  std::int64_t threads = 1;
  bool all = false;  // --all: every configuration estimated instead of the frontier
};

// A flag typed on the command line: as typed, and its key (flag_key).
struct TypedFlag {
  std::string_view typed;
  std::string key;
};

// Every argument that looks like a flag, in order. Only typed flags bound the search: values
// from --config or --url do not.
std::vector<TypedFlag> typed_flags(const std::vector<std::string_view>& args) {
  std::vector<TypedFlag> flags;
  for (std::string_view a : args) {
    if (a.starts_with("--") && a.size() >= 3) flags.push_back({a, stagemem_cli::flag_key(a)});
  }
  return flags;
}

bool parse_int(std::string_view text, std::int64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  return true;
}

// --FLAG N as an integer in [low, high]; errors name the flag.
std::optional<std::int64_t> int_option(const CommandLine& line, std::string_view flag,
                                       std::int64_t low, std::int64_t high,
                                       stagemem::Diagnostics& d) {
  const auto text = line.option(flag);
  if (!text) return std::nullopt;
  std::int64_t v = 0;
  if (!parse_int(*text, v) || v < low || v > high) {
    d.error(std::string(flag), "'" + text->substr(0, 32) + "' is not an integer in [" +
                                   std::to_string(low) + ", " + std::to_string(high) + "]");
    return std::nullopt;
  }
  return v;
}

// The fields the plan derives (world size, layer split) cannot be given: say what to use.
void refuse_derived_flags(const std::vector<TypedFlag>& flags, stagemem::Diagnostics& d) {
  for (const TypedFlag& flag : flags) {
    if (std::find(derived_flags.begin(), derived_flags.end(), flag.key) == derived_flags.end())
      continue;
    d.error(std::string(flag.typed), flag.key.starts_with("world")
                                         ? "plan derives the world size; bound the GPU count "
                                           "with --min-gpus/--max-gpus or --min-nodes/--max-nodes"
                                         : "plan splits layers evenly; `stagemem layout` advises "
                                           "uneven layouts for one configuration");
  }
}

// A list given to a field the plan does not search (e.g. --seq 4096,8192) is an error.
void refuse_unsearched_lists(const CommandLine& line, stagemem::Diagnostics& d) {
  for (const auto& axis : line.axes) {
    bool searched = false;
    for (const SearchedFlag& f : searched_flags) searched |= axis.field->key == f.key;
    if (!searched) {
      d.error(axis.name,
              "plan searches only --tp --pp --vpp --cp --ep --etp --dp --mbs "
              "--recompute --sp --optimizer --fp8-recipe --sharding; give one value here");
    }
  }
}

// --gpus-per-node, --min-gpus/--max-gpus and --min-nodes/--max-nodes (nodes x GPUs per node).
void read_gpu_counts(const CommandLine& line, stagemem::PlanBounds& bounds,
                     stagemem::Diagnostics& d) {
  bounds.gpus_per_node = int_option(line, "--gpus-per-node", 1, 1024, d).value_or(8);
  if (auto v = int_option(line, "--min-gpus", 1, std::int64_t{1} << 32, d)) bounds.min_gpus = *v;
  if (auto v = int_option(line, "--max-gpus", 1, std::int64_t{1} << 32, d)) bounds.max_gpus = *v;
  if (auto v = int_option(line, "--min-nodes", 1, std::int64_t{1} << 22, d))
    bounds.min_gpus = std::max(bounds.min_gpus, *v * bounds.gpus_per_node);
  if (auto v = int_option(line, "--max-nodes", 1, std::int64_t{1} << 22, d)) {
    bounds.max_gpus = bounds.max_gpus > 0 ? std::min(bounds.max_gpus, *v * bounds.gpus_per_node)
                                          : *v * bounds.gpus_per_node;
  }
  if (bounds.max_gpus > 0 && bounds.max_gpus < bounds.min_gpus) {
    d.error("--max-gpus", "the largest GPU count (" + std::to_string(bounds.max_gpus) +
                              ") is below the smallest (" + std::to_string(bounds.min_gpus) + ")");
  }
}

// Was one of `flag`'s spellings typed?
bool typed(const std::vector<TypedFlag>& flags, const SearchedFlag& flag) {
  for (const TypedFlag& f : flags) {
    for (std::string_view s : flag.spellings) {
      if (!s.empty() && f.key == s) return true;
    }
  }
  return false;
}

// The configurations a typed searched flag allows: one per value of its list (sweep axis), or
// the configuration itself for one value; none when it was not typed.
std::vector<stagemem::Config> allowed_values(const std::vector<TypedFlag>& flags,
                                             const CommandLine& line, const SearchedFlag& flag,
                                             const stagemem::ConfigField& field) {
  const auto axis = std::find_if(line.axes.begin(), line.axes.end(),
                                 [&](const stagemem::SweepAxis& a) { return a.field == &field; });
  if (axis == line.axes.end()) {
    if (typed(flags, flag)) return {line.config};
    return {};
  }
  std::vector<stagemem::Config> values;
  for (const std::string& text : axis->values) {
    stagemem::Config scratch = line.config;
    stagemem::Diagnostics ignored;  // checked while parsing
    stagemem::parse_field_text(field, text, scratch, ignored, axis->name);
    values.push_back(std::move(scratch));
  }
  return values;
}

// The searched dimension `key` takes the value `c` has.
void add_bound(std::string_view key, const stagemem::Config& c, stagemem::PlanBounds& b) {
  const auto& p = c.parallel;
  if (key == "tp") b.tp.push_back(p.tensor_parallel);
  if (key == "pp") b.pp.push_back(p.pipeline_parallel);
  if (key == "vpp") b.vpp.push_back(p.virtual_stages);
  if (key == "cp") b.cp.push_back(p.context_parallel);
  if (key == "ep") b.ep.push_back(p.expert_parallel);
  if (key == "etp") b.etp.push_back(p.expert_tensor_parallel);
  if (key == "dp") b.dp.push_back(p.data_parallel);
  if (key == "mbs") b.mbs.push_back(c.training.micro_batch);
  if (key == "recompute") b.recompute.push_back(c.training.recompute.policy);
  if (key == "sp") b.sp.push_back(p.sequence_parallel);
  if (key == "optimizer") b.optimizer.push_back(c.optimizer.kind);
  if (key == "fp8_recipe") b.recipe.push_back(c.training.low_precision.recipe);
  if (key == "sharding") b.sharding.push_back(c.training.sharding.strategy);
}

// Duplicates would only repeat work: keep the first of each.
void remove_repeats(stagemem::PlanBounds& b) {
  const auto unique = [](auto& list) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t j = list.size(); j-- > i + 1;) {
        if (list[j] == list[i]) list.erase(list.begin() + static_cast<std::ptrdiff_t>(j));
      }
    }
  };
  unique(b.tp), unique(b.pp), unique(b.vpp), unique(b.cp), unique(b.ep), unique(b.etp);
  unique(b.dp), unique(b.mbs), unique(b.recompute), unique(b.optimizer), unique(b.recipe);
  unique(b.sharding);
  std::vector<bool> sp;
  for (bool v : b.sp) {
    if (std::find(sp.begin(), sp.end(), v) == sp.end()) sp.push_back(v);
  }
  b.sp = sp;
}

// Fills `bounds` from the typed flags: a list (sweep axis) allows its values, one value fixes it.
void read_searched_values(const std::vector<TypedFlag>& flags, const CommandLine& line,
                          stagemem::PlanBounds& bounds) {
  for (const SearchedFlag& flag : searched_flags) {
    const stagemem::ConfigField* field = stagemem::find_field_by_key(flag.key);
    if (!field) continue;
    for (const stagemem::Config& c : allowed_values(flags, line, flag, *field))
      add_bound(flag.key, c, bounds);
  }
  remove_repeats(bounds);
}

// Everything the command line asks of the search; errors go to line.diagnostics.
PlanRequest read_plan_request(const std::vector<std::string_view>& args, CommandLine& line) {
  stagemem::Diagnostics& d = line.diagnostics;
  PlanRequest request;
  request.format = stagemem_cli::json_or_checked_format(line, plan_formats, d);
  const std::vector<TypedFlag> flags = typed_flags(args);
  refuse_derived_flags(flags, d);
  stagemem_cli::require_model(line, "give a model: --preset NAME, --hf-config FILE, ...");
  refuse_unsearched_lists(line, d);
  stagemem::PlanBounds& bounds = request.bounds;
  read_gpu_counts(line, bounds, d);
  bounds.top = int_option(line, "--top", 1, 100, d).value_or(2);
  if (const auto margin = line.option("--margin")) {
    if (auto parsed = stagemem::parse_plan_margin(*margin, "--margin", d)) bounds.margin = *parsed;
  }
  bounds.tp_across_nodes = line.option("--tp-across-nodes").has_value();
  // --all lists every configuration with its own numbers: no pruning by the resident bound.
  request.all = line.option("--all").has_value();
  bounds.exhaustive = request.all;
  request.threads = int_option(line, "--threads", 1, 64, d).value_or(1);
  read_searched_values(flags, line, bounds);
  return request;
}

// ---- The search: split over threads, merged, the frontier selected.

struct Timing {
  double seconds = 0.0;
  double per_second = 0.0;
};

struct PlanOutcome {
  stagemem::PlanResult result;
  // When nothing fits: the valid configuration closest to fitting (most headroom), to say how far.
  std::optional<stagemem::PlanEntry> closest;
  std::vector<stagemem::PlanEntry> every;  // --all: every configuration, in search order
  Timing timing;
};

// The search's own errors name the flag the user typed for the plan's fields (plan.top: --top).
void add_search_errors(const stagemem::Diagnostics& search, stagemem::Diagnostics& d) {
  for (const auto& e : search.errors) {
    std::string field = e.field;
    if (field.starts_with("plan.")) {
      field = "--" + field.substr(5);
      std::replace(field.begin(), field.end(), '_', '-');
    }
    d.error(field, e.message);
  }
}

// Runs every shard to its end, the first on this thread.
void run_searches(std::vector<stagemem::PlanSearch>& searches) {
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < searches.size(); ++t) {
    workers.emplace_back([&search = searches[t]] {
      while (search.step(1 << 20)) {
      }
    });
  }
  while (searches.front().step(1 << 20)) {
  }
  for (auto& w : workers) w.join();
}

// The shards' entries and counts merged, and the plan selected from them.
PlanOutcome merge_searches(const std::vector<stagemem::PlanSearch>& searches, bool all,
                           std::int64_t top, const stagemem::Config& base,
                           const stagemem::Model& model) {
  std::vector<stagemem::PlanEntry> entries;
  std::int64_t searched = 0, estimated = 0, pruned = 0;
  for (const auto& s : searches) {
    entries.insert(entries.end(), s.entries().begin(), s.entries().end());
    searched += s.searched();
    estimated += s.estimated();
    pruned += s.pruned();
  }
  PlanOutcome outcome;
  for (const stagemem::PlanEntry& e : entries) {
    if (!outcome.closest || e.headroom_bytes > outcome.closest->headroom_bytes) outcome.closest = e;
  }
  if (all) {
    outcome.every = entries;
    std::sort(outcome.every.begin(), outcome.every.end(),
              [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  }
  // The shown entries are confirmed with the allocator replay (fit against reserved / device).
  outcome.result = stagemem::select_confirmed_plan(std::move(entries), top, base, model);
  outcome.result.configurations_searched = searched;
  outcome.result.configurations_estimated = estimated;
  outcome.result.configurations_pruned = pruned;
  outcome.result.device_bytes = searches.front().device_bytes();
  outcome.result.margin_bytes = searches.front().margin_bytes();
  return outcome;
}

// The search over `request.threads` shards, timed; nullopt (errors in line.diagnostics) when
// the search refuses the configuration or the bounds.
std::optional<PlanOutcome> search_plan(CommandLine& line, const stagemem::Model& model,
                                       const PlanRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<stagemem::PlanSearch> searches;
  for (std::int64_t t = 0; t < request.threads; ++t)
    searches.emplace_back(line.config, model, request.bounds, t, request.threads);
  if (!searches.front().diagnostics().ok()) {
    add_search_errors(searches.front().diagnostics(), line.diagnostics);
    return std::nullopt;
  }
  run_searches(searches);
  PlanOutcome outcome =
      merge_searches(searches, request.all, request.bounds.top, line.config, model);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto searched = static_cast<double>(outcome.result.configurations_searched);
  outcome.timing = {seconds, seconds > 0 ? searched / seconds : 0.0};
  return outcome;
}

// ---- The output: each shown configuration with its link and Megatron arguments.

struct Shown {
  stagemem::PlanEntry entry;
  stagemem::Config config;
  std::string link;
  std::string megatron;
};

struct PlanContext {
  const stagemem::Config* base = nullptr;
  const stagemem::Model* model = nullptr;
  std::int64_t gpus_per_node = 8;
  std::string link_base;
  std::string margin_text = "0";  // plan_margin_text of the search's margin
};

Shown show(const PlanContext& context, const stagemem::PlanEntry& entry) {
  Shown s{entry, stagemem::candidate_config(*context.base, entry.candidate), {}, {}};
  s.link = context.link_base + "#" + stagemem::encode_fragment(s.config);
  s.megatron = stagemem::megatron_arguments(s.config, *context.model);
  return s;
}

// What the plan shows: the minimum, or the closest when nothing fits, and the frontier (or
// with --all every configuration).
struct PlanView {
  std::optional<Shown> minimum;
  std::optional<Shown> closest;
  std::vector<Shown> rows;
};

PlanView plan_view(const PlanContext& context, const PlanOutcome& outcome, bool all) {
  PlanView view;
  const stagemem::PlanResult& result = outcome.result;
  if (result.has_minimum) view.minimum = show(context, result.minimum);
  if (!result.has_minimum && outcome.closest) view.closest = show(context, *outcome.closest);
  for (const auto& e : all ? outcome.every : result.frontier) view.rows.push_back(show(context, e));
  return view;
}

std::string ranks_text(std::uint8_t ranks) {
  std::string out;
  if (ranks & stagemem::rank_bubble) out += "bubble";
  if (ranks & stagemem::rank_recompute) out += std::string(out.empty() ? "" : ",") + "recompute";
  if (ranks & stagemem::rank_headroom) out += std::string(out.empty() ? "" : ",") + "headroom";
  return out;
}

std::string bubble_formula(const stagemem::PlanEntry& e) {
  const auto& c = e.candidate;
  if (c.pp <= 1) return "P = 1: no bubble";
  if (c.vpp > 1) {
    return "(P-1)/(v M) = " + std::to_string(c.pp - 1) + "/(" + std::to_string(c.vpp) + " x " +
           std::to_string(e.micro_batches) + ")";
  }
  return "(P-1)/M = " + std::to_string(c.pp - 1) + "/" + std::to_string(e.micro_batches);
}

json entry_json(const PlanContext& context, const Shown& s) {
  const stagemem::PlanEntry& e = s.entry;
  const auto& c = e.candidate;
  json ranked = json::array();
  if (e.ranks & stagemem::rank_bubble) ranked.push_back("bubble");
  if (e.ranks & stagemem::rank_recompute) ranked.push_back("recompute");
  if (e.ranks & stagemem::rank_headroom) ranked.push_back("headroom");
  json out = {
      {"gpus", e.gpus},
      {"nodes", nodes_of(e.gpus, context.gpus_per_node)},
      {"link", s.link},
      {"megatron_args", s.megatron},
      {"config", json::parse(stagemem::config_to_json(s.config))},
      {"peak_bytes", e.peak_bytes},
      {"fit_basis", std::string(stagemem::enum_name(e.fit_basis))},
      {"fit_bytes", e.fit_bytes},
      {"headroom_bytes", e.headroom_bytes},
      {"spare_bytes", e.spare_bytes()},
      {"binding_stage", e.binding_stage},
      {"fits", e.fits()},
      {"parallel",
       {{"tp", c.tp},
        {"pp", c.pp},
        {"vpp", c.vpp},
        {"cp", c.cp},
        {"ep", c.ep},
        {"etp", c.etp},
        {"dp", c.dp},
        {"sp", c.sp}}},
      {"micro_batch", c.mbs},
      {"micro_batches", e.micro_batches},
      {"recompute", recompute_name(c.recompute)},
      {"optimizer", std::string(stagemem::optimizer_kind_name(c.optimizer))},
      {"fp8_recipe", std::string(stagemem::fp8_recipe_name(c.recipe))},
      {"sharding", std::string(stagemem::enum_name(c.sharding))},
      {"bubble_fraction", e.bubble_fraction},
      {"bubble_formula", bubble_formula(e)},
      {"recompute_overhead", e.recompute_overhead},
  };
  if (e.ranks) out["ranked_by"] = ranked;
  return out;
}

void print_plan_json(const PlanContext& context, const PlanOutcome& outcome, const PlanView& view,
                     bool all) {
  const stagemem::PlanResult& result = outcome.result;
  const stagemem::Config& base = *context.base;
  json frontier = json::array();
  for (const Shown& s : view.rows) frontier.push_back(entry_json(context, s));
  stagemem_cli::print_json({
      {"model", context.model->name},
      {"device",
       {{"name", base.device.bytes > 0 ? "custom" : base.device.preset},
        {"bytes", result.device_bytes}}},
      {"margin", context.margin_text},
      {"margin_bytes", result.margin_bytes},
      {"gpus_per_node", context.gpus_per_node},
      {"sequence_length", base.training.sequence_length},
      {"global_batch", base.training.global_batch},
      {"minimum", view.minimum ? entry_json(context, *view.minimum) : json(nullptr)},
      {"closest", view.closest ? entry_json(context, *view.closest) : json(nullptr)},
      {all ? "configurations" : "frontier", frontier},
      {"configurations_searched", result.configurations_searched},
      {"configurations_estimated", result.configurations_estimated},
      {"configurations_pruned", result.configurations_pruned},
      {"configurations_valid", result.configurations_valid},
      {"configurations_fitting", result.configurations_fitting},
      {"seconds", outcome.timing.seconds},
      {"configurations_per_second", outcome.timing.per_second},
  });
}

const std::vector<std::string> table_header = {
    "gpus",      "nodes",     "tp",         "pp",       "vpp",           "cp",
    "ep",        "etp",       "dp",         "sp",       "mbs",           "M",
    "recompute", "optimizer", "fp8_recipe", "sharding", "bubble",        "recompute_overhead",
    "peak",      "fit",       "fit_basis",  "headroom", "binding_stage", "fits",
    "ranked_by"};

std::vector<std::string> table_row(const PlanContext& context, const Shown& s, bool bytes) {
  const stagemem::PlanEntry& e = s.entry;
  const auto& c = e.candidate;
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  return {n(e.gpus),
          n(nodes_of(e.gpus, context.gpus_per_node)),
          n(c.tp),
          n(c.pp),
          n(c.vpp),
          n(c.cp),
          n(c.ep),
          n(c.etp),
          n(c.dp),
          c.sp ? "on" : "off",
          n(c.mbs),
          n(e.micro_batches),
          recompute_name(c.recompute),
          std::string(stagemem::optimizer_kind_name(c.optimizer)),
          std::string(stagemem::fp8_recipe_name(c.recipe)),
          std::string(stagemem::enum_name(c.sharding)),
          fraction(e.bubble_fraction),
          fraction(e.recompute_overhead),
          bytes ? n(e.peak_bytes) : stagemem::gib_number(e.peak_bytes),
          bytes ? n(e.fit_bytes) : stagemem::gib_number(e.fit_bytes),
          std::string(stagemem::enum_name(e.fit_basis)),
          bytes ? n(e.headroom_bytes) : stagemem::gib_number(e.headroom_bytes),
          n(e.binding_stage),
          e.fits() ? "yes" : "no",
          ranks_text(e.ranks)};
}

// A table of the plan's columns (`header`: table_header's names as the format spells them):
// counts, fractions and amounts are numbers (written as they are in CSV), the link and the
// Megatron arguments code (in Markdown), the rest text. Left-aligned, as the text always was.
stagemem::Table plan_table(const std::vector<std::string>& header) {
  constexpr std::array<std::string_view, 9> text = {"entry",     "sp",         "recompute",
                                                    "optimizer", "fp8_recipe", "sharding",
                                                    "fit_basis", "fits",       "ranked_by"};
  stagemem::Table table;
  for (const std::string& h : header) {
    const bool code = h == "link" || h == "megatron_args";
    const bool is_text = code || std::find(text.begin(), text.end(), h) != text.end();
    table.columns.push_back({h, stagemem::Align::left,
                             code      ? stagemem::CellKind::code
                             : is_text ? stagemem::CellKind::text
                                       : stagemem::CellKind::number});
  }
  return table;
}

// The first lines of the text: what was planned, and how much was searched how fast.
void print_plan_heading(const PlanContext& context, const PlanOutcome& outcome) {
  const stagemem::Config& base = *context.base;
  const stagemem::PlanResult& result = outcome.result;
  std::printf("stagemem plan: %s on %s (%s per GPU), %lld GPUs per node, seq %lld, gbs %lld\n",
              context.model->name.c_str(),
              base.device.bytes > 0 ? "custom device" : base.device.preset.c_str(),
              stagemem::format_gib(result.device_bytes).c_str(),
              static_cast<long long>(context.gpus_per_node),
              static_cast<long long>(base.training.sequence_length),
              static_cast<long long>(base.training.global_batch));
  if (result.margin_bytes > 0) {
    std::printf(
        "safety margin %s (%s) kept free: a configuration fits when every stage peaks at "
        "or below %s\n",
        context.margin_text.c_str(), stagemem::format_gib(result.margin_bytes).c_str(),
        stagemem::format_gib(result.device_bytes - result.margin_bytes).c_str());
  }
  std::printf(
      "searched %s configurations (%s estimated, %s ruled out without an estimate, %s "
      "valid, %s fit) in %.3f s: %s configurations/s\n\n",
      thousands(result.configurations_searched).c_str(),
      thousands(result.configurations_estimated).c_str(),
      thousands(result.configurations_pruned).c_str(),
      thousands(result.configurations_valid).c_str(),
      thousands(result.configurations_fitting).c_str(), outcome.timing.seconds,
      thousands(static_cast<std::int64_t>(outcome.timing.per_second)).c_str());
}

void print_minimum_text(const PlanContext& context, const Shown& minimum) {
  const stagemem::PlanEntry& e = minimum.entry;
  const auto& c = e.candidate;
  std::printf(
      "minimum: %lld GPUs (%lld node%s): TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, ETP %lld, "
      "DP %lld, SP %s, mbs %lld (M %lld), recompute %s, %s%s%s\n",
      static_cast<long long>(e.gpus),
      static_cast<long long>(nodes_of(e.gpus, context.gpus_per_node)),
      nodes_of(e.gpus, context.gpus_per_node) == 1 ? "" : "s", static_cast<long long>(c.tp),
      static_cast<long long>(c.pp), static_cast<long long>(c.vpp), static_cast<long long>(c.cp),
      static_cast<long long>(c.ep), static_cast<long long>(c.etp), static_cast<long long>(c.dp),
      c.sp ? "on" : "off", static_cast<long long>(c.mbs), static_cast<long long>(e.micro_batches),
      recompute_name(c.recompute).c_str(),
      std::string(stagemem::optimizer_kind_name(c.optimizer)).c_str(),
      c.recipe == stagemem::Fp8Recipe::none
          ? ""
          : (", fp8 recipe " + std::string(stagemem::fp8_recipe_name(c.recipe))).c_str(),
      c.sharding == stagemem::ShardingStrategy::automatic
          ? ""
          : (", sharding " + std::string(stagemem::enum_name(c.sharding))).c_str());
  std::printf("  binding stage %lld: peak %s", static_cast<long long>(e.binding_stage),
              stagemem::format_gib(e.peak_bytes).c_str());
  if (e.fit_basis != stagemem::FitBasis::allocated) {
    std::printf(", %s %s", std::string(stagemem::enum_name(e.fit_basis)).c_str(),
                stagemem::format_gib(e.fit_bytes).c_str());
  }
  std::printf(", headroom %s", stagemem::format_gib(e.headroom_bytes).c_str());
  if (e.margin_bytes > 0) {
    std::printf(" (%s beyond the %s margin)", stagemem::format_gib(e.spare_bytes()).c_str(),
                stagemem::format_gib(e.margin_bytes).c_str());
  }
  std::printf("\n");
  std::printf("  bubble %s = %s; recompute overhead %s (recomputed forward FLOPs / 3 x forward)\n",
              fraction(e.bubble_fraction).c_str(), bubble_formula(e).c_str(),
              fraction(e.recompute_overhead).c_str());
  std::printf("  link: %s\n  megatron: %s\n\n", minimum.link.c_str(), minimum.megatron.c_str());
}

void print_nothing_fits_text(const std::optional<Shown>& closest) {
  const bool margin = closest && closest->entry.margin_bytes > 0;
  std::printf("nothing in the space fits the device%s\n", margin ? " with the safety margin" : "");
  if (closest) {
    const stagemem::PlanEntry& e = closest->entry;
    std::printf(
        "closest estimated: %lld GPUs, binding stage %lld peaks at %s, %s over the device%s\n  "
        "%s\n",
        static_cast<long long>(e.gpus), static_cast<long long>(e.binding_stage),
        stagemem::format_gib(e.peak_bytes).c_str(), stagemem::format_gib(-e.spare_bytes()).c_str(),
        margin ? " less the margin" : "", closest->link.c_str());
  }
  std::printf("\n");
}

// The numbered table of the frontier (or every configuration), then each row's link and
// Megatron arguments under its number.
void print_rows_text(const PlanContext& context, const std::vector<Shown>& rows, bool all,
                     std::int64_t top) {
  if (all) {
    std::printf("every valid configuration estimated (GiB):\n");
  } else {
    std::printf(
        "frontier: at each GPU count, the best %lld by each factor (ranked_by); bubble = (P-1)/(v "
        "M), recompute overhead = recomputed / (3 x forward) FLOPs, headroom of the binding stage "
        "(GiB)\n",
        static_cast<long long>(top));
  }
  std::vector<std::string> header = table_header;
  header.insert(header.begin(), "#");
  stagemem::Table table = plan_table(header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    table.rows.push_back(table_row(context, rows[i], false));
    table.rows.back().insert(table.rows.back().begin(), std::to_string(i + 1));
  }
  std::printf("%s\n", stagemem::text_table(table).c_str());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::printf("%zu  %s\n   %s\n", i + 1, rows[i].link.c_str(), rows[i].megatron.c_str());
  }
}

void print_plan_text(const PlanContext& context, const PlanOutcome& outcome, const PlanView& view,
                     const PlanRequest& request) {
  print_plan_heading(context, outcome);
  if (view.minimum) {
    print_minimum_text(context, *view.minimum);
  } else {
    print_nothing_fits_text(view.closest);
  }
  if (!view.rows.empty()) print_rows_text(context, view.rows, request.all, request.bounds.top);
}

// CSV or Markdown: one table, the minimum first (its `entry` column says so) unless --all, then
// the frontier or every configuration; Markdown under a one-line summary.
void print_plan_table(const PlanContext& context, const PlanOutcome& outcome, const PlanView& view,
                      const PlanRequest& request) {
  const bool csv = request.format == "csv";
  const bool minimum_first = view.minimum && !request.all;
  if (!csv) {
    // With a margin, "fit" is below it: the summary says so.
    const std::string margin = outcome.result.margin_bytes > 0
                                   ? " (safety margin " + context.margin_text + " = " +
                                         stagemem::format_gib(outcome.result.margin_bytes) +
                                         " kept free)"
                                   : "";
    std::printf("stagemem plan: %s, %s searched, %s fit%s; minimum %s\n\n",
                stagemem::markdown_cell(context.model->name).c_str(),
                thousands(outcome.result.configurations_searched).c_str(),
                thousands(outcome.result.configurations_fitting).c_str(), margin.c_str(),
                view.minimum
                    ? (std::to_string(view.minimum->entry.gpus) + " GPUs (first row)").c_str()
                    : "none");
  }
  std::vector<std::string> header = table_header;
  header.insert(header.begin(), "entry");
  header.push_back("link");
  header.push_back("megatron_args");
  for (std::string& h : header) {
    if (h == "peak" || h == "fit" || h == "headroom") h += csv ? "_bytes" : " GiB";
  }
  stagemem::Table table = plan_table(header);
  std::vector<const Shown*> shown;
  if (minimum_first) shown.push_back(&*view.minimum);
  for (const Shown& s : view.rows) shown.push_back(&s);
  for (std::size_t i = 0; i < shown.size(); ++i) {
    std::vector<std::string> row = table_row(context, *shown[i], csv);
    row.insert(row.begin(), i == 0 && minimum_first ? "minimum"
                            : request.all           ? "configuration"
                                                    : "frontier");
    row.push_back(shown[i]->link);
    row.push_back(shown[i]->megatron);
    table.rows.push_back(std::move(row));
  }
  std::fputs(stagemem_cli::table_text(table, request.format).c_str(), stdout);
}

void print_plan(const PlanContext& context, const PlanOutcome& outcome, const PlanView& view,
                const PlanRequest& request) {
  if (request.format == "json") {
    print_plan_json(context, outcome, view, request.all);
  } else if (request.format == "csv" || request.format == "markdown") {
    print_plan_table(context, outcome, view, request);
  } else {
    print_plan_text(context, outcome, view, request);
  }
}

}  // namespace

int run_plan(const std::vector<std::string_view>& args) {
  CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = plan_options, .allow_lists = true});
  if (line.help) {
    stagemem_cli::print_command_help(plan_help, plan_options);
    return stagemem_cli::exit_ok;
  }
  const PlanRequest request = read_plan_request(args, line);
  const std::optional<stagemem::Model> model = stagemem_cli::resolved_model(line);
  if (!model) return stagemem_cli::refuse(line.diagnostics);
  const std::optional<PlanOutcome> outcome = search_plan(line, *model, request);
  if (!outcome) return stagemem_cli::refuse(line.diagnostics);

  const PlanContext context{&line.config, &*model, request.bounds.gpus_per_node,
                            line.option("--base").value_or(""),
                            stagemem::plan_margin_text(request.bounds.margin)};
  print_plan(context, *outcome, plan_view(context, *outcome, request.all), request);
  return stagemem_cli::finish(
      outcome->result.has_minimum ? stagemem_cli::exit_ok : exit_nothing_fits,
      line.diagnostics);  // warnings only here
}
