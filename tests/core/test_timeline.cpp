// Tests of timeline.h (and the schedule order it walks, schedule.h): the step's order of passes
// against a direct simulation of Megatron's schedule table, finding F17's per-chunk counts, and
// the property that the report's peak (the fast path of activation_terms.cpp) equals the
// timeline's maximum exactly on every stage of >= 1,000 random configurations.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "memory/timeline.h"
#include "parallel/schedule.h"
#include "render/vocabulary.h"
#include "report/report.h"

using namespace stagemem;

namespace {

// Megatron-core's interleaved schedule, simulated directly (schedules.py): get_schedule_table
// lists (micro-batch, chunk) for every virtual micro-batch, groups of P micro-batches chunk by
// chunk; rank p runs `warm-up` forwards, then forward w + i and backward i, then the rest of the
// backwards; backward k runs chunk v - 1 - table[k].chunk. One chunk: plain 1F1B.
std::vector<ScheduleSlot> megatron_order(std::int64_t p, std::int64_t v, std::int64_t rank,
                                         std::int64_t m) {
  std::vector<std::pair<std::int64_t, std::int64_t>> table;
  if (v == 1) {
    for (std::int64_t i = 0; i < m; ++i) table.emplace_back(i, 0);
  } else {
    for (std::int64_t first = 0; first < m; first += p) {
      const std::int64_t last = std::min(first + p, m);
      for (std::int64_t c = 0; c < v; ++c)
        for (std::int64_t mb = first; mb < last; ++mb) table.emplace_back(mb, c);
    }
  }
  const auto total = static_cast<std::int64_t>(table.size());
  std::int64_t warmup = v == 1 ? p - rank - 1 : (p - rank - 1) * 2 + (v - 1) * p;
  if (warmup >= total) warmup = total;
  std::vector<ScheduleSlot> out;
  const auto fwd = [&](std::int64_t k) {
    out.push_back({false, table[static_cast<std::size_t>(k)].first,
                   table[static_cast<std::size_t>(k)].second});
  };
  const auto bwd = [&](std::int64_t k) {
    out.push_back({true, table[static_cast<std::size_t>(k)].first,
                   v - 1 - table[static_cast<std::size_t>(k)].second});
  };
  for (std::int64_t k = 0; k < warmup; ++k) fwd(k);
  for (std::int64_t i = 0; i < total - warmup; ++i) {
    fwd(warmup + i);
    bwd(i);
  }
  for (std::int64_t i = total - warmup; i < total; ++i) bwd(i);
  return out;
}

// Largest number of micro-batches each chunk ever holds over the step.
std::vector<std::int64_t> most_alive_per_chunk(std::int64_t p, std::int64_t v, std::int64_t rank,
                                               std::int64_t m) {
  std::vector<std::int64_t> live(static_cast<std::size_t>(v), 0), most = live;
  for (const ScheduleSlot& s : megatron_order(p, v, rank, m)) {
    auto& n = live[static_cast<std::size_t>(s.chunk)];
    n += s.backward ? -1 : 1;
    REQUIRE(n >= 0);  // a backward never runs before its forward
    most[static_cast<std::size_t>(s.chunk)] = std::max(most[static_cast<std::size_t>(s.chunk)], n);
  }
  return most;
}

// A random model for the property tests: a preset with every layer kind, or a small custom GQA one.
template <class Pick>
void pick_model(Config& c, Pick&& pick) {
  const char* presets[] = {"llama-3.1-8b", "deepseek-v3",         "kimi-k3",
                           "mixtral-8x7b", "kimi-linear-48b-a3b", ""};
  const std::int64_t which = pick(0, 5);
  if (presets[which][0] == '\0') {
    c.custom_model = "h:" + std::to_string(64 * pick(1, 16)) +
                     ";v:" + std::to_string(1000 * pick(1, 64)) +
                     ";gqa:" + std::to_string(pick(1, 8)) + "," + std::to_string(pick(1, 2)) +
                     ",64;mlp:" + std::to_string(128 * pick(1, 32)) + ",swiglu;layers:gd*" +
                     std::to_string(pick(2, 40));
  } else {
    c.model = presets[which];
  }
}

// The stage's fast-path peak is its timeline's maximum: the same bytes, the terms marked
// counts_in_peak sum to it, the same moment (phase; micro-batch, chunk and stored activations
// outside the optimizer step), and every event's families add up to its live bytes, none above
// the peak. Returns the report's peak moment.
PeakMoment check_peak_is_timeline_max(const StageReport& s, const StageTimeline& t) {
  REQUIRE(t.peak().live_bytes == s.peak_bytes);
  std::int64_t marked = 0;
  for (const std::int64_t term : terms_alive_at_peak(s))
    marked += s.terms[static_cast<std::size_t>(term)].bytes;
  REQUIRE(marked == s.peak_bytes);
  const PeakMoment pm = peak_moment(s);
  REQUIRE(t.peak().phase == pm.phase);
  if (pm.phase != StepPhase::optimizer_step) {
    REQUIRE(t.peak().micro_batch == pm.micro_batch);
    REQUIRE(t.peak().chunk == pm.chunk);
    REQUIRE(t.peak().live_by_family[static_cast<std::size_t>(Family::activation)] ==
            s.activation_bytes);
  }
  for (const TimelineEvent& e : t.events) {
    std::int64_t sum = 0;
    for (const std::int64_t b : e.live_by_family) sum += b;
    REQUIRE(sum == e.live_bytes);
    REQUIRE(e.live_bytes <= s.peak_bytes);
  }
  return pm;
}

}  // namespace

