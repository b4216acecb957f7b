#include "plan_command.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "config/config_json.h"
#include "config/url_fragment.h"
#include "config_sources.h"
#include "plan/layout_advisor.h"
#include "plan/plan.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

using json = nlohmann::ordered_json;
using stagemem_cli::exit_bad_input;

constexpr int exit_nothing_fits = 1;

constexpr std::array<stagemem_cli::CommandOption, 12> plan_options = {{
    {"--gpus-per-node", "N", "GPUs per node, [1, 1024] (default 8): TP stays inside a node"},
    {"--min-gpus", "N", "smallest GPU count searched (default 1)"},
    {"--max-gpus", "N", "largest GPU count searched (default: what the global batch allows)"},
    {"--min-nodes", "N", "--min-gpus N x GPUs per node"},
    {"--max-nodes", "N", "--max-gpus N x GPUs per node"},
    {"--tp-across-nodes", "", "allow TP sizes that do not divide a node"},
    {"--top", "N", "frontier entries per factor per GPU count, [1, 100] (default 2)"},
    {"--all", "", "list every valid configuration estimated (fits or not) instead of the frontier"},
    {"--threads", "N", "split the search over N threads, [1, 64] (default 1)"},
    {"--base", "URL", "prefix of the links (default: the fragment alone, '#v=1&...')"},
    {"--json", "", "JSON: minimum, frontier[], configurations_searched, ..._per_second"},
    {"--format", "F", "text | json | csv | markdown (default text)"},
}};

constexpr std::array<stagemem_cli::CommandOption, 4> layout_options = {{
    {"--align-attn-res", "", "move whole AttnRes blocks only (boundaries at block multiples)"},
    {"--base", "URL", "prefix of the link (default: the fragment alone)"},
    {"--json", "", "JSON: even and advised per-stage peaks, layout, gain_bytes"},
    {"--format", "F", "text | json | markdown (default text)"},
}};

