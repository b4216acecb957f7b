// estimate.cpp — the orchestration: plan the stages, then collect each stage's terms from the
// modules that own their physics (resident_terms, gaps), then the device check and cross-checks.
#include <algorithm>
#include <limits>

#include "activation_terms.h"
#include "cross_check.h"
#include "devices.h"
#include "gaps.h"
#include "optimizer_transients.h"
#include "presets.h"
#include "report.h"
#include "resident_terms.h"
#include "schedule.h"
#include "term_text.h"

namespace stagemem {

std::string_view family_name(Family family) {
  switch (family) {
    case Family::resident:
      return "resident";
    case Family::activation:
      return "activation";
    case Family::transient:
      return "transient";
    case Family::gap:
      return "gap";
  }
  return "unknown";
}

std::string_view tag_name(Tag tag) {
  switch (tag) {
    case Tag::derived:
      return "DERIVED";
    case Tag::measured:
      return "MEASURED";
    case Tag::not_measured:
      return "NOT MEASURED";
  }
  return "unknown";
}

std::string_view allocation_point_name(AllocationPoint point) {
  switch (point) {
    case AllocationPoint::model_init:
      return "model init";
    case AllocationPoint::optimizer_init:
      return "optimizer init";
    case AllocationPoint::first_step:
      return "first optimizer step";
    case AllocationPoint::forward:
      return "forward";
    case AllocationPoint::backward:
      return "backward";
    case AllocationPoint::optimizer_step:
      return "optimizer step";
  }
  return "unknown";
}

namespace {

// Appends the stage's activation and transient terms and decides which phase peaks: forward/
// backward (stored activations + its largest transient) or the optimizer step (its transients).
// False when a term's bytes do not fit in int64.
bool add_activation_phases(StageReport& stage, const Model& model, const Config& config,
                           const StagePlan& plan, const StageParameters& parameters,
                           std::int64_t micro_batches, LayerPieceCache& cache) {
  StageActivationTerms activations = stage_activation_terms(
      model, config.parallel, config.training, plan, stage.index, micro_batches, cache);
  std::vector<Term> optimizer =
      optimizer_step_transients(model, parameters, config.parallel, config.optimizer);
  stage.activation_bytes = activations.stored_bytes;
  stage.largest_transient_bytes = activations.largest_transient_bytes;
  stage.largest_transient =
      activations.largest_transient < 0
          ? -1
          : static_cast<std::int64_t>(stage.terms.size() + activations.stored.size()) +
                activations.largest_transient;
  stage.in_flight_per_chunk = activations.in_flight_per_chunk;
  for (const Term& t : optimizer) {
    if (!checked_add(stage.optimizer_transient_bytes, t.bytes, &stage.optimizer_transient_bytes))
      stage.optimizer_transient_bytes = std::numeric_limits<std::int64_t>::max();
  }
  stage.optimizer_phase_binds =
      stage.optimizer_transient_bytes > stage.activation_bytes + stage.largest_transient_bytes;
  stage.terms.insert(stage.terms.end(), activations.stored.begin(), activations.stored.end());
  bool largest_marked = false;
  for (Term& t : activations.transients) {
    // Only the single largest transient of the phase is co-live with the stored activations.
    t.counts_in_peak =
        !stage.optimizer_phase_binds && !largest_marked && t.bytes == stage.largest_transient_bytes;
    largest_marked |= t.counts_in_peak;
    stage.terms.push_back(t);
  }
  for (Term& t : optimizer) {
    t.allocated_at = AllocationPoint::optimizer_step;
    t.counts_in_peak = stage.optimizer_phase_binds;
    stage.terms.push_back(t);
  }
  return activations.fits;
}

bool add_bytes(std::int64_t& total, std::int64_t bytes) {
  return bytes >= 0 && bytes != std::numeric_limits<std::int64_t>::max() &&
         checked_add(total, bytes, &total);
}

// Names what drives the first term that does not fit: its formula's factors, as the fields a user
// changes ("seq x mbs x layers on the stage x micro-batches in flight").
FieldMessage overflow_error(const StageReport& stage) {
  const Term* culprit = nullptr;
  for (const Term& t : stage.terms) {
    if (t.formula.overflowed() || t.bytes < 0 ||
        t.bytes == std::numeric_limits<std::int64_t>::max()) {
      culprit = &t;
      break;
    }
  }
  std::string drivers;
  std::string field = "model";
  const auto add = [&](std::string_view what, std::string_view what_field) {
    if (drivers.find(what) != std::string::npos) return;
    if (field == "model") field = std::string(what_field);
    drivers += drivers.empty() ? "" : " x ";
    drivers += what;
  };
  std::string name = "the sum of its terms";
  if (culprit != nullptr) {
    name = term_name(*culprit);
    const Formula& f = culprit->formula;
    for (int i = 0; i < f.size(); ++i) {
      const std::string_view label = label_text(f.label(i));
      if (f.op(i) == FactorOp::value || f.op(i) == FactorOp::bytes) continue;
      if (label == "S/CP" || label == "S") {
        add("seq", "training.sequence_length");
      } else if (label == "B") {
        add("mbs", "training.micro_batch");
      } else if (!label.empty()) {
        add(label, "model");
      }
    }
    if (culprit->copies > 0) add("layers on the stage x micro-batches in flight", "parallel");
    if (drivers.empty()) add("parameters on the stage", "model");
  }
  return {.field = field,
          .message = (drivers.empty() ? name : drivers + " (" + name + ")") +
                     " exceeds 2^63 bytes on stage " + std::to_string(stage.index) +
                     "; no device holds that: lower the driving fields"};
}

}  // namespace

Report estimate(const Config& config) {
  Diagnostics d;
  const auto model = resolve_model(config, d);
  if (!model) {
    Report report;
    report.model = config.custom_model.empty() ? config.model : "custom";
    report.diagnostics = std::move(d);
    return report;
  }
  return estimate(config, *model);
}

Report estimate(const Config& config, const Model& model) {
  Report report;
  report.model = model.name;
  report.diagnostics = validate(config, model);
  if (!report.diagnostics.ok()) return report;
  report.total_parameters = total_parameters(model);
  report.data_parallel = data_parallel_size(config.parallel);
  report.expert_data_parallel = expert_data_parallel_size(config.parallel);
  report.flat_headroom_bytes = config.training.flat_headroom_bytes;
  report.micro_batches =
      micro_batches_per_step(config.training.global_batch, config.training.micro_batch,
                             report.data_parallel, report.diagnostics);
  if (!report.diagnostics.ok()) return report;

  Diagnostics repeated;  // validate() already reported the plan's warnings
  const auto plan = plan_stages(model, config.parallel, repeated);
  if (!plan) {
    report.diagnostics.errors.insert(report.diagnostics.errors.end(), repeated.errors.begin(),
                                     repeated.errors.end());
    return report;
  }
  if (config.device.bytes > 0) {
    report.device = {.name = "custom",
                     .bytes = config.device.bytes,
                     .source = "entered by the user (device.bytes)"};
  } else if (const auto device = find_device(config.device.preset)) {
    report.device = {.name = std::string(device->name), .bytes = device->bytes, .source = device->source};
  }
  const StateShards shards = state_shards(config.optimizer.kind, config.parallel);
  LayerPieceCache cache;
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
    stage.terms =
        resident_terms(parameters.per_rank_roles, config.precision, config.optimizer, shards);
    bool fits = true;
    for (const Term& t : stage.terms) fits = fits && add_bytes(stage.resident_bytes, t.bytes);
    fits = add_activation_phases(stage, model, config, *plan, parameters, report.micro_batches,
                                 cache) &&
           fits;
    for (const Term& gap : gap_terms(stage.index, config.gaps)) {
      fits = fits && add_bytes(stage.gap_bytes, gap.bytes);
      stage.terms.push_back(gap);
    }
    std::int64_t phase = stage.optimizer_transient_bytes;
    if (!stage.optimizer_phase_binds) {
      phase = stage.activation_bytes;
      fits = fits && add_bytes(phase, stage.largest_transient_bytes);
    }
    stage.peak_bytes = stage.resident_bytes;
    fits =
        fits && add_bytes(stage.peak_bytes, stage.gap_bytes) && add_bytes(stage.peak_bytes, phase);
    if (!fits) {
      report.diagnostics.errors.push_back(overflow_error(stage));
      report.stages.clear();
      report.binding_stage = -1;
      return report;
    }
    stage.non_parameter_bytes = phase;
    if (config.training.flat_headroom_bytes > 0) {
      stage.flat_headroom_margin = config.training.flat_headroom_bytes - phase;
    }
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
