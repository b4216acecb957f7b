#include "params_command.h"

#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "command_steps.h"
#include "config/config.h"
#include "model/parameters.h"
#include "model/presets.h"
#include "parallel/layout.h"
#include "render/vocabulary.h"

namespace {

using json = nlohmann::ordered_json;
using stagemem::Diagnostics;
using stagemem::group_digits;

constexpr std::array<stagemem_cli::CommandOption, 1> params_options = {{
    {"--json", "", "JSON instead of the table"},
}};

constexpr const char* params_help =
    "usage: stagemem params (--preset NAME | --hf-config FILE | --config FILE | --url "
    "LINK) [options]\n\nExact parameter counts: total, per component, per pipeline "
    "stage and per rank. The same flags as `stagemem report`; only the model and the "
    "parallel layout matter here.\n\noutput:\n";

// The counts `params` prints: the model's, per component, and per stage and rank.
struct ParamsCounts {
  const stagemem::Model& model;
  const stagemem::ParallelLayout& layout;
  stagemem::StagePlan plan;
  std::vector<stagemem::StageParameters> stages;
  stagemem::ParameterCounts counts;
};

std::string chunk_layers(const stagemem::VirtualStage& v) {
  std::string out;
  if (v.embedding) out += "E ";
  out += stagemem::layer_range_text(v.first_layer, v.layer_count);
  if (v.mtp_layers > 0) out += " +" + std::to_string(v.mtp_layers) + "mtp";
  if (v.head) out += " L";
  return out;
}

json components_json(const stagemem::ParameterCounts& counts) {
  json out = json::object();
  for (int i = 0; i < stagemem::component_count; ++i) {
    const auto c = static_cast<stagemem::Component>(i);
    out[std::string(stagemem::component_name(c))] = counts[c];
  }
  return out;
}

json layout_json(const ParamsCounts& p) {
  const stagemem::ParallelLayout& layout = p.layout;
  return {{"tp", layout.tensor_parallel},
          {"pp", layout.pipeline_parallel},
          {"vpp", p.plan.chunks_per_rank},
          {"cp", layout.context_parallel},
          {"ep", layout.expert_parallel},
          {"etp", layout.expert_tensor_parallel},
          {"dp", stagemem::data_parallel_size(layout)},
          {"expert_dp", stagemem::expert_data_parallel_size(layout)},
          {"world_size", stagemem::world_size(layout)},
          {"sequence_parallel", layout.sequence_parallel},
          {"padded_vocab", stagemem::padded_vocab(p.model.vocab, layout)},
          {"assignment", std::string(stagemem::stage_assignment_name(layout.assignment))},
          {"layers_per_stage", p.plan.layers_per_rank()}};
}

json stage_json(const stagemem::StageParameters& s) {
  json chunks = json::array();
  for (const auto& v : s.chunks) {
    chunks.push_back({{"chunk", v.chunk},
                      {"first_layer", v.first_layer},
                      {"layer_count", v.layer_count},
                      {"embedding", v.embedding},
                      {"head", v.head},
                      {"mtp_layers", v.mtp_layers}});
  }
  const auto& split = s.per_rank_split;
  return {{"stage", s.pipeline_rank},
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
            {"components", components_json(s.per_rank)}}}};
}

// The JSON carries the warnings itself.
void print_params_json(const ParamsCounts& p, const Diagnostics& d) {
  json out;
  out["model"] = p.model.name;
  out["total_params"] = p.counts.total();
  out["total_params_without_mtp"] = stagemem::total_parameters_without_mtp(p.model);
  out["components"] = components_json(p.counts);
  out["layout"] = layout_json(p);
  json stage_list = json::array();
  for (const auto& s : p.stages) stage_list.push_back(stage_json(s));
  out["stages"] = stage_list;
  json warnings = json::array();
  for (const auto& w : d.warnings) warnings.push_back({{"field", w.field}, {"message", w.message}});
  out["warnings"] = warnings;
  stagemem_cli::print_json(out);
}

