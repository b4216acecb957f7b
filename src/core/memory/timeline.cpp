#include "memory/timeline.h"

#include <algorithm>

#include "parallel/schedule.h"
#include "report/formula.h"

namespace stagemem {
namespace {

struct Held {
  std::int64_t bytes = 0;
  std::int64_t transient = -1;
  std::int64_t enclosing = -1;
};

// The transients a pass holds together at its moment (the rule of the header), the largest first
// found in term order.
Held held_by_pass(const StageReport& stage, bool backward, std::int64_t chunk, bool& fits) {
  Held best;
  std::int64_t inner = -1;
  const auto& terms = stage.terms;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    if (t.family != Family::transient || t.allocated_at == AllocationPoint::optimizer_step)
      continue;
    const bool in_backward = t.allocated_at == AllocationPoint::backward;
    bool holds = false;
    if (t.place == TransientPlace::layer) holds = in_backward == backward;
    if (t.place == TransientPlace::boundary) holds = true;
    if (t.place == TransientPlace::chunk) holds = in_backward == backward && t.chunk == chunk;
    if (!holds) continue;
    if (t.bytes > best.bytes) best = {t.bytes, static_cast<std::int64_t>(i), -1};
    if (t.place == TransientPlace::layer && backward &&
        (inner < 0 || t.bytes > terms[static_cast<std::size_t>(inner)].bytes)) {
      inner = static_cast<std::int64_t>(i);
    }
  }
  if (backward) {
    for (std::size_t i = 0; i < terms.size(); ++i) {
      const Term& t = terms[i];
      if (t.family != Family::transient || t.place != TransientPlace::recompute) continue;
      std::int64_t bytes = t.bytes;
      if (inner >= 0)
        fits = checked_add(bytes, terms[static_cast<std::size_t>(inner)].bytes, &bytes) && fits;
      if (bytes > best.bytes) {
        best = inner >= 0 ? Held{bytes, inner, static_cast<std::int64_t>(i)}
                          : Held{bytes, static_cast<std::int64_t>(i), -1};
      }
    }
  }
  // The pass-wide transients of this direction (and the phase-wide ones) sit beside the choice.
  for (const Term& t : terms) {
    if (t.family != Family::transient) continue;
    const bool wide = t.place == TransientPlace::phase_wide ||
                      (t.place == TransientPlace::pass_wide &&
                       (t.allocated_at == AllocationPoint::backward) == backward);
    if (wide) fits = checked_add(best.bytes, t.bytes, &best.bytes) && fits;
  }
  return best;
}

}  // namespace

StageTimeline stage_timeline(const Report& report, const StageReport& stage) {
  StageTimeline out;
  out.stage = stage.index;
  const auto chunks = static_cast<std::int64_t>(std::max<std::size_t>(stage.chunks.size(), 1));
  out.chunks = chunks;
  const auto pipeline_ranks = static_cast<std::int64_t>(report.stages.size());
  const std::int64_t m = report.micro_batches;
  std::vector<Held> held(static_cast<std::size_t>(2 * chunks));
  for (std::int64_t c = 0; c < chunks; ++c) {
    held[static_cast<std::size_t>(c)] = held_by_pass(stage, false, c, out.fits);
    held[static_cast<std::size_t>(chunks + c)] = held_by_pass(stage, true, c, out.fits);
  }
  std::int64_t fixed = 0;  // resident + gaps
  out.fits = checked_add(stage.resident_bytes, stage.gap_bytes, &fixed) && out.fits;
  out.events.reserve(static_cast<std::size_t>(2 * m * chunks + 1));
  out.alive.reserve(static_cast<std::size_t>((2 * m * chunks + 1) * chunks));
  std::vector<std::int64_t> live(static_cast<std::size_t>(chunks), 0);
  std::int64_t stored = 0;
  std::int64_t best = -1;
  const auto push = [&](TimelineEvent e) {
    e.live_by_family[static_cast<std::size_t>(Family::resident)] = stage.resident_bytes;
    e.live_by_family[static_cast<std::size_t>(Family::gap)] = stage.gap_bytes;
    e.live_bytes = fixed;
    out.fits = checked_add(e.live_bytes, e.live_by_family[1], &e.live_bytes) &&
               checked_add(e.live_bytes, e.live_by_family[2], &e.live_bytes) && out.fits;
    if (e.live_bytes > best) {
      best = e.live_bytes;
      out.peak_event = static_cast<std::int64_t>(out.events.size());
    }
    out.events.push_back(e);
    out.alive.insert(out.alive.end(), live.begin(), live.end());
  };
  const std::vector<std::int64_t>& per_batch = stage.chunk_stored_bytes;
  const auto chunk_bytes = [&](std::int64_t c) {
    return static_cast<std::size_t>(c) < per_batch.size() ? per_batch[static_cast<std::size_t>(c)]
                                                          : 0;
  };
  const auto visit = [&](const ScheduleSlot& s) {
    const auto c = static_cast<std::size_t>(s.chunk);
    if (!s.backward) {
      out.fits = checked_add(stored, chunk_bytes(s.chunk), &stored) && out.fits;
      ++live[c];
    }
    const Held& h = held[static_cast<std::size_t>(s.backward ? chunks + s.chunk : s.chunk)];
    TimelineEvent e;
    e.phase = s.backward ? StepPhase::backward : StepPhase::forward;
    e.micro_batch = s.micro_batch;
    e.chunk = s.chunk;
    e.transient = h.transient;
    e.enclosing = h.enclosing;
    e.live_by_family[static_cast<std::size_t>(Family::activation)] = stored;
    e.live_by_family[static_cast<std::size_t>(Family::transient)] = h.bytes;
    push(e);
    if (s.backward) {
      if (out.fits) stored -= chunk_bytes(s.chunk);  // past 2^63 nothing is meaningful
      --live[c];
    }
  };
  for_each_pass(report.schedule, pipeline_ranks, chunks, stage.index, m, visit);
  TimelineEvent step;
  step.phase = StepPhase::optimizer_step;
  step.live_by_family[static_cast<std::size_t>(Family::transient)] =
      stage.optimizer_transient_bytes;
  push(step);
  return out;
}

std::vector<StageTimeline> step_timeline(const Report& report) {
  std::vector<StageTimeline> out;
  out.reserve(report.stages.size());
  for (const StageReport& s : report.stages) out.push_back(stage_timeline(report, s));
  return out;
}

std::vector<std::int64_t> transients_held_by_pass(const StageReport& stage, bool backward,
                                                  std::int64_t chunk) {
  bool fits = true;
  const Held held = held_by_pass(stage, backward, chunk, fits);
  std::vector<std::int64_t> out;
  if (held.transient >= 0) out.push_back(held.transient);
  if (held.enclosing >= 0) out.push_back(held.enclosing);
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    const Term& t = stage.terms[i];
    if (t.family != Family::transient) continue;
    const bool wide = t.place == TransientPlace::phase_wide ||
                      (t.place == TransientPlace::pass_wide &&
                       (t.allocated_at == AllocationPoint::backward) == backward);
    if (wide) out.push_back(static_cast<std::int64_t>(i));
  }
  return out;
}

PeakMoment peak_moment(const StageReport& stage) {
  if (stage.optimizer_phase_binds) return {.phase = StepPhase::optimizer_step};
  return stage.forward_backward_moment;
}

std::vector<std::int64_t> terms_alive_at_peak(const StageReport& stage) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    if (stage.terms[i].counts_in_peak) out.push_back(static_cast<std::int64_t>(i));
  }
  return out;
}

}  // namespace stagemem
