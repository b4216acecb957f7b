#include "render/vocabulary.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "config/version_rules.h"
#include "parallel/layout.h"
#include "parallel/schedule.h"
#include "report/term_names.h"

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
    case Tag::documented:
      return "DOCUMENTED";
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

std::string_view phase_name(StepPhase phase) {
  switch (phase) {
    case StepPhase::forward:
      return "forward";
    case StepPhase::backward:
      return "backward";
    case StepPhase::optimizer_step:
      return "optimizer-step";
  }
  return "unknown";
}

std::string_view binding_phase_name(const StageReport& stage) {
  return stage.optimizer_phase_binds ? "optimizer-step" : "forward-backward";
}

std::string layer_range_text(std::int64_t first, std::int64_t count) {
  if (count <= 0) return "-";
  return std::to_string(first) + "-" + std::to_string(first + count - 1);
}

std::string layers_text(std::int64_t first, std::int64_t last) {
  // The range as layer_range_text spells it, in a sentence (the JSON's peak-moment names).
  if (first == last) return "layer " + std::to_string(first);
  return "layers " + std::to_string(first) + "-" + std::to_string(last);
}

std::string stage_layers_text(const StageReport& stage) {
  // A report always lists the chunks; a stage built by hand may give its layers alone.
  if (stage.chunks.empty()) return layer_range_text(stage.first_layer, stage.layer_count);
  std::string out;
  for (const LayerRange& c : stage.chunks) {
    if (!out.empty()) out += ',';
    out += layer_range_text(c.first, c.count);
  }
  return out;
}

std::string gib_number(std::int64_t bytes, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals,
                static_cast<double>(bytes) / bytes_per_gib);
  return buffer;
}

std::string_view unit_name(AmountUnit unit) {
  return unit == AmountUnit::gb ? "GB" : "GiB";
}

std::string_view small_unit_name(AmountUnit unit) {
  return unit == AmountUnit::gb ? "MB" : "MiB";
}

double unit_bytes(AmountUnit unit) {
  return unit == AmountUnit::gb ? bytes_per_gb : bytes_per_gib;
}

std::string amount_number(std::int64_t bytes, AmountUnit unit, int decimals) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals,
                static_cast<double>(bytes) / unit_bytes(unit));
  return buffer;
}

std::string amount_text(std::int64_t bytes, AmountUnit unit, int decimals) {
  // The GiB spelling is format_gib's, byte for byte (the golden reports and every test use it).
  if (unit == AmountUnit::gib) return format_gib(bytes, decimals);
  return amount_number(bytes, unit, decimals) + " " + std::string(unit_name(unit));
}

std::string compact_amount_text(std::int64_t bytes, AmountUnit unit) {
  const double small = unit == AmountUnit::gb ? 1e6 : bytes_per_mib;
  if (static_cast<double>(bytes < 0 ? -bytes : bytes) >= unit_bytes(unit)) {
    return amount_text(bytes, unit);
  }
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.1f %s", static_cast<double>(bytes) / small,
                std::string(small_unit_name(unit)).c_str());
  return buffer;
}

std::string bytes_text(std::int64_t bytes, AmountUnit unit) {
  return group_digits(bytes) + " B (" + amount_text(bytes, unit) + ")";
}

std::string signed_gib_text(std::int64_t bytes, AmountUnit unit) {
  return (bytes > 0 ? "+" : "") + amount_text(bytes, unit);
}

std::string alternatives_text(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += i + 1 == values.size() ? " or " : ", ";
    out += std::to_string(values[i]);
  }
  return out;
}

std::string_view in_peak_text(const Term& term) {
  return term.counts_in_peak ? "yes" : "no";
}

std::vector<const Term*> largest_terms(const StageReport& stage, std::size_t count) {
  std::vector<const Term*> terms;
  for (const Term& t : stage.terms) {
    if (t.bytes > 0 && t.counts_in_peak) terms.push_back(&t);
  }
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term* a, const Term* b) { return a->bytes > b->bytes; });
  if (terms.size() > count) terms.resize(count);
  return terms;
}