// The total and its share per component.
void print_components_text(const ParamsCounts& p) {
  const std::int64_t total = p.counts.total();
  std::printf("model %s: %s parameters", p.model.name.c_str(), group_digits(total).c_str());
  if (p.model.mtp_layers > 0) {
    std::printf(" (%s without MTP)",
                group_digits(stagemem::total_parameters_without_mtp(p.model)).c_str());
  }
  std::printf("\n\n%-20s %22s %8s\n", "component", "parameters", "share");
  for (int i = 0; i < stagemem::component_count; ++i) {
    const auto c = static_cast<stagemem::Component>(i);
    if (p.counts[c] == 0) continue;
    std::printf("%-20s %22s %7.3f%%\n", std::string(stagemem::component_name(c)).c_str(),
                group_digits(p.counts[c]).c_str(),
                100.0 * static_cast<double>(p.counts[c]) / static_cast<double>(total));
  }
}

// The layout line, then per stage its layers and parameters per rank.
void print_stages_text(const ParamsCounts& p) {
  const stagemem::ParallelLayout& layout = p.layout;
  std::printf(
      "\nlayout: TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, ETP %lld, DP %lld "
      "(expert DP %lld), world %lld, %s assignment\n",
      static_cast<long long>(layout.tensor_parallel),
      static_cast<long long>(layout.pipeline_parallel),
      static_cast<long long>(p.plan.chunks_per_rank),
      static_cast<long long>(layout.context_parallel),
      static_cast<long long>(layout.expert_parallel),
      static_cast<long long>(layout.expert_tensor_parallel),
      static_cast<long long>(stagemem::data_parallel_size(layout)),
      static_cast<long long>(stagemem::expert_data_parallel_size(layout)),
      static_cast<long long>(stagemem::world_size(layout)),
      std::string(stagemem::stage_assignment_name(layout.assignment)).c_str());
  std::printf("\n%-5s %-24s %18s %18s %18s %18s %16s\n", "stage", "layers", "logical params",
              "params/rank", "dense/rank", "expert/rank", "padding+copies");
  for (const auto& s : p.stages) {
    std::string layers;
    // Chunks as a report's stage spells its layers (vocabulary.h): "E 0-2,33-34 L".
    for (const auto& v : s.chunks) layers += (layers.empty() ? "" : ",") + chunk_layers(v);
    const auto& split = s.per_rank_split;
    std::printf("%-5lld %-24s %18s %18s %18s %18s %16s\n", static_cast<long long>(s.pipeline_rank),
                layers.c_str(), group_digits(s.logical.total()).c_str(),
                group_digits(split.total()).c_str(), group_digits(split.dense()).c_str(),
                group_digits(split.expert()).c_str(),
                group_digits(split.vocab_padding + split.embedding_replicas).c_str());
  }
}

}  // namespace

int run_params(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = params_options});
  if (line.help) {
    stagemem_cli::print_command_help(params_help, params_options);
    return stagemem_cli::exit_ok;
  }
  Diagnostics& d = line.diagnostics;
  const bool json_output = line.option("--json").has_value();
  stagemem_cli::require_model(line,
                              "give the model: --preset NAME, --hf-config FILE, --custom TEXT, "
                              "--config FILE or --url LINK");
  const std::optional<stagemem::Model> model = stagemem_cli::resolved_model(line);
  if (!model) return stagemem_cli::refuse(d);
  const stagemem::ParallelLayout& layout = line.config.parallel;
  stagemem::validate_layout(*model, layout, d);
  if (!d.ok()) return stagemem_cli::refuse(d);
  Diagnostics repeated;  // validate_layout already reported the plan's warnings
  const std::optional<stagemem::StagePlan> plan = stagemem::plan_stages(*model, layout, repeated);
  if (!plan) return stagemem_cli::refuse(repeated);

  const ParamsCounts counts{*model, layout, *plan,
                            stagemem::stage_parameters(*model, layout, *plan),
                            stagemem::model_parameters(*model)};
  if (json_output) {
    print_params_json(counts, d);
    return stagemem_cli::exit_ok;
  }
  print_components_text(counts);
  print_stages_text(counts);
  return stagemem_cli::finish(stagemem_cli::exit_ok, d);  // warnings only here
}
