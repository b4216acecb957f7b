// schedule.h — the order of one training step's forward and backward passes on a pipeline rank,
// and how many micro-batches' activations each rank holds.
//
// Purpose: the schedule, not the model, decides how many copies of a stage's stored activations
// are alive at once, and which virtual chunk runs at each moment. Rules (Megatron-core's
// forward_backward functions, schedules.py):
//  - 1F1B (no virtual stages): rank p runs min(P - p - 1, M) warm-up forwards, then alternates one
//    forward and one backward (steady state), then the remaining backwards (cool-down).
//  - Interleaved (v virtual chunks per rank, micro-batch groups of P): rank p runs
//    min((P - p - 1) x 2 + (v - 1) x P, M x v) warm-up forwards. Virtual forward k runs the entry
//    k of Megatron's schedule table (get_schedule_table: for each group of P micro-batches, chunk
//    0 for every micro-batch of the group, then chunk 1, ...); virtual backward k runs the same
//    micro-batch on chunk v - 1 - table[k].chunk. The steady state is forward w + i, backward i.
//    The mix of chunks alive shifts after warm-up (review finding F17), so the per-chunk counts at
//    the end of warm-up are not in general the counts at the peak: the peak is found by walking
//    the order (activation_terms.cpp, timeline.h).
// Units: counts of micro-batches (per chunk); slots are indices.
// Limitations: zero-bubble splits, DualPipe(V) and the extra warm-up step of
// overlap_moe_expert_parallel_comm are not modelled. A last micro-batch group smaller than P is
// laid out as get_schedule_table does, though Megatron's interleaved schedule refuses it
// (config.cpp says so).
#pragma once

#include <cstdint>
#include <vector>

#include "diagnostics.h"

namespace stagemem {

// M = global batch / (micro-batch x DP); errors name the fields when it does not divide.
// Micro-batches per step and DP rank that stagemem models (the schedule is walked pass by pass).
inline constexpr std::int64_t max_micro_batches_per_step = 65536;
std::int64_t micro_batches_per_step(std::int64_t global_batch, std::int64_t micro_batch,
                                    std::int64_t data_parallel, Diagnostics& diagnostics);

struct InFlight {
  std::int64_t warmup_forwards = 0;     // forwards before the first backward
  std::vector<std::int64_t> per_chunk;  // micro-batches of each virtual chunk alive
  std::int64_t total() const;
};

// Pipeline rank `rank` of `pipeline_ranks`, `chunks` virtual chunks per rank, M micro-batches:
// the micro-batches alive per chunk at the end of warm-up (after the first steady forward, before
// the first backward). Its total is the largest number of micro-batches ever alive; with one
// chunk it is also the peak's per-chunk count. Two ranks with the same warm-up count run the same
// order (the table does not depend on the rank).
InFlight in_flight_at_peak(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                           std::int64_t micro_batches);

// Forwards before the first backward on `rank`.
std::int64_t warmup_forwards(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                             std::int64_t micro_batches);

// One forward or backward pass of one micro-batch on one virtual chunk.
struct ScheduleSlot {
  bool backward = false;
  std::int64_t micro_batch = 0;
  std::int64_t chunk = 0;
};

// Virtual forward / backward k (0 <= k < M x chunks) of Megatron's schedule table.
ScheduleSlot forward_slot(std::int64_t pipeline_ranks, std::int64_t chunks,
                          std::int64_t micro_batches, std::int64_t k);
ScheduleSlot backward_slot(std::int64_t pipeline_ranks, std::int64_t chunks,
                           std::int64_t micro_batches, std::int64_t k);

// The passes of one step on `rank` that can be its peak, for any bytes. A pass's memory is its
// stored activations (micro-batches alive per chunk x one micro-batch's positive bytes on that
// chunk) plus a transient fixed by its kind (chunk x 2 + backward). A pass whose alive counts are
// all <= those of another pass of the same kind, and not all equal, holds strictly less; of equal
// counts the earlier pass is the first maximum. Only the others are kept: per kind, the maximal
// alive-count vectors, each with its first pass. When every micro-batch group is full (P divides
// M) the steady state repeats every P x chunks iterations, so only its first period is walked.
// With a chunk of zero bytes a dominated pass can tie an earlier one: walk every pass instead.
struct PeakCandidates {
  std::vector<std::int32_t> pass;         // index in the step's order (for_each_slot)
  std::vector<std::int32_t> kind;         // chunk x 2 + backward
  std::vector<std::int32_t> micro_batch;  // of the pass
  std::vector<std::int32_t> alive;        // `chunks` counts per candidate (forward: after it
                                          // starts; backward: before it frees)
  std::int64_t most_alive = 0;            // the largest sum of one candidate's counts
  std::size_t size() const { return pass.size(); }
};
void peak_candidates(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                     std::int64_t micro_batches, PeakCandidates& out);

// Calls visit(slot) for every pass of one step on `rank`, in the order the rank runs them
// (2 x M x chunks calls). Inputs as in_flight_at_peak; nothing is called for invalid inputs.
template <class Visit>
void for_each_slot(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                   std::int64_t micro_batches, Visit&& visit) {
  if (pipeline_ranks < 1 || chunks < 1 || rank < 0 || rank >= pipeline_ranks || micro_batches < 1) {
    return;
  }
  const std::int64_t total = micro_batches * chunks;
  const std::int64_t warmup = warmup_forwards(pipeline_ranks, chunks, rank, micro_batches);
  for (std::int64_t k = 0; k < warmup; ++k)
    visit(forward_slot(pipeline_ranks, chunks, micro_batches, k));
  for (std::int64_t i = 0; i + warmup < total; ++i) {
    visit(forward_slot(pipeline_ranks, chunks, micro_batches, warmup + i));
    visit(backward_slot(pipeline_ranks, chunks, micro_batches, i));
  }
  for (std::int64_t i = total - warmup; i < total; ++i)
    visit(backward_slot(pipeline_ranks, chunks, micro_batches, i));
}

}  // namespace stagemem