std::string largest_terms_text(const StageReport& stage, std::size_t count, AmountUnit unit) {
  std::string out;
  for (const Term* t : largest_terms(stage, count)) {
    out += (out.empty() ? "" : "; ") + term_name(*t) + " " + amount_text(t->bytes, unit);
  }
  return out;
}

std::string ratio_text(const CrossCheck& check) {
  if (!check.has_ratio) return "n/a (nothing derived is alive)";
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "x%.3f", check.ratio);
  return buffer;
}

std::string_view fits_text(const StageReport& stage, const Report& report) {
  if (report.device.bytes <= 0) return "-";
  return stage.headroom_bytes >= 0 ? "yes" : "no";
}

std::string fit_basis_text(const StageReport& stage) {
  switch (stage.fit_basis) {
    case FitBasis::device:
      return "device (peak reserved + the measured runtime context and communication buffers)";
    case FitBasis::reserved:
      return stage.outside_allocator_bytes > 0
                 ? "peak reserved (allocator replay) + the measured rows outside the allocator; "
                   "the device figure needs both the runtime-context and the communication-"
                   "buffers rows measured"
                 : "peak reserved (allocator replay); the device figure needs the runtime-"
                   "context and communication-buffers rows measured";
    case FitBasis::allocated:
      break;
  }
  return "peak allocated (the allocator was not replayed)";
}

std::string_view fit_basis_name(const StageReport& stage) {
  return enum_name(stage.fit_basis);
}

std::string measurement_title(const Measurement& m) {
  std::string out;
  if (m.figure != MemoryFigure::unspecified)
    out = std::string(memory_figure_name(m.figure)) + " at ";
  if (m.iteration >= 0 && m.figure != MemoryFigure::unspecified) {
    // A log's reading says when it was printed; the point says what it is compared with.
    const std::string n =
        std::to_string(m.iteration) + (m.iteration == 1 ? " iteration" : " iterations");
    const bool max =
        m.figure == MemoryFigure::max_allocated || m.figure == MemoryFigure::max_reserved;
    out = std::string(memory_figure_name(m.figure)) + (max ? " over " : " after ") + n + " (";
    out += max ? (m.iteration == 1 ? "the first step's peak, compared at " : "compared at ")
               : "between steps: ";
    out += std::string(measurement_point_name(m.point)) + "), stage " + std::to_string(m.stage);
    if (m.rank >= 0) out += ", rank " + std::to_string(m.rank);
    return out;
  }
  out += measurement_point_name(m.point);
  if (m.point == MeasurementPoint::term) out += " " + m.term;
  out += ", stage " + std::to_string(m.stage);
  if (m.rank >= 0) out += ", rank " + std::to_string(m.rank);
  return out;
}

std::string verdict_text(const Report& report, AmountUnit unit) {
  if (!report.diagnostics.ok() || report.binding_stage < 0 ||
      report.binding_stage >= static_cast<std::int64_t>(report.stages.size())) {
    return "";
  }
  // One decimal: the verdict is read at a glance ("224.7 of 288.0 GiB").
  const auto gib1 = [unit](std::int64_t bytes) { return amount_number(bytes, unit, 1); };
  const std::string u = " " + std::string(unit_name(unit));
  const StageReport& binding = report.stages[static_cast<std::size_t>(report.binding_stage)];
  const std::string stage = "stage " + std::to_string(binding.index);
  // The figure the check uses: peak reserved (or the device figure) once the allocator is
  // replayed, else the peak allocated.
  const std::string figure =
      binding.fit_basis == FitBasis::allocated ? "peak" : std::string(fit_basis_name(binding));
  if (report.device.bytes <= 0) {
    std::string text = "no device chosen: " + stage + " peaks at " + gib1(binding.peak_bytes) + u;
    if (binding.fit_basis != FitBasis::allocated)
      text += " allocated, " + gib1(binding.fit_bytes) + u + " " + figure;
    return text;
  }
  if (binding.headroom_bytes < 0) {
    std::int64_t over = 0;
    for (const StageReport& s : report.stages) over += s.headroom_bytes < 0 ? 1 : 0;
    std::string text = stage + " is " + gib1(-binding.headroom_bytes) + u + " over (" + figure +
                       " " + gib1(binding.fit_bytes) + " of " + gib1(report.device.bytes) + u + ")";
    if (over > 1) text += "; " + std::to_string(over) + " stages do not fit";
    return text;
  }
  std::string text = "fits: " + stage + " binds at " + gib1(binding.fit_bytes) + " of " +
                     gib1(report.device.bytes) + u;
  if (binding.fit_basis != FitBasis::allocated) text += " " + figure;
  return text;
}

