// Tests of schedule.h against hand-worked schedule tables.
#include "catch.h"
#include "schedule.h"

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
