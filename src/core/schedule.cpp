#include "schedule.h"

#include <algorithm>
#include <string>

namespace stagemem {

std::int64_t micro_batches_per_step(std::int64_t global_batch, std::int64_t micro_batch,
                                    std::int64_t data_parallel, Diagnostics& d) {
  if (global_batch < 1 || micro_batch < 1 || data_parallel < 1) {
    d.error("training.global_batch", "global batch, micro-batch and DP must all be >= 1");
    return 0;
  }
  const std::int64_t per_step = micro_batch * data_parallel;
  if (global_batch % per_step != 0) {
    d.error("training.global_batch",
            "global batch " + std::to_string(global_batch) + " is not a multiple of micro-batch " +
                std::to_string(micro_batch) + " x DP " + std::to_string(data_parallel) + " = " +
                std::to_string(per_step));
    return 0;
  }
  return global_batch / per_step;
}

std::int64_t InFlight::total() const {
  std::int64_t sum = 0;
  for (std::int64_t n : per_chunk) sum += n;
  return sum;
}

InFlight in_flight_at_peak(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                           std::int64_t micro_batches) {
  InFlight result;
  result.per_chunk.assign(static_cast<std::size_t>(std::max<std::int64_t>(chunks, 1)), 0);
  if (pipeline_ranks < 1 || chunks < 1 || rank < 0 || rank >= pipeline_ranks || micro_batches < 1) {
    return result;
  }
  if (chunks == 1) {
    result.warmup_forwards = std::min(pipeline_ranks - rank - 1, micro_batches);
    result.per_chunk[0] = std::min(pipeline_ranks - rank, micro_batches);
    return result;
  }
  const std::int64_t total_forwards = micro_batches * chunks;
  result.warmup_forwards =
      std::min((pipeline_ranks - rank - 1) * 2 + (chunks - 1) * pipeline_ranks, total_forwards);
  const std::int64_t alive = std::min(result.warmup_forwards + 1, total_forwards);
  // Forward k runs on chunk (k / P) mod C: whole rounds of P x C forwards give every chunk P,
  // the rest fills chunks 0, 1, ... P at a time.
  const std::int64_t round = pipeline_ranks * chunks;
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t rest = alive % round - c * pipeline_ranks;
    result.per_chunk[static_cast<std::size_t>(c)] =
        alive / round * pipeline_ranks + std::clamp<std::int64_t>(rest, 0, pipeline_ranks);
  }
  return result;
}

}  // namespace stagemem