std::string reserved_moment_text(const StageReport& stage) {
  const ReservedPeakMoment& m = stage.reserved_peak_moment;
  if (m.phase == StepPhase::optimizer_step) return "optimizer step";
  if (m.micro_batch < 0) return "model and optimizer init";
  std::string out = m.phase == StepPhase::backward ? "backward" : "forward";
  out += " of micro-batch " + std::to_string(m.micro_batch);
  if (stage.chunks.size() > 1) out += " on chunk " + std::to_string(m.chunk);
  return out;
}

std::string device_limit_text(const StageReport& stage, AmountUnit unit) {
  if (!stage.reserved_replayed || stage.device_limit_bytes <= 0) return "";
  std::string out = "replayed against " + amount_text(stage.device_limit_bytes, unit) +
                    " the allocator may reserve: ";
  if (stage.out_of_memory) return out + "out of memory even after releasing every cached segment";
  if (stage.alloc_retries == 0 && stage.segments_released_for_room == 0) {
    out += "no cache flush";
  } else {
    out += std::to_string(stage.alloc_retries) + " cache flush" +
           (stage.alloc_retries == 1 ? "" : "es") + " (num_alloc_retries) released " +
           std::to_string(stage.segments_released_for_room) + " cached segment" +
           (stage.segments_released_for_room == 1 ? "" : "s");
  }
  if (stage.segments_released_by_gc > 0) {
    out += "; garbage collection released " + std::to_string(stage.segments_released_by_gc) +
           " cached segment" + (stage.segments_released_by_gc == 1 ? "" : "s");
  }
  return out;
}

std::string moment_name(const StageReport& stage, const PeakMoment& moment) {
  std::string out = "stage " + std::to_string(stage.index) + ", ";
  if (moment.phase == StepPhase::optimizer_step) return out + "optimizer step";
  out += moment.phase == StepPhase::backward ? "backward" : "forward";
  out += " of micro-batch " + std::to_string(moment.micro_batch);
  if (stage.chunks.size() > 1) out += " on chunk " + std::to_string(moment.chunk);
  const auto valid = [&](std::int64_t i) {
    return i >= 0 && i < static_cast<std::int64_t>(stage.terms.size());
  };
  const Term* enclosing =
      valid(moment.enclosing) ? &stage.terms[static_cast<std::size_t>(moment.enclosing)] : nullptr;
  const Term* transient =
      valid(moment.transient) ? &stage.terms[static_cast<std::size_t>(moment.transient)] : nullptr;
  if (transient != nullptr && transient->info->text == TermText::recompute_group) {
    enclosing = transient;
    transient = nullptr;
  }
  if (enclosing != nullptr && enclosing->info->text == TermText::recompute_group) {
    out += ", " + layers_text(enclosing->formula.factor(1), enclosing->formula.factor(2)) +
           " recomputed";
  } else {
    if (moment.chunk >= 0 && static_cast<std::size_t>(moment.chunk) < stage.chunks.size()) {
      const LayerRange& r = stage.chunks[static_cast<std::size_t>(moment.chunk)];
      if (r.count > 0) out += " (" + layers_text(r.first, r.first + r.count - 1) + ")";
    }
    if (enclosing != nullptr) out += ", inside " + term_name(*enclosing);
  }
  if (transient != nullptr) out += ", " + term_name(*transient);
  return out;
}

