#include "render/report_text.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <vector>

#include "memory/timeline.h"
#include "render/cross_check_text.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {
namespace {

// snprintf onto the end of `out` (the text writers' fixed-width columns).
__attribute__((format(printf, 2, 3))) void append(std::string& out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (size > 0) {
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(size) + 1);
    std::vsnprintf(out.data() + at, static_cast<std::size_t>(size) + 1, format, again);
    out.resize(at + static_cast<std::size_t>(size));
  }
  va_end(again);
}

long long ll(std::int64_t v) {
  return static_cast<long long>(v);
}

std::string name_or_dash(const StageReport& stage, std::int64_t i) {
  if (i < 0 || i >= static_cast<std::int64_t>(stage.terms.size())) return "-";
  return term_name(stage.terms[static_cast<std::size_t>(i)]);
}

void header_text(std::string& out, const Report& report, const Config& config, AmountUnit unit) {
  append(out, "model %s: %s parameters\n", report.model.c_str(),
         group_digits(report.total_parameters).c_str());
  append(out, "optimizer %s, weights %s (routed experts %s), grads %s; DP %lld, expert DP %lld\n",
         std::string(optimizer_kind_name(config.optimizer.kind)).c_str(),
         std::string(weight_dtype_name(config.precision.dense_weights)).c_str(),
         std::string(weight_dtype_name(config.precision.expert_weights)).c_str(),
         std::string(grad_dtype_name(config.precision.grads)).c_str(), ll(report.data_parallel),
         ll(report.expert_data_parallel));
  const std::int64_t vpp = config.parallel.virtual_stages;
  const std::string schedule_note = report.schedule == PipelineSchedule::dualpipev
                                        ? " (2 chunks per rank in a V)"
                                    : vpp > 1 ? " (interleaved, VPP " + std::to_string(vpp) + ")"
                                              : "";
  append(out, "pipeline PP %lld, schedule %s%s, %lld micro-batches per step\n",
         ll(config.parallel.pipeline_parallel), pipeline_schedule_name(report.schedule),
         schedule_note.c_str(), ll(report.micro_batches));
  if (const std::string stack = stack_summary_text(config.training); !stack.empty())
    append(out, "stack %s\n", stack.c_str());
  if (report.device.bytes > 0) {
    append(out, "device %s: %s; source: %s\n", report.device.name.c_str(),
           bytes_text(report.device.bytes, unit).c_str(),
           std::string(report.device.source).c_str());
  }
}

void cross_check_text(std::string& out, const Report& report, const CrossCheck& c,
                      AmountUnit unit) {
  const Measurement& m = c.measurement;
  append(out, "\ncross-check %s (source: %s)\n", measurement_title(m).c_str(), m.source.c_str());
  append(out, "  measured %s, derived %s, gap %s, ratio %s\n", bytes_text(m.bytes, unit).c_str(),
         bytes_text(c.derived_bytes, unit).c_str(), bytes_text(c.gap_bytes, unit).c_str(),
         ratio_text(c).c_str());
  if (const StageReport* stage = cross_check_stage(report, c)) {
    for (const std::string& e : cross_check_explanations(c, *stage, unit))
      append(out, "  - %s\n", e.c_str());
  }
}

}  // namespace

