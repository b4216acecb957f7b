// caching_allocator.h — PyTorch's CUDA caching allocator, replayed on sizes instead of memory.
//
// Purpose: a job runs out of memory at what the allocator has reserved from the device, not at
// the bytes its tensors hold. This is the allocator's bookkeeping, rule for rule, from
// c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x; the release and each rule's source line are in
// docs/physics-notes.md, "Allocator replay"), driven by a sequence of malloc and free calls:
//  - sizes round up to 512 B (round_size), or to a power-of-two division when
//    roundup_power2_divisions is set;
//  - requests up to 1 MiB come from the small pool, carved from 2 MiB segments; larger ones from
//    the large pool: 20 MiB segments below 10 MiB, else the request rounded up to 2 MiB
//    (get_allocation_size);
//  - a request takes the best-fitting cached free block of its pool (smallest size, then lowest
//    address); under max_split_size a request below it never takes a block at or above it, and
//    a request at or above it takes a cached block only within 20 MiB of its size
//    (get_free_block);
//  - a block is split when the remainder is >= 512 B (small pool, expandable segments) or
//    > 1 MiB for requests below max_split_size (large pool); the allocation takes the low part
//    (should_split, alloc_found_block); an unsplit block counts whole in allocated bytes;
//  - a freed block merges with free neighbours of its own segment (free_block);
//  - expandable segments: one growing segment per pool, mapped in 2 MiB (small) or 20 MiB (large)
//    pages; when no mapped free block fits, the segment maps the pages the request needs beyond
//    the free block at its end (try_allocate_expandable_block);
//  - empty_cache releases every segment that is wholly free (release_cached_blocks).
// The state is also kept as a hash (segments_hash, block_address, block_size) for the step
// replay's fast path. Reserved bytes are the segments' (mapped pages') sizes; peaks are the largest
// values since construction, as max_memory_allocated / max_memory_reserved report them. Units:
// bytes (int64). Addresses are offsets in a virtual space: new segments take increasing addresses,
// as the device's allocator hands them out when nothing is freed.
// Device limit (set_device_limit): a new segment that would take reserved past the limit is what
// cudaMalloc refuses; the allocator then releases cached blocks and retries (malloc's fallbacks):
// first release_available_cached_blocks (with max_split_size only: the smallest cached oversize
// segment >= max(request, max_split_size), else oversize segments largest first until they cover
// it), then release_cached_blocks (every wholly free segment, as empty_cache) with a retry counted
// in alloc_retries (num_alloc_retries); when that fails too it is an out-of-memory error
// (out_of_memory() turns true and the segment is taken anyway, so the replay goes on and shows by
// how much the step is over).
// Garbage collection (AllocatorRules::gc_threshold_bytes, under a per-process memory fraction):
// a request that finds no cached block first runs garbage_collect_cached_blocks: while reserved is
// above the threshold, it releases the wholly free large-pool segments whose age (large-pool
// get_free_block calls since the block was cached) is at least the average age, in rounds, until
// the bytes above the threshold are released or none is left. The fraction's limit itself is a
// device limit (set_device_limit: the smaller of the two).
// Limitations: one stream (blocks recorded on other streams, record_stream, and their delayed
// reuse are not replayed); with expandable segments the device limit and garbage collection are
// not replayed (releasing unmaps free pages inside the segment, which this model does not hold);
// with expandable segments empty_cache is not replayed (the caller refuses that combination). ROCm:
// the same rules, but expandable segments exist only from PyTorch 2.11 (the estimate turns them off
// before that, version rule rocm-expandable-segments).
#pragma once

#include <cstdint>
#include <set>
#include <vector>

#include "base/node_pool.h"
#include "report/report.h"

