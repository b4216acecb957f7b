#include "report_command.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config.h"
#include "cross_check.h"
#include "devices.h"
#include "report.h"
#include "units.h"
#include "url_fragment.h"

namespace {

using stagemem::Diagnostics;
using stagemem::group_digits;

constexpr int exit_bad_input = 2;

constexpr const char* report_usage =
    "usage: stagemem report [options]\n"
    "\n"
    "Per-stage resident memory per rank, term by term (options apply left to right).\n"
    "\n"
    "model and layout:\n"
    "  --preset NAME            built-in model (see `stagemem presets`)\n"
    "  --url LINK               a whole stagemem link or its fragment, e.g. '#v=1&pp=8'\n"
    "  --tp N --pp N --vpp N --cp N --ep N --etp N   parallel sizes (integers >= 1)\n"
    "  --dp N --world-size N    data parallel size or world size (TP x PP x CP x DP)\n"
    "  --layers-per-stage LIST  explicit layers per virtual stage, e.g. 12,12,12,12,12,12,12,9\n"
    "training:\n"
    "  --optimizer KIND         adam | distributed-adam | muon | distributed-muon (default adam)\n"
    "  --weights-dtype D        dense linear matrices: bf16 | fp32 | fp8-tensor | fp8-block |\n"
    "                           mxfp8 | mxfp4 (default bf16)\n"
    "  --expert-weights-dtype D routed-expert matrices, same choices (default bf16)\n"
    "  --grad-dtype D           fp32 | bf16 main gradients (default fp32)\n"
    "  --master-dtype D         fp32 | fp16 master weights (default fp32)\n"
    "  --moment-dtype D         fp32 | bf16 | fp16 | fp8 optimizer moments (default fp32)\n"
    "  --muon-skip-routers      routers use AdamW instead of Muon\n"
    "  --muon-skip-experts      routed-expert matrices use AdamW instead of Muon\n"
    "  --muon-embedding-and-head  Muon also updates embedding and head\n"
    "  --cast-copy C            none | muon-group | all: a bf16 copy the optimizer keeps\n"
    "device:\n"
    "  --device NAME            h100-80gb | h200 | b200 | mi300x | mi355x\n"
    "  --device-bytes N         custom usable bytes per rank (overrides --device)\n"
    "measurements (never inputs of the model; compared in cross-checks):\n"
    "  --measured POINT[/STAGE]=AMOUNT@SOURCE\n"
    "      POINT: after-model-init | after-optimizer-init | after-first-step |\n"
    "             steady-state-peak | term:NAME (a term as the report names it)\n"
    "      AMOUNT: bytes, or a number with B, KiB, MiB, GiB, KB, MB, GB; STAGE defaults to 0\n"
    "      e.g. --measured 'after-first-step/0=141.1GiB@torch.cuda.memory_allocated, run 17'\n"
    "  --gap KIND[/STAGE]=AMOUNT@SOURCE   a MEASURED named gap (all stages without /STAGE)\n"
    "      KIND: allocator-fragmentation | communication-buffers | runtime-context |\n"
    "            math-library-workspaces\n"
    "output:\n"
    "  --json                   JSON: stages[] {index, layers, terms[], peak_bytes},\n"
    "                           binding_stage, device_bytes, cross_checks[]\n"
    "  --format F               text | markdown | csv (default text)\n"
    "\n"
    "Exit codes: 0 success, 2 bad input (the error names the field and the allowed values).\n";

void print_messages(const Diagnostics& d) {
  for (const auto& e : d.errors) std::fprintf(stderr, "error: %s: %s\n", e.field.c_str(), e.message.c_str());
  for (const auto& w : d.warnings) std::fprintf(stderr, "warning: %s: %s\n", w.field.c_str(), w.message.c_str());
}

bool parse_integer(std::string_view flag, std::string_view text, std::int64_t low,
                   std::int64_t& out, Diagnostics& d) {
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() || value < low) {
    d.error(std::string(flag), "'" + std::string(text.substr(0, 32)) + "' is not an integer >= " +
                                   std::to_string(low));
    return false;
  }
  out = value;
  return true;
}

