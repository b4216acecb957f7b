// The caching allocator replay, rule by rule (c10/cuda/CUDACachingAllocator.cpp), with worked
// numbers, and properties over random call sequences.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "allocator/caching_allocator.h"
#include "catch.h"

using namespace stagemem;

namespace {
constexpr std::int64_t KiB = 1024;
constexpr std::int64_t MiB = 1024 * 1024;
}  // namespace

TEST_CASE("round_size: 512 B granules, and power-of-two divisions when set") {
  CHECK(allocator_round_size(0, 0) == 512);
  CHECK(allocator_round_size(1, 0) == 512);
  CHECK(allocator_round_size(512, 0) == 512);
  CHECK(allocator_round_size(513, 0) == 1024);
  CHECK(allocator_round_size(3 * MiB + 1, 0) == 3 * MiB + 512);
  // Divisions apply above 512 B x divisions only: 1200 B with 4 divisions (<= 2048 B) keeps
  // the 512 B rule (PyTorch's comment example, 1200 -> 1280, skips that guard).
  CHECK(allocator_round_size(1200, 4) == 1536);
  // 5 MiB + 1 with 4 divisions: [4 MiB, 8 MiB) in 1 MiB steps -> 6 MiB (512 B rule: 5 MiB +
  // 512); with 2 divisions, 2 MiB steps -> 6 MiB; 3 MiB + 1 with 2 -> 4 MiB.
  CHECK(allocator_round_size(5 * MiB + 1, 4) == 6 * MiB);
  CHECK(allocator_round_size(5 * MiB + 1, 2) == 6 * MiB);
  CHECK(allocator_round_size(3 * MiB + 1, 2) == 4 * MiB);
  // A power of two stays.
  CHECK(allocator_round_size(8 * MiB, 4) == 8 * MiB);
}

TEST_CASE("get_allocation_size: 2 MiB small segments, 20 MiB below 10 MiB, else 2 MiB steps") {
  CHECK(allocator_segment_size(512) == 2 * MiB);
  CHECK(allocator_segment_size(1 * MiB) == 2 * MiB);
  CHECK(allocator_segment_size(1 * MiB + 512) == 20 * MiB);
  CHECK(allocator_segment_size(10 * MiB - 512) == 20 * MiB);
  CHECK(allocator_segment_size(10 * MiB) == 10 * MiB);
  CHECK(allocator_segment_size(10 * MiB + 512) == 12 * MiB);
}

TEST_CASE("Small requests share a 2 MiB segment and large ones get their own") {
  CachingAllocator a({});
  // 4 x 100 KiB: one 2 MiB small segment, 4 blocks of 100 KiB (512-aligned already) + remainder.
  for (int i = 0; i < 4; ++i) a.malloc(100 * KiB, 0);
  CHECK(a.reserved() == 2 * MiB);
  CHECK(a.allocated() == 400 * KiB);
  CHECK(a.segment_count() == 1);
  // 30 MiB + 1 B: rounded to 30 MiB + 512, its segment to 32 MiB; the 2 MiB - 512 B remainder
  // is > 1 MiB, so the block is split and allocated counts 30 MiB + 512.
  a.malloc(30 * MiB + 1, 0);
  CHECK(a.reserved() == 34 * MiB);
  CHECK(a.allocated() == 400 * KiB + 30 * MiB + 512);
  CHECK(a.requested() == 400 * KiB + 30 * MiB + 1);
}