TEST_CASE("Schedule order: for_each_slot is Megatron's table, pass by pass") {
  for (std::int64_t p = 1; p <= 8; ++p) {
    for (std::int64_t v = 1; v <= 4; ++v) {
      if (v > 1 && p == 1) continue;
      for (std::int64_t m : {1, 2, 3, 4, 7, 8, 12, 16, 33}) {
        for (std::int64_t rank = 0; rank < p; ++rank) {
          std::vector<ScheduleSlot> ours;
          for_each_slot(p, v, rank, m, [&](const ScheduleSlot& s) { ours.push_back(s); });
          const std::vector<ScheduleSlot> theirs = megatron_order(p, v, rank, m);
          INFO("P " << p << " v " << v << " rank " << rank << " M " << m);
          REQUIRE(ours.size() == theirs.size());
          REQUIRE(ours.size() == static_cast<std::size_t>(2 * m * v));
          for (std::size_t i = 0; i < ours.size(); ++i) {
            REQUIRE(ours[i].backward == theirs[i].backward);
            REQUIRE(ours[i].micro_batch == theirs[i].micro_batch);
            REQUIRE(ours[i].chunk == theirs[i].chunk);
          }
          // The warm-up snapshot holds the largest total ever alive.
          const InFlight f = in_flight_at_peak(p, v, rank, m);
          std::int64_t live = 0, most = 0;
          for (const ScheduleSlot& s : ours) {
            live += s.backward ? -1 : 1;
            most = std::max(most, live);
          }
          CHECK(f.total() == most);
        }
      }
    }
  }
}

TEST_CASE("F17: after warm-up the chunk mix shifts - chunk 0 holds more than at warm-up end") {
  // P = 4, v = 3, rank 1, M = 8: warm-up (4-1-1)*2 + 2*4 = 12 forwards; with the 13th, chunks
  // 0, 1, 2 hold 4 + 4 + 4 + the 13th (group 2's chunk 0) = [5, 4, 4]. In the steady state
  // backward i frees chunk 2 - table[i].chunk (chunk 2 first) while forwards keep adding chunks
  // 0 and 1: chunk 0 reaches 8 and chunk 1 reaches 5 (the review's simulation).
  CHECK(in_flight_at_peak(4, 3, 1, 8).per_chunk == std::vector<std::int64_t>{5, 4, 4});
  CHECK(most_alive_per_chunk(4, 3, 1, 8) == std::vector<std::int64_t>{8, 5, 4});
  // P = 4, v = 2, rank 3, M = 8: [4, 1] at warm-up end, later [5, 0].
  CHECK(in_flight_at_peak(4, 2, 3, 8).per_chunk == std::vector<std::int64_t>{4, 1});
  std::vector<std::int64_t> live{0, 0};
  bool five_zero = false;
  for (const ScheduleSlot& s : megatron_order(4, 2, 3, 8)) {
    live[static_cast<std::size_t>(s.chunk)] += s.backward ? -1 : 1;
    five_zero |= live == std::vector<std::int64_t>{5, 0};
  }
  CHECK(five_zero);
}

