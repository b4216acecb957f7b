// The step replayed through the caching allocator (allocator/step_replay.h): a worked stage by
// hand, the cache emptying Megatron's option adds, and properties over random configurations
// (the fast path is exact; reserved >= the replay's allocated >= the report's peak allocated).
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>

#include "allocator/step_replay.h"
#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "model/presets.h"
#include "render/vocabulary.h"

using namespace stagemem;

namespace {

constexpr std::int64_t MiB = 1024 * 1024;
constexpr TermInfo kTestTerm{"test tensor", "none"};

Term make_term(Family family, std::int64_t bytes, AllocationPoint at) {
  Term t;
  t.info = &kTestTerm;
  t.family = family;
  t.bytes = bytes;
  t.allocated_at = at;
  return t;
}

// One pipeline rank (1F1B, M = 2), two layers: 100 MiB of resident state, one 30 MiB activation
// per layer and micro-batch, a 25 MiB backward transient and, when `optimizer_bytes` > 0, an
// optimizer-step transient of that size.
Report worked_stage(std::int64_t optimizer_bytes) {
  Report r;
  r.micro_batches = 2;
  StageReport& s = r.stages.emplace_back();
  s.chunks = {LayerRange{0, 2}};
  s.terms.push_back(make_term(Family::resident, 100 * MiB, AllocationPoint::model_init));
  Term activation = make_term(Family::activation, 60 * MiB, AllocationPoint::forward);
  activation.copies = 2;  // 30 MiB per layer and micro-batch
  s.terms.push_back(activation);
  s.activation_units = {2};
  s.terms.push_back(make_term(Family::transient, 25 * MiB, AllocationPoint::backward));
  if (optimizer_bytes > 0)
    s.terms.push_back(
        make_term(Family::transient, optimizer_bytes, AllocationPoint::optimizer_step));
  return r;
}

// A public log's reserved and allocated readings next to the estimate of `fragment`: the report
// and its two cross-checks (reserved first).
struct PublicRun {
  Report report;
  CrossCheck reserved;
  CrossCheck allocated;
};
PublicRun public_run(const char* fragment, const Measurement& reserved,
                     const Measurement& allocated) {
  const DecodedConfig d = decode_fragment(fragment);
  REQUIRE(d.diagnostics.ok());
  Config c = d.config;
  c.measurements = {reserved, allocated};
  PublicRun run{.report = estimate(c), .reserved = {}, .allocated = {}};
  REQUIRE(run.report.diagnostics.ok());
  REQUIRE(run.report.cross_checks.size() == 2);
  run.reserved = run.report.cross_checks[0];
  run.allocated = run.report.cross_checks[1];
  CHECK(run.reserved.against_replay);
  return run;
}

// The derived figure in MiB and its excess over the measured one in percent.
double mib(const CrossCheck& c) {
  return static_cast<double>(c.derived_bytes) / 1048576.0;
}
double excess_percent(const CrossCheck& c) {
  return 100.0 * (1.0 / c.ratio - 1.0);
}

}  // namespace

TEST_CASE("Worked stage: segments per tensor, an unsplit remainder, reuse in the next pass") {
  // Init: the 100 MiB resident segment. F0: two 30 MiB activations, two new 30 MiB segments
  // (160 MiB). B0: the 25 MiB transient finds no free block: a segment of 26 MiB (2 MiB steps);
  // its 1 MiB remainder is not > 1 MiB, so the block is allocated whole: 186 MiB reserved and
  // allocated. F1 and B1 reuse the cached blocks (best fit: the 30 MiB ones, then the 26 MiB one),
  // and so does step 2.
  const Report r = worked_stage(0);
  const ReplayedStage x = replay_stage(r, r.stages[0], {});
  REQUIRE(x.complete);
  CHECK(x.peak_reserved_bytes == 186 * MiB);
  CHECK(x.peak_allocated_bytes == 186 * MiB);
  CHECK(x.reserved_after_steps == 186 * MiB);
  CHECK(x.peak_step == 1);
  CHECK(x.peak_phase == StepPhase::backward);
  CHECK(x.peak_micro_batch == 0);
  REQUIRE(x.segments_at_peak.size() == 4);
  CHECK(x.segments_at_peak[3].bytes == 26 * MiB);
  CHECK(x.segments_at_peak[3].allocated_bytes == 26 * MiB);
}

