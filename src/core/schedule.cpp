#include "schedule.h"

#include <algorithm>
#include <string>

namespace stagemem {

const char* pipeline_schedule_name(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::dualpipev ? "dualpipev" : "1f1b";
}

DualPipeVPhases dualpipev_phases(std::int64_t pipeline_ranks, std::int64_t rank,
                                 std::int64_t micro_batches) {
  if (pipeline_ranks < 1 || rank < 0 || rank >= pipeline_ranks ||
      micro_batches < 2 * pipeline_ranks) {
    return {};
  }
  const std::int64_t later = pipeline_ranks - rank - 1;  // ranks after this one
  return {.forward0 = 2 * later,
          .forward0_forward1 = rank + 1,
          .backward1_forward1 = later,
          .main = micro_batches - 2 * pipeline_ranks + rank + 1,
          .backward1_pair = later,
          .backward_pairs = rank + 1,
          .weight_backward0 = later,
          .weights = rank + 1};
}

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
  const std::int64_t micro_batches = global_batch / per_step;
  // The step's schedule is walked pass by pass (timeline.h, the interleaved peak search): a
  // bound keeps that linear walk short. Real runs use thousands at most.
  if (micro_batches > max_micro_batches_per_step) {
    d.error("training.global_batch",
            "global batch " + std::to_string(global_batch) + " / (micro-batch " +
                std::to_string(micro_batch) + " x DP " + std::to_string(data_parallel) +
                ") = " + std::to_string(micro_batches) + " micro-batches per step; at most " +
                std::to_string(max_micro_batches_per_step) + " are modelled");
    return 0;
  }
  return micro_batches;
}

std::int64_t InFlight::total() const {
  std::int64_t sum = 0;
  for (std::int64_t n : per_chunk) sum += n;
  return sum;
}

std::int64_t warmup_forwards(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                             std::int64_t micro_batches) {
  if (chunks == 1) return std::min(pipeline_ranks - rank - 1, micro_batches);
  return std::min((pipeline_ranks - rank - 1) * 2 + (chunks - 1) * pipeline_ranks,
                  micro_batches * chunks);
}

ScheduleSlot forward_slot(std::int64_t pipeline_ranks, std::int64_t chunks,
                          std::int64_t micro_batches, std::int64_t k) {
  if (chunks == 1) return {.backward = false, .micro_batch = k, .chunk = 0};
  // Groups of P micro-batches run chunk by chunk; the last group may be smaller.
  const std::int64_t full_groups = micro_batches / pipeline_ranks;
  const std::int64_t per_full_group = pipeline_ranks * chunks;
  if (k < full_groups * per_full_group) {
    const std::int64_t in_group = k % per_full_group;
    return {.backward = false,
            .micro_batch = (k / per_full_group) * pipeline_ranks + in_group % pipeline_ranks,
            .chunk = in_group / pipeline_ranks};
  }
  const std::int64_t last_group = micro_batches - full_groups * pipeline_ranks;
  const std::int64_t in_group = k - full_groups * per_full_group;
  return {.backward = false,
          .micro_batch = full_groups * pipeline_ranks + in_group % last_group,
          .chunk = in_group / last_group};
}

ScheduleSlot backward_slot(std::int64_t pipeline_ranks, std::int64_t chunks,
                           std::int64_t micro_batches, std::int64_t k) {
  ScheduleSlot s = forward_slot(pipeline_ranks, chunks, micro_batches, k);
  s.backward = true;
  s.chunk = chunks - 1 - s.chunk;
  return s;
}

InFlight in_flight_at_peak(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                           std::int64_t micro_batches) {
  InFlight result;
  result.per_chunk.assign(static_cast<std::size_t>(std::max<std::int64_t>(chunks, 1)), 0);
  if (pipeline_ranks < 1 || chunks < 1 || rank < 0 || rank >= pipeline_ranks || micro_batches < 1) {
    return result;
  }
  result.warmup_forwards = warmup_forwards(pipeline_ranks, chunks, rank, micro_batches);
  const std::int64_t alive = std::min(result.warmup_forwards + 1, micro_batches * chunks);
  for (std::int64_t k = 0; k < alive; ++k) {
    result.per_chunk[static_cast<std::size_t>(
        forward_slot(pipeline_ranks, chunks, micro_batches, k).chunk)] += 1;
  }
  return result;
}

}  // namespace stagemem
