// Tests of snapshot_link.h: a snapshot's summary goes into a link as readable measurement entries
// and comes back exactly (the committed snapshots of scripts/make_test_snapshots.py and random
// summaries), the comparison rebuilt from a link equals the one from the file, and every bad
// entry is an error naming url.snapshot[i] and its part.
#include <random>

#include "catch.h"
#include "config/measurement_text.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "measured/snapshot_link.h"
#include "report/report.h"

using namespace stagemem;

namespace {

SnapshotSummary load(const std::string& name) {
  const std::string bytes =
      stagemem_tests::read_whole_file(stagemem_tests::corpus_path("core/data/snapshots/" + name));
  const SnapshotDecoded d = read_snapshot(bytes);
  INFO(d.error);
  REQUIRE(d.snapshot);
  return summarize_snapshot(*d.snapshot);
}

// What a link carries must come back equal (the curve, block counts and rules are not carried).
void check_same_summary(const SnapshotSummary& a, const SnapshotSummary& b) {
  for (std::size_t i = 0; i < snapshot_bucket_count; ++i) {
    INFO("bucket " << i);
    CHECK(a.buckets[i].bytes == b.buckets[i].bytes);
  }
  const auto act = static_cast<std::size_t>(SnapshotBucket::activations);
  CHECK(a.buckets[act].by_module == b.buckets[act].by_module);
  CHECK(a.active_bytes == b.active_bytes);
  CHECK(a.reserved_bytes == b.reserved_bytes);
  CHECK(a.optimizer_state_seen == b.optimizer_state_seen);
  CHECK(a.segment_sizes == b.segment_sizes);
  CHECK(a.segments_left_out == b.segments_left_out);
  CHECK(a.segment_bytes_left_out == b.segment_bytes_left_out);
  CHECK(a.peak.found == b.peak.found);
  if (a.peak.found && b.peak.found) {
    CHECK(a.peak.device == b.peak.device);
    CHECK(a.peak.event == b.peak.event);
    CHECK(a.peak.live_bytes == b.peak.live_bytes);
    CHECK(a.peak.size == b.peak.size);
    CHECK(a.peak.attribution.bucket == b.peak.attribution.bucket);
    CHECK(a.peak.where == b.peak.where);
    CHECK(a.peak_trace_events == b.peak_trace_events);
  }
}

DecodedSnapshotLink round_trip(const SnapshotSummary& s, const std::string& file,
                               std::int64_t stage) {
  return decode_snapshot_link("v=1&pp=4" +
                              snapshot_fragment(snapshot_link_entries(s, file, stage)));
}

}  // namespace

TEST_CASE("A snapshot's summary travels in a link as readable entries and comes back exactly") {
  const SnapshotSummary s = load("after_step.pickle");
  const auto entries = snapshot_link_entries(s, "after_step.pickle", 2);
  // 6 buckets + 2 activation modules (attention, mlp) + active + reserved + 2 segment sizes +
  // peak + peak alloc.
  REQUIRE(entries.size() == 14);
  // Optimizer state (fp32 master 2 MiB + exp_avg 2 MiB + exp_avg_sq 2 MiB, test_snapshot.cpp):
  // the snapshot holds it, so its bytes are read after the first step.
  CHECK(measurement_text(entries[1]) ==
        "after-first-step/2=6MiB@optimizer-state|after_step.pickle");
  // Modules in name order: attention 2 x 256 KiB (the shortest text of 524,288 B is the number),
  // mlp 2 x 512 KiB.
  CHECK(measurement_text(entries[6]) ==
        "after-first-step/2=524288@module:attention|after_step.pickle");
  CHECK(measurement_text(entries[7]) == "after-first-step/2=1MiB@module:mlp|after_step.pickle");
  // The peak: 15,205,376 B live at event 21, the all-gather alloc (innermost frame after '|').
  // The segments (test_snapshot.cpp: one large of 4 MiB, ten large of 2 MiB), larger first.
  CHECK(measurement_text(entries[10]) ==
        "after-first-step/2=4MiB@segments:large:1|after_step.pickle");
  CHECK(measurement_text(entries[11]) ==
        "after-first-step/2=2MiB@segments:large:10|after_step.pickle");
  const std::string peak = measurement_text(entries[12]);
  CHECK(peak.starts_with(
      "steady-state-peak/2=15205376@peak:0:21:24:all-gather-buffers|after_step.pickle|"));
  CHECK(peak.ends_with("distributed_c10d.py:3500 all_gather_into_tensor"));
  CHECK(measurement_text(entries[13]) ==
        "steady-state-peak/2=4MiB@peak-alloc:0:21|after_step.pickle");

  const DecodedSnapshotLink back = round_trip(s, "after_step.pickle", 2);
  INFO((back.diagnostics.errors.empty() ? "" : back.diagnostics.errors[0].message));
  REQUIRE(back.diagnostics.ok());
  REQUIRE(back.snapshot);
  CHECK(back.snapshot->file == "after_step.pickle");
  CHECK(back.snapshot->stage == 2);
  check_same_summary(s, back.snapshot->summary);
  CHECK(back.snapshot->summary.live_bytes.empty());  // the curve stays in the file
}

