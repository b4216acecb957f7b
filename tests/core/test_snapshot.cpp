// Tests of snapshot.h: the committed snapshots written by scripts/make_test_snapshots.py (Python's
// pickle, torch's documented schema), attributed and replayed with worked numbers; each
// attribution rule; the schema errors of tests/bad-inputs/snapshot.txt; the comparison with the
// derived terms of a real estimate.
#include <set>

#include "catch.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "measured/snapshot.h"
#include "report/report.h"

using namespace stagemem;

namespace {

constexpr std::int64_t KiB = 1024;
constexpr std::int64_t MiB = 1024 * KiB;

Snapshot load(const std::string& name) {
  const std::string bytes =
      stagemem_tests::read_whole_file(stagemem_tests::corpus_path("core/data/snapshots/" + name));
  SnapshotDecoded d = read_snapshot(bytes);
  INFO(d.error);
  REQUIRE(d.snapshot);
  return std::move(*d.snapshot);
}

const SnapshotBucketBytes& bucket(const SnapshotSummary& s, SnapshotBucket b) {
  return s.buckets[static_cast<std::size_t>(b)];
}

SnapshotFrame frame(std::string file, std::string name) {
  return {std::move(file), 1, std::move(name)};
}

}  // namespace

TEST_CASE("Snapshot after the first step: every bucket with its worked bytes") {
  const Snapshot snap = load("after_step.pickle");
  // One segment per allocation (the script's toy allocator): 2 param/grad buffers, master weights,
  // 4 activations, 1 autograd block, exp_avg, exp_avg_sq, the freed all-gather buffer.
  REQUIRE(snap.segments.size() == 11);
  REQUIRE(snap.device_traces.size() == 1);
  // 11 allocs (segment_alloc + alloc each) + 1 free (free_requested + free_completed).
  CHECK(snap.device_traces[0].size() == 24);
  CHECK(snap.segments[0].blocks[0].frames[0].name == "__init__");

  const SnapshotSummary s = summarize_snapshot(snap);
  REQUIRE(s.error.empty());
  using B = SnapshotBucket;
  // bf16 params 1 MiB + fp32 grads 2 MiB in param_and_grad_buffer.py.
  CHECK(bucket(s, B::parameter_gradient_buffers).bytes == 3 * MiB);
  CHECK(bucket(s, B::parameter_gradient_buffers).blocks == 2);
  // fp32 master weights (distrib_optimizer.py) + exp_avg + exp_avg_sq (adam.py _init_group).
  CHECK(bucket(s, B::optimizer_state).bytes == 6 * MiB);
  // 2 layers x (attention 256 KiB + MLP 512 KiB) = 1.5 MiB; by module.
  CHECK(bucket(s, B::activations).bytes == 3 * MiB / 2);
  CHECK(bucket(s, B::activations).by_module.at("attention") == 512 * KiB);
  CHECK(bucket(s, B::activations).by_module.at("mlp") == 1 * MiB);
  // The all-gather buffer was freed before the snapshot: no active bytes.
  CHECK(bucket(s, B::all_gather_buffers).bytes == 0);
  CHECK(bucket(s, B::moe_dispatch_buffers).bytes == 0);
  // The frame-less autograd block: 1000 B requested, a 1024 B block (512 B rounding).
  CHECK(bucket(s, B::other).bytes == 1000);
  CHECK(bucket(s, B::other).block_bytes == 1024);
  CHECK(s.blocks_without_frames == 1);
  CHECK(s.active_bytes == 3 * MiB + 6 * MiB + 3 * MiB / 2 + 1000);  // 11,011,048
  // Segments rounded up to 2 MiB: ten of 2 MiB and the 4 MiB all-gather one.
  CHECK(s.reserved_bytes == 24 * MiB);
  CHECK(s.optimizer_state_seen);

  // Replay: live block bytes peak at the all-gather alloc (event 21: the 11th alloc, each
  // preceded by its segment_alloc): 11,011,072 B of live blocks + 4 MiB = 15,205,376 B.
  REQUIRE(s.peak.found);
  CHECK(s.peak.event == 21);
  CHECK(s.peak.live_bytes == 11'011'072 + 4 * MiB);
  CHECK(s.peak.live_bytes == 15'205'376);
  CHECK(s.peak.size == 4 * MiB);
  CHECK(s.peak.attribution.bucket == B::all_gather_buffers);
  CHECK(s.peak.where.ends_with("distributed_c10d.py:3500 all_gather_into_tensor"));
  REQUIRE(s.live_bytes.size() == 1);
  CHECK(s.live_bytes[0].back() == 11'011'072);  // after the free_completed
}

