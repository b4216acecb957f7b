#include "allocator/caching_allocator.h"

#include <algorithm>
#include <limits>

#include "base/checked_math.h"

namespace stagemem {
namespace {

// Sizes past this make every sum meaningless; no device holds them.
constexpr std::int64_t kLargestSize = std::int64_t{1} << 56;
// Past this many bytes reserved (or addresses handed out) nothing is meaningful: fits() turns
// false and the figures stop growing, so address + size never wraps.
constexpr std::int64_t kLargestTotal = std::int64_t{1} << 60;

std::int64_t round_up(std::int64_t value, std::int64_t step) {
  return (value + step - 1) / step * step;
}

bool power_of_two(std::int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

std::int64_t floor_power_of_two(std::int64_t v) {
  return std::int64_t{1} << (63 - __builtin_clzll(static_cast<std::uint64_t>(v)));
}

}  // namespace

std::int64_t allocator_round_size(std::int64_t size, std::int64_t roundup_power2_divisions) {
  if (size < kMinBlockSize) return kMinBlockSize;
  if (roundup_power2_divisions > 1 && size > kMinBlockSize * roundup_power2_divisions) {
    // roundup_power2_next_division: [2^k, 2^(k+1)) split into `divisions` equal steps.
    if (power_of_two(size)) return size;
    const std::int64_t floor = floor_power_of_two(size);
    const std::int64_t step =
        floor >> (63 - __builtin_clzll(static_cast<std::uint64_t>(roundup_power2_divisions)));
    if (step == 0) return floor << 1;
    const std::int64_t rounded_down = size & ~(step - 1);
    return rounded_down == size ? size : rounded_down + step;
  }
  return round_up(size, kMinBlockSize);
}

std::int64_t allocator_segment_size(std::int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return round_up(rounded, kRoundLarge);
}

CachingAllocator::CachingAllocator(const AllocatorRules& rules) : rules_(rules) {}

std::int32_t CachingAllocator::new_block() {
  std::int32_t b = 0;
  if (!recycled_.empty()) {
    b = recycled_.back();
    recycled_.pop_back();
    blocks_[static_cast<std::size_t>(b)] = Block{};
  } else {
    b = static_cast<std::int32_t>(blocks_.size());
    blocks_.emplace_back();
  }
  blocks_[static_cast<std::size_t>(b)].in_use = true;
  return b;
}

void CachingAllocator::drop_block(std::int32_t b) {
  blocks_[static_cast<std::size_t>(b)].in_use = false;
  recycled_.push_back(b);
}

void CachingAllocator::copy_state_from(const CachingAllocator& other) {
  rules_ = other.rules_;
  blocks_ = other.blocks_;
  recycled_ = other.recycled_;
  segment_heads_ = other.segment_heads_;
  segment_stats_ = other.segment_stats_;
  for (int p = 0; p < 2; ++p) {
    expandable_segment_[p] = other.expandable_segment_[p];
    expandable_mapped_[p] = other.expandable_mapped_[p];
    expandable_base_[p] = other.expandable_base_[p];
    expandable_tail_[p] = other.expandable_tail_[p];
  }
  // The free sets copied whole (a tree copy, no rebalancing), then each cached block pointed at
  // its entry in the copy: both sets hold the same keys in the same order.
  small_free_ = other.small_free_;
  large_free_ = other.large_free_;
  for (FreeSet* set : {&small_free_, &large_free_}) {
    for (auto it = set->begin(); it != set->end(); ++it) {
      blocks_[static_cast<std::size_t>(it->block)].free_at = it;
    }
  }
  dirty_segments_ = other.dirty_segments_;
  segment_dirty_ = other.segment_dirty_;
  peak_segments_ = other.peak_segments_;
  peak_raised_ = other.peak_raised_;
  next_address_ = other.next_address_;
  allocated_ = other.allocated_;
  reserved_ = other.reserved_;
  requested_ = other.requested_;
  peak_allocated_ = other.peak_allocated_;
  peak_reserved_ = other.peak_reserved_;
  peak_requested_ = other.peak_requested_;
  segments_hash_ = other.segments_hash_;
  device_limit_ = other.device_limit_;
  alloc_retries_ = other.alloc_retries_;
  released_for_room_ = other.released_for_room_;
  released_by_gc_ = other.released_by_gc_;
  large_free_block_calls_ = other.large_free_block_calls_;
  out_of_memory_ = other.out_of_memory_;
  fits_ = other.fits_;
}

void CachingAllocator::insert_free(std::int32_t b) {
  Block& block = blocks_[static_cast<std::size_t>(b)];
  block.gc_base = large_free_block_calls_;
  block.free_at = pool(block.small_pool).insert({block.size, block.address, b}).first;
  block.cached = true;
}

void CachingAllocator::erase_free(std::int32_t b) {
  Block& block = blocks_[static_cast<std::size_t>(b)];
  if (!block.cached) return;
  pool(block.small_pool).erase(block.free_at);
  block.cached = false;
}

// Past 2^62 bytes nothing is meaningful (fits() turns false) and the sums stop growing, so no
// later arithmetic can wrap.
void CachingAllocator::add_reserved(std::int64_t bytes) {
  if (!checked_add(reserved_, bytes, &reserved_) || reserved_ > kLargestTotal) {
    fits_ = false;
    reserved_ = kLargestTotal;
  }
  if (reserved_ > peak_reserved_) {
    peak_reserved_ = reserved_;
    peak_raised_ = true;
  }
}

void CachingAllocator::add_allocated(std::int64_t bytes) {
  if (!checked_add(allocated_, bytes, &allocated_) || allocated_ > kLargestTotal) {
    fits_ = false;
    allocated_ = kLargestTotal;
  }
  peak_allocated_ = std::max(peak_allocated_, allocated_);
}

// get_free_block: the smallest cached block that fits (lowest address among equal sizes), unless
// max_split_size keeps it for larger requests or it is too large for an oversize request.
std::int32_t CachingAllocator::find_free_block(std::int64_t size, bool small_pool) const {
  const FreeSet& free = small_pool ? small_free_ : large_free_;
  const auto it = free.lower_bound({size, std::numeric_limits<std::int64_t>::min(), -1});
  if (it == free.end()) return -1;
  if (rules_.max_split_size > 0) {
    if (size < rules_.max_split_size && it->size >= rules_.max_split_size) return -1;
    if (size >= rules_.max_split_size && it->size >= size + kLargeBuffer) return -1;
  }
  return it->block;
}

bool CachingAllocator::should_split(const Block& block, std::int64_t size) const {
  const std::int64_t remaining = block.size - size;
  if (block.small_pool || rules_.expandable_segments) return remaining >= kMinBlockSize;
  const bool below_max_split = rules_.max_split_size == 0 || size < rules_.max_split_size;
  return below_max_split && remaining > kSmallSize;
}

bool CachingAllocator::over_limit(std::int64_t segment_bytes) const {
  return device_limit_ > 0 &&
         (reserved_ > device_limit_ || segment_bytes > device_limit_ - reserved_);
}

// release_block: a wholly free segment goes back to the device (cudaFree).
void CachingAllocator::release_segment(std::int32_t head) {
  const Block& block = blocks_[static_cast<std::size_t>(head)];
  erase_free(head);
  reserved_ -= block.size;
  segments_hash_ -=
      mix64(static_cast<std::uint64_t>(block.address), static_cast<std::uint64_t>(block.size));
  segment_heads_[static_cast<std::size_t>(block.segment)] = -1;
  touch(block.segment);
  drop_block(head);
}

// release_available_cached_blocks: only with max_split_size; the smallest cached block of the
// pool >= max(request, max_split_size), else oversize blocks from the largest down until they
// cover that size. Oversize blocks are never split, so each is a whole segment.
void CachingAllocator::release_available_cached_blocks(std::int64_t size, bool small_pool) {
  if (rules_.max_split_size <= 0) return;
  FreeSet& free = pool(small_pool);
  const std::int64_t key = std::max(size, rules_.max_split_size);
  const auto whole = [&](std::int32_t b) {
    const Block& block = blocks_[static_cast<std::size_t>(b)];
    return block.prev < 0 && block.next < 0;
  };
  const auto it = free.lower_bound({key, std::numeric_limits<std::int64_t>::min(), -1});
  if (it != free.end() && whole(it->block)) {
    release_segment(it->block);
    ++released_for_room_;
    return;
  }
  std::int64_t released = 0;
  while (released < key && !free.empty()) {
    const FreeKey largest = *std::prev(free.end());
    if (largest.size < rules_.max_split_size || !whole(largest.block)) break;
    released += largest.size;
    release_segment(largest.block);
    ++released_for_room_;
  }
}

// garbage_collect_cached_blocks: above the threshold, rounds over the large pool's cached blocks
// in its order (size, then address) release each wholly free one at least as old as the average
// of those left, until the bytes above the threshold are released or a round releases none.
void CachingAllocator::garbage_collect() {
  if (reserved_ <= rules_.gc_threshold_bytes) return;
  const std::int64_t target = reserved_ - rules_.gc_threshold_bytes;
  const auto whole = [&](const FreeKey& k) {
    const Block& block = blocks_[static_cast<std::size_t>(k.block)];
    return block.prev < 0 && block.next < 0;
  };
  const auto age = [&](const FreeKey& k) {
    return large_free_block_calls_ - blocks_[static_cast<std::size_t>(k.block)].gc_base;
  };
  std::int64_t total_age = 0;
  std::int64_t freeable = 0;
  for (const FreeKey& k : large_free_) {
    if (!whole(k)) continue;
    total_age += age(k);
    ++freeable;
  }
  std::int64_t reclaimed = 0;
  bool freed = freeable > 0;
  while (reclaimed < target && freed && freeable > 0) {
    const double age_threshold = static_cast<double>(total_age) / static_cast<double>(freeable);
    freed = false;
    for (auto it = large_free_.begin(); it != large_free_.end();) {
      const FreeKey k = *it++;  // release_segment erases k's entry, not the next
      if (!whole(k) || static_cast<double>(age(k)) < age_threshold) continue;
      freed = true;
      reclaimed += k.size;
      total_age -= age(k);
      --freeable;
      release_segment(k.block);
      ++released_by_gc_;
    }
  }
}

// alloc_block: a new segment (cudaMalloc) holding one free block. Past the device limit,
// malloc's fallbacks release cached blocks first (header).
std::int32_t CachingAllocator::new_segment(std::int64_t size, bool small_pool) {
  const std::int64_t bytes = allocator_segment_size(size);
  if (over_limit(bytes)) {
    release_available_cached_blocks(size, small_pool);
    if (over_limit(bytes)) {
      released_for_room_ += empty_cache();
      ++alloc_retries_;
      if (over_limit(bytes)) {
        out_of_memory_ = true;
        device_limit_ = 0;  // the run has failed: no further release is meaningful
      }
    }
  }
  const std::int32_t b = new_block();
  Block& block = blocks_[static_cast<std::size_t>(b)];
  block.address = next_address_;
  block.size = bytes;
  block.small_pool = small_pool;
  block.segment = static_cast<std::int32_t>(segment_heads_.size());
  segment_heads_.push_back(b);
  segment_stats_.push_back({.bytes = bytes});
  segment_dirty_.push_back(0);
  touch(block.segment);
  if (next_address_ > kLargestTotal) {
    fits_ = false;  // the address stays put: meaningless from here on, but never wraps
  } else {
    next_address_ += round_up(bytes, kRoundLarge);
  }
  segments_hash_ +=
      mix64(static_cast<std::uint64_t>(block.address), static_cast<std::uint64_t>(bytes));
  add_reserved(bytes);
  return b;
}

// try_allocate_expandable_block: the pool's one segment maps the pages the request needs beyond
// the free block at its end (which the new pages extend).
std::int32_t CachingAllocator::grow_expandable(std::int64_t size, bool small_pool) {
  const std::int64_t page = small_pool ? kSmallBuffer : kLargeBuffer;
  std::int32_t& segment = expandable_segment_[small_pool ? 1 : 0];
  std::int64_t& mapped = expandable_mapped_[small_pool ? 1 : 0];
  if (segment < 0) {
    segment = static_cast<std::int32_t>(segment_heads_.size());
    segment_heads_.push_back(-1);
    segment_stats_.emplace_back();
    segment_dirty_.push_back(0);
    // The segment's virtual range is larger than any device (PyTorch reserves 9/8 of it).
    expandable_base_[small_pool ? 1 : 0] = next_address_;
    if (next_address_ > kLargestTotal) {
      fits_ = false;
    } else {
      next_address_ += kLargestSize;
    }
  }
  std::int32_t& tail_of_segment = expandable_tail_[small_pool ? 1 : 0];
  const std::int32_t tail = tail_of_segment;
  const bool tail_free = tail >= 0 && !blocks_[static_cast<std::size_t>(tail)].allocated;
  const std::int64_t have = tail_free ? blocks_[static_cast<std::size_t>(tail)].size : 0;
  std::int64_t pages = round_up(size - have, page);
  if (mapped > kLargestTotal - pages) {
    fits_ = false;  // past 2^60 bytes mapped: the segment stops growing (nothing is meaningful)
    pages = 0;
  }
  add_reserved(pages);
  const auto base = static_cast<std::uint64_t>(expandable_base_[small_pool ? 1 : 0]);
  segments_hash_ -= mix64(base, static_cast<std::uint64_t>(mapped));
  segments_hash_ += mix64(base, static_cast<std::uint64_t>(mapped + pages));
  if (tail_free) {
    erase_free(tail);
    blocks_[static_cast<std::size_t>(tail)].size += pages;
    mapped += pages;
    return tail;
  }
  const std::int32_t b = new_block();
  Block& block = blocks_[static_cast<std::size_t>(b)];
  block.size = pages;
  block.small_pool = small_pool;
  block.segment = segment;
  if (tail >= 0) {
    block.address = blocks_[static_cast<std::size_t>(tail)].address +
                    blocks_[static_cast<std::size_t>(tail)].size;
    block.prev = tail;
    blocks_[static_cast<std::size_t>(tail)].next = b;
  } else {
    block.address = expandable_base_[small_pool ? 1 : 0];
    segment_heads_[static_cast<std::size_t>(segment)] = b;
  }
  tail_of_segment = b;
  mapped += pages;
  return b;
}

std::int32_t CachingAllocator::malloc(std::int64_t size, std::uint64_t label) {
  if (size < 0 || size > kLargestSize) {
    fits_ = false;
    size = 0;
  }
  const std::int64_t rounded = allocator_round_size(size, rules_.roundup_power2_divisions);
  const bool small_pool = rounded <= kSmallSize;
  const bool collects = rules_.gc_threshold_bytes > 0 && !rules_.expandable_segments;
  if (collects && !small_pool) ++large_free_block_calls_;
  std::int32_t b = find_free_block(rounded, small_pool);
  if (b >= 0) {
    erase_free(b);
  } else {
    if (collects) garbage_collect();
    b = rules_.expandable_segments ? grow_expandable(rounded, small_pool)
                                   : new_segment(rounded, small_pool);
  }
  if (should_split(blocks_[static_cast<std::size_t>(b)], rounded)) {
    const std::int32_t rest = new_block();
    Block& block = blocks_[static_cast<std::size_t>(b)];
    Block& remainder = blocks_[static_cast<std::size_t>(rest)];
    remainder.address = block.address + rounded;
    remainder.size = block.size - rounded;
    remainder.small_pool = block.small_pool;
    remainder.segment = block.segment;
    remainder.prev = b;
    remainder.next = block.next;
    if (block.next >= 0) blocks_[static_cast<std::size_t>(block.next)].prev = rest;
    block.next = rest;
    block.size = rounded;
    for (std::int32_t& tail : expandable_tail_) {
      if (tail == b) tail = rest;
    }
    ++segment_stats_[static_cast<std::size_t>(block.segment)].blocks;
    touch(block.segment);
    insert_free(rest);
  }
  Block& block = blocks_[static_cast<std::size_t>(b)];
  block.allocated = true;
  segment_stats_[static_cast<std::size_t>(block.segment)].allocated += block.size;
  touch(block.segment);
  block.requested = size;
  block.label = label;
  if (fits_) requested_ += size;  // each size <= 2^56; sums stop once past 2^62
  peak_requested_ = std::max(peak_requested_, requested_);
  add_allocated(block.size);
  if (peak_raised_) {
    peak_raised_ = false;
    if (device_limit_ > 0 && !rules_.expandable_segments) {
      update_segment_snapshot(peak_segments_);
    }
  }
  return b;
}

void CachingAllocator::free(std::int32_t handle) {
  auto b = handle;
  Block& block = blocks_[static_cast<std::size_t>(b)];
  if (!block.in_use || !block.allocated) return;
  block.allocated = false;
  segment_stats_[static_cast<std::size_t>(block.segment)].allocated -= block.size;
  touch(block.segment);
  if (!fits_) return;  // the sums are saturated: nothing after this is meaningful
  allocated_ -= block.size;
  requested_ -= block.requested;
  // try_merge_blocks with the previous and the next block of the segment.
  for (const bool with_next : {false, true}) {
    Block& self = blocks_[static_cast<std::size_t>(b)];
    const std::int32_t other = with_next ? self.next : self.prev;
    if (other < 0 || blocks_[static_cast<std::size_t>(other)].allocated) continue;
    erase_free(other);
    Block& o = blocks_[static_cast<std::size_t>(other)];
    const std::int32_t keep = with_next ? b : other;
    const std::int32_t gone = with_next ? other : b;
    Block& kept = blocks_[static_cast<std::size_t>(keep)];
    const Block& dropped = blocks_[static_cast<std::size_t>(gone)];
    kept.size = self.size + o.size;
    kept.next = dropped.next;
    if (dropped.next >= 0) blocks_[static_cast<std::size_t>(dropped.next)].prev = keep;
    for (std::int32_t& tail : expandable_tail_) {
      if (tail == gone) tail = keep;
    }
    --segment_stats_[static_cast<std::size_t>(kept.segment)].blocks;
    drop_block(gone);
    b = keep;
  }
  insert_free(b);
}

std::int64_t CachingAllocator::empty_cache() {
  std::int64_t released = 0;
  for (std::size_t s = 0; s < segment_heads_.size(); ++s) {
    const std::int32_t head = segment_heads_[s];
    if (head < 0) continue;
    const Block& block = blocks_[static_cast<std::size_t>(head)];
    const bool expandable = expandable_segment_[0] == static_cast<std::int32_t>(s) ||
                            expandable_segment_[1] == static_cast<std::int32_t>(s);
    if (expandable || block.allocated || block.next >= 0) continue;
    release_segment(head);
    ++released;
  }
  return released;
}

void CachingAllocator::reset_peaks() {
  peak_allocated_ = allocated_;
  peak_reserved_ = reserved_;
}

std::int64_t CachingAllocator::segment_count() const {
  return static_cast<std::int64_t>(
      std::count_if(segment_heads_.begin(), segment_heads_.end(), [](auto h) { return h >= 0; }));
}

void CachingAllocator::update_segment_snapshot(std::vector<HeldSegment>& by_segment) {
  by_segment.resize(segment_heads_.size());
  for (const std::int32_t s : dirty_segments_) {
    const auto i = static_cast<std::size_t>(s);
    segment_dirty_[i] = 0;
    const std::int32_t head = segment_heads_[i];
    if (head < 0) {
      by_segment[i] = HeldSegment{};
      continue;
    }
    const SegmentStats& stats = segment_stats_[i];
    by_segment[i] = {.address = blocks_[static_cast<std::size_t>(head)].address,
                     .bytes = stats.bytes,
                     .allocated_bytes = stats.allocated,
                     .blocks = stats.blocks,
                     .small_pool = blocks_[static_cast<std::size_t>(head)].small_pool};
  }
  dirty_segments_.clear();
}

void CachingAllocator::record_peak_segments() {
  if (reserved_ == peak_reserved_) update_segment_snapshot(peak_segments_);
}

std::vector<HeldSegment> CachingAllocator::segments() const {
  std::vector<HeldSegment> out;
  if (!rules_.expandable_segments) {
    // Fixed-size segments take increasing addresses in creation order: already sorted.
    for (std::size_t s = 0; s < segment_heads_.size(); ++s) {
      const std::int32_t head = segment_heads_[s];
      if (head < 0) continue;
      const SegmentStats& stats = segment_stats_[s];
      out.push_back({.address = blocks_[static_cast<std::size_t>(head)].address,
                     .bytes = stats.bytes,
                     .allocated_bytes = stats.allocated,
                     .blocks = stats.blocks,
                     .small_pool = blocks_[static_cast<std::size_t>(head)].small_pool});
    }
    return out;
  }
  for (const std::int32_t head : segment_heads_) {
    if (head < 0) continue;
    HeldSegment view;
    view.address = blocks_[static_cast<std::size_t>(head)].address;
    view.small_pool = blocks_[static_cast<std::size_t>(head)].small_pool;
    for (std::int32_t b = head; b >= 0; b = blocks_[static_cast<std::size_t>(b)].next) {
      const Block& block = blocks_[static_cast<std::size_t>(b)];
      view.bytes += block.size;
      if (block.allocated) view.allocated_bytes += block.size;
      ++view.blocks;
    }
    out.push_back(view);
  }
  std::sort(out.begin(), out.end(),
            [](const HeldSegment& a, const HeldSegment& b) { return a.address < b.address; });
  return out;
}

}  // namespace stagemem
