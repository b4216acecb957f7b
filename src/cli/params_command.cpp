#include "params_command.h"

#include <array>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "config_sources.h"
#include "model/parameters.h"
#include "model/presets.h"
#include "parallel/layout.h"
#include "render/vocabulary.h"

namespace {

using stagemem::Diagnostics;
using stagemem::group_digits;

using stagemem_cli::exit_bad_input;
using stagemem_cli::print_diagnostics;

constexpr std::array<stagemem_cli::CommandOption, 1> params_options = {{
    {"--json", "", "JSON instead of the table"},
}};

std::string chunk_layers(const stagemem::VirtualStage& v) {
  std::string out;
  if (v.embedding) out += "E ";
  out += stagemem::layer_range_text(v.first_layer, v.layer_count);
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
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = params_options});
  if (line.help) {
    std::printf(
        "usage: stagemem params (--preset NAME | --hf-config FILE | --config FILE | --url "
        "LINK) [options]\n\nExact parameter counts: total, per component, per pipeline "
        "stage and per rank. The same flags as `stagemem report`; only the model and the "
        "parallel layout matter here.\n\noutput:\n%s%s",
        stagemem_cli::command_options_help(params_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  Diagnostics& d = line.diagnostics;
  const bool json_output = line.option("--json").has_value();
  if (!line.model_given) {
    d.error("model",
            "give the model: --preset NAME, --hf-config FILE, --custom TEXT, --config FILE "
            "or --url LINK");
  }
  if (!d.ok()) {
    print_diagnostics(d);
    return exit_bad_input;
  }
  const std::optional<stagemem::Model> model = stagemem::resolve_model(line.config, d);
  if (!model || !d.ok()) {
    print_diagnostics(d);
    return exit_bad_input;
  }
  const stagemem::ParallelLayout& layout = line.config.parallel;
  stagemem::validate_layout(*model, layout, d);
  if (!d.ok()) {
    print_diagnostics(d);
    return exit_bad_input;
  }
  Diagnostics repeated;  // validate_layout already reported the plan's warnings
  const auto plan = stagemem::plan_stages(*model, layout, repeated);
  if (!plan) {
    print_diagnostics(repeated);
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
    out["layout"] = {
        {"tp", layout.tensor_parallel},
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
      stage_list.push_back({{"stage", s.pipeline_rank},
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
    for (const auto& w : d.warnings)
      warnings.push_back({{"field", w.field}, {"message", w.message}});
    out["warnings"] = warnings;
    std::printf("%s\n",
                out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
    return 0;
  }

  std::printf("model %s: %s parameters", model->name.c_str(), group_digits(total).c_str());
  if (model->mtp_layers > 0) {
    std::printf(" (%s without MTP)",
                group_digits(stagemem::total_parameters_without_mtp(*model)).c_str());
  }
  std::printf("\n\n%-20s %22s %8s\n", "component", "parameters", "share");
  for (int i = 0; i < stagemem::component_count; ++i) {
    const auto c = static_cast<stagemem::Component>(i);
    if (counts[c] == 0) continue;
    std::printf("%-20s %22s %7.3f%%\n", std::string(stagemem::component_name(c)).c_str(),
                group_digits(counts[c]).c_str(),
                100.0 * static_cast<double>(counts[c]) / static_cast<double>(total));
  }
  std::printf(
      "\nlayout: TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, ETP %lld, DP %lld "
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
    // Chunks as a report's stage spells its layers (vocabulary.h): "E 0-2,33-34 L".
    for (const auto& v : s.chunks) layers += (layers.empty() ? "" : ",") + chunk_layers(v);
    const auto& split = s.per_rank_split;
    std::printf("%-5lld %-24s %18s %18s %18s %18s %16s\n", static_cast<long long>(s.pipeline_rank),
                layers.c_str(), group_digits(s.logical.total()).c_str(),
                group_digits(split.total()).c_str(), group_digits(split.dense()).c_str(),
                group_digits(split.expert()).c_str(),
                group_digits(split.vocab_padding + split.embedding_replicas).c_str());
  }
  print_diagnostics(d);  // warnings only here
  return 0;
}