TEST_CASE("F17 in the report: a heavier chunk 0 peaks in the steady state, not at warm-up end") {
  // 4 ranks x 2 chunks of a 17-layer dense model, M = 8: the even split gives virtual stage 0
  // (rank 0, chunk 0) the extra layer and the embedding, so rank 0's chunk 0 is heavier than its
  // chunk 1. Rank 0 holds [7, 4] at warm-up end (warm-up 10, then the 11th forward); in the
  // steady state backward i frees chunk 1 first while chunk 0 keeps growing to 8.
  Config c;
  c.custom_model = "h:1024;v:32000;gqa:16,16,64;mlp:4096,swiglu;layers:gd*17";
  c.parallel.pipeline_parallel = 4;
  c.parallel.virtual_stages = 2;
  c.training.sequence_length = 1024;
  c.training.micro_batch = 1;
  c.training.global_batch = 8;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& s0 = r.stages[0];
  REQUIRE(s0.chunk_stored_bytes.size() == 2);
  REQUIRE(s0.chunk_stored_bytes[0] > s0.chunk_stored_bytes[1]);
  const InFlight w = in_flight_at_peak(4, 2, 0, 8);
  CHECK(w.per_chunk == std::vector<std::int64_t>{7, 4});
  const std::int64_t at_warmup_end =
      w.per_chunk[0] * s0.chunk_stored_bytes[0] + w.per_chunk[1] * s0.chunk_stored_bytes[1];
  // The direct simulation's largest stored moment.
  std::int64_t live0 = 0, live1 = 0, most = 0;
  for (const ScheduleSlot& s : megatron_order(4, 2, 0, 8)) {
    (s.chunk == 0 ? live0 : live1) += s.backward ? -1 : 1;
    most = std::max(most, live0 * s0.chunk_stored_bytes[0] + live1 * s0.chunk_stored_bytes[1]);
  }
  CHECK(most > at_warmup_end);
  // No transient on rank 0 depends on the chunk, so the peak is the largest stored moment.
  CHECK(s0.activation_bytes == most);
  CHECK(s0.in_flight_per_chunk != w.per_chunk);
  const StageTimeline t = stage_timeline(r, s0);
  CHECK(t.peak().live_bytes == s0.peak_bytes);
}