TEST_CASE("Worked stage with expandable segments: 20 MiB pages, 512 B splits") {
  // Init maps 5 pages (100 MiB). F0: 30 MiB maps 2 pages (40 MiB, 10 free at the end); the next
  // 30 MiB extends that free tail by one page. B0: 25 MiB maps 2 more pages (15 MiB free after
  // it): 200 MiB reserved, 185 MiB allocated (exact splits). Everything after reuses the mapped
  // pages: F1 splits the 100 MiB hole the freed micro-batch and transient left.
  const Report r = worked_stage(0);
  ReplaySettings settings;
  settings.rules.expandable_segments = true;
  const ReplayedStage x = replay_stage(r, r.stages[0], settings);
  CHECK(x.peak_reserved_bytes == 200 * MiB);
  CHECK(x.peak_allocated_bytes == 185 * MiB);
  CHECK(x.segments_at_peak.size() == 1);
}

TEST_CASE("Megatron's empty-unused-memory-level 1 returns the free segments before the step") {
  // Level 0: the 50 MiB optimizer transient fits none of the cached 30/30/26 MiB blocks: a new
  // segment, 236 MiB; step 2 reuses everything. Level 1: the cache is emptied after the last
  // backward (100 MiB left), the step maps 50 MiB (150); in step 2 the first activation splits
  // the cached 50 MiB block, the second maps 30 MiB (180), the transient 26 MiB (206); emptied
  // again before the step: the peak is 206 MiB.
  const Report r = worked_stage(50 * MiB);
  const ReplayedStage never = replay_stage(r, r.stages[0], {});
  CHECK(never.peak_reserved_bytes == 236 * MiB);
  CHECK(never.peak_phase == StepPhase::optimizer_step);
  ReplaySettings level1;
  level1.empty_unused_memory_level = 1;
  const ReplayedStage emptied = replay_stage(r, r.stages[0], level1);
  CHECK(emptied.peak_reserved_bytes == 206 * MiB);
  CHECK(emptied.peak_step == 2);
  CHECK(emptied.peak_phase == StepPhase::backward);
  CHECK(emptied.reserved_after_steps == 150 * MiB);
}

TEST_CASE("The replay stops at its bound and says so") {
  const Report r = worked_stage(0);
  ReplaySettings settings;
  settings.max_allocations = 3;  // F0 takes 2, F1 2 more: past 3 before step 1's last pass
  const ReplayedStage x = replay_stage(r, r.stages[0], settings);
  CHECK_FALSE(x.complete);
  CHECK(x.allocations == 4);  // it stopped before F1's backward
  // A larger budget lets it finish: 8 activation allocations over two steps.
  settings.max_allocations = 8;
  CHECK(replay_stage(r, r.stages[0], settings).complete);
}