std::string event_name(const StageReport& stage, const TimelineEvent& event) {
  return moment_name(stage, {.phase = event.phase,
                             .micro_batch = event.micro_batch,
                             .chunk = event.chunk,
                             .transient = event.transient,
                             .enclosing = event.enclosing});
}

std::string peak_headline(const StageReport& stage, AmountUnit unit) {
  std::string out = "Peak " + amount_text(stage.peak_bytes, unit) + " = ";
  const std::string resident = amount_text(stage.resident_bytes, unit) + " resident";
  const std::string gaps =
      stage.gap_bytes > 0 ? " + " + amount_text(stage.gap_bytes, unit) + " measured gaps" : "";
  // The moment without its transient when that is already a part above (named once).
  PeakMoment moment = peak_moment(stage);
  const auto named = [&](std::int64_t i) {
    return i >= 0 && i < static_cast<std::int64_t>(stage.terms.size());
  };
  if (!stage.optimizer_phase_binds && named(moment.transient) &&
      stage.terms[static_cast<std::size_t>(moment.transient)].info->text !=
          TermText::recompute_group) {
    moment.transient = -1;
  }
  const std::string at = "; at " + moment_name(stage, moment);
  if (stage.optimizer_phase_binds) {
    return out + resident + " + " + amount_text(stage.optimizer_transient_bytes, unit) +
           " optimizer-step transients (the stored activations are freed by then)" + gaps + at;
  }
  std::int64_t in_flight = 0;
  std::string per_chunk;
  for (const std::int64_t n : stage.in_flight_per_chunk) {
    in_flight += n;
    per_chunk += (per_chunk.empty() ? "" : " + ") + std::to_string(n);
  }
  out += amount_text(stage.activation_bytes, unit) + " stored activations of " +
         std::to_string(in_flight);
  if (stage.in_flight_per_chunk.size() > 1) {
    out += " micro-batch chunks in flight (" + per_chunk + " on " +
           std::to_string(stage.in_flight_per_chunk.size()) + " chunks)";
  } else {
    out += in_flight == 1 ? " micro-batch in flight" : " micro-batches in flight";
  }
  const auto transient = stage.largest_transient;
  if (transient >= 0 && transient < static_cast<std::int64_t>(stage.terms.size()) &&
      stage.largest_transient_bytes > 0) {
    out += " + " + amount_text(stage.largest_transient_bytes, unit) + " transient " +
           term_name(stage.terms[static_cast<std::size_t>(transient)]);
  } else if (stage.largest_transient_bytes > 0) {
    out += " + " + amount_text(stage.largest_transient_bytes, unit) + " transients";
  }
  return out + " + " + resident + gaps + at;
}

std::string stack_summary_text(const TrainingConfig& training) {
  const std::vector<KernelOriginEntry> origins = kernel_origins(training);
  const bool any_explicit = std::any_of(origins.begin(), origins.end(), [](const auto& k) {
    return k.origin == KernelOrigin::explicit_value;
  });
  if (training.stack.empty() && !any_explicit) return {};
  std::string out = training.stack.empty()
                        ? std::string("current releases")
                        : stack_text(training.stack) + " (the rest: current releases)";
  std::string before;
  for (const VersionRuleInfo& r : version_rules()) {
    if (rule_holds(training.stack, r.rule)) continue;
    before += (before.empty() ? "" : ", ") + std::string(enum_name(r.rule)) + " (" +
              std::string(enum_name(r.component)) +
              (r.from.given() ? " " + release_text(r.from) : std::string(" on")) + ")";
  }
  if (!before.empty()) out += "; before their release: " + before;
  std::string kernels;
  for (const KernelOriginEntry& k : origins) {
    kernels += (kernels.empty() ? "" : ", ") + std::string(enum_name(k.kernel)) + " " +
               std::string(k.value) + " (" + std::string(enum_name(k.origin)) + ")";
  }
  return out + "; " + kernels;
}