TEST_CASE("Snapshot before the first step: no optimizer state (the lazy-state confound)") {
  const SnapshotSummary s = summarize_snapshot(load("before_step.pickle"));  // protocol 2
  using B = SnapshotBucket;
  CHECK(bucket(s, B::parameter_gradient_buffers).bytes == 3 * MiB);
  CHECK(bucket(s, B::activations).bytes == 3 * MiB / 2);
  CHECK(bucket(s, B::optimizer_state).bytes == 0);
  CHECK_FALSE(s.optimizer_state_seen);
  // The last of 7 allocs (event 13) peaks: 3 MiB + 1.5 MiB + 1024 B = 4,719,616 B.
  REQUIRE(s.peak.found);
  CHECK(s.peak.event == 13);
  CHECK(s.peak.live_bytes == 4'719'616);
  CHECK(s.peak.attribution.bucket == B::other);
  CHECK(s.peak.where.empty());
}

TEST_CASE("Snapshot attribution: each rule keys on its source file or function") {
  using B = SnapshotBucket;
  const std::string mc = "/x/megatron/core/";
  CHECK(attribute_frames({frame(mc + "distributed/param_and_grad_buffer.py", "__init__")}).bucket ==
        B::parameter_gradient_buffers);
  CHECK(attribute_frames({frame("/t/torch/optim/adam.py", "_init_group")}).bucket ==
        B::optimizer_state);
  CHECK(attribute_frames(
            {frame("/t/transformer_engine/pytorch/optimizers/fused_adam.py", "_initialize_state")})
            .bucket == B::optimizer_state);
  CHECK(attribute_frames({frame(mc + "optimizer/distrib_optimizer.py", "x")}).bucket ==
        B::optimizer_state);
  // An all-gather issued by the optimizer is an all-gather buffer (rule order).
  CHECK(
      attribute_frames({frame("/t/torch/distributed/distributed_c10d.py", "all_gather_into_tensor"),
                        frame(mc + "optimizer/muon.py", "step")})
          .bucket == B::all_gather_buffers);
  // One issued by the MoE dispatcher is dispatch.
  CHECK(
      attribute_frames({frame("/t/torch/distributed/distributed_c10d.py", "all_gather_into_tensor"),
                        frame(mc + "transformer/moe/token_dispatcher.py", "token_dispatch")})
          .bucket == B::moe_dispatch_buffers);
  CHECK(attribute_frames({frame("/t/torch/distributed/distributed_c10d.py", "all_to_all_single")})
            .bucket == B::moe_dispatch_buffers);
  const SnapshotAttribution act =
      attribute_frames({frame("/t/torch/nn/functional.py", "linear"),
                        frame(mc + "transformer/attention.py", "forward"),
                        frame(mc + "transformer/transformer_layer.py", "forward")});
  CHECK(act.bucket == B::activations);
  CHECK(act.module == "attention");  // the innermost forward
  CHECK(attribute_frames({frame(mc + "tensor_parallel/layers.py", "__init__")}).bucket ==
        B::parameter_gradient_buffers);
  CHECK(attribute_frames({}).bucket == B::other);
  CHECK(attribute_frames({}).rule == "no frames recorded");
  CHECK(attribute_frames({frame("/t/train.py", "main")}).rule == "no rule matched");
}