std::string report_text(const Report& report, const Config& config, AmountUnit unit) {
  std::string out;
  header_text(out, report, config, unit);
  append(out, "\n%-6s %-10s %-18s %-70s %s\n", "stage", "layers", "params/rank", "term",
         "bytes/rank");
  for (const StageReport& stage : report.stages) {
    const std::string layers = stage_layers_text(stage);
    for (const Term& term : stage.terms) {
      append(out, "%-6lld %-10s %-18s %-70s %s [%s, %s, %s]\n", ll(stage.index), layers.c_str(),
             group_digits(stage.parameters_per_rank).c_str(), term_name(term).c_str(),
             bytes_text(term.bytes, unit).c_str(), std::string(family_name(term.family)).c_str(),
             std::string(tag_name(term.tag)).c_str(),
             std::string(allocation_point_name(term.allocated_at)).c_str());
      append(out, "%-36s = %s\n", "", term_formula(term).c_str());
    }
    append(out, "%-6lld total: resident %s, measured gaps %s, peak allocated %s", ll(stage.index),
           amount_text(stage.resident_bytes, unit).c_str(),
           amount_text(stage.gap_bytes, unit).c_str(), amount_text(stage.peak_bytes, unit).c_str());
    if (stage.reserved_replayed)
      append(out, ", peak reserved %s", amount_text(stage.peak_reserved_bytes, unit).c_str());
    if (stage.device_peak_bytes >= 0)
      append(out, ", device %s", amount_text(stage.device_peak_bytes, unit).c_str());
    if (report.device.bytes > 0)
      append(out, ", headroom %s against %s", amount_text(stage.headroom_bytes, unit).c_str(),
             std::string(fit_basis_name(stage)).c_str());
    out += "\n";
    if (stage.reserved_replayed) {
      const ReservedPeakMoment& m = stage.reserved_peak_moment;
      std::int64_t cached = 0;
      for (const HeldSegment& seg : stage.segments_at_reserved_peak)
        cached += seg.bytes - seg.allocated_bytes;
      append(out,
             "%-6s allocator replay: reserved peaks in step %lld, %s; %lld segments held, "
             "%s of them cached free\n",
             "", ll(m.step), reserved_moment_text(stage).c_str(),
             ll(static_cast<std::int64_t>(stage.segments_at_reserved_peak.size())),
             amount_text(cached, unit).c_str());
      // Said when the device's limit changed the replay: a cache flush or out of memory.
      if (stage.alloc_retries > 0 || stage.segments_released_for_room > 0 || stage.out_of_memory)
        append(out, "%-6s %s\n", "", device_limit_text(stage, unit).c_str());
    }
    out += "\n";
  }
  if (report.binding_stage >= 0) append(out, "binding stage: %lld\n", ll(report.binding_stage));
  // The cross-checks' verdict first, one line, then each reading's details.
  if (!report.cross_checks.empty()) {
    append(out, "\ncross-checks: %s\n", cross_check_verdict(report).c_str());
  }
  for (const CrossCheck& c : report.cross_checks) cross_check_text(out, report, c, unit);
  return out;
}

std::string timeline_text(const Report& report, AmountUnit unit) {
  std::string out;
  append(out, "model %s: step timeline per stage, %lld micro-batches, schedule %s (%s per rank)\n",
         report.model.c_str(), ll(report.micro_batches), pipeline_schedule_name(report.schedule),
         std::string(unit_name(unit)).c_str());
  for (const StageReport& stage : report.stages) {
    const StageTimeline t = stage_timeline(report, stage);
    append(out, "\nstage %lld: peak %s at %s\n", ll(stage.index),
           bytes_text(stage.peak_bytes, unit).c_str(),
           moment_name(stage, peak_moment(stage)).c_str());
    append(out, "  %-5s %-15s %-5s %-5s %-11s %-11s %-11s %-11s %-11s %s\n", "event", "phase", "mb",
           "chunk", "resident", "activation", "transient", "gap", "live", "transient alive");
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      const TimelineEvent& ev = t.events[e];
      const bool step = ev.phase == StepPhase::optimizer_step;
      std::string transient = name_or_dash(stage, ev.transient);
      if (ev.enclosing >= 0) transient += " (inside " + name_or_dash(stage, ev.enclosing) + ")";
      const auto family = [&](Family f) {
        return amount_text(ev.live_by_family[static_cast<std::size_t>(f)], unit);
      };
      append(out, "%s %-5zu %-15s %-5s %-5s %-11s %-11s %-11s %-11s %-11s %s\n",
             static_cast<std::int64_t>(e) == t.peak_event ? "*" : " ", e,
             std::string(phase_name(ev.phase)).c_str(),
             step ? "-" : std::to_string(ev.micro_batch).c_str(),
             step ? "-" : std::to_string(ev.chunk).c_str(), family(Family::resident).c_str(),
             family(Family::activation).c_str(), family(Family::transient).c_str(),
             family(Family::gap).c_str(), amount_text(ev.live_bytes, unit).c_str(),
             step && ev.live_by_family[static_cast<std::size_t>(Family::transient)] > 0
                 ? "optimizer-step transients"
                 : transient.c_str());
    }
  }
  out += "\n* the peak event (the first with the largest live bytes)\n";
  return out;
}

