// Tests of schedule.h against hand-worked schedule tables and a transcription of DualPipeV.step.
#include <cstdint>
#include <string>
#include <vector>

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

namespace {

// DeepSeek's DualPipeV.step (dualpipe/dualpipev.py), transcribed loop by loop: F(c) and B(c)
// take the next micro-batch of chunk c (current_f_chunk_id / current_b_chunk_id), a zero-bubble
// B queues its weight gradient (WeightGradStore.flush) and W pops the oldest (FIFO). 'W' entries
// are kept here so the test can check the queue; for_each_dualpipev_slot yields F and B only.
struct VPass {
  char kind;  // 'F', 'B', 'W'
  std::int64_t chunk;
  std::int64_t micro_batch;
  bool zero_bubble;
};

std::vector<VPass> dualpipev_transcript(std::int64_t num_ranks, std::int64_t rank,
                                        std::int64_t num_chunks) {
  std::vector<VPass> out;
  std::int64_t f[2] = {0, 0}, b[2] = {0, 0};
  const auto F = [&](int c) { out.push_back({'F', c, f[c]++, false}); };
  const auto B = [&](int c, bool zb) { out.push_back({'B', c, b[c]++, zb}); };
  const auto W = [&] { out.push_back({'W', -1, -1, false}); };
  for (std::int64_t i = 0; i < (num_ranks - rank - 1) * 2; ++i) F(0);  // step 1: nF0
  for (std::int64_t i = 0; i < rank + 1; ++i) {                        // step 2: nF0F1
    F(0);
    F(1);
  }
  for (std::int64_t i = 0; i < num_ranks - rank - 1; ++i) {  // step 3: nB1W1F1
    B(1, true);
    W();
    F(1);
  }
  for (std::int64_t i = 0; i < num_chunks - num_ranks * 2 + rank + 1; ++i) {  // step 4
    F(0);  // _forward_backward_chunk(0, 1) (or the last rank's split first pair): F0, then B1
    B(1, false);
    F(1);  // _forward_backward_chunk(1, 0)
    B(0, false);
  }
  for (std::int64_t i = 0; i < num_ranks - rank - 1; ++i) {  // step 5: nB1F1B0
    B(1, false);
    F(1);
    B(0, false);
  }
  const std::int64_t step_6 = rank + 1;  // step 6: nB1B0, the second half zero-bubble
  bool zb = false;
  for (std::int64_t i = 0; i < step_6; ++i) {
    if (i == step_6 / 2 && rank % 2 == 1) zb = true;
    B(1, zb);
    if (i == step_6 / 2 && rank % 2 == 0) zb = true;
    B(0, zb);
  }
  for (std::int64_t i = 0; i < num_ranks - rank - 1; ++i) {  // step 7: nWB0
    W();
    B(0, true);
  }
  for (std::int64_t i = 0; i < rank + 1; ++i) W();  // step 8: nW
  return out;
}

}  // namespace

