// Tests of schedule.h against hand-worked schedule tables and a transcription of DualPipeV.step.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "catch.h"
#include "parallel/schedule.h"

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

// The first largest pass of a whole step's walk (`walk(visit)` calls visit for every pass in
// order): stored bytes (alive per chunk x chunk bytes) + the pass kind's bytes.
struct FirstLargest {
  std::int64_t bytes = -1, micro_batch = -1, kind = -1, pass = -1;
  std::vector<std::int64_t> alive;
};
template <class Walk>
FirstLargest first_largest_pass(Walk&& walk, const std::vector<std::int64_t>& chunk_bytes,
                                const std::vector<std::int64_t>& kind_bytes) {
  FirstLargest best;
  std::vector<std::int64_t> live(chunk_bytes.size(), 0);
  std::int64_t index = 0;
  walk([&](const ScheduleSlot& x) {
    const auto c = static_cast<std::size_t>(x.chunk);
    if (!x.backward) ++live[c];
    const std::int64_t kind = x.chunk * 2 + (x.backward ? 1 : 0);
    std::int64_t value = kind_bytes[static_cast<std::size_t>(kind)];
    for (std::size_t k = 0; k < live.size(); ++k) value += live[k] * chunk_bytes[k];
    if (value > best.bytes) best = {value, x.micro_batch, kind, index, live};
    if (x.backward) --live[c];
    ++index;
  });
  return best;
}

// The same over peak candidates (ties to the earlier pass), checked against the walk's.
void check_candidates(const PeakCandidates& cand, const FirstLargest& walked,
                      const std::vector<std::int64_t>& chunk_bytes,
                      const std::vector<std::int64_t>& kind_bytes) {
  const std::size_t width = chunk_bytes.size();
  REQUIRE(cand.alive.size() == cand.size() * width);
  std::int64_t top = -1;
  std::size_t at = 0;
  for (std::size_t k = 0; k < cand.size(); ++k) {
    std::int64_t value = kind_bytes[static_cast<std::size_t>(cand.kind[k])];
    for (std::size_t c = 0; c < width; ++c) value += cand.alive[k * width + c] * chunk_bytes[c];
    if (value > top || (value == top && cand.pass[k] < cand.pass[at])) {
      top = value;
      at = k;
    }
  }
  REQUIRE(top == walked.bytes);
  CHECK(cand.pass[at] == walked.pass);
  CHECK(cand.micro_batch[at] == walked.micro_batch);
  CHECK(cand.kind[at] == walked.kind);
  const auto first = cand.alive.begin() + static_cast<std::ptrdiff_t>(at * width);
  CHECK(std::vector<std::int64_t>(first, first + static_cast<std::ptrdiff_t>(width)) ==
        walked.alive);
}

}  // namespace

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

    const FirstLargest walked =
        first_largest_pass([&](auto&& visit) { for_each_slot(ranks, chunks, rank, m, visit); },
                           chunk_bytes, kind_bytes);
    PeakCandidates cand;
    peak_candidates(ranks, chunks, rank, m, cand);
    most_candidates = std::max(most_candidates, cand.size());
    check_candidates(cand, walked, chunk_bytes, kind_bytes);
  }
  // The point of the search: far fewer candidates than the 2 x M x chunks passes.
  INFO("most candidates " << most_candidates);
  CHECK(most_candidates < 200);
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

TEST_CASE("Property: DualPipeV's peak over its candidates is the first largest pass of its walk") {
  // As the interleaved property above, for dualpipev_peak_candidates against
  // for_each_dualpipev_slot: random P, rank, M >= 2P, positive bytes per chunk and per pass kind.
  std::mt19937_64 rng(20261202);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const std::int64_t ranks = pick(1, 8);
    const std::int64_t rank = pick(0, ranks - 1);
    const std::int64_t m = pick(2 * ranks, 6 * ranks);
    INFO("P " << ranks << " rank " << rank << " M " << m);
    std::vector<std::int64_t> chunk_bytes(2);
    for (auto& b : chunk_bytes) b = pick(1, trial % 2 == 0 ? 3 : 1000000);
    std::vector<std::int64_t> kind_bytes(4);
    for (auto& b : kind_bytes) b = pick(0, trial % 2 == 0 ? 3 : 5000000);
    const FirstLargest walked =
        first_largest_pass([&](auto&& visit) { for_each_dualpipev_slot(ranks, rank, m, visit); },
                           chunk_bytes, kind_bytes);
    PeakCandidates cand;
    dualpipev_peak_candidates(ranks, rank, m, cand);
    REQUIRE(cand.size() == static_cast<std::size_t>(4 * m));
    check_candidates(cand, walked, chunk_bytes, kind_bytes);
  }
}