TEST_CASE("Snapshot schema errors name the field path") {
  const auto entries = stagemem_tests::read_corpus("bad-inputs/snapshot.txt", "#");
  REQUIRE(entries.size() >= 10);
  for (const auto& entry : entries) {
    INFO("tests/bad-inputs/snapshot.txt line " << entry.line << ": " << entry.first);
    const SnapshotDecoded d = read_snapshot(stagemem_tests::unescape(entry.second));
    INFO(d.error);
    CHECK_FALSE(d.snapshot);
    CHECK(d.error.find(entry.first) != std::string::npos);
  }
  // A block without requested_size (older torch) counts its size. pickle.dumps({'segments':
  // [{'address': 0, 'total_size': 2097152, 'allocated_size': 512, 'active_size': 512, 'stream': 0,
  // 'segment_type': 'small', 'blocks': [{'address': 0, 'size': 512, 'state':
  // 'active_allocated'}]}]}, protocol=4)
  constexpr char old_block_bytes[] =
      "\x80\x04\x95\xb4\x00\x00\x00\x00\x00\x00\x00\x7d\x94\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74"
      "\x73\x94\x5d\x94\x7d\x94\x28\x8c\x07\x61\x64\x64\x72\x65\x73\x73\x94\x4b\x00\x8c\x0a\x74"
      "\x6f\x74\x61\x6c\x5f\x73\x69\x7a\x65\x94\x4a\x00\x00\x20\x00\x8c\x0e\x61\x6c\x6c\x6f\x63"
      "\x61\x74\x65\x64\x5f\x73\x69\x7a\x65\x94\x4d\x00\x02\x8c\x0b\x61\x63\x74\x69\x76\x65\x5f"
      "\x73\x69\x7a\x65\x94\x4d\x00\x02\x8c\x06\x73\x74\x72\x65\x61\x6d\x94\x4b\x00\x8c\x0c\x73"
      "\x65\x67\x6d\x65\x6e\x74\x5f\x74\x79\x70\x65\x94\x8c\x05\x73\x6d\x61\x6c\x6c\x94\x8c\x06"
      "\x62\x6c\x6f\x63\x6b\x73\x94\x5d\x94\x7d\x94\x28\x68\x04\x4b\x00\x8c\x04\x73\x69\x7a\x65"
      "\x94\x4d\x00\x02\x8c\x05\x73\x74\x61\x74\x65\x94\x8c\x10\x61\x63\x74\x69\x76\x65\x5f\x61"
      "\x6c\x6c\x6f\x63\x61\x74\x65\x64\x94\x75\x61\x75\x61\x73\x2e";
  const std::string_view old_block(old_block_bytes, sizeof old_block_bytes - 1);
  const SnapshotDecoded old = read_snapshot(old_block);
  INFO(old.error);
  REQUIRE(old.snapshot);
  CHECK(summarize_snapshot(*old.snapshot).active_bytes == 512);
  // A pickle-level error says so.
  CHECK(read_snapshot("\x80\x02"
                      "cos\nsystem\n")
            .error.starts_with("pickle: byte 2: opcode GLOBAL"));
}

TEST_CASE("Snapshot comparison with the derived terms of an estimate") {
  const Report report = estimate(Config{});
  REQUIRE(report.diagnostics.ok());
  const StageReport& stage = report.stages[0];
  const SnapshotSummary s = summarize_snapshot(load("after_step.pickle"));
  const auto rows = compare_snapshot(s, stage);
  REQUIRE(rows.size() == snapshot_bucket_count);
  // Every non-gap term with bytes lands in exactly one row, so the rows' derived bytes add up to
  // the stage's non-gap terms.
  std::int64_t derived = 0, terms = 0;
  std::set<const Term*> seen;
  for (const auto& row : rows) {
    derived += row.derived_bytes;
    for (const Term* t : row.derived_terms) CHECK(seen.insert(t).second);
    CHECK(row.gap_bytes == row.measured_bytes - row.derived_bytes);
  }
  for (const Term& t : stage.terms) {
    if (t.family != Family::gap) terms += t.bytes;
  }
  CHECK(derived == terms);
  // The weights and main gradients are parameter/gradient-buffer terms; the stored activations
  // are the stage's activation bytes.
  const auto& pg = rows[static_cast<std::size_t>(SnapshotBucket::parameter_gradient_buffers)];
  CHECK(pg.derived_bytes > 0);
  CHECK(pg.match == SnapshotMatch::gap);  // the toy snapshot is not this model
  CHECK(rows[static_cast<std::size_t>(SnapshotBucket::activations)].derived_bytes ==
        stage.activation_bytes);
  // Without a stage, everything measured is measured only.
  for (const auto& row : compare_snapshot(s, StageReport{})) {
    CHECK(row.match ==
          (row.measured_bytes > 0 ? SnapshotMatch::measured_only : SnapshotMatch::neither));
  }
}