TEST_CASE("Before the first step the link says so: its point is after-optimizer-init") {
  const SnapshotSummary s = load("before_step.pickle");
  REQUIRE_FALSE(s.optimizer_state_seen);
  const auto entries = snapshot_link_entries(s, "before_step.pickle", 0);
  CHECK(measurement_text(entries[1]) ==
        "after-optimizer-init/0=0@optimizer-state|before_step.pickle");
  const DecodedSnapshotLink back = round_trip(s, "before_step.pickle", 0);
  REQUIRE(back.snapshot);
  check_same_summary(s, back.snapshot->summary);
  CHECK_FALSE(back.snapshot->summary.optimizer_state_seen);
  // The frame-less peak alloc carries an empty WHERE.
  CHECK(back.snapshot->summary.peak.where.empty());
  CHECK(back.snapshot->summary.peak.live_bytes == 4'719'616);
}

TEST_CASE("The comparison rebuilt from a link equals the one from the file") {
  Config config;
  config.model = "llama-3.1-8b";
  config.parallel.pipeline_parallel = 4;
  const Report report = estimate(config);
  REQUIRE(report.diagnostics.ok());
  for (const char* name : {"after_step.pickle", "before_step.pickle"}) {
    INFO(name);
    const SnapshotSummary s = load(name);
    const DecodedSnapshotLink back = round_trip(s, name, 1);
    REQUIRE(back.snapshot);
    const StageReport& stage = report.stages[1];
    const auto rows = compare_snapshot(s, stage);
    const auto rebuilt = compare_snapshot(back.snapshot->summary, stage);
    REQUIRE(rows.size() == rebuilt.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      CHECK(rows[i].measured_bytes == rebuilt[i].measured_bytes);
      CHECK(rows[i].derived_bytes == rebuilt[i].derived_bytes);
      CHECK(rows[i].match == rebuilt[i].match);
      CHECK(snapshot_row_status(rows[i]) == snapshot_row_status(rebuilt[i]));
    }
    const auto verdicts = snapshot_verdicts(rows);
    const auto again = snapshot_verdicts(rebuilt);
    for (std::size_t k = 0; k < verdicts.size(); ++k)
      CHECK(verdicts[k].buckets == again[k].buckets);
    CHECK(snapshot_peak_text(s) == snapshot_peak_text(back.snapshot->summary));
    const auto peak = compare_snapshot_peak(back.snapshot->summary, stage, "its moment");
    CHECK(peak.measured);
    CHECK(peak.gap_bytes == s.peak.live_bytes - stage.peak_bytes);
    // Its place in the trace comes with it: event 21 of 24 (after_step), 13 of 14 (before_step).
    CHECK(peak.trace_share == compare_snapshot_peak(s, stage, "its moment").trace_share);
    CHECK(peak.text == compare_snapshot_peak(s, stage, "its moment").text);
    // The segments by pool and size, and their heading.
    const SegmentComparison segments = compare_segments(s, stage);
    const SegmentComparison carried = compare_segments(back.snapshot->summary, stage);
    CHECK(carried.measured);
    CHECK(carried.measured_segments == segments.measured_segments);
    REQUIRE(carried.rows.size() == segments.rows.size());
    for (std::size_t i = 0; i < carried.rows.size(); ++i) {
      CHECK(carried.rows[i].segment_bytes == segments.rows[i].segment_bytes);
      CHECK(carried.rows[i].measured_count == segments.rows[i].measured_count);
      CHECK(carried.rows[i].derived_count == segments.rows[i].derived_count);
    }
    CHECK(segment_comparison_text(carried, "m") == segment_comparison_text(segments, "m"));
  }
}