namespace stagemem {

struct AllocatorRules {
  bool expandable_segments = false;
  std::int64_t max_split_size = 0;            // bytes; 0: unlimited (PyTorch's SIZE_MAX default)
  std::int64_t roundup_power2_divisions = 0;  // 0 or 1: off; else a power of two
  // garbage_collection_threshold x allowed_memory_maximum (under a per-process memory fraction):
  // above it, before a new segment, the oldest wholly free large segments are released
  // (garbage_collect_cached_blocks); 0: off. Not with expandable segments.
  std::int64_t gc_threshold_bytes = 0;
};

inline constexpr std::int64_t kMinBlockSize = 512;
inline constexpr std::int64_t kSmallSize = 1 << 20;
inline constexpr std::int64_t kSmallBuffer = 2 << 20;
inline constexpr std::int64_t kLargeBuffer = 20 << 20;
inline constexpr std::int64_t kMinLargeAlloc = 10 << 20;
inline constexpr std::int64_t kRoundLarge = 2 << 20;

// round_size: the block size a request of `size` bytes asks for.
std::int64_t allocator_round_size(std::int64_t size, std::int64_t roundup_power2_divisions);
// get_allocation_size: the segment a rounded request allocates when no cached block fits.
std::int64_t allocator_segment_size(std::int64_t rounded);

class CachingAllocator {
 public:
  explicit CachingAllocator(const AllocatorRules& rules);
  // The free sets allocate their nodes from node_pool_: not copyable or movable.
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Allocates `size` bytes (>= 0) for a caller's tensor; `label` is kept with the block (see
  // canonical_state). Returns the block's handle.
  std::int32_t malloc(std::int64_t size, std::uint64_t label);
  // Becomes a copy of `other`'s whole state (blocks, segments, free sets, peaks, counters): the
  // step replay starts from a cached state after init. The free sets are rebuilt here.
  void copy_state_from(const CachingAllocator& other);
  // Brings `by_segment` (one entry per segment index in creation order, which is address order;
  // bytes 0: released) up to date with the segments changed since its previous update, so a
  // snapshot costs the segments touched since the last one. Fixed-size segments only: with
  // expandable segments use segments().
  void update_segment_snapshot(std::vector<HeldSegment>& by_segment);
  // The segments held when reserved last reached its peak, as update_segment_snapshot keeps them
  // (fixed-size segments only). record_peak_segments() takes the current segments when reserved
  // is at its peak now (a caller's moment of interest later on the same plateau: more blocks
  // allocated, the same segments). Against a device limit the allocator also takes them at the end
  // of each malloc that raises the peak: a release for room later on would leave the peak's
  // segments unrecorded (they would sum to less than peak_reserved()).
  void record_peak_segments();
  const std::vector<HeldSegment>& peak_segments_by_index() const { return peak_segments_; }
  void free(std::int32_t handle);
  std::int64_t empty_cache();  // returns the segments released
  void reset_peaks();
  // The bytes cudaMalloc can hand out in all (0: no limit); ignored with expandable segments.
  void set_device_limit(std::int64_t bytes) {
    device_limit_ = rules_.expandable_segments ? 0 : bytes;
  }
  std::int64_t alloc_retries() const { return alloc_retries_; }
  // Segments garbage collection released (gc_threshold_bytes).
  std::int64_t released_by_gc() const { return released_by_gc_; }
  // Cached segments released to make room (by either fallback), and out-of-memory allocations.
  std::int64_t released_for_room() const { return released_for_room_; }
  bool out_of_memory() const { return out_of_memory_; }

  std::int64_t allocated() const { return allocated_; }
  std::int64_t reserved() const { return reserved_; }
  std::int64_t requested() const { return requested_; }
  std::int64_t peak_allocated() const { return peak_allocated_; }
  std::int64_t peak_reserved() const { return peak_reserved_; }
  // The largest sum of live tensors' requested bytes: no allocator can hold them in less.
  std::int64_t peak_requested() const { return peak_requested_; }
  std::int64_t segment_count() const;
  std::vector<HeldSegment> segments() const;
  // False once a size passed 2^62 bytes: every figure is then meaningless.
  bool fits() const { return fits_; }

  // The allocator's state as numbers: each segment in address order, then its blocks in address
  // order as (size, label) with `relabel` applied to live blocks' labels (free blocks: 0). Two
  // states with equal canonical forms evolve identically under the same calls.
  // A live block's address and size (valid until it is freed).
  std::int64_t block_address(std::int32_t handle) const {
    return blocks_[static_cast<std::size_t>(handle)].address;
  }
  std::int64_t block_size(std::int32_t handle) const {
    return blocks_[static_cast<std::size_t>(handle)].size;
  }
  // A hash of the segments held (address and reserved bytes of each): with the live blocks'
  // addresses and sizes it determines the allocator's whole state (free blocks are the rest of
  // each segment, always merged).
  std::uint64_t segments_hash() const { return segments_hash_; }