// "141.1GiB", "7100000000", "7.1 GB" -> bytes (rounded to the nearest byte).
std::optional<std::int64_t> parse_amount(std::string_view text) {
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  std::size_t digits = 0;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + digits, value);
  if (error != std::errc() || end != text.data() + digits) return std::nullopt;
  std::string_view unit = text.substr(digits);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 1.0;
  if (unit.empty() || unit == "B") scale = 1.0;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = stagemem::bytes_per_mib;
  else if (unit == "GiB") scale = stagemem::bytes_per_gib;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = stagemem::bytes_per_gb;
  else return std::nullopt;
  const double bytes = std::round(value * scale);
  if (!(bytes >= 0.0) || bytes > static_cast<double>(stagemem::max_config_bytes)) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(bytes);
}

struct PointValue {
  std::string_view point;  // before '/' or '='
  std::int64_t stage = 0;
  bool has_stage = false;
  std::int64_t bytes = 0;
  std::string source;
};

// POINT[/STAGE]=AMOUNT@SOURCE
std::optional<PointValue> parse_point_value(std::string_view flag, std::string_view text,
                                            Diagnostics& d) {
  const auto eq = text.rfind('=');
  const auto at = text.find('@', eq == std::string_view::npos ? 0 : eq);
  if (eq == std::string_view::npos || at == std::string_view::npos) {
    d.error(std::string(flag), "expected POINT[/STAGE]=AMOUNT@SOURCE, got '" +
                                   std::string(text.substr(0, 64)) + "'");
    return std::nullopt;
  }
  PointValue out;
  std::string_view head = text.substr(0, eq);
  if (const auto slash = head.rfind('/'); slash != std::string_view::npos) {
    if (!parse_integer(std::string(flag) + " stage", head.substr(slash + 1), 0, out.stage, d)) {
      return std::nullopt;
    }
    out.has_stage = true;
    head = head.substr(0, slash);
  }
  out.point = head;
  const auto amount = parse_amount(text.substr(eq + 1, at - eq - 1));
  if (!amount) {
    d.error(std::string(flag), "'" + std::string(text.substr(eq + 1, at - eq - 1).substr(0, 32)) +
                                   "' is not an amount: bytes, or a number with B, KiB, MiB, "
                                   "GiB, KB, MB, GB");
    return std::nullopt;
  }
  out.bytes = *amount;
  out.source = std::string(text.substr(at + 1));
  return out;
}

template <typename Parse, typename Target>
void parse_choice(std::string_view flag, std::string_view value, Parse parse, Target& target,
                  std::string_view allowed, Diagnostics& d) {
  if (const auto parsed = parse(value)) {
    target = *parsed;
  } else {
    d.error(std::string(flag), "'" + std::string(value.substr(0, 32)) + "' is not one of: " +
                                   std::string(allowed));
  }
}

bool parse_list(std::string_view flag, std::string_view text, std::vector<std::int64_t>& out,
                Diagnostics& d) {
  out.clear();
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    std::int64_t value = 0;
    if (!parse_integer(flag, text.substr(start, comma - start), 0, value, d)) return false;
    out.push_back(value);
    if (out.size() > 4096) {
      d.error(std::string(flag), "has more than 4096 entries");
      return false;
    }
    start = comma + 1;
  }
  return true;
}

std::string layers_text(const stagemem::StageReport& stage) {
  std::string out;
  for (const auto& c : stage.chunks) {
    out += (out.empty() ? "" : ",") +
           (c.count > 0 ? std::to_string(c.first) + "-" + std::to_string(c.first + c.count - 1)
                        : std::string("-"));
  }
  return out;
}

std::string ratio_text(const stagemem::CrossCheck& c) {
  if (!c.has_ratio) return "n/a (nothing derived is alive)";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "x%.3f", c.ratio);
  return buffer;
}