TEST_CASE("Property: the report's peak is the timeline's maximum on 1200 random configurations") {
  // Models with every layer kind, 1F1B and interleaved, uneven splits, every recompute policy,
  // CP, SP, MTP: on every stage the fast path's peak_bytes equals the largest live_bytes of the
  // step timeline exactly, its peak moment is the timeline's first largest event, the terms marked
  // counts_in_peak sum to it, and every event's families add up to its live bytes.
  const std::uint64_t seed = 20261211;
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  int reports = 0, interleaved = 0, backward_peaks = 0, nested = 0, old_rule_differs = 0;
  int sharded_reports = 0;
  // STAGEMEM_TIMELINE_DIFFS=1 prints the stages where the old assembly rule (stored activations at
  // the end of warm-up + the single largest transient) gives another peak.
  const bool print_diffs = std::getenv("STAGEMEM_TIMELINE_DIFFS") != nullptr;
  for (int i = 0; reports < 1200 && i < 20000; ++i) {
    INFO("seed " << seed << " configuration " << i);
    Config c;
    pick_model(c, pick);
    c.parallel.pipeline_parallel = pick(1, 8);
    c.parallel.virtual_stages = c.parallel.pipeline_parallel > 1 && pick(0, 1) ? pick(2, 4) : 1;
    c.parallel.tensor_parallel = std::int64_t{1} << pick(0, 2);
    c.parallel.sequence_parallel = c.parallel.tensor_parallel > 1 && pick(0, 1);
    c.parallel.context_parallel = pick(0, 3) == 0 ? 2 : 1;
    c.training.sequence_length = std::int64_t{1} << pick(9, 14);
    c.training.micro_batch = pick(1, 2);
    const std::int64_t m = c.parallel.virtual_stages > 1
                               ? c.parallel.pipeline_parallel * pick(1, 4)
                               : pick(1, 3 * c.parallel.pipeline_parallel);
    c.training.global_batch = c.training.micro_batch * m;
    c.parallel.data_parallel = 1;
    c.training.recompute.policy = static_cast<RecomputePolicy>(pick(0, 2));
    c.training.recompute.method = static_cast<FullRecomputeMethod>(pick(0, 1));
    c.training.recompute.layers = pick(1, 3);
    c.training.dropout = pick(0, 1) == 0;
    c.optimizer.kind = static_cast<OptimizerKind>(pick(0, 3));
    // Sharded data parallelism adds pass-wide transients beside each pass's choice.
    const std::int64_t sharded = pick(0, 3);
    if (sharded == 1) {
      c.training.sharding.implementation = DataParallelImpl::megatron_fsdp;
      c.training.sharding.strategy =
          pick(0, 1) ? ShardingStrategy::optim_grads_params : ShardingStrategy::optim_grads;
      c.optimizer.kind = OptimizerKind::distributed_adam;
    } else if (sharded == 2) {
      c.training.framework = Framework::torchtitan;
      c.training.sharding.reshard_after_forward = static_cast<ReshardAfterForward>(pick(0, 2));
      c.optimizer.kind = OptimizerKind::adam;
    }
    const Report r = estimate(c);
    if (!r.diagnostics.ok()) continue;
    ++reports;
    sharded_reports += sharded == 1 || sharded == 2;
    interleaved += c.parallel.virtual_stages > 1;
    const std::vector<StageTimeline> timeline = step_timeline(r);
    REQUIRE(timeline.size() == r.stages.size());
    for (std::size_t k = 0; k < r.stages.size(); ++k) {
      const StageReport& s = r.stages[k];
      const StageTimeline& t = timeline[k];
      INFO("stage " << s.index << ", " << moment_name(s, peak_moment(s)));
      REQUIRE(t.fits);
      REQUIRE(t.peak_event >= 0);
      REQUIRE(t.events.size() == static_cast<std::size_t>(2 * r.micro_batches * t.chunks + 1));
      const PeakMoment pm = check_peak_is_timeline_max(s, t);
      if (pm.phase != StepPhase::optimizer_step) {
        backward_peaks += pm.phase == StepPhase::backward;
        nested += pm.enclosing >= 0;
      }
      // The old rule, for the record: it may only differ with more than one chunk per rank.
      const InFlight warm = in_flight_at_peak(static_cast<std::int64_t>(r.stages.size()), t.chunks,
                                              s.index, r.micro_batches);
      std::int64_t old_stored = 0, old_transient = 0;
      for (std::int64_t ch = 0; ch < t.chunks; ++ch)
        old_stored += warm.per_chunk[static_cast<std::size_t>(ch)] *
                      s.chunk_stored_bytes[static_cast<std::size_t>(ch)];
      for (const Term& term : s.terms) {
        if (term.family == Family::transient &&
            term.allocated_at != AllocationPoint::optimizer_step)
          old_transient = std::max(old_transient, term.bytes);
      }
      const std::int64_t old_peak =
          s.resident_bytes + s.gap_bytes +
          std::max(old_stored + old_transient, s.optimizer_transient_bytes);
      if (old_peak != s.peak_bytes) {
        ++old_rule_differs;
        // With one chunk per rank the old rule can only miss a transient nested inside a
        // recomputed layer's backward (backward working set inside the recompute working set).
        // Sharded runs hold their pass-wide transients beside the largest one.
        const bool wide = c.training.framework == Framework::torchtitan ||
                          c.training.sharding.implementation == DataParallelImpl::megatron_fsdp;
        if (t.chunks == 1 && pm.enclosing < 0 && !wide) CHECK(old_peak == s.peak_bytes);
        if (!wide) CHECK(old_peak <= s.peak_bytes);
        if (print_diffs) {
          std::printf(
              "config %d #%s stage %lld: old %lld new %lld (%+.3f%%) at %s\n", i,
              encode_fragment(c).c_str(), static_cast<long long>(s.index),
              static_cast<long long>(old_peak), static_cast<long long>(s.peak_bytes),
              100.0 * static_cast<double>(s.peak_bytes - old_peak) / static_cast<double>(old_peak),
              moment_name(s, peak_moment(s)).c_str());
        }
      }
    }
  }
  CHECK(reports >= 1200);
  CHECK(sharded_reports > 300);
  CHECK(interleaved > 200);
  CHECK(backward_peaks > 100);
  if (print_diffs) {
    std::printf("%d reports, %d interleaved; %d stages where the old rule differs; %d nested\n",
                reports, interleaved, old_rule_differs, nested);
  }
}

