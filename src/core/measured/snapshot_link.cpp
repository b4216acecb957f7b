// snapshot_link.cpp — see snapshot_link.h.
#include "measured/snapshot_link.h"

#include <algorithm>
#include <array>

#include "base/checked_math.h"
#include "config/measurement_text.h"
#include "config/url_fragment.h"

namespace stagemem {
namespace {

constexpr std::size_t max_file_length = 80;
constexpr std::string_view peak_key = "peak:";
constexpr std::string_view peak_alloc_key = "peak-alloc:";
constexpr std::string_view module_key = "module:";
constexpr std::string_view segments_key = "segments:";
constexpr std::string_view segments_left_out_key = "segments-left-out:";

// Printable ASCII without the separator '|' (a file or module name may hold anything).
std::string carried(std::string_view text, std::size_t length) {
  std::string out;
  for (char c : text.substr(0, length)) out += c >= ' ' && c <= '~' && c != '|' ? c : '_';
  return out;
}

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 40;
  return "'" + std::string(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

// "D:E" (and ":N:BUCKET" when `bucket` is given) after a peak key; false when malformed.
bool parse_peak_key(std::string_view text, std::int64_t& device, std::int64_t& event,
                    std::int64_t& events, std::optional<SnapshotBucket>* bucket) {
  const auto number = [](std::string_view digits, std::int64_t& out) {
    if (digits.empty() || digits.size() > 12) return false;
    out = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return true;
  };
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  if (!number(text.substr(0, colon), device)) return false;
  text.remove_prefix(colon + 1);
  if (bucket == nullptr) return number(text, event);
  const auto second = text.find(':');
  if (second == std::string_view::npos || !number(text.substr(0, second), event)) return false;
  text.remove_prefix(second + 1);
  const auto third = text.find(':');
  if (third == std::string_view::npos || !number(text.substr(0, third), events)) return false;
  *bucket = parse_snapshot_bucket_key(text.substr(third + 1));
  return bucket->has_value() && (events == 0 || event < events);
}

}  // namespace

std::vector<Measurement> snapshot_link_entries(const SnapshotSummary& s, std::string_view file,
                                               std::int64_t stage) {
  std::string name = carried(file, max_file_length);
  if (name.empty()) name = "snapshot";
  const MeasurementPoint point = s.optimizer_state_seen ? MeasurementPoint::after_first_step
                                                        : MeasurementPoint::after_optimizer_init;
  std::vector<Measurement> out;
  const auto add = [&](MeasurementPoint at, std::int64_t bytes, const std::string& source) {
    if (bytes < 0 || bytes > max_config_bytes) return;  // not a reading a link can carry
    out.push_back({.point = at, .stage = stage, .bytes = bytes, .source = source});
  };
  for (std::size_t i = 0; i < snapshot_bucket_count; ++i) {
    const auto bucket = static_cast<SnapshotBucket>(i);
    add(point, s.buckets[i].bytes, std::string(snapshot_bucket_key(bucket)) + "|" + name);
  }
  std::size_t modules = 0;
  for (const auto& [module, bytes] :
       s.buckets[static_cast<std::size_t>(SnapshotBucket::activations)].by_module) {
    if (++modules > max_snapshot_link_modules) break;
    add(point, bytes, std::string(module_key) + carried(module, 64) + "|" + name);
  }
  add(point, s.active_bytes, "active|" + name);
  add(point, s.reserved_bytes, "reserved|" + name);
  // The segment sizes holding the most bytes (in the summary's order: large pool, larger first),
  // the rest as one left-out count.
  std::vector<std::pair<std::pair<bool, std::int64_t>, std::int64_t>> sizes(s.segment_sizes.begin(),
                                                                            s.segment_sizes.end());
  std::stable_sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
    return saturating_product({a.first.second, a.second}) >
           saturating_product({b.first.second, b.second});
  });
  std::int64_t left_out = s.segments_left_out;
  std::int64_t left_out_bytes = s.segment_bytes_left_out;
  if (sizes.size() > max_snapshot_link_segment_sizes) {
    for (std::size_t i = max_snapshot_link_segment_sizes; i < sizes.size(); ++i) {
      left_out = saturating_sum({left_out, sizes[i].second});
      left_out_bytes = saturating_sum(
          {left_out_bytes, saturating_product({sizes[i].first.second, sizes[i].second})});
    }
    sizes.resize(max_snapshot_link_segment_sizes);
  }
  std::sort(sizes.begin(), sizes.end(), [](const auto& a, const auto& b) {
    return a.first.first != b.first.first ? !a.first.first : a.first.second > b.first.second;
  });
  for (const auto& [key, count] : sizes) {
    add(point, key.second,
        std::string(segments_key) + (key.first ? "small:" : "large:") + std::to_string(count) +
            "|" + name);
  }
  if (left_out > 0) {
    add(point, left_out_bytes,
        std::string(segments_left_out_key) + std::to_string(left_out) + "|" + name);
  }
  if (s.peak.found) {
    const std::string at = std::to_string(s.peak.device) + ":" + std::to_string(s.peak.event);
    const std::string head = std::string(peak_key) + at + ":" +
                             std::to_string(std::max<std::int64_t>(s.peak_trace_events, 0)) + ":" +
                             std::string(snapshot_bucket_key(s.peak.attribution.bucket)) + "|" +
                             name + "|";
    add(MeasurementPoint::steady_state_peak, s.peak.live_bytes,
        head + carried(s.peak.where, max_source_length - head.size()));
    add(MeasurementPoint::steady_state_peak, s.peak.size,
        std::string(peak_alloc_key) + at + "|" + name);
  }
  return out;
}

