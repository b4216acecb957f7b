// schedule.h — how many micro-batches' activations each pipeline rank holds at its peak.
//
// Purpose: the schedule, not the model, decides how many copies of a stage's stored activations
// are alive at once. Rules (Megatron-core's forward_backward functions):
//  - 1F1B (no virtual stages): rank p runs min(P - p - 1, M) warm-up forwards, then one more
//    forward before its first backward, so it holds min(P - p, M) micro-batches at the peak.
//  - Interleaved (v virtual chunks per rank, micro-batch groups of P): rank p runs
//    (P - p - 1) x 2 + (v - 1) x P warm-up forwards (at most M x v); with the next forward,
//    min(warm-up + 1, M x v) chunk-forwards are alive. Forward k runs chunk (k / P) mod v, so the
//    count per chunk follows from that order.
// Units: counts of micro-batches (per chunk).
// Limitations: the peak is taken at the end of warm-up (the steady state frees one micro-batch
// per backward as it adds one per forward); zero-bubble and other schedules are not modelled.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnostics.h"

namespace stagemem {

// M = global batch / (micro-batch x DP); errors name the fields when it does not divide.
std::int64_t micro_batches_per_step(std::int64_t global_batch, std::int64_t micro_batch,
                                    std::int64_t data_parallel, Diagnostics& diagnostics);

struct InFlight {
  std::int64_t warmup_forwards = 0;     // forwards before the first backward
  std::vector<std::int64_t> per_chunk;  // micro-batches of each virtual chunk alive at the peak
  std::int64_t total() const;
};

// Pipeline rank `rank` of `pipeline_ranks`, `chunks` virtual chunks per rank, M micro-batches.
InFlight in_flight_at_peak(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                           std::int64_t micro_batches);

}  // namespace stagemem