 private:
  struct FreeKey {
    std::int64_t size;
    std::int64_t address;
    std::int32_t block;
    bool operator<(const FreeKey& o) const {
      return size != o.size ? size < o.size : address < o.address;
    }
  };
  using FreeSet = std::set<FreeKey, std::less<FreeKey>, NodePoolAllocator<FreeKey>>;
  struct Block {
    FreeSet::iterator free_at{};  // its entry in its pool's free set while `cached`
    std::int64_t address = 0;
    std::int64_t size = 0;
    std::int64_t requested = 0;
    std::uint64_t label = 0;
    std::int32_t prev = -1;  // neighbours inside the segment
    std::int32_t next = -1;
    std::int32_t segment = -1;  // index into segment_heads_
    // The large pool's get_free_block calls when it was last cached (gc_count_base): its age for
    // garbage collection is the calls since.
    std::int64_t gc_base = 0;
    bool allocated = false;
    bool small_pool = false;
    bool in_use = false;  // a live entry of blocks_ (not on the recycled list)
    bool cached = false;  // in its pool's free set (a free block once the sums saturate is not)
  };

  std::int32_t new_block();
  void drop_block(std::int32_t b);
  FreeSet& pool(bool small_pool) { return small_pool ? small_free_ : large_free_; }
  void insert_free(std::int32_t b);
  void erase_free(std::int32_t b);
  std::int32_t find_free_block(std::int64_t size, bool small_pool) const;
  std::int32_t new_segment(std::int64_t size, bool small_pool);
  bool over_limit(std::int64_t segment_bytes) const;
  void release_segment(std::int32_t head);
  void release_available_cached_blocks(std::int64_t size, bool small_pool);
  std::int32_t grow_expandable(std::int64_t size, bool small_pool);
  bool should_split(const Block& block, std::int64_t size) const;
  void add_reserved(std::int64_t bytes);
  void garbage_collect();
  void add_allocated(std::int64_t bytes);

  AllocatorRules rules_;
  std::vector<Block> blocks_;
  std::vector<std::int32_t> recycled_;
  std::vector<std::int32_t> segment_heads_;  // first block of each segment; -1: released
  // Per segment (as segment_heads_), kept on every malloc, free, split and merge so that a
  // snapshot (segments()) need not walk the blocks; not kept for expandable segments.
  struct SegmentStats {
    std::int64_t bytes = 0;
    std::int64_t allocated = 0;
    std::int64_t blocks = 1;
  };
  std::vector<SegmentStats> segment_stats_;
  // Segments changed since the last update_segment_snapshot (each listed once).
  std::vector<std::int32_t> dirty_segments_;
  std::vector<char> segment_dirty_;
  std::vector<HeldSegment> peak_segments_;  // record_peak_segments
  bool peak_raised_ = false;                // by the malloc under way (add_reserved)
  void touch(std::int32_t segment) {
    if (segment < 0 || segment_dirty_[static_cast<std::size_t>(segment)] != 0) return;
    segment_dirty_[static_cast<std::size_t>(segment)] = 1;
    dirty_segments_.push_back(segment);
  }
  std::int32_t expandable_segment_[2] = {-1, -1};  // [small_pool]: its segment index
  std::int64_t expandable_mapped_[2] = {0, 0};     // mapped bytes of each expandable segment
  std::int64_t expandable_base_[2] = {0, 0};       // its first address
  std::int32_t expandable_tail_[2] = {-1, -1};     // the block at its end (-1: none yet)
  NodePool node_pool_;                             // before the sets: it outlives them
  FreeSet small_free_{NodePoolAllocator<FreeKey>(&node_pool_)};
  FreeSet large_free_{NodePoolAllocator<FreeKey>(&node_pool_)};
  std::int64_t next_address_ = 0;
  std::int64_t allocated_ = 0;
  std::int64_t reserved_ = 0;
  std::int64_t requested_ = 0;
  std::int64_t peak_allocated_ = 0;
  std::int64_t peak_reserved_ = 0;
  std::int64_t peak_requested_ = 0;
  std::uint64_t segments_hash_ = 0;
  std::int64_t device_limit_ = 0;
  std::int64_t alloc_retries_ = 0;
  std::int64_t released_for_room_ = 0;
  std::int64_t released_by_gc_ = 0;
  std::int64_t large_free_block_calls_ = 0;  // get_free_blocks_call_count (gc only)
  bool out_of_memory_ = false;
  bool fits_ = true;
};

// The 64-bit mix (splitmix64's finaliser) the state hashes are built from.
inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline std::uint64_t mix64(std::uint64_t a, std::uint64_t b, std::uint64_t c = 0) {
  return mix64(mix64(mix64(a) ^ b) ^ c);
}

}  // namespace stagemem
