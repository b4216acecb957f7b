#include "params_command.h"

#include <charconv>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "hf_config.h"
#include "layout.h"
#include "parameters.h"
#include "presets.h"
#include "units.h"

namespace {

using stagemem::Diagnostics;
using stagemem::group_digits;

constexpr int exit_bad_input = 2;

constexpr const char* params_usage =
    "usage: stagemem params (--preset NAME | --hf-config FILE) [options]\n"
    "\n"
    "Exact parameter counts: total, per component, per pipeline stage and per rank.\n"
    "\n"
    "  --preset NAME            built-in model (see `stagemem presets`)\n"
    "  --hf-config FILE         a Hugging Face config.json\n"
    "  --production-layout      use the preset's production layout (kimi-k3), no other parallel flags\n"
    "  --tp N --pp N --vpp N --cp N --ep N --etp N   parallel sizes (integers >= 1)\n"
    "  --dp N --world-size N    data parallel size or world size (TP x PP x CP x DP)\n"
    "  --sequence-parallel      sequence parallelism on\n"
    "  --vocab-multiple N       pad the vocabulary to a multiple of N x TP (default 128)\n"
    "  --layers-per-stage LIST  explicit layers per virtual stage, e.g. 12,12,12,12,12,12,12,9\n"
    "  --first-stage-layers N   Megatron --decoder-first-pipeline-num-layers\n"
    "  --last-stage-layers N    Megatron --decoder-last-pipeline-num-layers\n"
    "  --attnres-aligned        whole AttnRes blocks per stage, remainder on the last\n"
    "  --layout-string STR      Megatron --pipeline-model-parallel-layout, e.g. 'Et*3|(tt|)*29,m|L'\n"
    "  --json                   JSON instead of the table\n";

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

std::optional<std::string> read_file(const std::string& path, Diagnostics& d) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    d.error("--hf-config", "cannot open '" + path + "'");
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string chunk_layers(const stagemem::VirtualStage& v) {
  std::string out;
  if (v.embedding) out += "E ";
  if (v.layer_count > 0) {
    out += std::to_string(v.first_layer) + "-" + std::to_string(v.first_layer + v.layer_count - 1);
  } else {
    out += "-";
  }
  if (v.mtp_layers > 0) out += " +" + std::to_string(v.mtp_layers) + "mtp";
  if (v.head) out += " L";
  return out;
}

nlohmann::ordered_json components_json(const stagemem::ParameterCounts& counts) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (int i = 0; i < stagemem::component_count; ++i) {
    const auto c = static_cast<stagemem::Component>(i);
    out[std::string(stagemem::component_name(c))] = counts[c];
  }
  return out;
}

}  // namespace