std::string snapshot_fragment(const std::vector<Measurement>& entries) {
  std::string out;
  for (const Measurement& m : entries) out += "&snapshot=" + percent_encode(measurement_text(m));
  return out;
}

namespace {

// The KEY|FILE source of one entry, split (a peak entry's is peak:...|FILE|WHERE).
struct EntrySource {
  std::string_view key;
  std::string_view file;
  std::string_view where;
  bool peak = false;  // key peak:DEVICE:EVENT:EVENTS:BUCKET
};

// Reads the snapshot entries of one link into one summary, every failure named by its entry's
// field (url.snapshot[i]).
class SnapshotLinkReader {
 public:
  explicit SnapshotLinkReader(Diagnostics& d) : d_(d) {}

  std::size_t entries() const { return entries_; }

  // One `snapshot=` value of the link (still percent-encoded); false once there are too many.
  bool read(std::string_view encoded) {
    const std::string field = "url.snapshot[" + std::to_string(entries_) + "]";
    if (++entries_ > max_snapshot_link_entries) {
      d_.error("url.snapshot", "at most " + std::to_string(max_snapshot_link_entries) +
                                   " snapshot entries are read");
      return false;
    }
    const auto m = parse_entry(encoded, field);
    if (!m) return true;
    const auto source = split_source(*m, field);
    if (!source || !same_file_and_stage(*m, source->file, field)) return true;
    if (source->peak || source->key.starts_with(peak_alloc_key)) {
      read_peak(*m, *source, field);
    } else {
      read_figure(*m, source->key, field);
    }
    return true;
  }

  // The summary once every entry is read: all six buckets must be there.
  std::optional<SnapshotLinkSummary> finish() {
    for (std::size_t i = 0; i < seen_.size() && d_.ok(); ++i) {
      if (!seen_[i]) {
        d_.error("url.snapshot",
                 "the bucket " + std::string(snapshot_bucket_key(static_cast<SnapshotBucket>(i))) +
                     " is missing: a snapshot's link carries all six buckets");
      }
    }
    if (!d_.ok()) return std::nullopt;
    out_.summary.optimizer_state_seen = point_ == MeasurementPoint::after_first_step;
    return std::move(out_);
  }

 private:
  // The entry as a measurement of the form POINT/STAGE=AMOUNT@KEY|FILE.
  std::optional<Measurement> parse_entry(std::string_view encoded, const std::string& field) {
    if (!percent_decode(encoded, value_)) {
      d_.error(field, "a '%' must be followed by two hexadecimal digits");
      return std::nullopt;
    }
    auto m = parse_measurement_text(value_, d_, field);
    if (!m) return std::nullopt;
    if (m->point == MeasurementPoint::term || m->figure != MemoryFigure::unspecified ||
        m->rank >= 0) {
      d_.error(field, shown(value_) + ": a snapshot entry is POINT/STAGE=AMOUNT@KEY|FILE");
      return std::nullopt;
    }
    return m;
  }

