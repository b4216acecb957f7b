#include "estimate/cross_check.h"

#include <string>

#include "memory/resident_terms.h"
#include "report/term_names.h"

namespace stagemem {
namespace {

int order(MeasurementPoint point) {
  switch (point) {
    case MeasurementPoint::after_model_init:
      return 0;
    case MeasurementPoint::after_optimizer_init:
      return 1;
    case MeasurementPoint::after_first_step:
      return 2;
    case MeasurementPoint::steady_state_peak:
    case MeasurementPoint::term:
      return 3;
  }
  return 3;
}

int order(AllocationPoint point) {
  switch (point) {
    case AllocationPoint::model_init:
      return 0;
    case AllocationPoint::optimizer_init:
      return 1;
    case AllocationPoint::first_step:
      return 2;
    case AllocationPoint::forward:
    case AllocationPoint::backward:
    case AllocationPoint::optimizer_step:
      return 3;
  }
  return 3;
}

void explain(CrossCheck& check, const StageReport& stage) {
  const MeasurementPoint point = check.measurement.point;
  // 0. What the allocator figure holds besides the tensors alive (training-log readings).
  const MemoryFigure figure = check.measurement.figure;
  // A max figure printed after the first iteration only: the first step's forward/backward ran
  // before lazily allocated state existed, so it is no steady-state step's peak.
  if ((figure == MemoryFigure::max_allocated || figure == MemoryFigure::max_reserved) &&
      check.measurement.iteration == 1 && point == MeasurementPoint::steady_state_peak) {
    check.explanations.push_back(GapExplanation::first_iteration_only);
  }
  if (check.against_replay) {
    check.explanations.push_back(GapExplanation::allocator_replay);
  } else if (figure == MemoryFigure::reserved || figure == MemoryFigure::max_reserved) {
    check.explanations.push_back(GapExplanation::reserved_figure);
  } else if (figure == MemoryFigure::max_allocated) {
    check.explanations.push_back(GapExplanation::max_allocated_figure);
  }
  // 1. Derived terms that are real but not alive yet at this point.
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    const Term& t = stage.terms[i];
    if (t.family == Family::gap || alive_at(t.family, t.allocated_at, point)) continue;
    if (t.family != Family::resident || t.bytes == 0) continue;
    check.later_bytes += t.bytes;
    check.later_terms.push_back(static_cast<std::int32_t>(i));
  }
  if (check.later_bytes > 0 && point != MeasurementPoint::term) {
    check.explanations.push_back(GapExplanation::not_alive_yet);
  }
  // 2. Measured gap rows alive at this point.
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    const Term& t = stage.terms[i];
    if (t.family != Family::gap) continue;
    if (order(t.allocated_at) >
        order(point == MeasurementPoint::term ? MeasurementPoint::steady_state_peak : point)) {
      continue;
    }
    if (t.tag == Tag::measured) {
      check.measured_gap_bytes += t.bytes;
    } else {
      check.unmeasured_gaps.push_back(static_cast<std::int32_t>(i));
    }
  }
  if (point == MeasurementPoint::term) {
    if (check.gap_bytes != 0) check.explanations.push_back(GapExplanation::term_formula_only);
    return;
  }
  if (check.measured_gap_bytes > 0) check.explanations.push_back(GapExplanation::measured_gaps);
  if (point == MeasurementPoint::steady_state_peak) {
    // Say which phase the derived sum stands for: it is the one that binds.
    check.explanations.push_back(stage.optimizer_phase_binds
                                     ? GapExplanation::optimizer_step_binds
                                     : GapExplanation::forward_backward_binds);
  }
  if (check.gap_bytes > 0) {
    if (!check.unmeasured_gaps.empty()) {
      check.explanations.push_back(GapExplanation::unmeasured_gaps);
    }
    if (point == MeasurementPoint::steady_state_peak) {
      check.explanations.push_back(GapExplanation::short_lived_tensors);
    }
  } else if (check.gap_bytes < 0) {
    check.explanations.push_back(GapExplanation::derived_exceeds);
  }
}

// The allocator replay's figure a reserved reading is compared with: max reserved at the peak
// (the first step's after iteration 1), reserved (current) after the first or a later step; -1
// when the stage was not replayed or the reading is not a reserved figure at those points.
std::int64_t replayed_figure(const Measurement& m, const StageReport& stage) {
  if (!stage.reserved_replayed) return -1;
  const bool first = m.iteration == 1;
  if (m.figure == MemoryFigure::max_reserved && m.point == MeasurementPoint::steady_state_peak)
    return first ? stage.first_step_peak_reserved_bytes : stage.peak_reserved_bytes;
  if (m.figure == MemoryFigure::reserved && m.point == MeasurementPoint::after_first_step)
    return first ? stage.reserved_after_first_step_bytes : stage.reserved_after_steps_bytes;
  return -1;
}

}  // namespace

bool alive_at(Family family, AllocationPoint allocated, MeasurementPoint point) {
  if (family == Family::gap) return false;
  if (family == Family::activation || family == Family::transient) {
    return point == MeasurementPoint::steady_state_peak;
  }
  return order(allocated) <= order(point);
}

