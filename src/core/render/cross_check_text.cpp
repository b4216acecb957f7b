#include "render/cross_check_text.h"

#include <cstdio>
#include <string>

#include "memory/resident_terms.h"
#include "render/vocabulary.h"
#include "report/term_names.h"

namespace stagemem {
namespace {

std::string number(double value, const char* format) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

const Term* term_at(const StageReport& stage, std::int64_t index) {
  if (index < 0 || index >= static_cast<std::int64_t>(stage.terms.size())) return nullptr;
  return &stage.terms[static_cast<std::size_t>(index)];
}

std::string explanation(const CrossCheck& check, const StageReport& stage, GapExplanation kind,
                        AmountUnit unit) {
  switch (kind) {
    case GapExplanation::reserved_figure:
      return "a reserved figure (torch.cuda.memory_reserved / max_memory_reserved) also holds the "
             "caching allocator's cached free blocks and its fragmentation (the allocator-"
             "fragmentation gap row), which no tensor shape derives: the allocated figures "
             "compare with the tensors themselves";
    case GapExplanation::allocator_replay:
      return std::string(
                 "derived is the caching allocator replayed over two steps (the stage's "
                 "tensors in the step's order, PyTorch's rounding, segments and best-fit "
                 "reuse): ") +
             (check.measurement.figure == MemoryFigure::max_reserved
                  ? "its largest reserved bytes"
                  : "its reserved bytes at the end of the step") +
             (check.measurement.iteration == 1 ? " in the first step" : "") +
             "; Megatron DDP's parameters, buffers and optimizer state are replayed tensor by "
             "tensor for data-parallel rank 0; the replay leaves out tensors of other streams "
             "(NCCL buffers recorded on them), and keeps Megatron-FSDP and FSDP2 state one "
             "tensor per term";
    case GapExplanation::max_allocated_figure:
      return "max allocated (torch.cuda.max_memory_allocated) is the peak since the process "
             "started, never reset by Megatron's report: it includes the first iterations, where "
             "lazily allocated optimizer state is created inside the first step()";
    case GapExplanation::not_alive_yet: {
      std::string names;
      for (const std::int32_t i : check.later_terms) {
        const Term* t = term_at(stage, i);
        if (t == nullptr) continue;
        names += (names.empty() ? "" : "; ") + term_name(*t) + " (allocated at " +
                 std::string(allocation_point_name(t->allocated_at)) + ")";
      }
      return "not alive yet at this point, so not counted: " + names + " = " +
             bytes_text(check.later_bytes, unit) +
             ". Lazily allocated state (Adam moments, Muon momentum; TE's dummy weight gradients "
             "and the GEMM workspaces) appears only inside the first training step; a reading "
             "here that includes it was taken later than its label says";
    }
    case GapExplanation::term_formula_only:
      return "the term's formula counts only the tensors named in it; a positive gap means live "
             "memory inside that operation that the formula does not name (e.g. extra "
             "temporaries), a negative gap a tensor the implementation does not keep";
    case GapExplanation::measured_gaps:
      return "MEASURED gap rows alive at this point sum to " +
             bytes_text(check.measured_gap_bytes, unit) +
             "; gap after them: " + bytes_text(check.gap_bytes - check.measured_gap_bytes, unit);
    case GapExplanation::optimizer_step_binds:
      return "the optimizer step binds on this stage: compared with the resident terms plus the "
             "optimizer-step transients (" +
             bytes_text(stage.optimizer_transient_bytes, unit) +
             "); stored activations are freed by then and are not in the sum (forward/backward "
             "would be " +
             bytes_text(stage.activation_bytes + stage.largest_transient_bytes, unit) + ")";
    case GapExplanation::forward_backward_binds: {
      std::string co_live;
      if (const Term* t = term_at(stage, stage.largest_transient)) {
        co_live = ", plus the co-live transient " + term_name(*t) + " (" +
                  bytes_text(stage.largest_transient_bytes, unit) + ")";
      }
      return "forward/backward binds on this stage: compared with the resident terms, the stored "
             "activations of every micro-batch in flight (" +
             bytes_text(stage.activation_bytes, unit) + ")" + co_live +
             "; optimizer-step transients are not alive then";
    }
    case GapExplanation::unmeasured_gaps: {
      std::string names;
      for (const std::int32_t i : check.unmeasured_gaps) {
        // A gap row's name is "gap: KIND"; the sentence lists the kinds.
        if (const Term* t = term_at(stage, i))
          names += (names.empty() ? "" : "; ") + term_name(*t).substr(5);
      }
      return "memory no shape derives, not measured yet: " + names;
    }
    case GapExplanation::short_lived_tensors:
      return "a reading of torch.cuda.max_memory_allocated also holds short-lived tensors inside "
             "a kernel or a layer's backward that no term names; a reading of reserved memory "
             "(nvidia-smi, memory_reserved) adds allocator fragmentation";
    case GapExplanation::first_iteration_only:
      return "printed after the first iteration only: its max covers one step, whose forward and "
             "backward ran before lazily allocated optimizer state existed (it appears inside the "
             "first step()), so it can be below a steady-state step's peak; a reading after 2 or "
             "more iterations covers a steady-state step";
    case GapExplanation::derived_exceeds:
      return "derived exceeds measured: a term counted here may be allocated later in the run "
             "(check its allocation point), the reading may come from another stage or rank, or "
             "the run's options (dtypes, optimizer, sharding, DP, kernels) differ from this "
             "configuration";
  }
  return "";
}

}  // namespace

std::vector<std::string> cross_check_alive_names(const CrossCheck& check,
                                                 const StageReport& stage) {
  std::vector<std::string> out;
  out.reserve(check.alive_terms.size());
  for (const std::int32_t i : check.alive_terms) {
    if (const Term* t = term_at(stage, i)) out.push_back(term_name(*t));
  }
  return out;
}

std::vector<std::string> cross_check_explanations(const CrossCheck& check, const StageReport& stage,
                                                  AmountUnit unit) {
  std::vector<std::string> out;
  out.reserve(check.explanations.size());
  for (const GapExplanation kind : check.explanations) {
    out.push_back(explanation(check, stage, kind, unit));
  }
  return out;
}

namespace {

// Which reading the verdict speaks of: a steady-state peak first, then its figure's rank.
int verdict_priority(const Measurement& m) {
  if (m.point != MeasurementPoint::steady_state_peak) return 0;
  switch (m.figure) {
    case MemoryFigure::max_allocated:
      return 4;
    case MemoryFigure::unspecified:
      return 3;
    case MemoryFigure::max_reserved:
      return 2;
    default:
      return 1;
  }
}

std::string figure_words(const Measurement& m) {
  switch (m.figure) {
    case MemoryFigure::allocated:
      return "allocated";
    case MemoryFigure::max_allocated:
      return "max allocated";
    case MemoryFigure::reserved:
      return "reserved";
    case MemoryFigure::max_reserved:
      return "max reserved";
    case MemoryFigure::unspecified:
      break;
  }
  return m.point == MeasurementPoint::term ? "for " + m.term
                                           : std::string(measurement_point_name(m.point));
}

}  // namespace

std::int64_t verdict_cross_check(const Report& report) {
  std::int64_t best = -1;
  for (std::size_t i = 0; i < report.cross_checks.size(); ++i) {
    const Measurement& m = report.cross_checks[i].measurement;
    if (best < 0) {
      best = static_cast<std::int64_t>(i);
      continue;
    }
    const Measurement& b = report.cross_checks[static_cast<std::size_t>(best)].measurement;
    const int p = verdict_priority(m), q = verdict_priority(b);
    if (p > q || (p == q && m.bytes > b.bytes)) best = static_cast<std::int64_t>(i);
  }
  return best;
}

std::string cross_check_line(const CrossCheck& check) {
  return "measured " + format_gib(check.measurement.bytes) + " vs derived " +
         format_gib(check.derived_bytes) + ", gap " + signed_gib_text(check.gap_bytes) + ", " +
         ratio_text(check);
}

std::string cross_check_verdict(const Report& report, AmountUnit unit) {
  const std::int64_t index = verdict_cross_check(report);
  if (index < 0) return "";
  const CrossCheck* best = &report.cross_checks[static_cast<std::size_t>(index)];
  const Measurement& m = best->measurement;
  std::string out = "measured " + amount_text(m.bytes, unit, 1) + " " + figure_words(m) +
                    " on stage " + std::to_string(m.stage);
  std::string where;
  if (m.rank >= 0) where = "rank " + std::to_string(m.rank);
  if (m.iteration >= 0) {
    where += (where.empty() ? "" : ", ") + std::string("after ") + std::to_string(m.iteration) +
             (m.iteration == 1 ? " iteration" : " iterations");
  }
  if (!where.empty()) out += " (" + where + ")";
  out += " vs derived " + amount_text(best->derived_bytes, unit, 1) + ": ";
  if (best->derived_bytes == 0) {
    out += "nothing derived is alive at " + std::string(measurement_point_name(m.point));
  } else if (best->gap_bytes == 0 || m.bytes == 0) {
    out += best->gap_bytes == 0 ? "derived matches" : "derived is over a 0 B reading";
  } else {
    // The gap over the measured figure: how far the derived number is from what was read.
    const double percent =
        100.0 * static_cast<double>(best->gap_bytes < 0 ? -best->gap_bytes : best->gap_bytes) /
        static_cast<double>(m.bytes);
    out +=
        "derived is " + number(percent, "%.1f") + " % " + (best->gap_bytes > 0 ? "under" : "over");
  }
  const std::size_t more = report.cross_checks.size() - 1;
  if (more > 0) {
    out +=
        " (" + std::to_string(more) + (more == 1 ? " more reading" : " more readings") + " below)";
  }
  return out;
}

const StageReport* cross_check_stage(const Report& report, const CrossCheck& check) {
  for (const StageReport& stage : report.stages) {
    if (stage.index == check.measurement.stage) return &stage;
  }
  return nullptr;
}

std::string probe_formula(const ProbeCrossCheck& check) {
  const bool muon = is_muon(check.measurement.optimizer);
  std::string text = "2 (bf16 weight) + 4 (fp32 grad) + " +
                     std::to_string(check.state_bytes_per_parameter) +
                     (muon ? " (fp32 master + momentum)" : " (fp32 master + exp_avg + exp_avg_sq)");
  if (is_distributed(check.measurement.optimizer)) {
    text += " / " + std::to_string(check.state_shards);
  }
  return text;
}

std::vector<std::string> probe_explanations(const ProbeCrossCheck& check) {
  std::vector<std::string> out;
  const bool distributed = is_distributed(check.measurement.optimizer);
  if (is_muon(check.measurement.optimizer)) {
    out.push_back(
        "the probe's embedding, head and norms are updated by AdamW, not Muon: +4 B (second "
        "moment) per such parameter" +
        std::string(distributed ? " / DP" : "") +
        "; the probe's inventory was not recorded, so this share is not derived");
    out.push_back(
        "a bf16 cast copy kept by the Muon implementation would add 2 B per covered "
        "parameter, unsharded (optimizer.cast_copy)");
  }
  const double gap = check.gap_bytes_per_parameter;
  if (gap > 0) {
    out.push_back(
        "not in this per-parameter figure but derived for a real configuration: TE's dummy "
        "bf16 weight gradients under gradient-accumulation fusion (2 B x the elements of the "
        "distinct weight shapes) and the documented GEMM workspaces (sm90: TE 32 MiB + 1 KiB, "
        "PyTorch cuBLAS 2 x 32 MiB); the probe's shapes were not recorded");
    out.push_back(
        "named gaps alive after the first step (allocator fragmentation, communication "
        "buffers, runtime context): " +
        number(gap * 99e6 / bytes_per_gib, "%.3f") +
        " GiB on 99M parameters if the whole gap were these");
  }
  return out;
}

}  // namespace stagemem