TEST_CASE("Snapshot segments next to the allocator replay's, by pool and size") {
  const SnapshotSummary s = summarize_snapshot(load("after_step.pickle"));
  // The script's toy allocator: 11 large segments, 10 of 2 MiB and 1 of 4 MiB = 24 MiB reserved.
  CHECK(s.segment_sizes.size() == 2);
  CHECK(s.segment_sizes.at({false, 2 * MiB}) == 10);
  CHECK(s.segment_sizes.at({false, 4 * MiB}) == 1);
  CHECK(s.reserved_bytes == 24 * MiB);

  Config c;
  c.model = "llama-3.1-8b";
  c.parallel.pipeline_parallel = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const StageReport& stage = r.stages[0];
  REQUIRE(stage.reserved_replayed);
  const SegmentComparison cmp = compare_segments(s, stage);
  CHECK(cmp.measured);
  CHECK(cmp.derived);
  CHECK(cmp.measured_segments == 11);
  CHECK(cmp.derived_segments == static_cast<std::int64_t>(stage.segments_at_reserved_peak.size()));
  CHECK(cmp.derived_reserved_bytes == stage.peak_reserved_bytes);
  // Rows: large pool before small, the larger size first within a pool; every count on a row.
  std::int64_t measured = 0, derived = 0, derived_bytes = 0;
  for (std::size_t i = 0; i < cmp.rows.size(); ++i) {
    const SegmentSizeRow& row = cmp.rows[i];
    measured += row.measured_count;
    derived += row.derived_count;
    derived_bytes += row.derived_count * row.segment_bytes;
    if (i == 0) continue;
    const SegmentSizeRow& before = cmp.rows[i - 1];
    CHECK((before.small_pool < row.small_pool ||
           (before.small_pool == row.small_pool && before.segment_bytes > row.segment_bytes)));
  }
  CHECK(measured == 11);
  CHECK(derived == cmp.derived_segments);
  // The derived segments' sizes add up to the replay's peak reserved.
  CHECK(derived_bytes == stage.peak_reserved_bytes);

  // A summary that lists no segments (a link written before links carried them).
  SnapshotSummary from_link = s;
  from_link.segment_sizes.clear();
  CHECK_FALSE(compare_segments(from_link, stage).measured);

  // The heading every front end prints: counts, both reserved figures and the replay's moment.
  CHECK(segment_comparison_text(cmp, "step 2, optimizer step") ==
        "segments: 11 in the snapshot (reserved 25,165,824 B (24.0 MiB)) vs " +
            std::to_string(cmp.derived_segments) +
            " held by the allocator replay when reserved peaks (" +
            snapshot_bytes_text(stage.peak_reserved_bytes) + ", step 2, optimizer step)");
  CHECK(segment_comparison_text(compare_segments(from_link, stage), "") ==
        "segments: the summary lists none (load the snapshot file to compare)");
  StageReport not_replayed = stage;
  not_replayed.reserved_replayed = false;
  CHECK(segment_comparison_text(compare_segments(s, not_replayed), "") ==
        "segments: 11 in the snapshot; the stage was not replayed (no derived ones)");
}