TEST_CASE("A link carries the 12 segment sizes holding the most bytes, the rest as one count") {
  // 20 large sizes of 22, 24, ..., 60 MiB, one segment each, and 30 small segments of 2 MiB
  // (60 MiB): the 12 sizes with the most bytes are 60 MiB (the small ones, 30 x 2 MiB) and the
  // large ones of 40-60 MiB; the large ones of 22-38 MiB (9 segments, 270 MiB) are left out.
  constexpr std::int64_t MiB = std::int64_t{1} << 20;
  SnapshotSummary s = load("after_step.pickle");
  s.segment_sizes.clear();
  for (std::int64_t size = 22; size <= 60; size += 2) s.segment_sizes[{false, size * MiB}] = 1;
  s.segment_sizes[{true, 2 * MiB}] = 30;
  const DecodedSnapshotLink back = round_trip(s, "big.pickle", 0);
  REQUIRE(back.snapshot);
  const SnapshotSummary& b = back.snapshot->summary;
  CHECK(b.segment_sizes.size() == 12);
  CHECK(b.segment_sizes.at({true, 2 * MiB}) == 30);
  CHECK(b.segment_sizes.count({false, 40 * MiB}) == 1);
  CHECK(b.segment_sizes.count({false, 38 * MiB}) == 0);
  CHECK(b.segments_left_out == 9);
  CHECK(b.segment_bytes_left_out == (22 + 24 + 26 + 28 + 30 + 32 + 34 + 36 + 38) * MiB);
  Config config;
  config.parallel.pipeline_parallel = 4;
  const Report report = estimate(config);
  REQUIRE(report.diagnostics.ok());
  const SegmentComparison c = compare_segments(b, report.stages[0]);
  CHECK(c.measured_segments == 20 + 30);  // every segment still counted
  CHECK(c.measured_segments_left_out == 9);
  CHECK(segment_comparison_text(c, "m").find(
            "segments: 50 in the snapshot (reserved 25,165,824 B (24.0 MiB)) (9 of them of sizes "
            "the link does not carry: load the file for every size) vs ") == 0);
  // The left-out count travels again unchanged.
  const DecodedSnapshotLink again = round_trip(b, "big.pickle", 0);
  REQUIRE(again.snapshot);
  check_same_summary(b, again.snapshot->summary);
}