TEST_CASE("Property: the fast path is exact and reserved >= replayed allocated >= peak allocated") {
  const std::uint64_t seed = 20261203;
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo + 1));
  };
  const char* presets[] = {"llama-3.1-8b", "deepseek-v3", "mixtral-8x7b", "kimi-linear-48b-a3b"};
  int stages = 0, skipped = 0;
  for (int i = 0; stages < 300 && i < 2000; ++i) {
    INFO("seed " << seed << " configuration " << i);
    Config c;
    c.model = presets[pick(0, 3)];
    c.parallel.pipeline_parallel = std::int64_t{1} << pick(0, 2);
    c.parallel.virtual_stages = c.parallel.pipeline_parallel > 1 && pick(0, 1) ? 2 : 1;
    c.parallel.tensor_parallel = std::int64_t{1} << pick(0, 2);
    c.parallel.sequence_parallel = c.parallel.tensor_parallel > 1;
    c.parallel.data_parallel = 1;
    c.training.sequence_length = std::int64_t{1} << pick(10, 13);
    c.training.global_batch = c.parallel.pipeline_parallel * pick(1, 24);
    c.training.recompute.policy = static_cast<RecomputePolicy>(pick(0, 2));
    c.training.allocator.expandable_segments = pick(0, 2) == 0;
    c.training.allocator.max_split_size_mb = pick(0, 3) == 0 ? 256 : 0;
    c.training.allocator.roundup_power2_divisions = pick(0, 3) == 0 ? 4 : 0;
    const Report r = estimate(c);
    if (!r.diagnostics.ok()) continue;
    for (const StageReport& s : r.stages) {
      REQUIRE(s.reserved_replayed);
      ReplaySettings slow;
      slow.rules.expandable_segments = c.training.allocator.expandable_segments;
      slow.rules.max_split_size = c.training.allocator.max_split_size_mb * MiB;
      slow.rules.roundup_power2_divisions = c.training.allocator.roundup_power2_divisions;
      slow.fast_path = false;
      const ReplayedStage every = replay_stage(r, s, slow);
      REQUIRE(every.peak_reserved_bytes == s.peak_reserved_bytes);
      REQUIRE(every.peak_allocated_bytes == s.replayed_allocated_bytes);
      REQUIRE(every.segments_at_peak.size() == s.segments_at_reserved_peak.size());
      REQUIRE(s.peak_reserved_bytes >= s.replayed_allocated_bytes);
      REQUIRE(s.replayed_allocated_bytes >= s.peak_bytes);
      REQUIRE(s.fit_bytes == s.peak_reserved_bytes);
      std::int64_t held = 0;
      for (const HeldSegment& seg : s.segments_at_reserved_peak) held += seg.bytes;
      REQUIRE(held == s.peak_reserved_bytes);
      ++stages;
      skipped += s.peak_reserved_bytes > 0 ? 0 : 1;
    }
  }
  CHECK(stages >= 300);
  CHECK(skipped == 0);
}

TEST_CASE("GPT-2 345M, TP 4 with SP (public log): reserved vs the replay", "[measured]") {
  // hwang2006/large-scale-lm-tutorials docs/06_tensor_parallelism.md at 1a0c8a81 (Megatron-LM,
  // fp16, Adam without the distributed optimizer, no recompute, TP 4 + SP, mbs 4, gbs 16, seq
  // 1024; default allocator settings): "after 20 iterations memory (MB) | allocated: 1761.69 |
  // max allocated: 2589.14 | reserved: 2608.0 | max reserved: 2608.0" (MB = MiB;
  // docs/research/issue26-measured-reserved.md, R1). The derived peak allocated is itself 7.5 %
  // above the measured one on this 2023 V100 stack (not modelled: its Megatron release and fp16
  // loss scaler), so the +-3 % target for reserved is not met here: the gap is printed and only
  // bounded at 12 %. Measured numbers never feed the model.
  const PublicRun run = public_run(
      "v=1&custom=name:gpt2-345m;h:1024;v:50257;norm:ln;tied:1;pos:1024;gqa:16,16,64,qkvbias,"
      "obias;mlp:4096,gelu,bias;layers:gd*24&tp=4&pp=1&dp=1&sp=1&seq=1024&mbs=4&gbs=16&dropout=1&"
      "optimizer=adam",
      {.point = MeasurementPoint::steady_state_peak,
       .stage = 0,
       .bytes = 2608LL << 20,
       .source = "R1 max reserved",
       .figure = MemoryFigure::max_reserved,
       .iteration = 20},
      {.point = MeasurementPoint::steady_state_peak,
       .stage = 0,
       .bytes = static_cast<std::int64_t>(2589.14 * 1048576.0),
       .source = "R1 max allocated",
       .figure = MemoryFigure::max_allocated,
       .iteration = 20});
  const CrossCheck& reserved = run.reserved;
  CHECK(reserved.derived_bytes == run.report.stages[0].peak_reserved_bytes);
  std::printf(
      "GPT-2 345M TP4 (R1): max reserved measured 2608.0 MiB, derived %.1f MiB (%+.2f %%); "
      "max allocated measured 2589.1 MiB, derived %.1f MiB (%+.2f %%)\n",
      mib(reserved), excess_percent(reserved), mib(run.allocated), excess_percent(run.allocated));
  CHECK(reserved.ratio > 0.88);
  CHECK(reserved.ratio < 1.12);
}