TEST_CASE("A large block with a remainder of at most 1 MiB is handed out whole") {
  CachingAllocator a({});
  // 11 MiB + 512 B rounds its segment up to 12 MiB: 1 MiB - 512 B would remain, <= 1 MiB, so
  // the whole 12 MiB block is allocated (allocated_bytes counts 12 MiB).
  a.malloc(11 * MiB + 512, 0);
  CHECK(a.reserved() == 12 * MiB);
  CHECK(a.allocated() == 12 * MiB);
  // A 3 MiB request takes a 20 MiB segment and splits it (17 MiB remain).
  a.malloc(3 * MiB, 0);
  CHECK(a.reserved() == 32 * MiB);
  CHECK(a.allocated() == 15 * MiB);
  // A 16 MiB request fits the cached 17 MiB remainder: no new segment; 1 MiB remains, which is
  // not > 1 MiB, so the whole 17 MiB is allocated.
  a.malloc(16 * MiB, 0);
  CHECK(a.reserved() == 32 * MiB);
  CHECK(a.allocated() == 32 * MiB);
}

TEST_CASE("Best fit: the smallest cached block that fits, then the lowest address") {
  CachingAllocator a({});
  const auto big = a.malloc(40 * MiB, 0);
  const auto mid = a.malloc(24 * MiB, 0);
  const auto small = a.malloc(12 * MiB, 0);
  a.free(big);
  a.free(mid);
  a.free(small);
  CHECK(a.reserved() == 76 * MiB);
  CHECK(a.allocated() == 0);
  // 11 MiB: the 12 MiB block fits best (remainder 1 MiB, not split: 12 MiB allocated).
  a.malloc(11 * MiB, 0);
  CHECK(a.allocated() == 12 * MiB);
  // 20 MiB: the 24 MiB block (remainder 4 MiB > 1 MiB: split, 20 MiB allocated).
  a.malloc(20 * MiB, 0);
  CHECK(a.allocated() == 32 * MiB);
  // 30 MiB: the 40 MiB block; still no new segment.
  a.malloc(30 * MiB, 0);
  CHECK(a.allocated() == 62 * MiB);
  CHECK(a.reserved() == 76 * MiB);
  // 5 MiB: the 4 MiB remainder of the 24 MiB segment is too small; the 10 MiB remainder of the
  // 40 MiB one fits (split: 5 MiB remain).
  a.malloc(5 * MiB, 0);
  CHECK(a.reserved() == 76 * MiB);
  CHECK(a.allocated() == 67 * MiB);
}

TEST_CASE("Freed neighbours merge inside their segment, never across segments") {
  CachingAllocator a({});
  const auto x = a.malloc(10 * MiB, 0);  // a segment of exactly 10 MiB
  const auto y = a.malloc(10 * MiB, 0);  // another one
  a.free(x);
  a.free(y);
  // Two free 10 MiB segments: a 20 MiB request fits neither and maps a third.
  a.malloc(20 * MiB, 0);
  CHECK(a.reserved() == 40 * MiB);
  CachingAllocator b({});
  const auto p = b.malloc(4 * MiB, 0);  // 20 MiB segment, split
  const auto q = b.malloc(4 * MiB, 0);  // the same segment
  b.free(p);
  b.free(q);  // merges with p and with the 12 MiB remainder: the segment is one free block
  b.malloc(20 * MiB, 0);
  CHECK(b.reserved() == 20 * MiB);
  CHECK(b.segment_count() == 1);
}

TEST_CASE("max_split_size: large cached blocks are kept for large requests") {
  AllocatorRules rules;
  rules.max_split_size = 64 * MiB;
  CachingAllocator a(rules);
  const auto big = a.malloc(100 * MiB, 0);
  a.free(big);
  // A 30 MiB request (< 64 MiB) may not take the 100 MiB block (>= 64 MiB): a new segment.
  a.malloc(30 * MiB, 0);
  CHECK(a.reserved() == 130 * MiB);
  // A 70 MiB request (>= 64 MiB) may take a cached block only within 20 MiB of its size: 100
  // MiB >= 70 + 20, so it maps a new one too.
  a.malloc(70 * MiB, 0);
  CHECK(a.reserved() == 200 * MiB);
  // An 85 MiB request takes the 100 MiB block whole (oversize blocks are never split).
  a.malloc(85 * MiB, 0);
  CHECK(a.reserved() == 200 * MiB);
  CHECK(a.allocated() == 200 * MiB);
}

