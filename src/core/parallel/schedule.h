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
//  - DualPipeV (schedule dualpipev; DeepSeek's DualPipe repository, dualpipe/dualpipev.py,
//    DualPipeV.step, commit 3da1bbea): exactly 2 chunks per rank placed in a V (layout.h: rank r
//    runs virtual stage r as chunk 0 and virtual stage 2P - 1 - r as chunk 1), M >= 2P (the step
//    asserts num_chunks >= num_ranks * 2). Rank r runs eight phases, with counts
//      1 nF0        2(P - r - 1) x F0
//      2 nF0F1      (r + 1) x (F0, F1)
//      3 nB1W1F1    (P - r - 1) x (B1 zero-bubble, W, F1)
//      4 nF0B1F1B0  (M - 2P + r + 1) x (F0, B1, F1, B0)
//      5 nB1F1B0    (P - r - 1) x (B1, F1, B0)
//      6 nB1B0      (r + 1) x (B1, B0); zero-bubble from pair (r + 1) / 2 on: on odd ranks from
//                   its B1, on even ranks from its B0
//      7 nWB0       (P - r - 1) x (W, B0 zero-bubble)
//      8 nW         (r + 1) x W
//    (each chunk runs M forwards and M backwards). A zero-bubble backward B computes the input
//    gradient only and queues the weight gradient (utils.py WeightGradStore.put/flush); a W pass
//    pops the oldest queued one (FIFO). Micro-batches run in order on each chunk (the
//    current_f_chunk_id / current_b_chunk_id counters). In steps 4 and 5 a (F, B) pair runs
//    through _forward_backward_chunk: with the modules' overlapped_forward_backward the two are
//    overlapped, otherwise forward then backward; stagemem walks forward then backward.
// Units: counts of micro-batches (per chunk); slots are indices.
// Limitations: zero-bubble splits of 1F1B and interleaved and the extra warm-up step of
// overlap_moe_expert_parallel_comm are not modelled. DualPipeV's W passes are not visited
// (for_each_dualpipev_slot yields F and B only): a zero-bubble B frees its micro-batch's stored
// activations as a full backward does, so the tensors the queued weight gradients keep until W
// (in DualPipe's example LinearFunc closure: each linear layer's input and its output gradient)
// are not counted (a named gap: docs/physics-notes.md, "DualPipeV"). Each step-3 B1 is followed
// by its own W, so none is pending in steps 4 and 5. A last micro-batch group
// smaller than P is laid out as get_schedule_table does, though Megatron's interleaved schedule
// refuses it (config.cpp says so).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "base/enum_names.h"

namespace stagemem {

// The pipeline schedule of a step. one_f_one_b is Megatron's 1F1B, interleaved when a rank holds
// more than one virtual chunk; dualpipev is DeepSeek's DualPipeV.
enum class PipelineSchedule : std::uint8_t { one_f_one_b, dualpipev };
template <>
struct EnumNames<PipelineSchedule> {
  static constexpr std::array<std::string_view, 2> names = {"1f1b", "dualpipev"};
};
static_assert(names_end_at<PipelineSchedule::dualpipev>());
inline constexpr std::int64_t dualpipev_chunks = 2;  // DualPipeV's two modules per rank
inline const char* pipeline_schedule_name(PipelineSchedule schedule) {
  return enum_name(schedule).data();  // the names are string literals
}  // "1f1b", "dualpipev"

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
  // DualPipeV: a backward that queues its weight gradient for a later W pass (zero bubble).
  bool weight_gradient_deferred = false;
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
  void clear() {
    pass.clear();
    kind.clear();
    micro_batch.clear();
    alive.clear();
    most_alive = 0;
  }
};
// Requires 2 x M x chunks < 2^31 (passes and counts are int32; callers keep M <= 65,536 and
// chunks <= 1,024).
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