void print_text(const stagemem::Report& report, const stagemem::Config& config) {
  using stagemem::format_gib;
  std::printf("model %s: %s parameters\n", report.model.c_str(),
              group_digits(report.total_parameters).c_str());
  std::printf("optimizer %s, weights %s (routed experts %s), grads %s; DP %lld, expert DP %lld\n",
              std::string(stagemem::optimizer_kind_name(config.optimizer.kind)).c_str(),
              std::string(stagemem::weight_dtype_name(config.precision.dense_weights)).c_str(),
              std::string(stagemem::weight_dtype_name(config.precision.expert_weights)).c_str(),
              std::string(stagemem::grad_dtype_name(config.precision.grads)).c_str(),
              static_cast<long long>(report.data_parallel),
              static_cast<long long>(report.expert_data_parallel));
  if (report.device.bytes > 0) {
    std::printf("device %s: %s B (%s); source: %s\n", report.device.name.c_str(),
                group_digits(report.device.bytes).c_str(), format_gib(report.device.bytes).c_str(),
                report.device.source.c_str());
  }
  std::printf("\n%-6s %-10s %-18s %-70s %s\n", "stage", "layers", "params/rank", "term",
              "bytes/rank");
  for (const auto& stage : report.stages) {
    const std::string layers = layers_text(stage);
    for (const auto& term : stage.terms) {
      std::printf("%-6lld %-10s %-18s %-70s %s (%s B) [%s, %s, %s]\n",
                  static_cast<long long>(stage.index), layers.c_str(),
                  group_digits(stage.parameters_per_rank).c_str(), term.name.c_str(),
                  format_gib(term.bytes).c_str(), group_digits(term.bytes).c_str(),
                  std::string(stagemem::family_name(term.family)).c_str(),
                  std::string(stagemem::tag_name(term.tag)).c_str(),
                  std::string(stagemem::allocation_point_name(term.allocated_at)).c_str());
      std::printf("%-36s = %s\n", "", term.formula.c_str());
    }
    std::printf("%-6lld total: resident %s, measured gaps %s, peak %s", static_cast<long long>(stage.index),
                format_gib(stage.resident_bytes).c_str(), format_gib(stage.gap_bytes).c_str(),
                format_gib(stage.peak_bytes).c_str());
    if (report.device.bytes > 0) {
      std::printf(", headroom %s", format_gib(stage.headroom_bytes).c_str());
    }
    std::printf("\n\n");
  }
  if (report.binding_stage >= 0) {
    std::printf("binding stage: %lld\n", static_cast<long long>(report.binding_stage));
  }
  for (const auto& c : report.cross_checks) {
    const auto& m = c.measurement;
    std::printf("\ncross-check at %s%s%s, stage %lld (source: %s)\n",
                std::string(stagemem::measurement_point_name(m.point)).c_str(),
                m.term.empty() ? "" : " ", m.term.c_str(), static_cast<long long>(m.stage),
                m.source.c_str());
    std::printf("  measured %s B (%s), derived %s B (%s), gap %s B (%s), ratio %s\n",
                group_digits(m.bytes).c_str(), format_gib(m.bytes).c_str(),
                group_digits(c.derived_bytes).c_str(), format_gib(c.derived_bytes).c_str(),
                group_digits(c.gap_bytes).c_str(), format_gib(c.gap_bytes).c_str(),
                ratio_text(c).c_str());
    for (const auto& e : c.explanations) std::printf("  - %s\n", e.c_str());
  }
}

std::string csv_field(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char ch : text) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