  std::optional<EntrySource> split_source(const Measurement& m, const std::string& field) {
    const auto bar = m.source.find('|');
    if (bar == std::string::npos) {
      d_.error(field + ".source",
               shown(m.source) +
                   " is not KEY|FILE (KEY: a bucket, module:NAME, active, "
                   "reserved, peak:DEVICE:EVENT:BUCKET or peak-alloc:DEVICE:EVENT)");
      return std::nullopt;
    }
    EntrySource source;
    source.key = std::string_view(m.source).substr(0, bar);
    source.file = std::string_view(m.source).substr(bar + 1);
    source.peak = source.key.starts_with(peak_key);
    if (source.peak) {
      const auto second = source.file.find('|');
      if (second == std::string_view::npos) {
        d_.error(field + ".source",
                 shown(m.source) + ": a peak entry is peak:D:E:N:BUCKET|FILE|WHERE");
        return std::nullopt;
      }
      source.where = source.file.substr(second + 1);
      source.file = source.file.substr(0, second);
    }
    return source;
  }

  // The first entry names the link's file and stage; every other must name the same.
  bool same_file_and_stage(const Measurement& m, std::string_view file, const std::string& field) {
    if (entries_ == 1) {
      out_.file = std::string(file);
      out_.stage = m.stage;
      return true;
    }
    if (file == out_.file && m.stage == out_.stage) return true;
    d_.error(field, "entry of " + shown(file) + " on stage " + std::to_string(m.stage) +
                        ": every snapshot entry of a link names the same file and stage (the "
                        "first: " +
                        shown(out_.file) + " on stage " + std::to_string(out_.stage) + ")");
    return false;
  }

  // peak:DEVICE:EVENT:EVENTS:BUCKET (the live bytes at the peak) or peak-alloc:DEVICE:EVENT (the
  // allocation that reached it), read at steady-state-peak.
  void read_peak(const Measurement& m, const EntrySource& source, const std::string& field) {
    if (m.point != MeasurementPoint::steady_state_peak) {
      d_.error(field + ".point", "a peak entry is read at steady-state-peak");
      return;
    }
    std::int64_t device = 0, event = 0, events = 0;
    std::optional<SnapshotBucket> bucket;
    const std::string_view rest =
        source.key.substr(source.peak ? peak_key.size() : peak_alloc_key.size());
    if (!parse_peak_key(rest, device, event, events, source.peak ? &bucket : nullptr)) {
      d_.error(field + ".source",
               shown(source.key) + " is not " +
                   (source.peak ? "peak:DEVICE:EVENT:EVENTS:BUCKET (EVENT < EVENTS, or EVENTS 0)"
                                : "peak-alloc:DEVICE:EVENT"));
      return;
    }
    SnapshotSummary& s = out_.summary;
    if (source.peak) {
      s.peak.found = true;
      s.peak.live_bytes = m.bytes;
      s.peak.attribution.bucket = *bucket;
      s.peak.where = std::string(source.where);
      s.peak.action = "alloc";
      s.peak_trace_events = events;
    } else {
      s.peak.size = m.bytes;
    }
    s.peak.device = static_cast<std::size_t>(device);
    s.peak.event = static_cast<std::size_t>(event);
  }