TEST_CASE("Peak moment names its phase, micro-batch, chunk, layers and transient") {
  // Llama-3.1-8B at PP 4, M = 8, seq 8192, full uniform recompute of 2 layers: stage 1 (layers
  // 8-15) holds min(4 - 1, 8) = 3 micro-batches from the last warm-up forward (micro-batch 2) to
  // the first backward (micro-batch 0). Its largest transient is the recompute working set of 2
  // layers (their full activations), a backward transient, larger than the forward's pipeline
  // buffers: the first backward binds, named by the group that defines the working set.
  Config c;
  c.model = "llama-3.1-8b";
  c.parallel.pipeline_parallel = 4;
  c.training.sequence_length = 8192;
  c.training.micro_batch = 1;
  c.training.global_batch = 8;
  c.training.recompute.policy = RecomputePolicy::full;
  c.training.recompute.layers = 2;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& s1 = r.stages[1];
  const PeakMoment pm = peak_moment(s1);
  CHECK(pm.phase == StepPhase::backward);
  CHECK(pm.micro_batch == 0);
  CHECK(s1.in_flight_per_chunk == std::vector<std::int64_t>{3});
  // The MLP backward working set of one layer is alive inside the recomputed group's backward.
  CHECK(moment_name(s1, pm) ==
        "stage 1, backward of micro-batch 0, layers 8-9 recomputed, MLP backward working set of "
        "one layer (gradients of the fc1 and activation outputs)");
  // The optimizer step names itself.
  CHECK(moment_name(s1, {.phase = StepPhase::optimizer_step}) == "stage 1, optimizer step");
}

namespace {
constexpr TermInfo test_stored{"test: stored activation", "S, B"};
constexpr TermInfo test_recompute{"recompute working set (one checkpointed group, backward)",
                                  "S, B, group", TermText::recompute_group, true};
constexpr TermInfo test_backward_working_set{"test: backward working set of one layer", "S, B",
                                             TermText::generic, true};
constexpr TermInfo test_dispatch{"test: forward dispatch buffer", "S, B"};
}  // namespace

TEST_CASE("A backward layer transient sits inside the recompute working set of its group") {
  // One stage of 1F1B (P 1, M 2) with hand-made terms: resident 100 B, stored 10 B per
  // micro-batch, a forward transient of 7 B, a recompute working set of layers 40-41 (30 B) and a
  // backward layer transient of 20 B. Passes: F0 (stored 10 + 7), B0 (10 + 30 + 20 nested),
  // F1, B1: the backward holds both working sets together, so the peak is 100 + 10 + 50 = 160 B,
  // where the old rule (stored + the single largest transient) said 100 + 10 + 30 = 140 B.
  Report r;
  r.micro_batches = 2;
  StageReport s;
  s.index = 0;
  s.chunks = {{.first = 40, .count = 2}};
  s.resident_bytes = 100;
  s.chunk_stored_bytes = {10};
  Term resident;
  resident.info = &test_stored;
  resident.bytes = 100;
  Term stored;
  stored.info = &test_stored;
  stored.family = Family::activation;
  stored.bytes = 10;
  Term dispatch;
  dispatch.info = &test_dispatch;
  dispatch.family = Family::transient;
  dispatch.allocated_at = AllocationPoint::forward;
  dispatch.bytes = 7;
  Term recompute;
  recompute.info = &test_recompute;
  recompute.family = Family::transient;
  recompute.allocated_at = AllocationPoint::backward;
  recompute.place = TransientPlace::recompute;
  recompute.bytes = 30;
  recompute.formula = Formula().number(2).number(40).number(41).number(30);
  Term working;
  working.info = &test_backward_working_set;
  working.family = Family::transient;
  working.allocated_at = AllocationPoint::backward;
  working.bytes = 20;
  s.terms = {resident, stored, dispatch, recompute, working};
  r.stages = {s};
  const StageTimeline t = stage_timeline(r, r.stages[0]);
  REQUIRE(t.events.size() == 5);  // F0 B0 F1 B1, optimizer step
  CHECK(t.events[0].live_bytes == 117);
  CHECK(t.events[1].live_bytes == 160);
  CHECK(t.events[1].transient == 4);
  CHECK(t.events[1].enclosing == 3);
  CHECK(t.events[4].live_bytes == 100);
  CHECK(t.peak_event == 1);
  CHECK(event_name(r.stages[0], t.peak()) ==
        "stage 0, backward of micro-batch 0, layers 40-41 recomputed, test: backward working set "
        "of one layer");
}