void print_table(const stagemem::Report& report, bool markdown) {
  if (markdown) {
    std::printf("| stage | layers | term | family | tag | allocated at | bytes/rank | GiB | formula |\n");
    std::printf("|---:|---|---|---|---|---|---:|---:|---|\n");
  } else {
    std::printf("stage,layers,term,family,tag,allocated_at,bytes,formula\n");
  }
  for (const auto& stage : report.stages) {
    for (const auto& t : stage.terms) {
      const std::string family(stagemem::family_name(t.family));
      const std::string tag(stagemem::tag_name(t.tag));
      const std::string at(stagemem::allocation_point_name(t.allocated_at));
      if (markdown) {
        char gib[32];
        std::snprintf(gib, sizeof gib, "%.2f", static_cast<double>(t.bytes) / stagemem::bytes_per_gib);
        std::printf("| %lld | %s | %s | %s | %s | %s | %s | %s | %s |\n",
                    static_cast<long long>(stage.index), layers_text(stage).c_str(),
                    markdown_cell(t.name).c_str(), family.c_str(), tag.c_str(), at.c_str(),
                    group_digits(t.bytes).c_str(), gib, markdown_cell(t.formula).c_str());
      } else {
        std::printf("%lld,%s,%s,%s,%s,%s,%lld,%s\n", static_cast<long long>(stage.index),
                    csv_field(layers_text(stage)).c_str(), csv_field(t.name).c_str(),
                    family.c_str(), csv_field(tag).c_str(), csv_field(at).c_str(),
                    static_cast<long long>(t.bytes), csv_field(t.formula).c_str());
      }
    }
    if (markdown) {
      std::printf("| %lld | %s | **peak** | | | | **%s** | **%.2f** | resident + measured gaps |\n",
                  static_cast<long long>(stage.index), layers_text(stage).c_str(),
                  group_digits(stage.peak_bytes).c_str(),
                  static_cast<double>(stage.peak_bytes) / stagemem::bytes_per_gib);
    }
  }
}

void print_json(const stagemem::Report& report, const Diagnostics& warnings) {
  using json = nlohmann::ordered_json;
  json out;
  out["model"] = report.model;
  out["total_parameters"] = report.total_parameters;
  out["data_parallel"] = report.data_parallel;
  out["expert_data_parallel"] = report.expert_data_parallel;
  out["device"] = {{"name", report.device.name},
                   {"bytes", report.device.bytes},
                   {"source", report.device.source}};
  out["device_bytes"] = report.device.bytes;
  json stages = json::array();
  for (const auto& s : report.stages) {
    json layers = json::array();
    for (const auto& c : s.chunks) layers.push_back({{"first", c.first}, {"count", c.count}});
    json terms = json::array();
    for (const auto& t : s.terms) {
      json term = {{"name", t.name},
                   {"family", std::string(stagemem::family_name(t.family))},
                   {"bytes", t.bytes},
                   {"formula", t.formula},
                   {"scaling", t.scaling},
                   {"tag", std::string(stagemem::tag_name(t.tag))},
                   {"allocated_at", std::string(stagemem::allocation_point_name(t.allocated_at))}};
      if (!t.source.empty()) term["source"] = t.source;
      terms.push_back(term);
    }
    json stage = {{"index", s.index},
                  {"layers", layers},
                  {"layer_count", s.layer_count},
                  {"parameters_per_rank", s.parameters_per_rank},
                  {"terms", terms},
                  {"resident_bytes", s.resident_bytes},
                  {"gap_bytes", s.gap_bytes},
                  {"peak_bytes", s.peak_bytes}};
    if (report.device.bytes > 0) stage["headroom_bytes"] = s.headroom_bytes;
    stages.push_back(stage);
  }
  out["stages"] = stages;
  out["binding_stage"] = report.binding_stage;
  json checks = json::array();
  for (const auto& c : report.cross_checks) {
    json check = {{"point", std::string(stagemem::measurement_point_name(c.measurement.point))},
                  {"stage", c.measurement.stage},
                  {"source", c.measurement.source},
                  {"measured_bytes", c.measurement.bytes},
                  {"derived_bytes", c.derived_bytes},
                  {"gap_bytes", c.gap_bytes},
                  {"ratio", c.has_ratio ? json(c.ratio) : json(nullptr)},
                  {"alive_terms", c.alive_terms},
                  {"explanations", c.explanations}};
    if (!c.measurement.term.empty()) check["term"] = c.measurement.term;
    checks.push_back(check);
  }
  out["cross_checks"] = checks;
  json warning_list = json::array();
  for (const auto& w : warnings.warnings) warning_list.push_back({{"field", w.field}, {"message", w.message}});
  out["warnings"] = warning_list;
  std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

}  // namespace