TEST_CASE("Expandable segments map 20 MiB pages for the large pool and split at 512 B") {
  AllocatorRules rules;
  rules.expandable_segments = true;
  CachingAllocator a(rules);
  // 30 MiB: two 20 MiB pages (40 MiB) mapped, the block split (10 MiB remain free).
  const auto x = a.malloc(30 * MiB, 0);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.allocated() == 30 * MiB);
  // 25 MiB: the 10 MiB free tail is extended by one 20 MiB page (15 MiB needed).
  a.malloc(25 * MiB, 0);
  CHECK(a.reserved() == 60 * MiB);
  CHECK(a.segment_count() == 1);
  // The 30 MiB hole at the start is reused by a 12 MiB + 1 KiB request, split at 512 B.
  a.free(x);
  a.malloc(12 * MiB + KiB, 0);
  CHECK(a.reserved() == 60 * MiB);
  CHECK(a.allocated() == 37 * MiB + KiB);
  // Small requests map 2 MiB pages of their own segment.
  a.malloc(100 * KiB, 0);
  CHECK(a.reserved() == 62 * MiB);
  CHECK(a.segment_count() == 2);
}

TEST_CASE("empty_cache returns wholly free segments only and peaks stay") {
  CachingAllocator a({});
  const auto x = a.malloc(40 * MiB, 0);
  const auto y = a.malloc(4 * MiB, 0);  // a 20 MiB segment, partly used
  a.malloc(4 * MiB, 0);                 // the same segment
  a.free(x);
  a.free(y);
  CHECK(a.reserved() == 60 * MiB);
  a.empty_cache();
  CHECK(a.reserved() == 20 * MiB);  // the 40 MiB segment went; the split one stays
  CHECK(a.peak_reserved() == 60 * MiB);
  a.reset_peaks();
  CHECK(a.peak_reserved() == 20 * MiB);
}

TEST_CASE("At the device limit the cache is released and the allocation retried, else OOM") {
  // Limit 50 MiB. A 30 MiB tensor freed leaves its 30 MiB segment cached; a 40 MiB request fits
  // no cached block, and 30 + 40 > 50: cudaMalloc fails, release_available_cached_blocks does
  // nothing (no max_split_size), release_cached_blocks frees the 30 MiB segment and the retry
  // (num_alloc_retries 1) reserves 40 MiB.
  CachingAllocator a({});
  a.set_device_limit(50 * MiB);
  a.free(a.malloc(30 * MiB, 1));
  CHECK(a.reserved() == 30 * MiB);
  const auto big = a.malloc(40 * MiB, 2);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.alloc_retries() == 1);
  CHECK(a.released_for_room() == 1);
  CHECK_FALSE(a.out_of_memory());
  CHECK(a.peak_reserved() == 40 * MiB);
  // With the 40 MiB tensor live, 20 MiB more cannot fit even after releasing the cache: out of
  // memory (the segment is taken anyway, so the replay shows by how much: 60 MiB).
  a.malloc(20 * MiB, 3);
  CHECK(a.out_of_memory());
  CHECK(a.alloc_retries() == 2);
  CHECK(a.reserved() == 60 * MiB);
  a.free(big);

  // No limit: the same calls keep the cached segment (70 MiB reserved), no retry.
  CachingAllocator unlimited({});
  unlimited.free(unlimited.malloc(30 * MiB, 1));
  unlimited.malloc(40 * MiB, 2);
  CHECK(unlimited.reserved() == 70 * MiB);
  CHECK(unlimited.alloc_retries() == 0);
}

