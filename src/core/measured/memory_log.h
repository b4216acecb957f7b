// memory_log.h — Megatron's memory report lines from a training log, as measured readings.
//
// Purpose: a user pastes (or the CLI reads) the lines Megatron's report_memory prints,
//   [Rank 6] (after 2 iterations) memory (MB) | allocated: 53199.09 | max allocated: 84019.37 |
//       reserved: 84732.0 | max reserved: 84732.0
// for any number of ranks, and each figure becomes a Measurement (config.h) on the rank's pipeline
// stage, so it is cross-checked like any other reading, never fed into the model:
//   allocated (between steps)      -> after-first-step: the resident terms;
//   max allocated (since start)    -> steady-state-peak: the step's peak;
//   reserved / max reserved        -> the same points; the caching allocator's extra (its cached
//                                     free blocks and fragmentation) is the named gap.
// Only the latest reading of each rank is kept (max allocated is cumulative, so it is the largest).
// Ranks map to coordinates in Megatron's order (parallel_state.py RankGenerator, "tp-cp-ep-dp-pp"
// for the dense groups with ep = 1 and "tp-ep-dp-pp" with the expert sizes for the expert groups):
// TP is the fastest-varying coordinate and PP the slowest, so stage = rank / (world / PP).
// Units: Megatron's "MB" is MiB (report_memory divides by 1024 * 1024); "(MiB)", "(GiB)" and
// "(GB)" headers are read as written (GB = 10^9 B). Numbers are rounded to the nearest byte.
// Limitations: lines before Megatron commit 3574b8e6a3 (2020-12-06) carry no "[Rank r]": they were
// printed by global rank 0 only (print_rank_0) and are read as rank 0 with a warning. Other text
// in the log is ignored; a line that looks like a memory report but cannot be read is an error
// naming its line number. At most max_log_bytes of text, max_log_readings readings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "parallel/layout.h"

namespace stagemem {

inline constexpr std::size_t max_log_bytes = std::size_t{64} << 20;
inline constexpr std::size_t max_log_readings = 1 << 16;

struct MemoryLogReading {
  std::int64_t line = 0;        // 1-based line number in the log
  std::int64_t rank = 0;        // global rank that printed it
  bool rank_given = true;       // false: an old line without "[Rank r]" (read as rank 0)
  std::string label;            // what report_memory was called with, e.g. "(after 2 iterations)"
  std::int64_t iteration = -1;  // from "after N iterations" / "... for iteration N", else -1
  std::int64_t allocated = 0;
  std::int64_t max_allocated = 0;
  std::int64_t reserved = -1;      // -1: the line does not print it
  std::int64_t max_reserved = -1;  // -1: the line does not print it
};

// Every memory report line of `text`; errors and warnings name `field` with the line number
// (e.g. "memory_log[train.log]:12").
std::vector<MemoryLogReading> parse_memory_log(std::string_view text, const std::string& field,
                                               Diagnostics& diagnostics);

// A global rank's coordinates under Megatron's rank order.
struct RankCoordinates {
  std::int64_t pipeline = 0;
  std::int64_t tensor = 0;
  std::int64_t context = 0;
  std::int64_t data = 0;
  std::int64_t expert_tensor = 0;
  std::int64_t expert = 0;
  std::int64_t expert_data = 0;
};
// Requires a validated layout and 0 <= rank < world_size(layout).
RankCoordinates rank_coordinates(const ParallelLayout& layout, std::int64_t rank);

// The readings as measurements: the latest reading of each rank, one measurement per figure it
// prints, in rank order. A rank outside the layout is an error naming `field` and the line.
// When they would be more than `room` measurements, each stage keeps only its rank with the
// largest max allocated (the rank that binds), with a warning saying how many ranks were read;
// more stages than `room` allows is an error.
// `source` names the log (e.g. its file name); each measurement's source adds the line, the rank,
// the label and the rank's coordinates.
std::vector<Measurement> memory_log_measurements(const std::vector<MemoryLogReading>& readings,
                                                 const ParallelLayout& layout,
                                                 std::string_view source, const std::string& field,
                                                 std::size_t room, Diagnostics& diagnostics);

}  // namespace stagemem