std::string settings_text(const Config& config) {
  const TrainingConfig& t = config.training;
  const ParallelLayout& p = config.parallel;
  std::string out = "seq " + group_digits(t.sequence_length) + " | mbs " +
                    group_digits(t.micro_batch) + ", gbs " + group_digits(t.global_batch);
  Diagnostics ignored;
  const std::int64_t m =
      micro_batches_per_step(t.global_batch, t.micro_batch, data_parallel_size(p), ignored);
  if (m > 0) out += " (" + group_digits(m) + (m == 1 ? " micro-batch)" : " micro-batches)");
  out += " | recompute " + std::string(enum_name(t.recompute.policy));
  if (t.recompute.policy == RecomputePolicy::selective) {
    std::string modules;
    for (std::size_t i = 0; i < enum_names<RecomputeModule>.size(); ++i) {
      if ((t.recompute.modules & (1u << i)) == 0) continue;
      modules += (modules.empty() ? "" : "+") + std::string(enum_names<RecomputeModule>[i]);
    }
    out += " (" + (modules.empty() ? std::string("no modules") : modules) + ")";
  } else if (t.recompute.policy == RecomputePolicy::full) {
    out += " (" + std::string(enum_name(t.recompute.method)) + ", " +
           group_digits(t.recompute.layers) + (t.recompute.layers == 1 ? " layer)" : " layers)");
  }
  const OptimizerConfig& o = config.optimizer;
  const bool distributed =
      o.kind == OptimizerKind::distributed_adam || o.kind == OptimizerKind::distributed_muon;
  out +=
      " | " + std::string(optimizer_kind_name(o.kind)) + (distributed ? "" : " (not distributed)");
  if (o.master_weights != MasterDtype::fp32) {
    out += ", " + std::string(master_dtype_name(o.master_weights)) + " master";
  }
  if (o.moments != MomentDtype::fp32) {
    out += ", " + std::string(moment_dtype_name(o.moments)) + " moments";
  }
  const Precision& pr = config.precision;
  out += " | " + std::string(weight_dtype_name(pr.dense_weights)) + " weights";
  if (pr.expert_weights != pr.dense_weights) {
    out += ", " + std::string(weight_dtype_name(pr.expert_weights)) + " expert weights";
  }
  out += ", " + std::string(grad_dtype_name(pr.grads)) + " grads";
  const LowPrecisionCompute& lp = config.training.low_precision;
  if (lp.recipe != Fp8Recipe::none) {
    out += std::string(lp.recipe == Fp8Recipe::nvfp4 ? ", " : ", fp8 ") +
           std::string(fp8_recipe_name(lp.recipe));
    if (lp.recipe == Fp8Recipe::delayed) {
      out += " (amax history " + group_digits(lp.amax_history_len) + ")";
    }
    if (lp.bf16_layers_at_start + lp.bf16_layers_at_end > 0) {
      out += ", bf16 layers " + group_digits(lp.bf16_layers_at_start) + " first + " +
             group_digits(lp.bf16_layers_at_end) + " last";
    }
    if (lp.fp8_attention) out += ", fp8 attention";
  }
  out += " | ";
  if (p.schedule == PipelineSchedule::dualpipev) {
    out += std::string(enum_name(p.schedule));
  } else if (p.virtual_stages > 1) {
    out += "interleaved " + std::string(enum_name(p.schedule)) + " (vpp " +
           group_digits(p.virtual_stages) + ")";
  } else {
    out += std::string(enum_name(p.schedule));
  }
  if (!t.stack.empty()) out += " | stack " + stack_text(t.stack);
  return out;
}

}  // namespace stagemem