// The flag spellings (normalized: no "--", '-' as '_') that bound one searched dimension.
struct SearchedFlag {
  std::string_view key;
  std::array<std::string_view, 3> spellings;
};
constexpr std::array<SearchedFlag, 11> searched_flags = {{
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

std::string normalized(std::string_view flag) {
  std::string out(flag.substr(2));
  for (char& c : out) c = c == '-' ? '_' : c;
  return out;
}

std::string fraction(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4f", value);
  return buffer;
}

std::string thousands(std::int64_t n) {
  return stagemem::group_digits(n);
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
std::optional<std::int64_t> int_option(const stagemem_cli::CommandLine& line, std::string_view flag,
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

std::string recompute_name(stagemem::RecomputePolicy policy) {
  return std::string(stagemem::enum_name(policy));
}

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
};

Shown show(const PlanContext& context, const stagemem::PlanEntry& entry) {
  Shown s{entry, stagemem::candidate_config(*context.base, entry.candidate), {}, {}};
  s.link = context.link_base + "#" + stagemem::encode_fragment(s.config);
  s.megatron = stagemem::megatron_arguments(s.config, *context.model);
  return s;
}

std::int64_t nodes_of(std::int64_t gpus, std::int64_t per_node) {
  return (gpus + per_node - 1) / per_node;
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
      {"headroom_bytes", e.headroom_bytes},
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
      {"bubble_fraction", e.bubble_fraction},
      {"bubble_formula", bubble_formula(e)},
      {"recompute_overhead", e.recompute_overhead},
  };
  if (e.ranks) out["ranked_by"] = ranked;
  return out;
}

const std::vector<std::string> table_header = {"gpus",
                                               "nodes",
                                               "tp",
                                               "pp",
                                               "vpp",
                                               "cp",
                                               "ep",
                                               "etp",
                                               "dp",
                                               "sp",
                                               "mbs",
                                               "M",
                                               "recompute",
                                               "optimizer",
                                               "bubble",
                                               "recompute_overhead",
                                               "peak",
                                               "headroom",
                                               "binding_stage",
                                               "fits",
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
          fraction(e.bubble_fraction),
          fraction(e.recompute_overhead),
          bytes ? n(e.peak_bytes) : stagemem::gib_number(e.peak_bytes),
          bytes ? n(e.headroom_bytes) : stagemem::gib_number(e.headroom_bytes),
          n(e.binding_stage),
          e.fits() ? "yes" : "no",
          ranks_text(e.ranks)};
}

// A table of the plan's columns (`header`: table_header's names as the format spells them):
// counts, fractions and amounts are numbers (written as they are in CSV), the link and the
// Megatron arguments code (in Markdown), the rest text. Left-aligned, as the text always was.
stagemem::Table plan_table(const std::vector<std::string>& header) {
  constexpr std::array<std::string_view, 6> text = {"entry",     "sp",   "recompute",
                                                    "optimizer", "fits", "ranked_by"};
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

struct Timing {
  double seconds = 0.0;
  double per_second = 0.0;
};

void print_plan_text(const PlanContext& context, const stagemem::PlanResult& result,
                     const std::vector<Shown>& rows, const std::optional<Shown>& minimum,
                     const std::optional<Shown>& closest, const Timing& timing, bool all,
                     std::int64_t top) {
  const stagemem::Config& base = *context.base;
  std::printf("stagemem plan: %s on %s (%s per GPU), %lld GPUs per node, seq %lld, gbs %lld\n",
              context.model->name.c_str(),
              base.device.bytes > 0 ? "custom device" : base.device.preset.c_str(),
              stagemem::format_gib(result.device_bytes).c_str(),
              static_cast<long long>(context.gpus_per_node),
              static_cast<long long>(base.training.sequence_length),
              static_cast<long long>(base.training.global_batch));
  std::printf(
      "searched %s configurations (%s estimated, %s ruled out without an estimate, %s "
      "valid, %s fit) in %.3f s: %s configurations/s\n\n",
      thousands(result.configurations_searched).c_str(),
      thousands(result.configurations_estimated).c_str(),
      thousands(result.configurations_pruned).c_str(),
      thousands(result.configurations_valid).c_str(),
      thousands(result.configurations_fitting).c_str(), timing.seconds,
      thousands(static_cast<std::int64_t>(timing.per_second)).c_str());
  if (minimum) {
    const stagemem::PlanEntry& e = minimum->entry;
    const auto& c = e.candidate;
    std::printf(
        "minimum: %lld GPUs (%lld node%s): TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, ETP %lld, "
        "DP %lld, SP %s, mbs %lld (M %lld), recompute %s, %s\n",
        static_cast<long long>(e.gpus),
        static_cast<long long>(nodes_of(e.gpus, context.gpus_per_node)),
        nodes_of(e.gpus, context.gpus_per_node) == 1 ? "" : "s", static_cast<long long>(c.tp),
        static_cast<long long>(c.pp), static_cast<long long>(c.vpp), static_cast<long long>(c.cp),
        static_cast<long long>(c.ep), static_cast<long long>(c.etp), static_cast<long long>(c.dp),
        c.sp ? "on" : "off", static_cast<long long>(c.mbs), static_cast<long long>(e.micro_batches),
        recompute_name(c.recompute).c_str(),
        std::string(stagemem::optimizer_kind_name(c.optimizer)).c_str());
    std::printf("  binding stage %lld: peak %s, headroom %s\n",
                static_cast<long long>(e.binding_stage), stagemem::format_gib(e.peak_bytes).c_str(),
                stagemem::format_gib(e.headroom_bytes).c_str());
    std::printf(
        "  bubble %s = %s; recompute overhead %s (recomputed forward FLOPs / 3 x forward)\n",
        fraction(e.bubble_fraction).c_str(), bubble_formula(e).c_str(),
        fraction(e.recompute_overhead).c_str());
    std::printf("  link: %s\n  megatron: %s\n\n", minimum->link.c_str(), minimum->megatron.c_str());
  } else {
    std::printf("nothing in the space fits the device\n");
    if (closest) {
      const stagemem::PlanEntry& e = closest->entry;
      std::printf(
          "closest estimated: %lld GPUs, binding stage %lld peaks at %s, %s over the device\n  "
          "%s\n",
          static_cast<long long>(e.gpus), static_cast<long long>(e.binding_stage),
          stagemem::format_gib(e.peak_bytes).c_str(),
          stagemem::format_gib(-e.headroom_bytes).c_str(), closest->link.c_str());
    }
    std::printf("\n");
  }
  if (rows.empty()) return;
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

// `first_is_minimum`: the first row is the minimum (its `entry` column says so).
void print_plan_rows(const PlanContext& context, const std::vector<Shown>& rows, bool csv,
                     bool first_is_minimum, bool all) {
  std::vector<std::string> header = table_header;
  header.insert(header.begin(), "entry");
  header.push_back("link");
  header.push_back("megatron_args");
  for (std::string& h : header) {
    if (h == "peak" || h == "headroom") h += csv ? "_bytes" : " GiB";
  }
  stagemem::Table table = plan_table(header);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Shown& s = rows[i];
    std::vector<std::string> row = table_row(context, s, csv);
    row.insert(row.begin(), i == 0 && first_is_minimum ? "minimum"
                            : all                      ? "configuration"
                                                       : "frontier");
    row.push_back(s.link);
    row.push_back(s.megatron);
    table.rows.push_back(std::move(row));
  }
  std::fputs(csv ? stagemem::csv_table(table).c_str() : stagemem::markdown_table(table).c_str(),
             stdout);
}

// Was one of `spellings` typed as a flag?
bool typed(const std::vector<std::string_view>& args, const SearchedFlag& flag) {
  for (std::string_view a : args) {
    if (!a.starts_with("--") || a.size() < 3) continue;
    const std::string name = normalized(a);
    for (std::string_view s : flag.spellings) {
      if (!s.empty() && name == s) return true;
    }
  }
  return false;
}

// Fills `bounds` from the typed flags: a list (sweep axis) allows its values, one value fixes it.
void read_bounds(const std::vector<std::string_view>& args, const stagemem_cli::CommandLine& line,
                 stagemem::PlanBounds& b) {
  for (const SearchedFlag& flag : searched_flags) {
    const stagemem::ConfigField* field = stagemem::find_field_by_key(flag.key);
    if (!field) continue;
    std::vector<stagemem::Config> values;
    const auto axis = std::find_if(line.axes.begin(), line.axes.end(),
                                   [&](const stagemem::SweepAxis& a) { return a.field == field; });
    if (axis != line.axes.end()) {
      for (const std::string& text : axis->values) {
        stagemem::Config scratch = line.config;
        stagemem::Diagnostics ignored;  // checked while parsing
        stagemem::parse_field_text(*field, text, scratch, ignored, axis->name);
        values.push_back(std::move(scratch));
      }
    } else if (typed(args, flag)) {
      values.push_back(line.config);
    } else {
      continue;
    }
    for (const stagemem::Config& c : values) {
      const auto& p = c.parallel;
      if (flag.key == "tp") b.tp.push_back(p.tensor_parallel);
      if (flag.key == "pp") b.pp.push_back(p.pipeline_parallel);
      if (flag.key == "vpp") b.vpp.push_back(p.virtual_stages);
      if (flag.key == "cp") b.cp.push_back(p.context_parallel);
      if (flag.key == "ep") b.ep.push_back(p.expert_parallel);
      if (flag.key == "etp") b.etp.push_back(p.expert_tensor_parallel);
      if (flag.key == "dp") b.dp.push_back(p.data_parallel);
      if (flag.key == "mbs") b.mbs.push_back(c.training.micro_batch);
      if (flag.key == "recompute") b.recompute.push_back(c.training.recompute.policy);
      if (flag.key == "sp") b.sp.push_back(p.sequence_parallel);
      if (flag.key == "optimizer") b.optimizer.push_back(c.optimizer.kind);
    }
  }
  // Duplicates would only repeat work: keep the first of each.
  const auto unique = [](auto& list) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      for (std::size_t j = list.size(); j-- > i + 1;) {
        if (list[j] == list[i]) list.erase(list.begin() + static_cast<std::ptrdiff_t>(j));
      }
    }
  };
  unique(b.tp), unique(b.pp), unique(b.vpp), unique(b.cp), unique(b.ep), unique(b.etp);
  unique(b.dp), unique(b.mbs), unique(b.recompute), unique(b.optimizer);
  std::vector<bool> sp;
  for (bool v : b.sp) {
    if (std::find(sp.begin(), sp.end(), v) == sp.end()) sp.push_back(v);
  }
  b.sp = sp;
}