TEST_CASE("At the device limit, max_split_size releases oversize segments first, largest first") {
  // max_split_size 20 MiB, limit 80 MiB: cached oversize segments of 30 and 40 MiB and a live
  // 10 MiB one (80 MiB reserved). A 50 MiB request: no cached block >= 50 MiB, so
  // release_available_cached_blocks frees oversize segments from the largest (40 MiB, then
  // 30 MiB: 70 MiB >= 50 MiB) and the second attempt fits (10 + 50 MiB): no full flush.
  CachingAllocator a({.max_split_size = 20 * MiB});
  a.set_device_limit(80 * MiB);
  const auto first = a.malloc(30 * MiB, 1);
  const auto second = a.malloc(40 * MiB, 2);
  a.malloc(10 * MiB, 3);
  a.free(first);
  a.free(second);
  CHECK(a.reserved() == 80 * MiB);
  a.malloc(50 * MiB, 4);
  CHECK(a.reserved() == 60 * MiB);
  CHECK(a.released_for_room() == 2);
  CHECK(a.alloc_retries() == 0);
  CHECK_FALSE(a.out_of_memory());
  // A cached oversize segment at least as large as the request goes alone: the smallest one.
  CachingAllocator b({.max_split_size = 20 * MiB});
  b.set_device_limit(100 * MiB);
  const auto x = b.malloc(30 * MiB, 1);
  const auto y = b.malloc(60 * MiB, 2);
  b.free(x);
  b.free(y);
  b.malloc(25 * MiB, 3);  // takes the cached 30 MiB block (< 25 + 20 MiB): nothing released
  CHECK(b.released_for_room() == 0);
  b.malloc(35 * MiB, 4);  // the 60 MiB block is >= 35 + 20 MiB: a new segment, 120 MiB > 100
  CHECK(b.released_for_room() == 1);  // the 60 MiB segment (>= max(35, 20) MiB) released
  CHECK(b.reserved() == 30 * MiB + 36 * MiB);
  CHECK(b.alloc_retries() == 0);
  // With expandable segments the limit is not replayed.
  CachingAllocator c({.expandable_segments = true});
  c.set_device_limit(10 * MiB);
  c.malloc(30 * MiB, 1);
  CHECK_FALSE(c.out_of_memory());
}

TEST_CASE("Garbage collection releases the oldest wholly free large segments above its threshold") {
  // garbage_collect_cached_blocks (PyTorch 001074d2): a request that finds no cached block first
  // collects while reserved > threshold. Ages count large-pool requests since a block was cached.
  // Segments a 20, b 30, e 16 MiB (3 large requests, 66 MiB reserved; at each the reserved bytes
  // were <= 50 MiB, so nothing collected). a is freed at count 3; e is taken and freed twice
  // (counts 4, 5); b is freed at count 5. A 40 MiB request (count 6) misses: ages a 3, e 1, b 1.
  const auto scenario = [](std::int64_t threshold_mib) {
    AllocatorRules rules;
    rules.gc_threshold_bytes = threshold_mib * MiB;
    auto alloc = std::make_unique<CachingAllocator>(rules);
    const auto a = alloc->malloc(20 * MiB, 1);
    const auto b = alloc->malloc(30 * MiB, 2);
    auto e = alloc->malloc(16 * MiB, 3);
    REQUIRE(alloc->reserved() == 66 * MiB);
    alloc->free(a);
    for (int i = 0; i < 2; ++i) {
      alloc->free(e);
      e = alloc->malloc(16 * MiB, 3);  // the cached 16 MiB block, exactly
    }
    alloc->free(e);
    alloc->free(b);
    REQUIRE(alloc->reserved() == 66 * MiB);
    alloc->malloc(40 * MiB, 4);
    return alloc;
  };
  // Threshold 50 MiB: 16 MiB to collect. Round 1, average age 5/3: in the pool's order (e 16,
  // a 20, b 30) only a (age 3) is old enough; 20 MiB >= 16 MiB ends it. 66 - 20 + 40 = 86 MiB.
  const auto one = scenario(50);
  CHECK(one->released_by_gc() == 1);
  CHECK(one->reserved() == 86 * MiB);
  CHECK(one->segment_count() == 3);
  CHECK(one->peak_reserved() == 86 * MiB);
  // Threshold 30 MiB: 36 MiB to collect. Round 1 releases a (20 MiB); round 2's average age is
  // (1 + 1) / 2 = 1: e and b both qualify, and a round never stops early: all three released,
  // 0 + 40 = 40 MiB.
  const auto all = scenario(30);
  CHECK(all->released_by_gc() == 3);
  CHECK(all->reserved() == 40 * MiB);
  CHECK(all->segment_count() == 1);
  // Above no threshold (the option off), nothing is collected: 66 + 40 MiB.
  const auto off = scenario(0);
  CHECK(off->released_by_gc() == 0);
  CHECK(off->reserved() == 106 * MiB);
  // At or below the threshold nothing is collected either: 66 MiB <= 80 MiB.
  const auto below = scenario(80);
  CHECK(below->released_by_gc() == 0);
  CHECK(below->reserved() == 106 * MiB);
}