TEST_CASE("DualPipeV: micro-batches alive per chunk at the peak on each rank (P 4, M 8)") {
  // Hand-made stages with 10 B stored per micro-batch on each chunk and no transients: the peak
  // is the most micro-batches alive. On rank r the first F0 of DualPipeV's main phase (step 4)
  // is the (2(P - r - 1) + (r + 1) + 1) = (2P - r)-th F0, with no B0 run yet; chunk 1 has run
  // (r + 1) + (P - r - 1) = P forwards and P - r - 1 backwards (step 3), so r + 1 are alive:
  // 2P + 1 = 9 chunk micro-batches on every rank, DualPipe's README "PP + 1" activations per
  // device with PP = 2P stages. Later passes never hold more (each F is followed by a B).
  Report r;
  r.micro_batches = 8;
  r.schedule = PipelineSchedule::dualpipev;
  for (std::int64_t rank = 0; rank < 4; ++rank) {
    StageReport s;
    s.index = rank;
    s.chunks = {{.first = rank, .count = 1}, {.first = 7 - rank, .count = 1}};
    s.resident_bytes = 100;
    s.chunk_stored_bytes = {10, 10};
    r.stages.push_back(s);
  }
  for (const StageReport& s : r.stages) {
    INFO("rank " << s.index);
    const StageTimeline t = stage_timeline(r, s);
    REQUIRE(t.events.size() == 4 * 8 + 1);
    CHECK(t.peak().live_bytes == 100 + 9 * 10);
    CHECK(t.peak().phase == StepPhase::forward);
    CHECK(t.peak().chunk == 0);
    CHECK(t.peak().micro_batch == 2 * 4 - s.index - 1);
    const auto at = static_cast<std::size_t>(t.peak_event * t.chunks);
    CHECK(t.alive[at] == 2 * 4 - s.index);
    CHECK(t.alive[at + 1] == s.index + 1);
    CHECK(t.events.back().live_bytes == 100);  // every micro-batch freed before the step
  }
}

TEST_CASE("Property: DualPipeV's report peak is the timeline's maximum on 300 random configs") {
  // The same checks as the 1,200-configuration property, with schedule dualpipev: P in [1, 8],
  // M in [2P, 5P], every recompute policy, CP, SP, MoE and MTP presets; uneven splits of the
  // 2P V-placed virtual stages included.
  const std::uint64_t seed = 20261201;
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  int reports = 0, backward_peaks = 0, chunk1_peaks = 0;
  for (int i = 0; reports < 300 && i < 5000; ++i) {
    INFO("seed " << seed << " configuration " << i);
    Config c;
    pick_model(c, pick);
    c.parallel.schedule = PipelineSchedule::dualpipev;
    c.parallel.pipeline_parallel = pick(1, 8);
    c.parallel.virtual_stages = pick(0, 1) ? 2 : 1;  // both mean DualPipeV's 2 chunks
    c.parallel.tensor_parallel = std::int64_t{1} << pick(0, 2);
    c.parallel.sequence_parallel = c.parallel.tensor_parallel > 1 && pick(0, 1);
    c.parallel.context_parallel = pick(0, 3) == 0 ? 2 : 1;
    c.training.sequence_length = std::int64_t{1} << pick(9, 14);
    c.training.micro_batch = pick(1, 2);
    c.training.global_batch = c.training.micro_batch * pick(2 * c.parallel.pipeline_parallel,
                                                            5 * c.parallel.pipeline_parallel);
    c.parallel.data_parallel = 1;
    c.training.recompute.policy = static_cast<RecomputePolicy>(pick(0, 2));
    c.training.recompute.method = static_cast<FullRecomputeMethod>(pick(0, 1));
    c.training.recompute.layers = pick(1, 3);
    c.training.dropout = pick(0, 1) == 0;
    c.optimizer.kind = static_cast<OptimizerKind>(pick(0, 3));
    const Report r = estimate(c);
    if (!r.diagnostics.ok()) continue;
    ++reports;
    REQUIRE(r.schedule == PipelineSchedule::dualpipev);
    const std::vector<StageTimeline> timeline = step_timeline(r);
    REQUIRE(timeline.size() == r.stages.size());
    for (std::size_t k = 0; k < r.stages.size(); ++k) {
      const StageReport& s = r.stages[k];
      const StageTimeline& t = timeline[k];
      INFO("stage " << s.index << ", " << moment_name(s, peak_moment(s)));
      REQUIRE(t.chunks == 2);
      REQUIRE(t.fits);
      REQUIRE(t.events.size() == static_cast<std::size_t>(4 * r.micro_batches + 1));
      const PeakMoment pm = check_peak_is_timeline_max(s, t);
      if (pm.phase != StepPhase::optimizer_step) {
        const auto at = static_cast<std::size_t>(t.peak_event * t.chunks);
        REQUIRE(s.in_flight_per_chunk ==
                std::vector<std::int64_t>(t.alive.begin() + static_cast<std::ptrdiff_t>(at),
                                          t.alive.begin() + static_cast<std::ptrdiff_t>(at + 2)));
        backward_peaks += pm.phase == StepPhase::backward;
        chunk1_peaks += pm.chunk == 1;
      }
    }
  }
  CHECK(reports >= 300);
  CHECK(backward_peaks > 10);
  CHECK(chunk1_peaks > 10);
}