TEST_CASE("Against the device's bytes the replay releases cached segments before it fails") {
  // Llama-3.1-8B at PP 4 (M = 1024 micro-batches by default): stage 0 peaks at 55.90 GiB
  // allocated and, with no device, 56.95 GiB reserved. On a device of 61,000,000,000 B (56.81
  // GiB) the allocator cannot reserve that much: where cudaMalloc fails it releases the cached
  // segments and retries, and the stage fits below the device. 56.00 GiB is below what the step
  // needs even without cached blocks: out of memory, and it does not fit; its figures are then
  // the replay without the limit (what the steps need).
  const auto estimate_of = [](std::int64_t device_bytes) {
    Config c;
    c.parallel.pipeline_parallel = 4;
    c.device.bytes = device_bytes;
    const Report r = estimate(c);
    REQUIRE(r.diagnostics.ok());
    return r;
  };
  const Report unlimited = estimate_of(0);
  const StageReport& free0 = unlimited.stages[0];
  REQUIRE(free0.reserved_replayed);
  CHECK(free0.device_limit_bytes == 0);
  CHECK(free0.alloc_retries == 0);
  const std::int64_t tight = 61'000'000'000;
  REQUIRE(free0.peak_reserved_bytes > tight);
  REQUIRE(free0.peak_bytes < tight);

  const Report flushed = estimate_of(tight);
  const StageReport& s0 = flushed.stages[0];
  CHECK(s0.device_limit_bytes == tight);
  CHECK(s0.alloc_retries >= 1);
  CHECK(s0.segments_released_for_room >= 1);
  CHECK_FALSE(s0.out_of_memory);
  CHECK(s0.peak_reserved_bytes <= tight);
  CHECK(s0.headroom_bytes >= 0);
  bool warned = false;
  for (const auto& w : flushed.diagnostics.warnings)
    warned = warned || (w.field == "device.bytes" &&
                        w.message.find("stage 0 fits only by releasing the allocator's cache") !=
                            std::string::npos);
  CHECK(warned);
  CHECK(device_limit_text(s0).find("cache flush") != std::string::npos);

  const Report over = estimate_of(std::int64_t{56} << 30);
  const StageReport& o0 = over.stages[0];
  CHECK(o0.out_of_memory);
  CHECK(o0.headroom_bytes < 0);
  // Its figures are what the steps need: the replay without the limit.
  CHECK(o0.peak_reserved_bytes == free0.peak_reserved_bytes);
  CHECK(o0.alloc_retries == 0);
  CHECK(device_limit_text(o0).ends_with("out of memory even after releasing every cached segment"));

  // Below the live tensors' own bytes (40 GiB < 55.90 GiB) no release can help: out of memory
  // at once, with the figures of the replay without the limit.
  const Report far_over = estimate_of(std::int64_t{40} << 30);
  CHECK(far_over.stages[0].out_of_memory);
  CHECK(far_over.stages[0].peak_reserved_bytes == free0.peak_reserved_bytes);
  CHECK(device_limit_text(far_over.stages[0])
            .ends_with("out of memory even after releasing every cached segment"));

  // The fast path gives the full replay's figures under the limit too.
  ReplaySettings slow;
  slow.fast_path = false;
  slow.device_limit_bytes = tight;
  const ReplayedStage every = replay_stage(flushed, s0, slow);
  CHECK(every.peak_reserved_bytes == s0.peak_reserved_bytes);
  CHECK(every.alloc_retries == s0.alloc_retries);
  CHECK(every.segments_released_for_room == s0.segments_released_for_room);
}