std::int64_t stages_not_fitting(const Report& report) {
  if (report.device.bytes <= 0) return 0;
  return std::count_if(report.stages.begin(), report.stages.end(),
                       [](const StageReport& s) { return s.headroom_bytes < 0; });
}

std::string check_result_text(const Report& report, AmountUnit unit) {
  std::string out;
  if (const std::int64_t failing = stages_not_fitting(report); failing > 0) {
    append(out, "check FAILED: %lld of %zu stages do not fit %s", ll(failing), report.stages.size(),
           report.device.name.c_str());
  } else if (!report.stages.empty()) {
    const auto binding = static_cast<std::size_t>(std::clamp<std::int64_t>(
        report.binding_stage, 0, static_cast<std::int64_t>(report.stages.size()) - 1));
    const StageReport& s = report.stages[binding];
    append(out, "check passed: every stage fits %s (least headroom: stage %lld, %s)",
           report.device.name.c_str(), ll(s.index), amount_text(s.headroom_bytes, unit).c_str());
  }
  return out;
}

std::string check_text(const Report& report, AmountUnit unit) {
  std::string out = "model " + report.model + " on " + report.device.name + ": " +
                    bytes_text(report.device.bytes, unit) + " per rank\n\n";
  append(out, "%-6s %-16s %14s %14s %14s %14s  %s\n", "stage", "layers", "allocated", "reserved",
         "device", "headroom", "fits");
  const auto figure = [unit](bool known, std::int64_t bytes) {
    return known ? amount_text(bytes, unit) : std::string("-");
  };
  for (const StageReport& s : report.stages) {
    append(out, "%-6lld %-16s %14s %14s %14s %14s  %s\n", ll(s.index), stage_layers_text(s).c_str(),
           amount_text(s.peak_bytes, unit).c_str(),
           figure(s.reserved_replayed, s.peak_reserved_bytes).c_str(),
           figure(s.device_peak_bytes >= 0, s.device_peak_bytes).c_str(),
           amount_text(s.headroom_bytes, unit).c_str(), std::string(fits_text(s, report)).c_str());
  }
  if (!report.stages.empty())
    append(out, "headroom is measured against: %s\n",
           fit_basis_text(report.stages.front()).c_str());
  for (const StageReport& s : report.stages) {
    if (s.headroom_bytes >= 0) continue;
    append(out, "\nstage %lld does not fit: %s %s exceeds %s by %s\n  largest terms:\n",
           ll(s.index), s.fit_basis == FitBasis::allocated ? "peak" : "peak reserved",
           bytes_text(s.fit_bytes, unit).c_str(), report.device.name.c_str(),
           bytes_text(-s.headroom_bytes, unit).c_str());
    for (const Term* t : largest_terms(s, check_largest_terms)) {
      append(out, "    %-66s %12s  %s B  [%s]\n", term_name(*t).c_str(),
             amount_text(t->bytes, unit).c_str(), group_digits(t->bytes).c_str(),
             std::string(family_name(t->family)).c_str());
    }
  }
  return out + "\n" + check_result_text(report, unit) + "\n";
}

}  // namespace stagemem
