// allocator_settings.h — how the run configures PyTorch's CUDA caching allocator, as an input of
// the allocator replay (allocator/step_replay.h).
//
// Purpose: reserved memory depends on the allocator's options, which users set through
// PYTORCH_CUDA_ALLOC_CONF and Megatron's --empty-unused-memory-level:
//  - expandable_segments (PYTORCH_CUDA_ALLOC_CONF expandable_segments:True): one growing segment
//    per pool instead of one cudaMalloc per segment; PyTorch's default is off;
//  - max_split_size_mb: blocks at or above it are never split (0: unlimited, PyTorch's default);
//  - roundup_power2_divisions: sizes above 512 B x divisions round up to one of `divisions`
//    equal steps between powers of two (0: off, PyTorch's default);
//  - empty_unused_memory_level: Megatron's option: 1 empties the cache after the step's last
//    backward, 2 after the optimizer step too (0: never, Megatron's default);
//  - per_process_memory_fraction: torch.cuda.set_per_process_memory_fraction(f): the allocator
//    may reserve at most f x the device's total memory (allowed_memory_maximum; 0: not set,
//    PyTorch's default);
//  - garbage_collection_threshold (PYTORCH_CUDA_ALLOC_CONF garbage_collection_threshold:t): under
//    a memory fraction, before a new segment the allocator frees its oldest wholly free large
//    segments while reserved is above t x allowed_memory_maximum (0: off, PyTorch's default).
// Units: max_split_size_mb in MiB, the fractions of 1, the others counts.
// Allowed ranges (validate() names the field): max_split_size_mb 0 or [21, 2^30] (PyTorch refuses
// 20 and below); roundup_power2_divisions 0 or a power of two in [1, 64];
// empty_unused_memory_level [0, 2], and 0 with expandable segments (their release of pages is not
// replayed); per_process_memory_fraction 0 or (0, 1]; garbage_collection_threshold 0 or (0, 1)
// (PyTorch refuses 0 and 1 as a setting: 0 here means the option is absent).
// Limitations: a fraction of exactly 0 (nothing may be reserved) is not an input; per-size-interval
// roundup lists and pinned-memory options are not inputs.
#pragma once

#include <cstdint>

namespace stagemem {

struct AllocatorSettings {
  bool expandable_segments = false;
  std::int64_t max_split_size_mb = 0;
  std::int64_t roundup_power2_divisions = 0;
  std::int64_t empty_unused_memory_level = 0;
  double per_process_memory_fraction = 0.0;
  double garbage_collection_threshold = 0.0;
  friend bool operator==(const AllocatorSettings&, const AllocatorSettings&) = default;
};

}  // namespace stagemem