TEST_CASE("Property: reserved covers allocated, which covers requested, and all return to zero") {
  std::mt19937_64 rng(2026);
  for (const bool expandable : {false, true}) {
    for (const std::int64_t max_split : {std::int64_t{0}, 64 * MiB}) {
      AllocatorRules rules;
      rules.expandable_segments = expandable;
      rules.max_split_size = max_split;
      CachingAllocator a(rules);
      std::vector<std::int32_t> live;
      for (int step = 0; step < 4000; ++step) {
        const bool grow = live.empty() || rng() % 3 != 0;
        if (grow) {
          const std::int64_t size = rng() % 2 == 0 ? static_cast<std::int64_t>(rng() % (2 * MiB))
                                                   : static_cast<std::int64_t>(rng() % (200 * MiB));
          live.push_back(a.malloc(size, 1));
        } else {
          const std::size_t i = rng() % live.size();
          a.free(live[i]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
        REQUIRE(a.reserved() >= a.allocated());
        REQUIRE(a.allocated() >= a.requested());
        REQUIRE(a.peak_reserved() >= a.reserved());
        REQUIRE(a.peak_allocated() >= a.allocated());
      }
      for (const auto h : live) a.free(h);
      CHECK(a.allocated() == 0);
      CHECK(a.requested() == 0);
      if (!expandable) {
        a.empty_cache();
        CHECK(a.reserved() == 0);
        CHECK(a.segment_count() == 0);
      }
      std::int64_t segments = 0;
      for (const HeldSegment& s : a.segments()) segments += s.bytes;
      CHECK(segments == a.reserved());
    }
  }
}

TEST_CASE("A segment snapshot equals its blocks after any mallocs and frees (property)") {
  // segments() reads per-segment sums kept on every malloc, free, split and merge; they must
  // equal the allocator's totals and each segment's block count after random work, with and
  // without expandable segments (which walk the blocks).
  for (const bool expandable : {false, true}) {
    CachingAllocator a({.expandable_segments = expandable});
    std::uint64_t state = 12345;
    const auto next = [&] {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      return state >> 33;
    };
    std::vector<std::int32_t> live;
    for (int i = 0; i < 5000; ++i) {
      if (live.empty() || next() % 3 != 0) {
        const std::int64_t size = next() % 4 == 0 ? static_cast<std::int64_t>(next() % 40'000'000)
                                                  : static_cast<std::int64_t>(next() % 2'000'000);
        live.push_back(a.malloc(size, static_cast<std::uint64_t>(i)));
      } else {
        const std::size_t k = next() % live.size();
        a.free(live[k]);
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
      }
      if (i % 500 == 499) {
        std::int64_t reserved = 0;
        std::int64_t allocated = 0;
        std::int64_t previous_address = -1;
        for (const HeldSegment& s : a.segments()) {
          reserved += s.bytes;
          allocated += s.allocated_bytes;
          CHECK(s.blocks >= 1);
          CHECK(s.address > previous_address);
          previous_address = s.address;
        }
        CHECK(reserved == a.reserved());
        CHECK(allocated == a.allocated());
      }
    }
  }
}