TEST_CASE("kimi-k3 at PP 8: DualPipeV holds 2P + 1 chunk micro-batches on every rank") {
  // 93 layers in 2 x 8 = 16 V-placed virtual stages (6 layers, the last five stages 5), EP 28,
  // DP 28, gbs 896: M = 32 >= 2P. On rank r the first B1 of step 4 runs micro-batch P - r - 1
  // (step 3 ran P - r - 1 of them) right after step 4's first F0: chunk 0 holds 2P - r, chunk 1
  // r + 1 (the backward's own micro-batch is still alive); no later pass holds more. Interleaved
  // VPP 2 on the same layout puts 15 + 8 = 23 on rank 0 and 9 on rank 7, so its largest stage peak
  // is higher than DualPipeV's.
  const auto config = [](const char* extra) {
    const DecodedFragment d = decode_fragment(
        std::string("v=1&model=kimi-k3&pp=8&ep=28&world=224&gbs=896&optimizer=distributed-muon&") +
        extra);
    REQUIRE(d.diagnostics.ok());
    return d.config;
  };
  const Report v = estimate(config("schedule=dualpipev"));
  const Report i = estimate(config("vpp=2"));
  REQUIRE(v.diagnostics.ok());
  REQUIRE(i.diagnostics.ok());
  REQUIRE(v.stages.size() == 8);
  std::int64_t v_max = 0, i_max = 0;
  for (const StageReport& s : v.stages) {
    INFO("rank " << s.index << ": " << moment_name(s, peak_moment(s)));
    CHECK(s.in_flight_per_chunk == std::vector<std::int64_t>{16 - s.index, s.index + 1});
    // The peak is the forward of chunk 0's last micro-batch in flight (2P - r - 1): every stored
    // micro-batch is there, and the MoE layer's dispatch and combine buffers (Megatron-core >=
    // 0.13 holds four routed-token buffers and the shared experts' output, 3.6 GiB) sit on top,
    // more than the B1 backward's MoE working set (3.1 GiB) with one micro-batch fewer on chunk 0.
    const PeakMoment pm = peak_moment(s);
    CHECK(pm.phase == StepPhase::forward);
    CHECK(pm.chunk == 0);
    CHECK(pm.micro_batch == 16 - s.index - 1);
    v_max = std::max(v_max, s.peak_bytes);
  }
  CHECK(v.stages[0].chunks[0].first == 0);   // the embedding's chunk
  CHECK(v.stages[0].chunks[1].first == 88);  // layers 88-92 and the head
  CHECK(v.stages[7].chunks[0].first == 42);  // the turn of the V: layers 42-47 and 48-53
  CHECK(v.stages[7].chunks[1].first == 48);
  // Megatron's TransformerBlock.input_tensor is not DualPipeV's: DualPipeV.step drops every input
  // at its backward, so no rank keeps a pipeline input after the step; interleaved rank 0 does.
  const auto kept_input = [](const StageReport& s) {
    return std::any_of(s.terms.begin(), s.terms.end(), [](const Term& t) {
      return std::string(t.info->name).starts_with("pipeline input of each chunk's last");
    });
  };
  for (const StageReport& s : v.stages) CHECK(!kept_input(s));
  CHECK(kept_input(i.stages[0]));
  for (const StageReport& s : i.stages) i_max = std::max(i_max, s.peak_bytes);
  CHECK(i.stages[0].in_flight_per_chunk == std::vector<std::int64_t>{15, 8});
  CHECK(v_max < i_max);
}