TEST_CASE("Snapshot entries round-trip for random summaries (property)") {
  std::mt19937_64 random(15);
  std::uniform_int_distribution<std::int64_t> bytes(0, max_config_bytes);
  for (int trial = 0; trial < 300; ++trial) {
    SnapshotSummary s;
    for (auto& b : s.buckets) b.bytes = trial % 7 == 0 ? 0 : bytes(random);
    const int modules = static_cast<int>(random() % 5);
    for (int m = 0; m < modules; ++m) {
      s.buckets[2].by_module["module_" + std::to_string(random() % 1000)] = bytes(random);
    }
    s.active_bytes = bytes(random);
    s.reserved_bytes = bytes(random);
    // Up to 12 segment sizes (all carried), of counts up to 10^6.
    const int sizes = static_cast<int>(random() % 13);
    for (int k = 0; k < sizes; ++k) {
      s.segment_sizes[{random() % 2 == 0, 1 + static_cast<std::int64_t>(random() % (1LL << 40))}] =
          1 + static_cast<std::int64_t>(random() % 1000000);
    }
    s.optimizer_state_seen = random() % 2 == 0;
    s.peak.found = random() % 3 != 0;
    if (s.peak.found) {
      s.peak.device = random() % 8;
      s.peak.event = random() % 1000000;
      s.peak_trace_events =
          trial % 5 == 0 ? 0 : static_cast<std::int64_t>(s.peak.event + 1 + random() % 1000);
      s.peak.live_bytes = bytes(random);
      s.peak.size = bytes(random);
      s.peak.attribution.bucket = static_cast<SnapshotBucket>(random() % snapshot_bucket_count);
      s.peak.where = trial % 2 ? "megatron/core/x.py:12 forward" : "";
    }
    const std::int64_t stage = static_cast<std::int64_t>(random() % 1024);
    const DecodedSnapshotLink back =
        round_trip(s, "run-" + std::to_string(trial) + ".pickle", stage);
    INFO("trial " << trial << ": "
                  << (back.diagnostics.ok() ? "" : back.diagnostics.errors[0].message));
    REQUIRE(back.snapshot);
    CHECK(back.snapshot->stage == stage);
    check_same_summary(s, back.snapshot->summary);
  }
}

TEST_CASE("File names and frames of any bytes are carried as printable text") {
  SnapshotSummary s;
  s.peak.found = true;
  s.peak.where = std::string("a|b\x01\xff.py:1 f") + std::string(300, 'x');
  const auto entries = snapshot_link_entries(s, "my|snap\nshot.pickle", 0);
  for (const auto& m : entries) {
    CHECK(is_clean_text(m.source));
    CHECK(m.source.size() <= max_source_length);
  }
  const DecodedSnapshotLink back = round_trip(s, "my|snap\nshot.pickle", 0);
  REQUIRE(back.snapshot);
  CHECK(back.snapshot->file == "my_snap_shot.pickle");
  CHECK(back.snapshot->summary.peak.where.starts_with("a_b__.py:1 fxxx"));
  // A link without snapshot= keys holds no snapshot, and that is no error.
  const DecodedSnapshotLink none =
      decode_snapshot_link("v=1&pp=4&measured=after-first-step/0=1GiB@x");
  CHECK_FALSE(none.snapshot);
  CHECK(none.diagnostics.ok());
}

