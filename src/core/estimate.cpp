// estimate.cpp — the orchestration: plan the stages, then collect each stage's terms from the
// modules that own their physics (resident_terms, gaps), then the device check and cross-checks.
#include <algorithm>

#include "cross_check.h"
#include "devices.h"
#include "gaps.h"
#include "presets.h"
#include "report.h"
#include "resident_terms.h"

namespace stagemem {

std::string_view family_name(Family family) {
  switch (family) {
    case Family::resident: return "resident";
    case Family::activation: return "activation";
    case Family::transient: return "transient";
    case Family::gap: return "gap";
  }
  return "unknown";
}

std::string_view tag_name(Tag tag) {
  switch (tag) {
    case Tag::derived: return "DERIVED";
    case Tag::measured: return "MEASURED";
    case Tag::not_measured: return "NOT MEASURED";
  }
  return "unknown";
}

std::string_view allocation_point_name(AllocationPoint point) {
  switch (point) {
    case AllocationPoint::model_init: return "model init";
    case AllocationPoint::optimizer_init: return "optimizer init";
    case AllocationPoint::first_step: return "first optimizer step";
    case AllocationPoint::forward: return "forward";
    case AllocationPoint::backward: return "backward";
  }
  return "unknown";
}

Report estimate(const Config& config) {
  Report report;
  report.model = config.model;
  report.diagnostics = validate(config);
  if (!report.diagnostics.ok()) return report;
  const Model model = *find_preset(config.model);
  report.total_parameters = total_parameters(model);
  report.data_parallel = data_parallel_size(config.parallel);
  report.expert_data_parallel = expert_data_parallel_size(config.parallel);

  Diagnostics repeated;  // validate() already reported the plan's warnings
  const auto plan = plan_stages(model, config.parallel, repeated);
  if (!plan) {
    report.diagnostics.errors.insert(report.diagnostics.errors.end(), repeated.errors.begin(),
                                     repeated.errors.end());
    return report;
  }
  if (config.device.bytes > 0) {
    report.device = {.name = "custom", .bytes = config.device.bytes,
                     .source = "entered by the user (device.bytes)"};
  } else if (const auto device = find_device(config.device.preset)) {
    report.device = {.name = std::string(device->name), .bytes = device->bytes,
                     .source = std::string(device->source)};
  }
  const StateShards shards = state_shards(config.optimizer.kind, config.parallel);
  std::int64_t largest = -1;
  for (const StageParameters& parameters : stage_parameters(model, config.parallel, *plan)) {
    StageReport stage;
    stage.index = parameters.pipeline_rank;
    stage.first_layer = parameters.first_layer;
    stage.layer_count = parameters.layer_count;
    for (const VirtualStage& v : parameters.chunks) {
      stage.chunks.push_back({.first = v.first_layer, .count = v.layer_count});
    }
    stage.parameters_per_rank = parameters.per_rank.total();
    stage.terms = resident_terms(parameters.per_rank_roles, config.precision, config.optimizer,
                                 shards);
    for (Term& gap : gap_terms(stage.index, config.gaps)) stage.terms.push_back(std::move(gap));
    for (const Term& t : stage.terms) {
      if (t.family == Family::resident) stage.resident_bytes += t.bytes;
      if (t.family == Family::gap) stage.gap_bytes += t.bytes;
    }
    stage.peak_bytes = stage.resident_bytes + stage.gap_bytes;
    if (report.device.bytes > 0) stage.headroom_bytes = report.device.bytes - stage.peak_bytes;
    if (stage.peak_bytes > largest) {
      largest = stage.peak_bytes;
      report.binding_stage = stage.index;
    }
    report.stages.push_back(std::move(stage));
  }
  report.cross_checks = cross_check(config.measurements, report.stages, report.diagnostics);
  return report;
}

}  // namespace stagemem
