// timeline.h — one training step of each pipeline stage, pass by pass: the live memory at every
// forward and backward of every micro-batch on every virtual chunk, and at the optimizer step.
//
// Purpose: the peak of a stage is the largest moment of this timeline, and a user can see when it
// happens. The order of passes is the schedule's (schedule.h: 1F1B, Megatron's interleaved
// table, or DualPipeV's eight phases; Report::schedule says which). Each forward pass allocates
// one micro-batch's stored activations on its chunk and each backward pass frees them
// (StageReport::chunk_stored_bytes); resident terms and measured gaps are alive throughout; the
// optimizer step holds resident + gaps + its transients, after every
// micro-batch's activations are freed. A pass's moment is the largest set of transients it can
// hold together (Term::place, TermInfo::in_backward): forward transients in forward passes,
// backward transients in backward passes, pipeline buffers in both, a chunk's own transients
// (logits) in its passes only, and a backward layer transient inside the recompute working set
// of its group. The fast path in activation_terms.cpp computes the same maximum without building
// events; tests/core/test_timeline.cpp checks they agree exactly.
// Units: bytes (int64) per rank; micro-batches and chunks are 0-based indices, layers 0-based
// global indices.
// Limitations: a pass's moment counts its micro-batch's activations on the chunk whole (exact for
// the first layer a backward runs, an upper bound for its other layers); layer transients and
// recompute working sets are the rank's largest and may occur in any of its chunks; between
// passes nothing is modelled (no overlap of communication with the next pass). DualPipeV's W
// passes are not events; its overlapped (F, B) pairs run forward then backward (schedule.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "report/report.h"

namespace stagemem {

struct TimelineEvent {
  StepPhase phase = StepPhase::forward;
  std::int64_t micro_batch = -1;  // -1 for the optimizer step
  std::int64_t chunk = -1;        // -1 for the optimizer step
  std::int64_t transient = -1;    // index in the stage's terms of the transient alive; -1: none
  std::int64_t enclosing = -1;    // the recompute working set it sits inside; -1: none
  std::array<std::int64_t, 4> live_by_family{};  // indexed by Family
  std::int64_t live_bytes = 0;
};

struct StageTimeline {
  std::int64_t stage = 0;
  std::int64_t chunks = 1;
  std::vector<TimelineEvent> events;
  // Micro-batches alive on each chunk at each event: alive[event x chunks + chunk].
  std::vector<std::int64_t> alive;
  std::int64_t peak_event = -1;  // the first event with the largest live_bytes
  bool fits = true;              // false: a sum passed 2^63 - 1 bytes
  const TimelineEvent& peak() const { return events[static_cast<std::size_t>(peak_event)]; }
};

// The step of one stage of `report` (its stages are the pipeline ranks, each with its chunks).
StageTimeline stage_timeline(const Report& report, const StageReport& stage);
std::vector<StageTimeline> step_timeline(const Report& report);

// The transients a pass of `chunk` holds together at its moment (the rule of this header): indices
// into stage.terms, the moment's transient first, then the working set it sits inside, then the
// pass-wide and phase-wide ones. The allocator replay (allocator/step_replay.h) allocates them.
std::vector<std::int64_t> transients_held_by_pass(const StageReport& stage, bool backward,
                                                  std::int64_t chunk);

// The stage's peak moment: the forward/backward one, or the optimizer step when that binds.
PeakMoment peak_moment(const StageReport& stage);

// The terms alive at the stage's peak, as counts_in_peak marks them (indices into terms).
std::vector<std::int64_t> terms_alive_at_peak(const StageReport& stage);

}  // namespace stagemem
