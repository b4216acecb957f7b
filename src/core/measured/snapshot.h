// snapshot.h — a PyTorch CUDA caching-allocator snapshot, attributed to stagemem's term families.
//
// Purpose: torch.cuda.memory._snapshot() (pickled by _dump_snapshot()) is a dict with
//   "segments":      [{address, total_size, allocated_size, active_size, stream, segment_type,
//                      blocks: [{address, size, requested_size, state, frames}]}]
//   "device_traces": [[{action, addr, size, stream, frames, time_us?, device_free?}]] per device
//   frames:          [{filename, line, name}], innermost call first
// (the TypedDicts _Snapshot/_Segment/_Block/_TraceEntry/_Frame in torch/cuda/memory.py; memory_viz
// reads the same keys). decode_snapshot() checks those fields; summarize_snapshot() attributes
// every active block to a bucket by its Python frames and replays the device trace.
// The measured bytes never feed the model: the CLI prints them next to the derived terms.
// Units: bytes. A block's measured bytes are its requested_size (the tensor's bytes); its size
// (rounded up by the allocator to 512 B or more) is kept as block_bytes.
// Limitations: blocks allocated while history recording was off carry no frames and land in
// `other`; so do autograd's backward allocations, whose C++ thread records no Python frames. The
// trace covers only what happened after recording began (and at most max_entries events), so the
// live-bytes curve starts at 0 at the first recorded event, not at the device's true level.
// torch 2.0's per-block "history" lists (before "frames") are not read: such blocks are `other`;
// a block without requested_size (also before torch 2.1) counts its block size.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "measured/pickle_reader.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace stagemem {

struct SnapshotFrame {
  std::string filename;
  std::int64_t line = 0;
  std::string name;
};

struct SnapshotBlock {
  std::int64_t address = 0;
  std::int64_t size = 0;
  std::int64_t requested_size = 0;
  std::string state;  // "active_allocated", "active_pending_free", "inactive"
  std::vector<SnapshotFrame> frames;
};

struct SnapshotSegment {
  std::int64_t address = 0;
  std::int64_t total_size = 0;
  std::int64_t allocated_size = 0;
  std::int64_t active_size = 0;
  std::int64_t stream = 0;
  std::string segment_type;  // "large" | "small"
  std::vector<SnapshotBlock> blocks;
};

struct SnapshotEvent {
  std::string action;  // alloc, free_requested, free_completed, segment_alloc, segment_free, ...
  std::int64_t addr = 0;
  std::int64_t size = 0;
  std::int64_t stream = 0;
  std::int64_t time_us = 0;  // 0 when absent (older torch)
  std::vector<SnapshotFrame> frames;
};

struct Snapshot {
  std::vector<SnapshotSegment> segments;
  std::vector<std::vector<SnapshotEvent>> device_traces;  // one list per device
};

struct SnapshotDecoded {
  std::optional<Snapshot> snapshot;
  std::string error;  // names the field path, e.g. "segments[2].blocks[0].size: ..."
};

// At most max_frames_total frames are copied out (a shared memoised frame list is counted each
// time it is referenced, so a hostile DAG cannot multiply the work).
SnapshotDecoded decode_snapshot(const PickleTree& tree, std::size_t max_frames_total = 50000000);
// read_pickle + decode_snapshot; errors say which stage failed.
SnapshotDecoded read_snapshot(std::string_view bytes, const PickleLimits& limits = {});

// Where an allocation's bytes belong, in stagemem's terms.
enum class SnapshotBucket : std::uint8_t {
  parameter_gradient_buffers,  // Megatron's contiguous param/grad buffers, module parameters
  optimizer_state,             // master weights, Adam moments, Muon momentum
  activations,                 // allocated under a module's forward
  all_gather_buffers,          // collective output buffers (parameter all-gather)
  moe_dispatch_buffers,        // MoE token dispatch / all-to-all buffers
  other,                       // no rule matched (including blocks without frames)
};
inline constexpr std::size_t snapshot_bucket_count = 6;
std::string_view snapshot_bucket_name(SnapshotBucket bucket);