TEST_CASE("Against the device's bytes the segments at the reserved peak sum to the peak") {
  // The fuzzer's finding (tests/fuzz/corpus/stagemem_fuzz_estimate/ce92095a...):
  // Llama-3.1-8B at its default PP 1 on 60,744,504,644 B. Stage 0's reserved peaks at
  // 60,681,093,120 B while a malloc creates a segment; later in the same pass a release for room
  // (12 segments, 1 retry) drops reserved again, so the segments at the end of the pass sum to
  // 469,762,048 B less than the peak. The allocator records the peak's segments when the malloc
  // that raised it ends.
  Config c;
  c.device.bytes = 60'744'504'644;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& s0 = r.stages[0];
  REQUIRE(s0.alloc_retries >= 1);
  CHECK(s0.peak_reserved_bytes == 60'681'093'120);
  std::int64_t held = 0;
  for (const HeldSegment& seg : s0.segments_at_reserved_peak) held += seg.bytes;
  CHECK(held == s0.peak_reserved_bytes);
  // Every stage, with and without a limit, on a few devices around the peak.
  for (const std::int64_t device : {std::int64_t{0}, std::int64_t{59'000'000'000},
                                    std::int64_t{60'744'504'644}, std::int64_t{62'000'000'000}}) {
    for (const std::int64_t pp : {1, 2, 4}) {
      Config d;
      d.parallel.pipeline_parallel = pp;
      d.device.bytes = device;
      const Report e = estimate(d);
      REQUIRE(e.diagnostics.ok());
      for (const StageReport& s : e.stages) {
        if (!s.reserved_replayed || s.out_of_memory) continue;
        std::int64_t sum = 0;
        for (const HeldSegment& seg : s.segments_at_reserved_peak) sum += seg.bytes;
        INFO("device " << device << " pp " << pp << " stage " << s.index);
        CHECK(sum == s.peak_reserved_bytes);
      }
    }
  }
}

TEST_CASE(
    "A per-process memory fraction limits what the allocator reserves; gc collects under it") {
  // Llama-3.1-8B PP 4, gbs 64 on an H100 80GB (85,027,979,264 B). A fraction of 0.75 lets the
  // allocator reserve floor(0.75 x 85,027,979,264) = 63,770,984,448 B (setMemoryFraction), the
  // limit every stage is replayed against (below the device's own). Stage 0's reserved peak,
  // 61,150,855,168 B, is under it: no cache flush. A garbage_collection_threshold of 0.5 collects
  // whenever a request misses the cache above floor(0.5 x 63,770,984,448) = 31,885,492,224 B.
  const auto run = [](const char* extra) {
    const DecodedConfig d =
        decode_fragment(std::string("v=1&model=llama-3.1-8b&pp=4&gbs=64&device=h100-80gb") + extra);
    REQUIRE(d.diagnostics.ok());
    Report r = estimate(d.config);
    REQUIRE(r.diagnostics.ok());
    return r;
  };
  const Report plain = run("");
  const Report fraction = run("&per_process_memory_fraction=0.75");
  const Report collected =
      run("&per_process_memory_fraction=0.75&garbage_collection_threshold=0.5");
  REQUIRE(plain.stages.size() == 4);
  for (std::size_t i = 0; i < plain.stages.size(); ++i) {
    INFO("stage " << i);
    const StageReport& p = plain.stages[i];
    const StageReport& f = fraction.stages[i];
    const StageReport& g = collected.stages[i];
    CHECK(p.device_limit_bytes == 85'027'979'264);
    CHECK(f.device_limit_bytes == 63'770'984'448);
    CHECK(g.device_limit_bytes == 63'770'984'448);
    // The limit does not bind: the same replay; the headroom is against the fraction's maximum.
    CHECK(f.peak_reserved_bytes == p.peak_reserved_bytes);
    CHECK(p.headroom_bytes == 85'027'979'264 - p.fit_bytes);
    CHECK(f.headroom_bytes == 63'770'984'448 - f.peak_reserved_bytes);
    CHECK(f.alloc_retries == 0);
    CHECK(f.segments_released_by_gc == 0);
    // Collection releases cached segments and never raises the reserved peak here; the segments
    // at the peak still sum to it, and it still covers what the replay allocated.
    CHECK(g.segments_released_by_gc > 0);
    CHECK(g.peak_reserved_bytes <= p.peak_reserved_bytes);
    CHECK(g.peak_reserved_bytes >= g.replayed_allocated_bytes);
    CHECK(g.replayed_allocated_bytes == p.replayed_allocated_bytes);
    std::int64_t held = 0;
    for (const HeldSegment& seg : g.segments_at_reserved_peak) held += seg.bytes;
    CHECK(held == g.peak_reserved_bytes);
    CHECK(device_limit_text(g).find("garbage collection released") != std::string::npos);
  }
  CHECK(plain.stages[0].peak_reserved_bytes == 61'150'855'168);
  CHECK(collected.stages[0].peak_reserved_bytes < plain.stages[0].peak_reserved_bytes);
  // Under collection every pass is replayed (ages are not in the fast path's state hash).
  ReplaySettings settings;
  settings.rules.gc_threshold_bytes = 31'885'492'224;
  const ReplayedStage g0 = replay_stage(collected, collected.stages[0], settings);
  CHECK(g0.passes_skipped == 0);
  CHECK(g0.peak_reserved_bytes == collected.stages[0].peak_reserved_bytes);
  CHECK(g0.segments_released_by_gc == collected.stages[0].segments_released_by_gc);
  // A threshold without a fraction does nothing in PyTorch: a warning, the plain figures.
  const DecodedConfig lone = decode_fragment(
      "v=1&model=llama-3.1-8b&pp=4&gbs=64&device=h100-80gb&garbage_collection_threshold=0.5");
  REQUIRE(lone.diagnostics.ok());
  const Report no_fraction = estimate(lone.config);
  bool warned = false;
  for (const auto& w : no_fraction.diagnostics.warnings)
    warned = warned || w.field == "allocator.garbage_collection_threshold";
  CHECK(warned);
  CHECK(no_fraction.stages[0].peak_reserved_bytes == plain.stages[0].peak_reserved_bytes);
  CHECK(no_fraction.stages[0].segments_released_by_gc == 0);
  // PyTorch refuses a threshold of 1 (parseGarbageCollectionThreshold): an error naming the field.
  const DecodedConfig one = decode_fragment("v=1&garbage_collection_threshold=1");
  REQUIRE(one.diagnostics.ok());  // in the field's range [0, 1]; the estimate's validation refuses
  const Report refused = estimate(one.config);
  REQUIRE_FALSE(refused.diagnostics.ok());
  CHECK(refused.diagnostics.errors[0].field == "allocator.garbage_collection_threshold");
  CHECK(refused.diagnostics.errors[0].message.ends_with("got 1"));
}

TEST_CASE("A replay in pieces gives the whole replay's figures, whatever the pieces") {
  // kimi-k3 at PP 8 x VPP 2, EP 32, DP 4 on MI355X: 224 micro-batches, ~120k activation tensors
  // per stage through fragmented free lists (the slowest Plan-tab confirmation); then Llama-3.1-8B
  // PP 4 against a device it fits only by releasing cached segments (the replay against the
  // device), and kimi-k3 at twice the batch: past the replay's allocation budget at stage 4.
  const char* fragments[] = {
      "v=1&model=kimi-k3&tp=8&pp=8&vpp=2&ep=32&dp=4&sp=1&seq=8192&gbs=896"
      "&optimizer=distributed-muon&device=mi355x",
      "v=1&model=llama-3.1-8b&pp=4&device_bytes=61000000000",
      "v=1&model=kimi-k3&tp=8&pp=8&vpp=2&ep=32&dp=4&sp=1&seq=8192&gbs=1792"
      "&optimizer=distributed-muon&device=mi355x",
  };
  for (const char* fragment : fragments) {
    INFO(fragment);
    const DecodedConfig d = decode_fragment(fragment);
    REQUIRE(d.diagnostics.ok());
    const Report whole = estimate(d.config);
    REQUIRE(whole.diagnostics.ok());
    for (const std::int64_t piece : {1, 777, 4096}) {
      // One stage's replay, advanced `piece` tensors at a time.
      const StageReport& s0 = whole.stages[0];
      ReplaySettings settings;
      const ReplayedStage at_once = replay_stage(whole, s0, settings);
      StageReplay stepped(whole, s0, settings);
      std::int64_t calls = 0;
      while (stepped.advance(piece)) ++calls;
      const ReplayedStage& pieces = stepped.result();
      CHECK(pieces.peak_reserved_bytes == at_once.peak_reserved_bytes);
      CHECK(pieces.first_step_peak_reserved_bytes == at_once.first_step_peak_reserved_bytes);
      CHECK(pieces.reserved_after_steps == at_once.reserved_after_steps);
      CHECK(pieces.peak_allocated_bytes == at_once.peak_allocated_bytes);
      CHECK(pieces.passes_replayed == at_once.passes_replayed);
      CHECK(pieces.allocations == at_once.allocations);
      CHECK(pieces.complete == at_once.complete);
      CHECK(pieces.segments_at_peak.size() == at_once.segments_at_peak.size());
      if (at_once.complete && piece < at_once.allocations) CHECK(calls > 0);

      // The whole estimate in steps (SteppedEstimate) equals estimate_into.
      EstimateCache cache;
      Report report;
      SteppedEstimate estimate_in_steps(d.config, *find_preset(d.config.model), cache, report);
      while (estimate_in_steps.step(piece)) {
      }
      REQUIRE(report.stages.size() == whole.stages.size());
      CHECK(report.binding_stage == whole.binding_stage);
      CHECK(report.diagnostics.warnings.size() == whole.diagnostics.warnings.size());
      for (std::size_t i = 0; i < whole.stages.size(); ++i) {
        const StageReport& a = whole.stages[i];
        const StageReport& b = report.stages[i];
        CHECK(b.peak_bytes == a.peak_bytes);
        CHECK(b.reserved_replayed == a.reserved_replayed);
        CHECK(b.peak_reserved_bytes == a.peak_reserved_bytes);
        CHECK(b.fit_bytes == a.fit_bytes);
        CHECK(b.headroom_bytes == a.headroom_bytes);
        CHECK(b.alloc_retries == a.alloc_retries);
        CHECK(b.out_of_memory == a.out_of_memory);
        CHECK(b.segments_at_reserved_peak.size() == a.segments_at_reserved_peak.size());
      }
    }
  }
}

TEST_CASE("Qwen3-4B on one H200 (public log): the first step's max reserved vs the replay",
          "[measured]") {
  // nagarajankarthik/paip W2D3/distributed_training.md (Megatron-Bridge qwen3_4b_pretrain_config
  // with W2D3/qwen3_pretrain_override.yaml, nemo:25.11; docs/research/issue26-measured-reserved.md,
  // R2): 36 layers, h 2560, 32 heads / 8 query groups of 128, qk-layernorm, SwiGLU 9728, vocab
  // 151,936 tied (Megatron's theoretical line, 69,053.29 MB = 18 B x 4.02 B parameters, is the
  // tied count), seq 1024, mbs 1, gbs 32 on 1 GPU, Adam without the distributed optimizer, fp32
  // gradients, no recompute; PYTORCH_CUDA_ALLOC_CONF is not set by the repository's scripts
  // (default allocator settings). "(after 1 iterations) memory (MB) | allocated: 69454.74 | max
  // allocated: 69454.76 | reserved: 73472.0 | max reserved: 73472.0" (MB = MiB). After one
  // iteration the max reserved is the first step's: the replay's first-step peak reserved.
  const PublicRun run = public_run(
      "v=1&custom=name:qwen3-4b;h:2560;v:151936;norm:rms;tied:1;gqa:32,8,128,qknorm;"
      "mlp:9728,swiglu;layers:gd*36&tp=1&pp=1&dp=1&seq=1024&mbs=1&gbs=32&optimizer=adam",
      {.point = MeasurementPoint::steady_state_peak,
       .stage = 0,
       .bytes = 73472LL << 20,
       .source = "R2 max reserved",
       .figure = MemoryFigure::max_reserved,
       .iteration = 1},
      {.point = MeasurementPoint::after_first_step,
       .stage = 0,
       .bytes = static_cast<std::int64_t>(69454.74 * 1048576.0),
       .source = "R2 allocated",
       .figure = MemoryFigure::allocated,
       .iteration = 1});
  const CrossCheck& reserved = run.reserved;
  CHECK(reserved.derived_bytes == run.report.stages[0].first_step_peak_reserved_bytes);
  std::printf(
      "Qwen3-4B 1 GPU (R2): first-step max reserved measured 73472.0 MiB, derived %.1f MiB "
      "(%+.2f %%); allocated after the step measured 69454.7 MiB, derived %.1f MiB (%+.2f %%)\n",
      mib(reserved), excess_percent(reserved), mib(run.allocated), excess_percent(run.allocated));
  // The bound where the allocator settings are known (default here).
  CHECK(reserved.ratio > 0.97);
  CHECK(reserved.ratio < 1.03);
}

TEST_CASE(
    "ROCm before PyTorch 2.11 ignores expandable_segments: replayed without, with a warning") {
  // CUDAAllocatorConfig::expandable_segments() returns false where the driver API is not
  // compiled in (ROCm until pytorch/pytorch#177974): the run gets one segment per cudaMalloc.
  const auto estimate_of = [](const std::string& fragment) {
    const DecodedFragment d = decode_fragment(fragment);
    REQUIRE(d.diagnostics.ok());
    return estimate(d.config);
  };
  const std::string base = "v=1&model=llama-3.1-8b&pp=2&gbs=64&device=mi300x";
  const Report plain = estimate_of(base + "&stack=torch%3D2.9,arch%3Dgfx942");
  const Report old_rocm =
      estimate_of(base + "&expandable_segments=1&stack=torch%3D2.9,arch%3Dgfx942");
  const Report new_rocm =
      estimate_of(base + "&expandable_segments=1&stack=torch%3D2.11,arch%3Dgfx942");
  const Report plain_new = estimate_of(base + "&stack=torch%3D2.11,arch%3Dgfx942");
  const Report cuda = estimate_of(base + "&expandable_segments=1&stack=torch%3D2.9,arch%3Dsm90");
  REQUIRE(plain.stages.size() == 2);
  const auto warned = [](const Report& r) {
    for (const auto& w : r.diagnostics.warnings)
      if (w.field == "allocator.expandable_segments") return true;
    return false;
  };
  for (std::size_t i = 0; i < plain.stages.size(); ++i) {
    CHECK(old_rocm.stages[i].peak_reserved_bytes == plain.stages[i].peak_reserved_bytes);
    // Honoured from 2.11: one segment per pool, mapped in pages: another figure.
    CHECK(new_rocm.stages[i].peak_reserved_bytes != plain_new.stages[i].peak_reserved_bytes);
    CHECK(new_rocm.stages[i].peak_bytes == plain_new.stages[i].peak_bytes);
  }
  CHECK(warned(old_rocm));
  CHECK_FALSE(warned(new_rocm));
  CHECK_FALSE(warned(cuda));
  CHECK_FALSE(warned(plain));
}

TEST_CASE("A replay from the cached state after init equals a replay from nothing") {
  // The init's state is kept between replays (ReplayInitCache): the first call fills it, the
  // next copies it. Each must equal the replay that allocates the init itself, for every stage,
  // with tensor-by-tensor resident terms (distributed Adam) and a device limit that binds.
  for (const std::int64_t device : {std::int64_t{0}, std::int64_t{61'000'000'000}}) {
    Config c;
    c.parallel.pipeline_parallel = 4;
    c.parallel.data_parallel = 2;
    c.optimizer.kind = OptimizerKind::distributed_adam;
    const Report r = estimate(c);
    REQUIRE(r.diagnostics.ok());
    for (const StageReport& stage : r.stages) {
      ReplaySettings settings;
      settings.device_limit_bytes = device;
      const ReplayedStage plain = replay_stage(r, stage, settings);
      ReplayInitCache cache;
      const ReplayedStage filling = replay_stage(r, stage, settings, &cache);
      REQUIRE(cache.allocator);
      const ReplayedStage copied = replay_stage(r, stage, settings, &cache);
      for (const ReplayedStage* other : {&filling, &copied}) {
        CHECK(other->peak_reserved_bytes == plain.peak_reserved_bytes);
        CHECK(other->peak_allocated_bytes == plain.peak_allocated_bytes);
        CHECK(other->first_step_peak_reserved_bytes == plain.first_step_peak_reserved_bytes);
        CHECK(other->reserved_after_steps == plain.reserved_after_steps);
        CHECK(other->segments_at_peak.size() == plain.segments_at_peak.size());
        CHECK(other->passes_skipped == plain.passes_skipped);
        CHECK(other->alloc_retries == plain.alloc_retries);
        CHECK(other->out_of_memory == plain.out_of_memory);
      }
    }
  }
}
