// replay_stages.h — internal to estimate/: the estimate's allocator step, every stage's replay
// (allocator/step_replay.h), in pieces.
//
// Purpose: the allocator replay is most of a large layout's estimate (a kimi-k3 PP 8 x VPP 2
// stage replays 120k tensors through fragmented free lists: tens of milliseconds per stage).
// StageReplays walks the stages one replay piece at a time so that a front end can spread one
// estimate over frames (SteppedEstimate, estimate.h); estimate_into runs it to the end in one
// call. Per stage: the replay without the device limit (or its memo), then, when its reserved
// peak passes the device, the replay against the device (or its memo); within one budget of
// activation allocations for the whole estimate (ReplaySettings::max_allocations), past which no
// stage keeps replayed figures and a warning says why.
// Units: bytes (int64) per rank. Limitations: `report` must not change while it runs (each stage
// replay reads its stage in place).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "allocator/step_replay.h"
#include "estimate/estimate.h"

namespace stagemem {

class StageReplays {
 public:
  enum class Status : std::uint8_t { more, done, failed };
  // Drops the resident tensor lists past ReplaySettings::max_resident_tensors (with a warning).
  StageReplays(Report& report, const ReplaySettings& settings, EstimateCache& cache);
  // Replays at least `allocations` more activation tensors (or to the end). done: every stage
  // has its figures (or, past the budget, none has: they fit against their peak allocated);
  // failed: stage failed_stage()'s figures do not fit in int64 bytes.
  Status advance(std::int64_t allocations);
  std::size_t failed_stage() const { return stage_; }

 private:
  enum class Phase : std::uint8_t { start, unlimited, limited };
  void start_stage();
  void check_against_device();
  void end_limited();
  void end_stage();  // past the budget: exhausted_, with a warning
  Status set_figures();

  Report& report_;
  ReplaySettings settings_;
  EstimateCache& cache_;
  std::int64_t budget_ = 0;
  std::vector<ReplayedStage> replayed_;
  std::vector<std::int64_t> key_;
  std::size_t stage_ = 0;
  std::int64_t limit_ = 0;
  Phase phase_ = Phase::start;
  bool exhausted_ = false;
  std::optional<StageReplay> running_;
};

}  // namespace stagemem
