// Tests of schedule.h against hand-worked schedule tables.
#include "catch.h"
#include "schedule.h"

#include <algorithm>
#include <random>
#include <vector>

using namespace stagemem;

TEST_CASE("1F1B: stage p holds min(P - p, M) micro-batches") {
  // P = 8, M = 64: 8, 7, ..., 1 from the first stage to the last.
  for (std::int64_t p = 0; p < 8; ++p) {
    const InFlight f = in_flight_at_peak(8, 1, p, 64);
    CHECK(f.total() == 8 - p);
    CHECK(f.warmup_forwards == 7 - p);
  }
  // Fewer micro-batches than stages: M caps it.
  CHECK(in_flight_at_peak(8, 1, 0, 3).total() == 3);
  CHECK(in_flight_at_peak(8, 1, 6, 3).total() == 2);
}

TEST_CASE("Interleaved: Megatron's warm-up count per virtual chunk") {
  // P = 4, v = 2, M = 8. Rank 0: warm-up (4-0-1)*2 + (2-1)*4 = 10, so 11 chunk-forwards alive.
  // Forward order with groups of P = 4: chunk 0 x4, chunk 1 x4, chunk 0 x4 (3 of them reached):
  // chunk 0 holds 4 + 3 = 7, chunk 1 holds 4.
  InFlight f = in_flight_at_peak(4, 2, 0, 8);
  CHECK(f.warmup_forwards == 10);
  CHECK(f.per_chunk == std::vector<std::int64_t>{7, 4});
  // Rank 3 (last): warm-up 0*2 + 4 = 4; 5 alive: chunk 0 x4, chunk 1 x1.
  f = in_flight_at_peak(4, 2, 3, 8);
  CHECK(f.warmup_forwards == 4);
  CHECK(f.per_chunk == std::vector<std::int64_t>{4, 1});
  // Few micro-batches: M x v = 4 forwards in all, every one is alive.
  f = in_flight_at_peak(4, 2, 0, 2);
  CHECK(f.total() == 4);
}

TEST_CASE("Micro-batches per step: M = global batch / (micro-batch x DP)") {
  Diagnostics d;
  CHECK(micro_batches_per_step(1024, 2, 8, d) == 64);
  CHECK(d.ok());
  CHECK(micro_batches_per_step(1000, 3, 8, d) == 0);
  REQUIRE(!d.ok());
  CHECK(d.errors[0].field == "training.global_batch");
}

TEST_CASE("More than 65,536 micro-batches per step is an error naming the global batch") {
  // The schedule is walked pass by pass (interleaved peak search, timeline): 127,599,384
  // micro-batches (found by the property sweep) took minutes; real runs use thousands at most.
  Diagnostics d;
  CHECK(micro_batches_per_step(65536, 1, 1, d) == 65536);
  CHECK(d.ok());
  CHECK(micro_batches_per_step(65537 * 2, 2, 1, d) == 0);
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "training.global_batch");
  CHECK(d.errors[0].message ==
        "global batch 131074 / (micro-batch 2 x DP 1) = 65537 micro-batches per step; at most "
        "65536 are modelled");
}

