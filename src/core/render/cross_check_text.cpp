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