// DualPipeV's phase counts on `rank` (the header's table); all zero for invalid inputs.
struct DualPipeVPhases {
  std::int64_t forward0 = 0;            // 1 nF0
  std::int64_t forward0_forward1 = 0;   // 2 nF0F1
  std::int64_t backward1_forward1 = 0;  // 3 nB1W1F1
  std::int64_t main = 0;                // 4 nF0B1F1B0
  std::int64_t backward1_pair = 0;      // 5 nB1F1B0
  std::int64_t backward_pairs = 0;      // 6 nB1B0
  std::int64_t weight_backward0 = 0;    // 7 nWB0
  std::int64_t weights = 0;             // 8 nW
};
DualPipeVPhases dualpipev_phases(std::int64_t pipeline_ranks, std::int64_t rank,
                                 std::int64_t micro_batches);

// DualPipeV's F and B passes of one step on `rank`, in order (4 x M calls; W passes are not
// visited, see the header). Nothing is called unless 0 <= rank < P and M >= 2P.
template <class Visit>
void for_each_dualpipev_slot(std::int64_t pipeline_ranks, std::int64_t rank,
                             std::int64_t micro_batches, Visit&& visit) {
  if (pipeline_ranks < 1 || rank < 0 || rank >= pipeline_ranks ||
      micro_batches < 2 * pipeline_ranks) {
    return;
  }
  const DualPipeVPhases n = dualpipev_phases(pipeline_ranks, rank, micro_batches);
  std::int64_t next_forward[2] = {0, 0};
  std::int64_t next_backward[2] = {0, 0};
  const auto forward = [&](std::int64_t chunk) {
    visit(ScheduleSlot{.backward = false, .micro_batch = next_forward[chunk]++, .chunk = chunk});
  };
  const auto backward = [&](std::int64_t chunk, bool deferred) {
    visit(ScheduleSlot{.backward = true,
                       .micro_batch = next_backward[chunk]++,
                       .chunk = chunk,
                       .weight_gradient_deferred = deferred});
  };
  for (std::int64_t i = 0; i < n.forward0; ++i) forward(0);
  for (std::int64_t i = 0; i < n.forward0_forward1; ++i) {
    forward(0);
    forward(1);
  }
  for (std::int64_t i = 0; i < n.backward1_forward1; ++i) {
    backward(1, true);
    forward(1);
  }
  for (std::int64_t i = 0; i < n.main; ++i) {
    forward(0);
    backward(1, false);
    forward(1);
    backward(0, false);
  }
  for (std::int64_t i = 0; i < n.backward1_pair; ++i) {
    backward(1, false);
    forward(1);
    backward(0, false);
  }
  bool deferred = false;
  for (std::int64_t i = 0; i < n.backward_pairs; ++i) {
    if (i == n.backward_pairs / 2 && rank % 2 == 1) deferred = true;
    backward(1, deferred);
    if (i == n.backward_pairs / 2 && rank % 2 == 0) deferred = true;
    backward(0, deferred);
  }
  for (std::int64_t i = 0; i < n.weight_backward0; ++i) backward(0, true);
}

// The passes of `schedule` on `rank`: for_each_slot (1F1B, interleaved) or
// for_each_dualpipev_slot (DualPipeV; `chunks` must be 2).
template <class Visit>
void for_each_pass(PipelineSchedule schedule, std::int64_t pipeline_ranks, std::int64_t chunks,
                   std::int64_t rank, std::int64_t micro_batches, Visit&& visit) {
  if (schedule == PipelineSchedule::dualpipev) {
    if (chunks == dualpipev_chunks)
      for_each_dualpipev_slot(pipeline_ranks, rank, micro_batches, visit);
    return;
  }
  for_each_slot(pipeline_ranks, chunks, rank, micro_batches, visit);
}

// PeakCandidates for DualPipeV on `rank` (2 chunks): every one of its 4 x M passes, in the order
// of for_each_dualpipev_slot (no pass is pruned: the list is short next to the interleaved one's
// and stays independent of peak_candidates' pruning). Empty for invalid inputs.
void dualpipev_peak_candidates(std::int64_t pipeline_ranks, std::int64_t rank,
                               std::int64_t micro_batches, PeakCandidates& out);

}  // namespace stagemem