int run_params(const std::vector<std::string_view>& args) {
  Diagnostics d;
  std::optional<std::string> preset, hf_path;
  bool json_output = false, production = false;
  stagemem::ParallelLayout layout;
  std::optional<stagemem::StageAssignment> assignment;
  auto set_assignment = [&](stagemem::StageAssignment a, std::string_view flag) {
    if (assignment && *assignment != a) {
      d.error(std::string(flag), "only one of --layers-per-stage, --first/last-stage-layers, "
                                 "--attnres-aligned, --layout-string may be given");
    }
    assignment = a;
  };
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string_view flag = args[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(params_usage, stdout);
      return 0;
    }
    if (flag == "--json") { json_output = true; continue; }
    if (flag == "--sequence-parallel") { layout.sequence_parallel = true; continue; }
    if (flag == "--production-layout") { production = true; continue; }
    if (flag == "--attnres-aligned") {
      set_assignment(stagemem::StageAssignment::attn_res_aligned, flag);
      continue;
    }
    if (!flag.starts_with("--")) {
      d.error(std::string(flag), "unknown argument; see `stagemem params --help`");
      continue;
    }
    if (i + 1 >= args.size()) {
      d.error(std::string(flag), "needs a value");
      break;
    }
    const std::string_view value = args[++i];
    if (flag == "--preset") preset = std::string(value);
    else if (flag == "--hf-config") hf_path = std::string(value);
    else if (flag == "--tp") parse_integer(flag, value, 1, layout.tensor_parallel, d);
    else if (flag == "--pp") parse_integer(flag, value, 1, layout.pipeline_parallel, d);
    else if (flag == "--vpp") parse_integer(flag, value, 1, layout.virtual_stages, d);
    else if (flag == "--cp") parse_integer(flag, value, 1, layout.context_parallel, d);
    else if (flag == "--ep") parse_integer(flag, value, 1, layout.expert_parallel, d);
    else if (flag == "--etp") parse_integer(flag, value, 1, layout.expert_tensor_parallel, d);
    else if (flag == "--dp") parse_integer(flag, value, 1, layout.data_parallel, d);
    else if (flag == "--world-size") parse_integer(flag, value, 1, layout.world_size, d);
    else if (flag == "--vocab-multiple") parse_integer(flag, value, 1, layout.vocab_multiple, d);
    else if (flag == "--layers-per-stage") {
      set_assignment(stagemem::StageAssignment::explicit_list, flag);
      parse_list(flag, value, layout.layers_per_stage, d);
    } else if (flag == "--first-stage-layers") {
      set_assignment(stagemem::StageAssignment::first_last, flag);
      parse_integer(flag, value, 1, layout.first_stage_layers, d);
    } else if (flag == "--last-stage-layers") {
      set_assignment(stagemem::StageAssignment::first_last, flag);
      parse_integer(flag, value, 1, layout.last_stage_layers, d);
    } else if (flag == "--layout-string") {
      set_assignment(stagemem::StageAssignment::layout_string, flag);
      layout.layout_string = std::string(value);
    } else {
      d.error(std::string(flag), "unknown option; see `stagemem params --help`");
    }
  }
  if (preset.has_value() == hf_path.has_value()) {
    d.error("model", "give exactly one of --preset NAME or --hf-config FILE");
  }
  if (!d.ok()) {
    print_messages(d);
    return exit_bad_input;
  }

  std::optional<stagemem::Model> model;
  if (preset) {
    model = stagemem::find_preset(*preset);
    if (!model) {
      std::string names;
      for (std::string_view n : stagemem::preset_names()) names += (names.empty() ? "" : ", ") + std::string(n);
      d.error("--preset", "unknown preset '" + preset->substr(0, 64) + "'; known presets: " + names);
    }
  } else if (const auto text = read_file(*hf_path, d)) {
    stagemem::HfImport imported = stagemem::import_hf_config(*text);
    d.errors.insert(d.errors.end(), imported.diagnostics.errors.begin(), imported.diagnostics.errors.end());
    d.warnings.insert(d.warnings.end(), imported.diagnostics.warnings.begin(), imported.diagnostics.warnings.end());
    model = std::move(imported.model);
  }
  if (!model || !d.ok()) {
    print_messages(d);
    return exit_bad_input;
  }
  if (production) {
    const auto production_layout =
        preset ? stagemem::preset_production_layout(*preset) : std::nullopt;
    if (!production_layout) {
      d.error("--production-layout", "this model has no production layout");
      print_messages(d);
      return exit_bad_input;
    }
    // The production layout is taken whole: mixing it with parallel flags would be ambiguous.
    if (!(layout == stagemem::ParallelLayout{}) || assignment) {
      d.error("--production-layout", "cannot be combined with other parallel flags");
      print_messages(d);
      return exit_bad_input;
    }
    layout = production_layout->layout;
  }
  if (assignment) layout.assignment = *assignment;

  stagemem::validate_layout(*model, layout, d);
  if (!d.ok()) {
    print_messages(d);
    return exit_bad_input;
  }
  Diagnostics repeated;  // validate_layout already reported the plan's warnings
  const auto plan = stagemem::plan_stages(*model, layout, repeated);
  if (!plan) {
    print_messages(repeated);
    return exit_bad_input;
  }
  const auto stages = stagemem::stage_parameters(*model, layout, *plan);
  const stagemem::ParameterCounts counts = stagemem::model_parameters(*model);
  const std::int64_t total = counts.total();

  if (json_output) {
    nlohmann::ordered_json out;
    out["model"] = model->name;
    out["total_params"] = total;
    out["total_params_without_mtp"] = stagemem::total_parameters_without_mtp(*model);
    out["components"] = components_json(counts);
    out["layout"] = {{"tp", layout.tensor_parallel},
                     {"pp", layout.pipeline_parallel},
                     {"vpp", plan->chunks_per_rank},
                     {"cp", layout.context_parallel},
                     {"ep", layout.expert_parallel},
                     {"etp", layout.expert_tensor_parallel},
                     {"dp", stagemem::data_parallel_size(layout)},
                     {"expert_dp", stagemem::expert_data_parallel_size(layout)},
                     {"world_size", stagemem::world_size(layout)},
                     {"sequence_parallel", layout.sequence_parallel},
                     {"padded_vocab", stagemem::padded_vocab(model->vocab, layout)},
                     {"assignment", std::string(stagemem::stage_assignment_name(layout.assignment))},
                     {"layers_per_stage", plan->layers_per_rank()}};
    nlohmann::ordered_json stage_list = nlohmann::ordered_json::array();
    for (const auto& s : stages) {
      nlohmann::ordered_json chunks = nlohmann::ordered_json::array();
      for (const auto& v : s.chunks) {
        chunks.push_back({{"chunk", v.chunk},
                          {"first_layer", v.first_layer},
                          {"layer_count", v.layer_count},
                          {"embedding", v.embedding},
                          {"head", v.head},
                          {"mtp_layers", v.mtp_layers}});
      }
      const auto& split = s.per_rank_split;
      stage_list.push_back(
          {{"stage", s.pipeline_rank},
           {"layer_count", s.layer_count},
           {"chunks", chunks},
           {"logical_params", s.logical.total()},
           {"logical_components", components_json(s.logical)},
           {"per_rank",
            {{"total", split.total()},
             {"dense", split.dense()},
             {"expert", split.expert()},
             {"replicated", split.replicated},
             {"tensor_parallel_shard", split.tensor_parallel},
             {"expert_parallel_shard", split.expert_parallel},
             {"vocab_padding", split.vocab_padding},
             {"embedding_replicas", split.embedding_replicas},
             {"components", components_json(s.per_rank)}}}});
    }
    out["stages"] = stage_list;
    nlohmann::ordered_json warnings = nlohmann::ordered_json::array();
    for (const auto& w : d.warnings) warnings.push_back({{"field", w.field}, {"message", w.message}});
    out["warnings"] = warnings;
    std::printf("%s\n", out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("model %s: %s parameters", model->name.c_str(), group_digits(total).c_str());
  if (model->mtp_layers > 0) {
    std::printf(" (%s without MTP)", group_digits(stagemem::total_parameters_without_mtp(*model)).c_str());
  }
  std::printf("\n\n%-20s %22s %8s\n", "component", "parameters", "share");
  for (int i = 0; i < stagemem::component_count; ++i) {
    const auto c = static_cast<stagemem::Component>(i);
    if (counts[c] == 0) continue;
    std::printf("%-20s %22s %7.3f%%\n", std::string(stagemem::component_name(c)).c_str(),
                group_digits(counts[c]).c_str(),
                100.0 * static_cast<double>(counts[c]) / static_cast<double>(total));
  }
  std::printf("\nlayout: TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, ETP %lld, DP %lld "
              "(expert DP %lld), world %lld, %s assignment\n",
              static_cast<long long>(layout.tensor_parallel),
              static_cast<long long>(layout.pipeline_parallel),
              static_cast<long long>(plan->chunks_per_rank),
              static_cast<long long>(layout.context_parallel),
              static_cast<long long>(layout.expert_parallel),
              static_cast<long long>(layout.expert_tensor_parallel),
              static_cast<long long>(stagemem::data_parallel_size(layout)),
              static_cast<long long>(stagemem::expert_data_parallel_size(layout)),
              static_cast<long long>(stagemem::world_size(layout)),
              std::string(stagemem::stage_assignment_name(layout.assignment)).c_str());
  std::printf("\n%-5s %-24s %18s %18s %18s %18s %16s\n", "stage", "layers", "logical params",
              "params/rank", "dense/rank", "expert/rank", "padding+copies");
  for (const auto& s : stages) {
    std::string layers;
    for (const auto& v : s.chunks) layers += (layers.empty() ? "" : ", ") + chunk_layers(v);
    const auto& split = s.per_rank_split;
    std::printf("%-5lld %-24s %18s %18s %18s %18s %16s\n", static_cast<long long>(s.pipeline_rank),
                layers.c_str(), group_digits(s.logical.total()).c_str(),
                group_digits(split.total()).c_str(), group_digits(split.dense()).c_str(),
                group_digits(split.expert()).c_str(),
                group_digits(split.vocab_padding + split.embedding_replicas).c_str());
  }
  print_messages(d);  // warnings only here
  return 0;
}