struct SnapshotAttribution {
  SnapshotBucket bucket = SnapshotBucket::other;
  std::string_view rule;  // the rule that matched (static text naming the source it keys on)
  std::string module;     // activations: the innermost forward frame's file stem ("attention")
};
SnapshotAttribution attribute_frames(const std::vector<SnapshotFrame>& frames);

struct SnapshotBucketBytes {
  std::int64_t bytes = 0;        // sum of requested_size
  std::int64_t block_bytes = 0;  // sum of block size
  std::int64_t blocks = 0;
  std::map<std::string, std::int64_t> by_module;  // activations only: requested bytes per module
  std::map<std::string, std::int64_t> by_rule;    // requested bytes per matched rule
};

struct SnapshotPeak {
  bool found = false;
  std::size_t device = 0;
  std::size_t event = 0;  // index in device_traces[device]
  std::int64_t live_bytes = 0;
  SnapshotAttribution attribution;  // of the event's frames
  std::string action;
  std::int64_t size = 0;
  std::string where;  // innermost frame "file:line name", or "" without frames
};

struct SnapshotSummary {
  std::array<SnapshotBucketBytes, snapshot_bucket_count> buckets{};
  std::int64_t active_bytes = 0;    // requested bytes of active blocks
  std::int64_t reserved_bytes = 0;  // sum of segment total_size
  std::int64_t inactive_block_bytes = 0;
  std::int64_t blocks_without_frames = 0;
  bool optimizer_state_seen = false;  // false: taken before the first step (lazy state) or none
  // Live bytes after each event of each device (alloc adds size, free_completed removes it).
  std::vector<std::vector<std::int64_t>> live_bytes;
  SnapshotPeak peak;
  // Events in the trace of the peak's device (what places the peak in it; kept when a link
  // carries the summary without the curve).
  std::int64_t peak_trace_events = 0;
  // The segments held, by (pool is small, segment bytes): their count. A link's summary carries
  // the sizes holding the most bytes (snapshot_link.h); the segments of the sizes it leaves out
  // are counted in segments_left_out (their bytes in segment_bytes_left_out).
  std::map<std::pair<bool, std::int64_t>, std::int64_t> segment_sizes;
  std::int64_t segments_left_out = 0;
  std::int64_t segment_bytes_left_out = 0;
  std::string error;  // a byte sum overflowed int64 (then the sums are incomplete)
};

SnapshotSummary summarize_snapshot(const Snapshot& snapshot);

// The segments a snapshot holds next to those the allocator replay holds when the stage's
// reserved bytes peak (StageReport::segments_at_reserved_peak), by pool and segment size. The
// moments differ unless the snapshot was taken at the peak: reserved only grows within a step
// without empty_cache, so a snapshot taken after the step holds at least the peak's segments.
struct SegmentSizeRow {
  bool small_pool = false;
  std::int64_t segment_bytes = 0;
  std::int64_t measured_count = 0;
  std::int64_t derived_count = 0;
};
struct SegmentComparison {
  bool measured = false;  // the summary lists segments (a link's lists those it carries)
  bool derived = false;   // the stage was replayed (StageReport::reserved_replayed)
  std::int64_t measured_segments = 0;
  std::int64_t derived_segments = 0;
  std::int64_t measured_reserved_bytes = 0;  // the snapshot's reserved (segments' total size)
  std::int64_t derived_reserved_bytes = 0;   // the replay's peak reserved
  // Measured segments whose sizes a link did not carry (counted in measured_segments, in no row).
  std::int64_t measured_segments_left_out = 0;
  std::vector<SegmentSizeRow> rows;  // large pool first, then small; largest size first
};
SegmentComparison compare_segments(const SnapshotSummary& summary, const StageReport& stage);
// Its heading in words, for every front end: "segments: 11 in the snapshot (reserved ...) vs 235
// held by the allocator replay when reserved peaks (<derived reserved>, <reserved_moment>)", or
// why there is no comparison (a link's summary lists no segments; the stage was not replayed).
std::string segment_comparison_text(const SegmentComparison& comparison,
                                    std::string_view reserved_moment,
                                    AmountUnit unit = AmountUnit::gib);