std::vector<CrossCheck> cross_check(const std::vector<Measurement>& measurements,
                                    const std::vector<StageReport>& stages,
                                    Diagnostics& diagnostics) {
  std::vector<CrossCheck> out;
  for (std::size_t i = 0; i < measurements.size(); ++i) {
    const Measurement& m = measurements[i];
    const std::string field = "measurements[" + std::to_string(i) + "]";
    if (m.stage < 0 || m.stage >= static_cast<std::int64_t>(stages.size())) {
      diagnostics.error(field + ".stage", "stage " + std::to_string(m.stage) +
                                              " does not exist: expected an integer in [0, " +
                                              std::to_string(stages.size()) + ")");
      continue;
    }
    const StageReport& stage = stages[static_cast<std::size_t>(m.stage)];
    CrossCheck check;
    check.measurement = m;
    if (m.point == MeasurementPoint::term) {
      std::int32_t found = -1;
      for (std::size_t t = 0; t < stage.terms.size(); ++t) {
        if (term_name(stage.terms[t]) == m.term) found = static_cast<std::int32_t>(t);
      }
      if (found < 0 || stage.terms[static_cast<std::size_t>(found)].family == Family::gap) {
        std::string names;
        for (const Term& t : stage.terms) {
          if (t.family != Family::gap) names += (names.empty() ? "" : "; ") + term_name(t);
        }
        diagnostics.error(field + ".term", "no derived term named '" + m.term.substr(0, 120) +
                                               "' on stage " + std::to_string(m.stage) +
                                               "; its terms are: " + names);
        continue;
      }
      check.derived_bytes = stage.terms[static_cast<std::size_t>(found)].bytes;
      check.alive_terms.push_back(found);
    } else if (const std::int64_t replayed = replayed_figure(m, stage); replayed >= 0) {
      check.derived_bytes = replayed;
      check.against_replay = true;
    } else {
      for (std::size_t index = 0; index < stage.terms.size(); ++index) {
        const Term& t = stage.terms[index];
        // Documented library constants are part of what stagemem asserts; measured gap rows are
        // not (they are the user's own numbers).
        const bool asserted = t.tag == Tag::derived || t.tag == Tag::documented;
        if (!asserted) continue;
        // Kept past the step (the pipeline input the model holds): alive between steps whichever
        // phase binds the peak.
        const bool kept = t.family == Family::transient &&
                          t.place == TransientPlace::between_steps &&
                          m.point == MeasurementPoint::after_first_step;
        if (!kept && !alive_at(t.family, t.allocated_at, m.point)) continue;
        if (!kept && !t.counts_in_peak) continue;  // a transient not co-live at the peak
        check.derived_bytes += t.bytes;
        check.alive_terms.push_back(static_cast<std::int32_t>(index));
      }
    }
    check.gap_bytes = m.bytes - check.derived_bytes;
    check.has_ratio = check.derived_bytes > 0;
    if (check.has_ratio) {
      check.ratio = static_cast<double>(m.bytes) / static_cast<double>(check.derived_bytes);
    }
    explain(check, stage);
    out.push_back(std::move(check));
  }
  return out;
}

std::vector<ProbeMeasurement> optimizer_state_probe_measurements() {
  // The users' readings on a 99M-parameter probe (TP 1, PP 1, EP 1, world = DP), bytes/param.
  return {
      {OptimizerKind::adam, 0, 18.02},
      {OptimizerKind::distributed_adam, 2, 12.02},
      {OptimizerKind::distributed_adam, 4, 9.03},
      {OptimizerKind::distributed_adam, 8, 7.52},
      {OptimizerKind::muon, 0, 15.17},
      {OptimizerKind::distributed_muon, 1, 15.17},
      {OptimizerKind::distributed_muon, 2, 11.00},
      {OptimizerKind::distributed_muon, 4, 8.91},
      {OptimizerKind::distributed_muon, 8, 7.87},
  };
}

std::vector<ProbeCrossCheck> optimizer_state_probe_cross_checks() {
  std::vector<ProbeCrossCheck> out;
  const Precision precision{};
  for (const ProbeMeasurement& m : optimizer_state_probe_measurements()) {
    OptimizerConfig optimizer;
    optimizer.kind = m.optimizer;
    const bool distributed = is_distributed(m.optimizer);
    ProbeCrossCheck check;
    check.measurement = m;
    check.state_shards = distributed ? m.data_parallel : 1;
    check.derived_bytes_per_parameter =
        resident_bytes_per_parameter(precision, optimizer, check.state_shards);
    check.state_bytes_per_parameter =
        master_bytes(optimizer.master_weights) +
        moments_per_element(is_muon(m.optimizer)) * moment_bytes(optimizer.moments);
    check.gap_bytes_per_parameter =
        m.measured_bytes_per_parameter - check.derived_bytes_per_parameter;
    check.ratio = m.measured_bytes_per_parameter / check.derived_bytes_per_parameter;
    out.push_back(check);
  }
  return out;
}

}  // namespace stagemem
