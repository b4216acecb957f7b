// snapshot_link.h — what a link carries of an allocator snapshot: its summary, never the file.
//
// Purpose: after a snapshot is loaded (snapshot.h), the URL fragment holds each measured figure of
// its summary as a repeated `snapshot=` key in measurement_text.h's form, so opening the link
// shows the same comparison (per-bucket bytes against the derived terms, the verdict, the
// lazy-state note, the measured peak) without the file:
//   snapshot=POINT/STAGE=AMOUNT@KEY|FILE          a bucket, a module, or a total
//   snapshot=steady-state-peak/STAGE=AMOUNT@peak:DEVICE:EVENT:EVENTS:BUCKET|FILE|WHERE
//   snapshot=steady-state-peak/STAGE=AMOUNT@peak-alloc:DEVICE:EVENT|FILE
//   snapshot=POINT/STAGE=SIZE@segments:POOL:COUNT|FILE    COUNT segments of SIZE in POOL
//   snapshot=POINT/STAGE=AMOUNT@segments-left-out:COUNT|FILE
// KEY: a bucket key (snapshot_bucket_key: parameter-gradient-buffers, optimizer-state,
// activations, all-gather-buffers, moe-dispatch-buffers, other; its requested bytes),
// module:NAME (an activation module's bytes), active (requested bytes of all active blocks) or
// reserved (the segments' total). POINT is what the snapshot shows: after-first-step when it holds
// optimizer state, after-optimizer-init when it holds none (before the first step: the lazy-state
// confound); the peak is the largest live level of the device trace replay, at EVENT of the
// EVENTS of its device's trace (what places it on the timeline without the curve). FILE is the
// snapshot's file name (printable ASCII, '|' written as '_', at most 80 characters); WHERE the
// peak event's innermost frame, cut to fit the 200-character source.
// The `snapshot=` keys are not configuration: decode_fragment skips them; decode_snapshot_link
// reads only them. Errors name "url.snapshot[i]" and the part that is wrong.
// The segments (POOL small or large) are carried for the max_snapshot_link_segment_sizes sizes
// holding the most bytes; the segments of the other sizes are one segments-left-out entry (their
// count, their bytes), so the reopened comparison still counts every segment.
// Units: bytes (int64).
// Limitations: the trace's live-bytes curve, the block counts (so the frame-less blocks' note)
// and the per-rule sums are not carried (a reopened link shows the peak, not the curve); a figure
// above 2^50 B (the measurement text bound) is left out; at most max_snapshot_link_modules
// activation modules and max_snapshot_link_segment_sizes segment sizes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "measured/snapshot.h"

namespace stagemem {

inline constexpr std::size_t max_snapshot_link_modules = 32;
inline constexpr std::size_t max_snapshot_link_segment_sizes = 12;
inline constexpr std::size_t max_snapshot_link_entries = 64;

// A snapshot's summary as a link carries it (live_bytes is empty after decoding).
struct SnapshotLinkSummary {
  std::string file;        // the snapshot's file name as carried
  std::int64_t stage = 0;  // the pipeline stage it is compared with
  SnapshotSummary summary;
};

// The entries of `summary` (taken on `stage`, read from `file`), in a fixed order: the buckets,
// the modules, the totals, the peak.
std::vector<Measurement> snapshot_link_entries(const SnapshotSummary& summary,
                                               std::string_view file, std::int64_t stage);
// "&snapshot=...&snapshot=..." (percent-encoded like every value of a fragment); "" for none.
std::string snapshot_fragment(const std::vector<Measurement>& entries);

struct DecodedSnapshotLink {
  std::optional<SnapshotLinkSummary> snapshot;  // none: the link has no snapshot= key, or errors
  Diagnostics diagnostics;
};
// Reads the `snapshot=` keys of a fragment (or a whole link); every other key is ignored.
DecodedSnapshotLink decode_snapshot_link(std::string_view fragment);

}  // namespace stagemem