// The bucket a derived term's bytes would be measured in; nullopt for gap rows (they are
// measurements themselves). Keys on the term's formula template (TermText) first: weights and
// main gradients -> parameter/gradient buffers; master weights, Adam moments, Muon momentum ->
// optimizer state; the parameter all-gather -> all-gather buffers; then a name with "dispatch"
// -> MoE dispatch; stored activations -> activations; everything else (pipeline buffers,
// workspaces, Newton-Schulz temporaries) -> other.
std::optional<SnapshotBucket> snapshot_bucket_of(const Term& term);

enum class SnapshotMatch : std::uint8_t {
  match,          // measured == derived, to the byte
  gap,            // both present, different
  measured_only,  // bytes in the snapshot that no derived term of the bucket explains
  derived_only,   // derived bytes the snapshot does not hold
  neither,
};
std::string_view snapshot_match_name(SnapshotMatch match);

struct SnapshotComparisonRow {
  SnapshotBucket bucket = SnapshotBucket::other;
  std::int64_t measured_bytes = 0;
  std::int64_t derived_bytes = 0;
  std::int64_t gap_bytes = 0;  // measured - derived
  SnapshotMatch match = SnapshotMatch::neither;
  bool derived_transient_only = false;  // every derived term is a transient (alive in its phase)
  std::vector<const Term*> derived_terms;
};

// One row per bucket, the measured bytes of `summary` against the terms of `stage`.
std::vector<SnapshotComparisonRow> compare_snapshot(const SnapshotSummary& summary,
                                                    const StageReport& stage);

// What every front end shows of a comparison (the CLI's `snapshot` text, the app's Snapshot tab
// and its link): one implementation, so they never disagree.
// "15,205,376 B (14.5 MiB)": exact bytes, then GiB from 1 GiB up, MiB from 1 MiB up (proxy runs
// are small); below 1 MiB the bytes alone ("1,000 B"). With AmountUnit::gb the same in GB and MB.
std::string snapshot_bytes_text(std::int64_t bytes, AmountUnit unit = AmountUnit::gib);
// A bucket's short key for links and JSON-free text: "parameter-gradient-buffers", ...
std::string_view snapshot_bucket_key(SnapshotBucket bucket);
std::optional<SnapshotBucket> parse_snapshot_bucket_key(std::string_view key);
// A row's status: "match", "gap +1,000 B", "derived only (a transient: alive only during its
// phase)", ...
std::string snapshot_row_status(const SnapshotComparisonRow& row);
// The verdict in words, one line per outcome (match, gap, measured only, derived only): its
// title and the buckets with that outcome ("-" when none).
struct SnapshotVerdict {
  std::string_view title;  // "matches (to the byte)", "differs", ...
  std::string buckets;     // "optimizer state, activations" or "-"
};
std::array<SnapshotVerdict, 4> snapshot_verdicts(const std::vector<SnapshotComparisonRow>& rows);
// What the derived activations stand for (all micro-batches in flight at the stage's peak).
std::string_view snapshot_activation_note();
// The lazy-state confound, shown when the snapshot holds no optimizer state.
std::string_view snapshot_lazy_state_note();
// "" or "3 active blocks carry no Python frames (...): counted in other".
std::string snapshot_frameless_note(const SnapshotSummary& summary);
// The measured peak event in words ("measured peak (device trace replay ...): 15,205,376 B ...
// at torch/...:3500 all_gather_into_tensor"), or why there is none.
std::string snapshot_peak_text(const SnapshotSummary& summary);

// The measured peak next to the derived one of the stage: the derived peak is the stage's
// largest moment of one step (timeline.h), the measured one the largest live level the recorded
// trace reached (counted from its first event, so a lower bound of the device's true level).
struct SnapshotPeakComparison {
  bool measured = false;  // the snapshot has a device trace with an alloc
  std::int64_t measured_bytes = 0;
  std::int64_t derived_bytes = 0;
  std::int64_t gap_bytes = 0;  // measured - derived
  // Where the measured peak sits in its trace, as a share of the trace's events in [0, 1)
  // (event index / events; -1 when the trace length is not known).
  double trace_share = -1.0;
  std::string text;  // "measured peak 14.5 MiB at event 17 of 24 vs derived 40.1 GiB at ...: ..."
};
SnapshotPeakComparison compare_snapshot_peak(const SnapshotSummary& summary,
                                             const StageReport& stage,
                                             const std::string& derived_moment);

}  // namespace stagemem