int run_report(const std::vector<std::string_view>& args) {
  stagemem::Config config;
  Diagnostics d;
  bool json_output = false;
  std::string format = "text";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(report_usage, stdout);
      return 0;
    }
    if (flag == "--json") { json_output = true; continue; }
    if (flag == "--muon-skip-routers") { config.optimizer.muon_routers = false; continue; }
    if (flag == "--muon-skip-experts") { config.optimizer.muon_expert_matrices = false; continue; }
    if (flag == "--muon-embedding-and-head") {
      config.optimizer.muon_embedding_and_head = true;
      continue;
    }
    if (!flag.starts_with("--")) {
      d.error(std::string(flag), "unknown argument; see `stagemem report --help`");
      continue;
    }
    if (i + 1 >= args.size()) {
      d.error(std::string(flag), "needs a value");
      break;
    }
    const std::string_view value = args[++i];
    auto& p = config.parallel;
    if (flag == "--preset") {
      config.model = std::string(value);
    } else if (flag == "--url") {
      auto decoded = stagemem::decode_fragment(value);
      for (auto& w : decoded.diagnostics.warnings) d.warnings.push_back(w);
      for (auto& e : decoded.diagnostics.errors) d.errors.push_back(e);
      config = decoded.config;
    } else if (flag == "--tp") parse_integer(flag, value, 1, p.tensor_parallel, d);
    else if (flag == "--pp") parse_integer(flag, value, 1, p.pipeline_parallel, d);
    else if (flag == "--vpp") parse_integer(flag, value, 1, p.virtual_stages, d);
    else if (flag == "--cp") parse_integer(flag, value, 1, p.context_parallel, d);
    else if (flag == "--ep") parse_integer(flag, value, 1, p.expert_parallel, d);
    else if (flag == "--etp") parse_integer(flag, value, 1, p.expert_tensor_parallel, d);
    else if (flag == "--dp") parse_integer(flag, value, 1, p.data_parallel, d);
    else if (flag == "--world-size") parse_integer(flag, value, 1, p.world_size, d);
    else if (flag == "--layers-per-stage") {
      p.assignment = stagemem::StageAssignment::explicit_list;
      parse_list(flag, value, p.layers_per_stage, d);
    } else if (flag == "--optimizer") {
      parse_choice(flag, value, stagemem::parse_optimizer_kind, config.optimizer.kind,
                   "adam, distributed-adam, muon, distributed-muon", d);
    } else if (flag == "--weights-dtype") {
      parse_choice(flag, value, stagemem::parse_weight_dtype, config.precision.dense_weights,
                   "bf16, fp32, fp8-tensor, fp8-block, mxfp8, mxfp4", d);
    } else if (flag == "--expert-weights-dtype") {
      parse_choice(flag, value, stagemem::parse_weight_dtype, config.precision.expert_weights,
                   "bf16, fp32, fp8-tensor, fp8-block, mxfp8, mxfp4", d);
    } else if (flag == "--grad-dtype") {
      parse_choice(flag, value, stagemem::parse_grad_dtype, config.precision.grads, "fp32, bf16", d);
    } else if (flag == "--master-dtype") {
      parse_choice(flag, value, stagemem::parse_master_dtype, config.optimizer.master_weights,
                   "fp32, fp16", d);
    } else if (flag == "--moment-dtype") {
      parse_choice(flag, value, stagemem::parse_moment_dtype, config.optimizer.moments,
                   "fp32, bf16, fp16, fp8", d);
    } else if (flag == "--cast-copy") {
      parse_choice(flag, value, stagemem::parse_cast_copy, config.optimizer.cast_copy,
                   "none, muon-group, all", d);
    } else if (flag == "--device") {
      config.device.preset = std::string(value);
    } else if (flag == "--device-bytes") {
      parse_integer(flag, value, 1, config.device.bytes, d);
    } else if (flag == "--measured") {
      if (const auto pv = parse_point_value(flag, value, d)) {
        stagemem::Measurement m{.stage = pv->stage, .bytes = pv->bytes, .source = pv->source};
        if (pv->point.starts_with("term:")) {
          m.point = stagemem::MeasurementPoint::term;
          m.term = std::string(pv->point.substr(5));
        } else if (const auto point = stagemem::parse_measurement_point(pv->point);
                   point && *point != stagemem::MeasurementPoint::term) {
          m.point = *point;
        } else {
          d.error("--measured", "'" + std::string(pv->point.substr(0, 32)) +
                                    "' is not one of: after-model-init, after-optimizer-init, "
                                    "after-first-step, steady-state-peak, term:NAME");
        }
        config.measurements.push_back(m);
      }
    } else if (flag == "--gap") {
      if (const auto pv = parse_point_value(flag, value, d)) {
        stagemem::GapEntry g{.stage = pv->has_stage ? pv->stage : -1, .bytes = pv->bytes,
                             .source = pv->source};
        if (const auto kind = stagemem::parse_gap_kind(pv->point)) {
          g.kind = *kind;
        } else {
          d.error("--gap", "'" + std::string(pv->point.substr(0, 32)) +
                               "' is not one of: allocator-fragmentation, communication-buffers, "
                               "runtime-context, math-library-workspaces");
        }
        config.gaps.push_back(g);
      }
    } else if (flag == "--format") {
      format = std::string(value);
      if (format != "text" && format != "markdown" && format != "csv") {
        d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, markdown, csv");
      }
    } else {
      d.error(std::string(flag), "unknown option; see `stagemem report --help`");
    }
  }
  if (!d.ok()) {
    print_messages(d);
    return exit_bad_input;
  }
  const stagemem::Report report = stagemem::estimate(config);
  if (!report.diagnostics.ok()) {
    print_messages(d);
    print_messages(report.diagnostics);
    return exit_bad_input;
  }
  d.warnings.insert(d.warnings.end(), report.diagnostics.warnings.begin(),
                    report.diagnostics.warnings.end());
  if (json_output) {
    print_json(report, d);
    return 0;
  }
  if (format == "markdown") print_table(report, true);
  else if (format == "csv") print_table(report, false);
  else print_text(report, config);
  print_messages(d);  // warnings only here
  return 0;
}

