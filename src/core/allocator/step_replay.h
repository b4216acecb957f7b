// step_replay.h — a stage's training steps replayed tensor by tensor through the caching
// allocator (caching_allocator.h): its peak reserved bytes and the segments it holds then.
//
// Purpose: peak allocated (StageReport::peak_bytes) is not what a device runs out of; the
// allocator's reserved bytes are. They follow from the order in which tensors of each size are
// allocated and freed, which the step timeline (memory/timeline.h) already knows. The replay:
//  1. model and optimizer init: each resident term allocated at model or optimizer init, one
//     tensor per term in term order, except the terms StageReport::resident_allocations lists
//     tensor by tensor (memory/parameter_tensors.h: Megatron DDP's parameters, DDP buffers and
//     main parameters of data-parallel rank 0), replayed after them in their order;
//  2. step 1, pass by pass in the schedule's order (parallel/schedule.h): a forward pass
//     allocates its micro-batch's stored activations on its chunk (StageReport::
//     activation_units tensors of each term, layer by layer: one tensor of each term per layer
//     in term order), then the transients the pass holds together (timeline.h's
//     transients_held_by_pass), and frees those transients; a backward pass allocates its
//     transients, frees them, then frees the micro-batch's activations in reverse order. With
//     --empty-unused-memory-level >= 1 the cache is emptied after the last backward (Megatron's
//     train_step);
//  3. the optimizer step: the resident terms created by the first step (Adam's moments,
//     workspaces, TE's dummy weight-gradient buffers) are allocated (the moments per parameter
//     where resident_allocations lists them), then the step's transients
//     together, which are then freed; the tensors kept past the step (between_steps) are
//     allocated and stay until the next step's first forward; at level 2 the cache is emptied
//     after the step;
//  4. step 2 the same, on the blocks step 1 left cached.
// The result is the largest reserved (and allocated) figure of both steps and the segments held
// when reserved peaked.
// Assumptions (stated in the report's text): one stream; resident terms not listed tensor by
// tensor (Megatron-FSDP and FSDP2 state, quantised weights, TE's caches) are one tensor each; a
// layer's tensors in term order; measured gap rows that are not allocator memory (runtime context,
// communication buffers) are left out and the allocator-fragmentation row is replaced by the
// replay. Device limit: with ReplaySettings::device_limit_bytes the allocator releases cached
// blocks and retries where cudaMalloc would fail; once it has, the fast path stops skipping (the
// retries of skipped passes would go uncounted). The replay stops at an out-of-memory failure (its
// figures are then partial: ReplayedStage::out_of_memory). Fast path: the allocator's state after
// each pass is kept as a 64-bit hash, updated on every malloc and free (segments; each live block's
// address, size and tensor; micro-batches by their age on their chunk). When the state after a pass
// equals the state after an earlier pass of the step and the schedule repeats with that period, the
// repeating passes are skipped whole: they would leave the same state and the same peaks. Exact up
// to a 64-bit hash collision. With garbage collection (AllocatorRules::gc_threshold_bytes) every
// pass is replayed: a block's age counts large-pool requests, which the state hash does not hold.
// Units: bytes (int64) per rank.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "allocator/caching_allocator.h"
#include "report/report.h"