  // A bucket, module:NAME, active or reserved, all read at one point: after-first-step or
  // after-optimizer-init.
  void read_figure(const Measurement& m, std::string_view key, const std::string& field) {
    if (m.point != MeasurementPoint::after_first_step &&
        m.point != MeasurementPoint::after_optimizer_init) {
      d_.error(field + ".point",
               "a snapshot's bytes are read at after-first-step (it holds optimizer state) or "
               "after-optimizer-init (it holds none)");
      return;
    }
    if (point_ && *point_ != m.point) {
      d_.error(field + ".point", "every bucket of one snapshot is read at the same point");
      return;
    }
    point_ = m.point;
    SnapshotSummary& s = out_.summary;
    if (const auto bucket = parse_snapshot_bucket_key(key)) {
      const auto i = static_cast<std::size_t>(*bucket);
      if (seen_[i]) {
        d_.error(field + ".source", "the bucket " + shown(key) + " is given twice");
        return;
      }
      seen_[i] = true;
      s.buckets[i].bytes = m.bytes;
    } else if (key.starts_with(module_key) && key.size() > module_key.size()) {
      s.buckets[static_cast<std::size_t>(SnapshotBucket::activations)]
          .by_module[std::string(key.substr(module_key.size()))] = m.bytes;
    } else if (key.starts_with(segments_key)) {
      read_segments(m.bytes, key.substr(segments_key.size()), field);
    } else if (key.starts_with(segments_left_out_key)) {
      std::int64_t count = 0;
      if (!parse_count(key.substr(segments_left_out_key.size()), count) ||
          s.segments_left_out > 0) {
        d_.error(field + ".source", shown(key) + " is not segments-left-out:COUNT (COUNT 1 to " +
                                        std::to_string(max_segment_count) + ", once per link)");
        return;
      }
      s.segments_left_out = count;
      s.segment_bytes_left_out = m.bytes;
    } else if (key == "active") {
      s.active_bytes = m.bytes;
    } else if (key == "reserved") {
      s.reserved_bytes = m.bytes;
    } else {
      d_.error(field + ".source", shown(key) +
                                      " is not a snapshot figure: expected a bucket "
                                      "(parameter-gradient-buffers, optimizer-state, activations, "
                                      "all-gather-buffers, moe-dispatch-buffers, other), "
                                      "module:NAME, active, reserved, segments:POOL:COUNT, "
                                      "segments-left-out:COUNT, peak:... or peak-alloc:...");
    }
  }

  // segments:POOL:COUNT with the segment's size as the amount: COUNT segments of that size.
  void read_segments(std::int64_t bytes, std::string_view rest, const std::string& field) {
    const auto colon = rest.find(':');
    const std::string_view pool = rest.substr(0, colon);
    std::int64_t count = 0;
    if (colon == std::string_view::npos || (pool != "small" && pool != "large") ||
        !parse_count(rest.substr(colon + 1), count) || bytes <= 0) {
      d_.error(field + ".source",
               "segments:" + std::string(rest.substr(0, 40)) +
                   " is not segments:POOL:COUNT (POOL small or large, COUNT 1 to " +
                   std::to_string(max_segment_count) + ", the amount a segment's size above 0)");
      return;
    }
    auto [it, added] = out_.summary.segment_sizes.try_emplace({pool == "small", bytes}, count);
    if (!added) {
      d_.error(field + ".source", "the " + std::string(pool) + " segments of " +
                                      std::to_string(bytes) + " B are given twice");
    }
  }

  // A count of segments: 1 to max_segment_count, decimal digits only.
  static bool parse_count(std::string_view digits, std::int64_t& out) {
    if (digits.empty() || digits.size() > 9) return false;
    out = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') return false;
      out = out * 10 + (c - '0');
    }
    return out >= 1 && out <= max_segment_count;
  }
  static constexpr std::int64_t max_segment_count = 100'000'000;

  Diagnostics& d_;
  SnapshotLinkSummary out_;
  std::size_t entries_ = 0;
  std::optional<MeasurementPoint> point_;
  std::array<bool, snapshot_bucket_count> seen_{};
  std::string value_;  // the decoded entry (reused)
};

}  // namespace

DecodedSnapshotLink decode_snapshot_link(std::string_view text) {
  DecodedSnapshotLink result;
  if (const auto hash = text.find('#'); hash != std::string_view::npos)
    text.remove_prefix(hash + 1);
  SnapshotLinkReader reader(result.diagnostics);
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (pair.starts_with("snapshot=") && !reader.read(pair.substr(9))) break;
  }
  if (reader.entries() == 0) return result;
  result.snapshot = reader.finish();
  return result;
}

}  // namespace stagemem