std::string format_of(const stagemem_cli::CommandLine& line, stagemem::Diagnostics& d,
                      bool allow_csv) {
  std::string format = line.option("--format").value_or("text");
  if (line.option("--json")) format = "json";
  const bool ok = format == "text" || format == "json" || format == "markdown" ||
                  (allow_csv && format == "csv");
  if (!ok) {
    d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, json, " +
                            (allow_csv ? "csv, " : "") + "markdown");
  }
  return format;
}

}  // namespace

int run_plan(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = plan_options, .allow_lists = true});
  if (line.help) {
    std::printf(
        "usage: stagemem plan [options] (the parallel flags take comma-separated lists)\n\n"
        "The smallest GPU count at which some configuration fits every stage, and at each GPU\n"
        "count the best few configurations by each derived cost factor (never combined):\n"
        "  bubble fraction     (P-1)/(v M) interleaved, (P-1)/M 1F1B (M micro-batches per step)\n"
        "  recompute overhead  recomputed forward FLOPs / (3 x forward FLOPs), from shapes\n"
        "  headroom            device bytes - the binding stage's peak\n"
        "e.g.\n"
        "  stagemem plan --preset kimi-k3 --device mi355x --seq 8192 --gbs 896 \\\n"
        "    --optimizer distributed-muon --tp 1,2,4,8 --pp 4,5,6,7,8,9,10,11,12,13,14,15,16 \\\n"
        "    --vpp 1,2,3,4 --mbs 1,2,3,4 --recompute none,selective,full\n"
        "Searched: --tp --pp --vpp --cp --ep --etp --dp --mbs --recompute --sp --optimizer; a\n"
        "list allows its values, one value fixes it, an absent flag takes the default range\n"
        "(TP: powers of 2 within a node; PP 1..32; VPP 1..4; CP 1; EP: divisors of the experts;\n"
        "ETP 1; DP: divisors of gbs/mbs; mbs 1..4; recompute none,selective,full; SP on with TP\n"
        "> 1; optimizer: the configuration's). Layers split evenly; `stagemem layout` advises\n"
        "uneven splits. Exit codes: 0 something fits, 1 nothing fits, 2 bad input.\n\n"
        "options:\n%s%s",
        stagemem_cli::command_options_help(plan_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = format_of(line, d, true);
  for (std::string_view a : args) {
    if (!a.starts_with("--") || a.size() < 3) continue;
    const std::string name = normalized(a);
    if (std::find(derived_flags.begin(), derived_flags.end(), name) != derived_flags.end()) {
      d.error(std::string(a), name.starts_with("world")
                                  ? "plan derives the world size; bound the GPU count with "
                                    "--min-gpus/--max-gpus or --min-nodes/--max-nodes"
                                  : "plan splits layers evenly; `stagemem layout` advises uneven "
                                    "layouts for one configuration");
    }
  }
  if (!line.model_given) d.error("model", "give a model: --preset NAME, --hf-config FILE, ...");
  for (const auto& axis : line.axes) {
    bool searched = false;
    for (const SearchedFlag& f : searched_flags) searched |= axis.field->key == f.key;
    if (!searched) {
      d.error(axis.name,
              "plan searches only --tp --pp --vpp --cp --ep --etp --dp --mbs "
              "--recompute --sp --optimizer; give one value here");
    }
  }
  stagemem::PlanBounds bounds;
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
  bounds.top = int_option(line, "--top", 1, 100, d).value_or(2);
  bounds.tp_across_nodes = line.option("--tp-across-nodes").has_value();
  // --all lists every configuration with its own numbers: no pruning by the resident bound.
  bounds.exhaustive = line.option("--all").has_value();
  const std::int64_t threads = int_option(line, "--threads", 1, 64, d).value_or(1);
  read_bounds(args, line, bounds);

  std::optional<stagemem::Model> model;
  if (d.ok()) model = stagemem::resolve_model(line.config, d);
  if (!d.ok() || !model) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }

  const auto start = std::chrono::steady_clock::now();
  std::vector<stagemem::PlanSearch> searches;
  for (std::int64_t t = 0; t < threads; ++t)
    searches.emplace_back(line.config, *model, bounds, t, threads);
  if (!searches.front().diagnostics().ok()) {
    for (const auto& e : searches.front().diagnostics().errors) {
      // Name the flag the user typed for the plan's own fields.
      std::string field = e.field;
      if (field.starts_with("plan.")) {
        field = "--" + field.substr(5);
        std::replace(field.begin(), field.end(), '_', '-');
      }
      d.error(field, e.message);
    }
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }
  {
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
  std::vector<stagemem::PlanEntry> entries;
  std::int64_t searched = 0, estimated = 0, pruned = 0;
  for (const auto& s : searches) {
    entries.insert(entries.end(), s.entries().begin(), s.entries().end());
    searched += s.searched();
    estimated += s.estimated();
    pruned += s.pruned();
  }
  // When nothing fits: the valid configuration closest to fitting (most headroom), to say how far.
  std::optional<stagemem::PlanEntry> closest_entry;
  for (const stagemem::PlanEntry& e : entries) {
    if (!closest_entry || e.headroom_bytes > closest_entry->headroom_bytes) closest_entry = e;
  }
  std::vector<stagemem::PlanEntry> every;
  const bool all = line.option("--all").has_value();
  if (all) {
    every = entries;
    std::sort(every.begin(), every.end(),
              [](const auto& a, const auto& b) { return a.ordinal < b.ordinal; });
  }
  stagemem::PlanResult result = stagemem::select_plan(std::move(entries), bounds.top);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.configurations_searched = searched;
  result.configurations_estimated = estimated;
  result.configurations_pruned = pruned;
  result.device_bytes = searches.front().device_bytes();
  const Timing timing{seconds, seconds > 0 ? static_cast<double>(searched) / seconds : 0.0};

  const PlanContext context{&line.config, &*model, bounds.gpus_per_node,
                            line.option("--base").value_or("")};
  std::optional<Shown> minimum;
  if (result.has_minimum) minimum = show(context, result.minimum);
  std::optional<Shown> closest;
  if (!result.has_minimum && closest_entry) closest = show(context, *closest_entry);
  std::vector<Shown> rows;
  for (const auto& e : all ? every : result.frontier) rows.push_back(show(context, e));

  if (format == "json") {
    json frontier = json::array();
    for (const Shown& s : rows) frontier.push_back(entry_json(context, s));
    json out = {
        {"model", model->name},
        {"device",
         {{"name", line.config.device.bytes > 0 ? "custom" : line.config.device.preset},
          {"bytes", result.device_bytes}}},
        {"gpus_per_node", bounds.gpus_per_node},
        {"sequence_length", line.config.training.sequence_length},
        {"global_batch", line.config.training.global_batch},
        {"minimum", minimum ? entry_json(context, *minimum) : json(nullptr)},
        {"closest", closest ? entry_json(context, *closest) : json(nullptr)},
        {all ? "configurations" : "frontier", frontier},
        {"configurations_searched", result.configurations_searched},
        {"configurations_estimated", result.configurations_estimated},
        {"configurations_pruned", result.configurations_pruned},
        {"configurations_valid", result.configurations_valid},
        {"configurations_fitting", result.configurations_fitting},
        {"seconds", seconds},
        {"configurations_per_second", timing.per_second},
    };
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else if (format == "csv" || format == "markdown") {
    std::vector<Shown> shown;
    if (minimum && !all) {
      // The minimum first, marked, then the frontier.
      shown.push_back(*minimum);
    }
    shown.insert(shown.end(), rows.begin(), rows.end());
    if (format == "markdown") {
      std::printf(
          "stagemem plan: %s, %s searched, %s fit; minimum %s\n\n",
          stagemem::markdown_cell(model->name).c_str(),
          thousands(result.configurations_searched).c_str(),
          thousands(result.configurations_fitting).c_str(),
          minimum ? (std::to_string(minimum->entry.gpus) + " GPUs (first row)").c_str() : "none");
    }
    print_plan_rows(context, shown, format == "csv", minimum && !all, all);
  } else {
    print_plan_text(context, result, rows, minimum, closest, timing, all, bounds.top);
  }
  stagemem_cli::print_diagnostics(d);  // warnings only here
  return result.has_minimum ? 0 : exit_nothing_fits;
}

int run_layout(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = layout_options});
  if (line.help) {
    std::printf(
        "usage: stagemem layout [options]\n\n"
        "For the configuration's parallel layout, the uneven assignment of decoder layers (and\n"
        "of the MTP layers) to virtual stages that lowers the worst stage's peak, as Megatron's\n"
        "--pipeline-model-parallel-layout, with the gain over the even split. e.g.\n"
        "  stagemem layout --preset kimi-k3 --pp 16 --ep 28 --dp 28 --seq 8192 --gbs 896 \\\n"
        "    --recompute full --optimizer distributed-muon --device mi355x\n\noptions:\n%s%s",
        stagemem_cli::command_options_help(layout_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = format_of(line, d, false);
  if (!line.model_given) d.error("model", "give a model: --preset NAME, --hf-config FILE, ...");
  std::optional<stagemem::Model> model;
  if (d.ok()) model = stagemem::resolve_model(line.config, d);
  if (!d.ok() || !model) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }
  stagemem::AdvisorOptions options;
  options.align_attn_res = line.option("--align-attn-res").has_value();
  const stagemem::LayoutAdvice advice = stagemem::advise_layout(line.config, *model, options);
  if (!advice.diagnostics.ok()) {
    stagemem_cli::print_diagnostics(advice.diagnostics);
    return exit_bad_input;
  }
  stagemem::Config advised = line.config;
  advised.parallel.assignment = stagemem::StageAssignment::layout_string;
  advised.parallel.layout_string = advice.layout;
  const std::string link =
      line.option("--base").value_or("") + "#" + stagemem::encode_fragment(advised);
  const std::string megatron = stagemem::megatron_arguments(advised, *model);
  if (format == "json") {
    const json out = {{"model", model->name},
                      {"device_bytes", advice.device_bytes},
                      {"even_layout", advice.even_layout},
                      {"even_stage_peak_bytes", advice.even_stage_peaks},
                      {"even_worst_peak_bytes", advice.even_worst_peak},
                      {"even_binding_stage", advice.even_binding_stage},
                      {"layout", advice.layout},
                      {"stage_peak_bytes", advice.stage_peaks},
                      {"worst_peak_bytes", advice.worst_peak},
                      {"binding_stage", advice.binding_stage},
                      {"gain_bytes", advice.gain_bytes},
                      {"attn_res_blocks_split", advice.attn_res_blocks_split},
                      {"moves", advice.moves},
                      {"estimates", advice.estimates},
                      {"link", link},
                      {"megatron_args", megatron}};
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return 0;
  }
  const bool md = format == "markdown";
  // A custom model's name is the user's text: a cell's escaping keeps it inert in Markdown.
  const std::string name = md ? stagemem::markdown_cell(model->name) : model->name;
  std::printf("%slayout advice for %s (PP %lld x VPP %lld)%s\n\n", md ? "**" : "", name.c_str(),
              static_cast<long long>(line.config.parallel.pipeline_parallel),
              static_cast<long long>(line.config.parallel.virtual_stages), md ? "**" : "");
  std::printf("%seven split:  %s%s\n", md ? "- " : "", advice.even_layout.c_str(), "");
  std::printf("%sadvised:     %s\n", md ? "- " : "", advice.layout.c_str());
  std::printf("%sworst stage peak: even %s (stage %lld) -> advised %s (stage %lld): gain %s\n",
              md ? "- " : "", stagemem::format_gib(advice.even_worst_peak).c_str(),
              static_cast<long long>(advice.even_binding_stage),
              stagemem::format_gib(advice.worst_peak).c_str(),
              static_cast<long long>(advice.binding_stage),
              stagemem::bytes_text(advice.gain_bytes).c_str());
  if (advice.device_bytes > 0) {
    std::printf("%sdevice %s: headroom even %s, advised %s\n", md ? "- " : "",
                stagemem::format_gib(advice.device_bytes).c_str(),
                stagemem::format_gib(advice.device_bytes - advice.even_worst_peak).c_str(),
                stagemem::format_gib(advice.device_bytes - advice.worst_peak).c_str());
  }
  std::printf("%sAttnRes blocks split by stage boundaries: %lld; %lld moves, %lld estimates\n\n",
              md ? "- " : "", static_cast<long long>(advice.attn_res_blocks_split),
              static_cast<long long>(advice.moves), static_cast<long long>(advice.estimates));
  constexpr auto number = stagemem::CellKind::number;
  stagemem::Table table{.columns = {{"stage", stagemem::Align::left, number},
                                    {"even GiB", stagemem::Align::left, number},
                                    {"advised GiB", stagemem::Align::left, number},
                                    {"change GiB", stagemem::Align::left, number}}};
  for (std::size_t s = 0; s < advice.stage_peaks.size(); ++s) {
    const std::int64_t even = s < advice.even_stage_peaks.size() ? advice.even_stage_peaks[s] : 0;
    table.rows.push_back({std::to_string(s), stagemem::gib_number(even),
                          stagemem::gib_number(advice.stage_peaks[s]),
                          stagemem::gib_number(advice.stage_peaks[s] - even)});
  }
  std::printf("%s\n",
              md ? stagemem::markdown_table(table).c_str() : stagemem::text_table(table).c_str());
  std::printf("%slink: %s\n%smegatron: %s\n", md ? "- " : "", link.c_str(), md ? "- " : "",
              megatron.c_str());
  return 0;
}