namespace stagemem {

struct ReplaySettings {
  AllocatorRules rules{};
  std::int64_t empty_unused_memory_level = 0;  // Megatron's --empty-unused-memory-level
  bool fast_path = true;  // false: every pass replayed (the tests compare both)
  // The replay stops (ReplayedStage::complete false) once it has allocated this many activation
  // tensors (passes the fast path skips cost nothing): it bounds the time of one estimate (about
  // 20 ns each) whatever the layers and micro-batches. estimate() shares one budget among its
  // stages. A stage of more than replay_max_passes passes per step is not replayed at all.
  std::int64_t max_allocations = std::int64_t{1} << 20;
  // The resident tensors (StageReport::resident_allocations, every stage's lists) one estimate
  // replays tensor by tensor; past it every resident term is one tensor and a warning says so
  // (about 100-200 ns each in wasm, with list building: 2^13 keep the Plan tab's confirmations near
  // a frame).
  std::int64_t max_resident_tensors = std::int64_t{1} << 13;
  // The bytes the allocator may reserve on the device (its usable bytes less the measured rows
  // outside the allocator); 0: no limit. Past it the allocator releases cached blocks and retries
  // (caching_allocator.h); not replayed with expandable segments.
  std::int64_t device_limit_bytes = 0;
  // torch.cuda.set_per_process_memory_fraction's allowed_memory_maximum (0: not set): the
  // estimate replays against the smaller of it and the device (replay_stages.h).
  std::int64_t allowed_memory_maximum = 0;
};

inline constexpr std::int64_t replay_max_passes = std::int64_t{1} << 20;

struct ReplayedStage {
  std::int64_t peak_reserved_bytes = 0;
  std::int64_t peak_allocated_bytes = 0;  // the allocator's: block sizes, 512 B rounded
  std::int64_t peak_requested_bytes = 0;  // the live tensors' own bytes at their largest
  std::int64_t reserved_after_steps = 0;  // after the second step
  // What Megatron's memory log prints after iteration 1: max reserved, reserved.
  std::int64_t first_step_peak_reserved_bytes = 0;
  std::int64_t reserved_after_first_step = 0;
  // When reserved peaked: step 1 or 2, and the pass (or the optimizer step).
  std::int64_t peak_step = 1;
  StepPhase peak_phase = StepPhase::forward;
  std::int64_t peak_micro_batch = -1;
  std::int64_t peak_chunk = -1;
  std::vector<HeldSegment> segments_at_peak;  // the segments held when reserved peaked
  std::int64_t passes_replayed = 0;           // passes replayed one by one (the rest skipped)
  std::int64_t passes_skipped = 0;
  std::int64_t allocations = 0;  // tensor allocations replayed
  bool complete = true;          // false: stopped at max_allocations; the figures are partial
  bool fits = true;
  // Against the device limit: how often the allocator released every cached segment and retried
  // (PyTorch's num_alloc_retries, over both steps), the segments it released to make room, and
  // whether an allocation failed even then (out of memory).
  std::int64_t alloc_retries = 0;
  std::int64_t segments_released_for_room = 0;
  bool out_of_memory = false;
  std::int64_t segments_released_by_gc = 0;  // garbage_collection_threshold, over both steps
};

// The allocator's state after a stage's init (the resident terms allocated at model and
// optimizer init, tensor by tensor where listed), kept between replays whose init is the same
// (equal `key`): a replay copies it (CachingAllocator::copy_state_from) instead of allocating
// the init's tensors again, which for a stage of thousands of parameters is most of its cost.
struct ReplayInitCache {
  std::vector<std::int64_t> key;
  std::unique_ptr<CachingAllocator> allocator;
  std::uint64_t resident_hash = 0;  // the replay's state hash of the init's blocks
};

// One stage's replay in pieces, so that a front end can spread a large layout's replay (hundreds
// of thousands of tensors: tenths of a second) over frames. advance() until it returns false; the
// result is then replay_stage's, whatever the pieces. `report`, `stage` and `init` must outlive it
// unchanged.
class StageReplay {
 public:
  StageReplay(const Report& report, const StageReport& stage, const ReplaySettings& settings,
              ReplayInitCache* init = nullptr);
  ~StageReplay();
  StageReplay(StageReplay&&) noexcept;
  StageReplay& operator=(StageReplay&&) noexcept;
  // Replays until at least `allocations` more activation tensors are allocated (at least one
  // pass; init and each optimizer step are whole), or to the end: false once the replay is done.
  bool advance(std::int64_t allocations);
  const ReplayedStage& result() const;  // final once advance() returned false
  std::int64_t allocations() const;     // activation tensors allocated so far

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The whole replay in one call. `init`: where the state after init is kept between calls (null:
// not kept).
ReplayedStage replay_stage(const Report& report, const StageReport& stage,
                           const ReplaySettings& settings, ReplayInitCache* init = nullptr);

}  // namespace stagemem