TEST_CASE("Bad snapshot entries are errors naming the entry and the part") {
  const std::string good =
      snapshot_fragment(snapshot_link_entries(load("after_step.pickle"), "a.pickle", 0));
  const struct {
    std::string extra;  // appended to a good link
    std::string field;
    std::string message;
  } cases[] = {
      {"&snapshot=after-first-step/0=1MiB@nokey", "url.snapshot[14].source", "is not KEY|FILE"},
      {"&snapshot=after-first-step/0=1MiB@bogus|a.pickle", "url.snapshot[14].source",
       "is not a snapshot figure"},
      {"&snapshot=after-first-step/1=1MiB@active|a.pickle", "url.snapshot[14]",
       "same file and stage"},
      {"&snapshot=after-first-step/0=1MiB@active|b.pickle", "url.snapshot[14]",
       "same file and stage"},
      {"&snapshot=after-optimizer-init/0=1MiB@active|a.pickle", "url.snapshot[14].point",
       "the same point"},
      {"&snapshot=after-model-init/0=1MiB@active|a.pickle", "url.snapshot[14].point",
       "after-first-step"},
      {"&snapshot=after-first-step/0=1MiB@other|a.pickle", "url.snapshot[14].source",
       "given twice"},
      {"&snapshot=after-first-step/0=1MiB@peak:0:1:2:other|a.pickle|x", "url.snapshot[14].point",
       "steady-state-peak"},
      {"&snapshot=steady-state-peak/0=1MiB@peak:0:x:2:other|a.pickle|x", "url.snapshot[14].source",
       "peak:DEVICE:EVENT:EVENTS:BUCKET"},
      {"&snapshot=steady-state-peak/0=1MiB@peak:0:1:2:nobucket|a.pickle|x",
       "url.snapshot[14].source", "peak:DEVICE:EVENT:EVENTS:BUCKET"},
      {"&snapshot=steady-state-peak/0=1MiB@peak:0:5:5:other|a.pickle|x", "url.snapshot[14].source",
       "EVENT < EVENTS"},
      {"&snapshot=steady-state-peak/0=1MiB@peak:0:1:other|a.pickle|x", "url.snapshot[14].source",
       "peak:DEVICE:EVENT:EVENTS:BUCKET"},
      {"&snapshot=steady-state-peak/0=1MiB@peak:0:1:2:other|a.pickle", "url.snapshot[14].source",
       "peak:D:E:N:BUCKET|FILE|WHERE"},
      {"&snapshot=steady-state-peak/0=1MiB@peak-alloc:0|a.pickle", "url.snapshot[14].source",
       "peak-alloc:DEVICE:EVENT"},
      {"&snapshot=max-allocated:after-first-step/0=1MiB@active|a.pickle", "url.snapshot[14]",
       "POINT/STAGE=AMOUNT@KEY|FILE"},
      {"&snapshot=term:weights/0=1MiB@active|a.pickle", "url.snapshot[14]",
       "POINT/STAGE=AMOUNT@KEY|FILE"},
      {"&snapshot=after-first-step/0=-1@active|a.pickle", "url.snapshot[14].bytes",
       "is not an amount"},
      {"&snapshot=after-first-step/0=1MiB@active|a.pickle%zz", "url.snapshot[14]",
       "two hexadecimal"},
      {"&snapshot=after-first-step/0=2MiB@segments:medium:3|a.pickle", "url.snapshot[14].source",
       "segments:POOL:COUNT"},
      {"&snapshot=after-first-step/0=2MiB@segments:large:0|a.pickle", "url.snapshot[14].source",
       "COUNT 1 to 100000000"},
      {"&snapshot=after-first-step/0=2MiB@segments:large:x|a.pickle", "url.snapshot[14].source",
       "segments:POOL:COUNT"},
      {"&snapshot=after-first-step/0=0@segments:large:3|a.pickle", "url.snapshot[14].source",
       "a segment's size above 0"},
      {"&snapshot=after-first-step/0=2MiB@segments:large:3|a.pickle", "url.snapshot[14].source",
       "given twice"},
      {"&snapshot=after-first-step/0=2MiB@segments-left-out:0|a.pickle", "url.snapshot[14].source",
       "segments-left-out:COUNT"},
  };
  for (const auto& c : cases) {
    INFO(c.extra);
    const DecodedSnapshotLink d = decode_snapshot_link("v=1" + good + c.extra);
    CHECK_FALSE(d.snapshot);
    REQUIRE_FALSE(d.diagnostics.ok());
    CHECK(d.diagnostics.errors[0].field == c.field);
    CHECK(d.diagnostics.errors[0].message.find(c.message) != std::string::npos);
  }
  // A link cut short loses a bucket: refused whole, naming the bucket.
  const DecodedSnapshotLink cut =
      decode_snapshot_link("v=1&snapshot=after-first-step/0=1MiB@active|a.pickle");
  REQUIRE_FALSE(cut.diagnostics.ok());
  CHECK(cut.diagnostics.errors[0].message.find("parameter-gradient-buffers is missing") !=
        std::string::npos);
  // More than 64 entries.
  std::string many = "v=1" + good;
  for (int i = 0; i < 60; ++i)
    many += "&snapshot=after-first-step/0=1@module:m" + std::to_string(i) + "|a.pickle";
  const DecodedSnapshotLink over = decode_snapshot_link(many);
  REQUIRE_FALSE(over.diagnostics.ok());
  CHECK(over.diagnostics.errors[0].message.find("at most 64") != std::string::npos);
}