int run_probe_check(const std::vector<std::string_view>& args) {
  bool json_output = false;
  for (std::string_view a : args) {
    if (a == "--json") {
      json_output = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs("usage: stagemem probe-check [--json]\n\nThe users' optimizer-state "
                 "measurements on a 99M-parameter probe (TP 1, PP 1, EP 1, world = DP) next to "
                 "the derived bytes per parameter, with the gap.\n", stdout);
      return 0;
    } else {
      std::fprintf(stderr, "error: %s: unknown argument; see `stagemem probe-check --help`\n",
                   std::string(a).c_str());
      return exit_bad_input;
    }
  }
  const auto checks = stagemem::optimizer_state_probe_cross_checks();
  if (json_output) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& c : checks) {
      rows.push_back({{"optimizer", std::string(stagemem::optimizer_kind_name(c.measurement.optimizer))},
                      {"data_parallel", c.measurement.data_parallel},
                      {"derived_bytes_per_parameter", c.derived_bytes_per_parameter},
                      {"derived_formula", c.derived_formula},
                      {"measured_bytes_per_parameter", c.measurement.measured_bytes_per_parameter},
                      {"gap_bytes_per_parameter", c.gap_bytes_per_parameter},
                      {"ratio", c.ratio},
                      {"explanations", c.explanations}});
    }
    std::printf("%s\n", rows.dump(2).c_str());
    return 0;
  }
  std::printf("%-18s %-5s %-80s %8s %9s %8s %7s\n", "optimizer", "DP", "derived formula (B/param)",
              "derived", "measured", "gap", "ratio");
  for (const auto& c : checks) {
    const std::string dp =
        c.measurement.data_parallel == 0 ? "any" : std::to_string(c.measurement.data_parallel);
    std::printf("%-18s %-5s %-80s %8.2f %9.2f %+8.2f %7.3f\n",
                std::string(stagemem::optimizer_kind_name(c.measurement.optimizer)).c_str(),
                dp.c_str(), c.derived_formula.c_str(), c.derived_bytes_per_parameter,
                c.measurement.measured_bytes_per_parameter, c.gap_bytes_per_parameter, c.ratio);
  }
  std::printf("\nmeasured values never feed the model; the gaps are shown, not absorbed.\n");
  return 0;
}
