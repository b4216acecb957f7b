#include "parallel/schedule.h"

#include <algorithm>
#include <string>

namespace stagemem {

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

namespace {

// One pass kind's candidates: records of (pass, micro-batch, width counts).
struct KindCandidates {
  std::vector<std::int32_t> records;
  std::size_t count = 0;
};

// Adds one pass's state to its kind's candidates: dropped when one holds at least as much per
// chunk (it is earlier); otherwise it replaces those it holds strictly more than.
void offer(KindCandidates& kind, const std::int32_t* live, std::size_t width, std::int32_t pass,
           std::int32_t micro_batch) {
  const std::size_t stride = width + 2;
  std::size_t kept = 0;
  for (std::size_t k = 0; k < kind.count; ++k) {
    std::int32_t* record = kind.records.data() + k * stride;
    const std::int32_t* counts = record + 2;
    bool below = true;
    bool above = true;
    for (std::size_t c = 0; c < width && (below || above); ++c) {
      below = below && live[c] <= counts[c];
      above = above && live[c] >= counts[c];
    }
    if (below) return;
    if (above) continue;  // candidate k can no longer be the first maximum
    if (kept != k) std::copy(record, record + stride, kind.records.data() + kept * stride);
    ++kept;
  }
  if (kind.records.size() < (kept + 1) * stride) kind.records.resize(2 * (kept + 1) * stride);
  std::int32_t* record = kind.records.data() + kept * stride;
  record[0] = pass;
  record[1] = micro_batch;
  std::copy(live, live + width, record + 2);
  kind.count = kept + 1;
}

// Forwards of virtual chunk `chunk` among the first n of the table when every group holds P
// micro-batches (a group runs P forwards per chunk, chunk by chunk).
std::int64_t forwards_of_chunk(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t n,
                               std::int64_t chunk) {
  const std::int64_t group = pipeline_ranks * chunks;
  const std::int64_t in_group = n % group - chunk * pipeline_ranks;
  return (n / group) * pipeline_ranks + std::clamp<std::int64_t>(in_group, 0, pipeline_ranks);
}

}  // namespace

void peak_candidates(std::int64_t pipeline_ranks, std::int64_t chunks, std::int64_t rank,
                     std::int64_t micro_batches, PeakCandidates& out) {
  out.clear();
  if (pipeline_ranks < 1 || chunks < 1 || rank < 0 || rank >= pipeline_ranks || micro_batches < 1) {
    return;
  }
  const auto width = static_cast<std::size_t>(chunks);
  const std::int64_t total = micro_batches * chunks;
  const std::int64_t warmup = warmup_forwards(pipeline_ranks, chunks, rank, micro_batches);
  const std::int64_t steady = total - warmup;
  const std::int64_t walked = chunks > 1 && micro_batches % pipeline_ranks == 0
                                  ? std::min(steady, pipeline_ranks * chunks)
                                  : steady;
  const std::size_t stride = width + 2;
  std::vector<std::int32_t> live(width, 0);
  std::vector<KindCandidates> kinds(2 * width);
  std::int32_t index = 0;
  const auto visit = [&](const ScheduleSlot& x) {
    const auto c = static_cast<std::size_t>(x.chunk);
    if (!x.backward) ++live[c];
    offer(kinds[c * 2 + (x.backward ? 1 : 0)], live.data(), width, index,
          static_cast<std::int32_t>(x.micro_batch));
    if (x.backward) --live[c];
    ++index;
  };
  for (std::int64_t k = 0; k < warmup; ++k)
    visit(forward_slot(pipeline_ranks, chunks, micro_batches, k));
  for (std::int64_t i = 0; i < walked; ++i) {
    visit(forward_slot(pipeline_ranks, chunks, micro_batches, warmup + i));
    visit(backward_slot(pipeline_ranks, chunks, micro_batches, i));
  }
  if (walked < steady) {
    // The later periods repeat the first one's states. Cool-down starts with every forward run
    // and `steady` backwards run; backward j runs chunk chunks - 1 - (forward j's chunk).
    index = static_cast<std::int32_t>(warmup + 2 * steady);
    for (std::size_t c = 0; c < width; ++c) {
      const auto forward_chunk = static_cast<std::int64_t>(width - 1 - c);
      live[c] = static_cast<std::int32_t>(
          micro_batches - forwards_of_chunk(pipeline_ranks, chunks, steady, forward_chunk));
    }
  }
  for (std::int64_t i = steady; i < total; ++i)
    visit(backward_slot(pipeline_ranks, chunks, micro_batches, i));
  std::size_t size = 0;
  for (const KindCandidates& k : kinds) size += k.count;
  out.pass.reserve(size);
  out.kind.reserve(size);
  out.micro_batch.reserve(size);
  out.alive.reserve(size * width);
  for (std::size_t kind = 0; kind < kinds.size(); ++kind) {
    for (std::size_t k = 0; k < kinds[kind].count; ++k) {
      const std::int32_t* record = kinds[kind].records.data() + k * stride;
      out.pass.push_back(record[0]);
      out.kind.push_back(static_cast<std::int32_t>(kind));
      out.micro_batch.push_back(record[1]);
      out.alive.insert(out.alive.end(), record + 2, record + stride);
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k) {
    std::int64_t sum = 0;
    for (std::size_t c = 0; c < width; ++c) sum += out.alive[k * width + c];
    out.most_alive = std::max(out.most_alive, sum);
  }
}

void dualpipev_peak_candidates(std::int64_t pipeline_ranks, std::int64_t rank,
                               std::int64_t micro_batches, PeakCandidates& out) {
  out.clear();
  std::int32_t live[2] = {0, 0};
  std::int32_t index = 0;
  for_each_dualpipev_slot(pipeline_ranks, rank, micro_batches, [&](const ScheduleSlot& x) {
    const auto c = static_cast<std::size_t>(x.chunk);
    if (!x.backward) ++live[c];
    out.pass.push_back(index++);
    out.kind.push_back(static_cast<std::int32_t>(x.chunk * 2 + (x.backward ? 1 : 0)));
    out.micro_batch.push_back(static_cast<std::int32_t>(x.micro_batch));
    out.alive.push_back(live[0]);
    out.alive.push_back(live[1]);
    out.most_alive = std::max<std::int64_t>(out.most_alive, live[0] + live[1]);
    if (x.backward) --live[c];
  });
}

}  // namespace stagemem