TEST_CASE("Peak candidates: P = 4, v = 2, M = 8 on rank 3, worked") {
  // Warm-up (4-3-1) x 2 + 4 = 4 forwards, all chunk 0: alive {1,0} .. {4,0}. Forward k runs chunk
  // 0 for k in 0-3 and 8-11, chunk 1 for 4-7 and 12-15 (micro-batch k mod 4 of its group);
  // backward k the same micro-batch on the other chunk. Steady i = 0..11 is (forward 4 + i,
  // backward i): i = 0-3 forward chunk 1 -> {4,1}, backward chunk 1 frees it -> {4,0}; i = 4-7
  // forward chunk 0 -> {5,0}, backward chunk 0 -> {4,0}; i = 8-11 like 0-3. Cool-down backwards
  // 12-15 run chunk 0: {4,0} .. {1,0}. Per kind only the first largest state stays:
  //   forward chunk 0: {5,0} at pass 4 + 2 x 4 = 12 (micro-batch 4); backward chunk 0: {5,0} at
  //   pass 13 (micro-batch 0); forward chunk 1: {4,1} at pass 4; backward chunk 1: {4,1} at 5.
  PeakCandidates c;
  peak_candidates(4, 2, 3, 8, c);
  CHECK(c.pass == std::vector<std::int32_t>{12, 13, 4, 5});
  CHECK(c.kind == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(c.micro_batch == std::vector<std::int32_t>{4, 0, 0, 0});
  CHECK(c.alive == std::vector<std::int32_t>{5, 0, 5, 0, 4, 1, 4, 1});
}

TEST_CASE("Property: the peak over the candidates is the first largest pass of the whole walk") {
  // For random P, chunks, rank, M and random positive bytes per chunk and per pass kind, the
  // largest (stored + kind bytes) over peak_candidates, ties to the earlier pass, equals the
  // first largest pass of for_each_slot, with the same micro-batch, kind and alive counts.
  std::mt19937_64 rng(20261201);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  std::size_t most_candidates = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    const std::int64_t ranks = pick(1, 8);
    const std::int64_t chunks = pick(1, 4);
    const std::int64_t rank = pick(0, ranks - 1);
    const std::int64_t m = pick(0, 1) ? ranks * pick(1, 12) : pick(1, 5 * ranks);
    INFO("P " << ranks << " chunks " << chunks << " rank " << rank << " M " << m);
    std::vector<std::int64_t> chunk_bytes(static_cast<std::size_t>(chunks));
    // Small ranges make ties common (the tie-break is part of what is checked).
    for (auto& b : chunk_bytes) b = pick(1, trial % 2 == 0 ? 3 : 1000000);
    std::vector<std::int64_t> kind_bytes(static_cast<std::size_t>(2 * chunks));
    for (auto& b : kind_bytes) b = pick(0, trial % 2 == 0 ? 3 : 5000000);

    std::vector<std::int64_t> live(static_cast<std::size_t>(chunks), 0), best_alive;
    std::int64_t best = -1, best_micro_batch = -1, best_kind = -1, index = 0, best_index = -1;
    for_each_slot(ranks, chunks, rank, m, [&](const ScheduleSlot& x) {
      const auto c = static_cast<std::size_t>(x.chunk);
      if (!x.backward) ++live[c];
      const std::int64_t kind = x.chunk * 2 + (x.backward ? 1 : 0);
      std::int64_t value = kind_bytes[static_cast<std::size_t>(kind)];
      for (std::size_t k = 0; k < live.size(); ++k) value += live[k] * chunk_bytes[k];
      if (value > best) {
        best = value;
        best_micro_batch = x.micro_batch;
        best_kind = kind;
        best_alive = live;
        best_index = index;
      }
      if (x.backward) --live[c];
      ++index;
    });

    PeakCandidates cand;
    peak_candidates(ranks, chunks, rank, m, cand);
    most_candidates = std::max(most_candidates, cand.size());
    REQUIRE(cand.alive.size() == cand.size() * static_cast<std::size_t>(chunks));
    std::int64_t top = -1;
    std::size_t at = 0;
    for (std::size_t k = 0; k < cand.size(); ++k) {
      std::int64_t value = kind_bytes[static_cast<std::size_t>(cand.kind[k])];
      for (std::size_t c = 0; c < static_cast<std::size_t>(chunks); ++c)
        value += cand.alive[k * static_cast<std::size_t>(chunks) + c] * chunk_bytes[c];
      if (value > top || (value == top && cand.pass[k] < cand.pass[at])) {
        top = value;
        at = k;
      }
    }
    REQUIRE(top == best);
    CHECK(cand.pass[at] == best_index);
    CHECK(cand.micro_batch[at] == best_micro_batch);
    CHECK(cand.kind[at] == best_kind);
    const auto first = cand.alive.begin() + static_cast<std::ptrdiff_t>(at * chunks);
    CHECK(std::vector<std::int64_t>(first, first + chunks) == best_alive);
  }
  // The point of the search: far fewer candidates than the 2 x M x chunks passes.
  INFO("most candidates " << most_candidates);
  CHECK(most_candidates < 200);
}
