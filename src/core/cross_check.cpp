#include "cross_check.h"

#include <cstdio>
#include <string>

#include "resident_terms.h"
#include "term_text.h"
#include "units.h"

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

std::string number(double value, const char* format = "%.2f") {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string bytes_text(std::int64_t bytes) {
  return group_digits(bytes) + " B (" + format_gib(bytes) + ")";
}

void explain(CrossCheck& check, const StageReport& stage) {
  const MeasurementPoint point = check.measurement.point;
  // 0. What the allocator figure holds besides the tensors alive (training-log readings).
  const MemoryFigure figure = check.measurement.figure;
  if (figure == MemoryFigure::reserved || figure == MemoryFigure::max_reserved) {
    check.explanations.push_back(
        "a reserved figure (torch.cuda.memory_reserved / max_memory_reserved) also holds the "
        "caching allocator's cached free blocks and its fragmentation (the allocator-"
        "fragmentation gap row), which no tensor shape derives: the allocated figures compare "
        "with the tensors themselves");
  } else if (figure == MemoryFigure::max_allocated) {
    check.explanations.push_back(
        "max allocated (torch.cuda.max_memory_allocated) is the peak since the process started, "
        "never reset by Megatron's report: it includes the first iterations, where lazily "
        "allocated optimizer state is created inside the first step()");
  }
  // 1. Derived terms that are real but not alive yet at this point.
  std::int64_t later_bytes = 0;
  std::string later_names;
  for (const Term& t : stage.terms) {
    if (t.family == Family::gap || alive_at(t.family, t.allocated_at, point)) continue;
    if (t.family != Family::resident || t.bytes == 0) continue;
    later_bytes += t.bytes;
    later_names += (later_names.empty() ? "" : "; ") + term_name(t) + " (allocated at " +
                   std::string(allocation_point_name(t.allocated_at)) + ")";
  }
  if (later_bytes > 0 && point != MeasurementPoint::term) {
    check.explanations.push_back(
        "not alive yet at this point, so not counted: " + later_names + " = " +
        bytes_text(later_bytes) +
        ". Lazily allocated state (Adam moments, Muon momentum; TE's dummy weight gradients and "
        "the GEMM workspaces) appears only inside the first training step; a reading here that "
        "includes it was taken later than its label says");
  }
  // 2. Measured gap rows alive at this point.
  std::int64_t measured_gaps = 0;
  std::string unmeasured;
  for (const Term& t : stage.terms) {
    if (t.family != Family::gap) continue;
    if (order(t.allocated_at) >
        order(point == MeasurementPoint::term ? MeasurementPoint::steady_state_peak : point)) {
      continue;
    }
    if (t.tag == Tag::measured) {
      measured_gaps += t.bytes;
    } else {
      unmeasured += (unmeasured.empty() ? "" : "; ") + term_name(t).substr(5);
    }
  }
  if (point == MeasurementPoint::term) {
    if (check.gap_bytes != 0) {
      check.explanations.push_back(
          "the term's formula counts only the tensors named in it; a positive gap means live "
          "memory inside that operation that the formula does not name (e.g. extra temporaries), "
          "a negative gap a tensor the implementation does not keep");
    }
    return;
  }
  if (measured_gaps > 0) {
    check.explanations.push_back(
        "MEASURED gap rows alive at this point sum to " + bytes_text(measured_gaps) +
        "; gap after them: " + bytes_text(check.gap_bytes - measured_gaps));
  }
  if (point == MeasurementPoint::steady_state_peak) {
    // Say which phase the derived sum stands for: it is the one that binds.
    if (stage.optimizer_phase_binds) {
      check.explanations.push_back(
          "the optimizer step binds on this stage: compared with the resident terms plus the "
          "optimizer-step transients (" +
          bytes_text(stage.optimizer_transient_bytes) +
          "); stored activations are freed by then and are not in the sum (forward/backward "
          "would be " +
          bytes_text(stage.activation_bytes + stage.largest_transient_bytes) + ")");
    } else {
      std::string co_live;
      if (stage.largest_transient >= 0 &&
          stage.largest_transient < static_cast<std::int64_t>(stage.terms.size())) {
        co_live = ", plus the co-live transient " +
                  term_name(stage.terms[static_cast<std::size_t>(stage.largest_transient)]) + " (" +
                  bytes_text(stage.largest_transient_bytes) + ")";
      }
      check.explanations.push_back(
          "forward/backward binds on this stage: compared with the resident terms, the stored "
          "activations of every micro-batch in flight (" +
          bytes_text(stage.activation_bytes) + ")" + co_live +
          "; optimizer-step transients are not alive then");
    }
  }
  if (check.gap_bytes > 0) {
    if (!unmeasured.empty()) {
      check.explanations.push_back("memory no shape derives, not measured yet: " + unmeasured);
    }
    if (point == MeasurementPoint::steady_state_peak) {
      check.explanations.push_back(
          "a reading of torch.cuda.max_memory_allocated also holds short-lived tensors inside a "
          "kernel or a layer's backward that no term names; a reading of reserved memory "
          "(nvidia-smi, memory_reserved) adds allocator fragmentation");
    }
  } else if (check.gap_bytes < 0) {
    check.explanations.push_back(
        "derived exceeds measured: a term counted here may be allocated later in the run "
        "(check its allocation point), the reading may come from another stage or rank, or the "
        "run's options (dtypes, optimizer, sharding, DP, kernels) differ from this "
        "configuration");
  }
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
      const Term* found = nullptr;
      for (const Term& t : stage.terms) {
        if (term_name(t) == m.term) found = &t;
      }
      if (found == nullptr || found->family == Family::gap) {
        std::string names;
        for (const Term& t : stage.terms) {
          if (t.family != Family::gap) names += (names.empty() ? "" : "; ") + term_name(t);
        }
        diagnostics.error(field + ".term", "no derived term named '" + m.term.substr(0, 120) +
                                               "' on stage " + std::to_string(m.stage) +
                                               "; its terms are: " + names);
        continue;
      }
      check.derived_bytes = found->bytes;
      check.alive_terms.push_back(term_name(*found));
    } else {
      for (const Term& t : stage.terms) {
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
        check.alive_terms.push_back(term_name(t));
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
    const std::int64_t shards = distributed ? m.data_parallel : 1;
    ProbeCrossCheck check;
    check.measurement = m;
    check.derived_bytes_per_parameter = resident_bytes_per_parameter(precision, optimizer, shards);
    const std::int64_t state =
        master_bytes(optimizer.master_weights) +
        moments_per_element(is_muon(m.optimizer)) * moment_bytes(optimizer.moments);
    check.derived_formula = "2 (bf16 weight) + 4 (fp32 grad) + " + std::to_string(state) +
                            (is_muon(m.optimizer) ? " (fp32 master + momentum)"
                                                  : " (fp32 master + exp_avg + exp_avg_sq)");
    if (distributed) check.derived_formula += " / " + std::to_string(shards);
    check.gap_bytes_per_parameter =
        m.measured_bytes_per_parameter - check.derived_bytes_per_parameter;
    check.ratio = m.measured_bytes_per_parameter / check.derived_bytes_per_parameter;
    const double gap = check.gap_bytes_per_parameter;
    if (is_muon(m.optimizer)) {
      check.explanations.push_back(
          "the probe's embedding, head and norms are updated by AdamW, not Muon: +4 B (second "
          "moment) per such parameter" +
          std::string(distributed ? " / DP" : "") +
          "; the probe's inventory was not recorded, so this share is not derived");
      check.explanations.push_back(
          "a bf16 cast copy kept by the Muon implementation would add 2 B per covered "
          "parameter, unsharded (optimizer.cast_copy)");
    }
    if (gap > 0) {
      check.explanations.push_back(
          "not in this per-parameter figure but derived for a real configuration: TE's dummy "
          "bf16 weight gradients under gradient-accumulation fusion (2 B x the elements of the "
          "distinct weight shapes) and the documented GEMM workspaces (sm90: TE 32 MiB + 1 KiB, "
          "PyTorch cuBLAS 2 x 32 MiB); the probe's shapes were not recorded");
      check.explanations.push_back(
          "named gaps alive after the first step (allocator fragmentation, communication "
          "buffers, runtime context): " +
          number(gap * 99e6 / bytes_per_gib, "%.3f") +
          " GiB on 99M parameters if the whole gap were these");
    }
    out.push_back(std::move(check));
  }
  return out;
}

}  // namespace stagemem