TEST_CASE("DualPipeV: for_each_dualpipev_slot is dualpipev.py's step, pass by pass") {
  for (std::int64_t p = 1; p <= 8; ++p) {
    for (std::int64_t m = 2 * p; m <= 2 * p + 9; ++m) {
      for (std::int64_t rank = 0; rank < p; ++rank) {
        INFO("P " << p << " M " << m << " rank " << rank);
        const std::vector<VPass> want = dualpipev_transcript(p, rank, m);
        std::vector<ScheduleSlot> ours;
        for_each_pass(PipelineSchedule::dualpipev, p, 2, rank, m,
                      [&](const ScheduleSlot& s) { ours.push_back(s); });
        REQUIRE(ours.size() == static_cast<std::size_t>(4 * m));
        std::size_t k = 0;
        std::int64_t queued = 0;  // weight gradients waiting for a W
        std::int64_t alive[2] = {0, 0};
        for (const VPass& v : want) {
          if (v.kind == 'W') {
            REQUIRE(queued > 0);  // WeightGradStore.pop asserts a non-empty queue
            --queued;
            continue;
          }
          REQUIRE(k < ours.size());
          // No weight gradient is pending at any forward (step 3 runs each B1's W before its F1;
          // the zero-bubble B's of steps 6 and 7 come after the last forward).
          if (v.kind == 'F') CHECK(queued == 0);
          const ScheduleSlot& s = ours[k++];
          CHECK(s.backward == (v.kind == 'B'));
          CHECK(s.chunk == v.chunk);
          CHECK(s.micro_batch == v.micro_batch);
          CHECK(s.weight_gradient_deferred == v.zero_bubble);
          queued += v.zero_bubble ? 1 : 0;
          alive[v.chunk] += v.kind == 'F' ? 1 : -1;
          REQUIRE(alive[v.chunk] >= 0);  // a backward never runs before its forward
        }
        CHECK(queued == 0);  // the step asserts funcs_queue.empty() at the end
        CHECK(k == ours.size());
        // Each chunk runs every micro-batch forward and backward once.
        CHECK(alive[0] == 0);
        CHECK(alive[1] == 0);
        const DualPipeVPhases n = dualpipev_phases(p, rank, m);
        CHECK(n.forward0 + n.forward0_forward1 + n.main == m);  // F0 passes
        CHECK(n.backward1_forward1 + n.main + n.backward1_pair + n.backward_pairs == m);  // B1
      }
    }
  }
  // Fewer than 2P micro-batches, a rank outside [0, P) or another chunk count: nothing.
  int calls = 0;
  for_each_pass(PipelineSchedule::dualpipev, 4, 2, 0, 7, [&](const ScheduleSlot&) { ++calls; });
  for_each_pass(PipelineSchedule::dualpipev, 4, 2, 4, 8, [&](const ScheduleSlot&) { ++calls; });
  for_each_pass(PipelineSchedule::dualpipev, 4, 3, 0, 8, [&](const ScheduleSlot&) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("DualPipeV worked order: P = 2, M = 4") {
  // Rank 0 (P - r - 1 = 1): step 1 two F0; step 2 one (F0, F1); step 3 one (B1 zb, W, F1);
  // step 4 M - 2P + r + 1 = 1 (F0, B1, F1, B0); step 5 one (B1, F1, B0); step 6 one pair with
  // the zero bubble switched on before its B0 (even rank, i = 0 = (r + 1) / 2); step 7 (W, B0 zb);
  // step 8 one W. F/B passes: F0 0, F0 1, F0 2, F1 0, B1 0 (zb), F1 1, F0 3, B1 1, F1 2, B0 0,
  // B1 2, F1 3, B0 1, B1 3, B0 2 (zb), B0 3 (zb).
  // Rank 1 (the last): step 2 two (F0, F1); step 4 two (F0, B1, F1, B0); step 6 two pairs, the
  // zero bubble on from the second pair's B1 (odd rank, i = 1 = 2 / 2); step 8 two W.
  const auto order = [](std::int64_t rank) {
    std::string out;
    for_each_pass(PipelineSchedule::dualpipev, 2, 2, rank, 4, [&](const ScheduleSlot& s) {
      out += (s.backward ? "B" : "F") + std::to_string(s.chunk) + "." +
             std::to_string(s.micro_batch) + (s.weight_gradient_deferred ? "z" : "") + " ";
    });
    return out;
  };
  CHECK(order(0) ==
        "F0.0 F0.1 F0.2 F1.0 B1.0z F1.1 F0.3 B1.1 F1.2 B0.0 B1.2 F1.3 B0.1 B1.3 B0.2z B0.3z ");
  CHECK(order(1) ==
        "F0.0 F1.0 F0.1 F1.1 F0.2 B1.0 F1.2 B0.0 F0.3 B1.1 F1.3 B0.1 B1.2 B0.2 B1.3z B0.3z ");
}
