// snapshot_link.cpp — see snapshot_link.h.
#include "measured/snapshot_link.h"

#include <algorithm>
#include <array>

#include "config/measurement_text.h"
#include "config/url_fragment.h"

namespace stagemem {
namespace {

constexpr std::size_t max_file_length = 80;
constexpr std::string_view peak_key = "peak:";
constexpr std::string_view peak_alloc_key = "peak-alloc:";
constexpr std::string_view module_key = "module:";

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

DecodedSnapshotLink decode_snapshot_link(std::string_view text) {
  DecodedSnapshotLink result;
  Diagnostics& d = result.diagnostics;
  if (const auto hash = text.find('#'); hash != std::string_view::npos)
    text.remove_prefix(hash + 1);
  SnapshotLinkSummary out;
  std::size_t entries = 0;
  std::optional<MeasurementPoint> point;
  std::array<bool, snapshot_bucket_count> seen{};
  std::string value;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (!pair.starts_with("snapshot=")) continue;
    const std::string field = "url.snapshot[" + std::to_string(entries) + "]";
    if (++entries > max_snapshot_link_entries) {
      d.error("url.snapshot", "at most " + std::to_string(max_snapshot_link_entries) +
                                  " snapshot entries are read");
      break;
    }
    if (!percent_decode(pair.substr(9), value)) {
      d.error(field, "a '%' must be followed by two hexadecimal digits");
      continue;
    }
    const auto m = parse_measurement_text(value, d, field);
    if (!m) continue;
    if (m->point == MeasurementPoint::term || m->figure != MemoryFigure::unspecified ||
        m->rank >= 0) {
      d.error(field, shown(value) + ": a snapshot entry is POINT/STAGE=AMOUNT@KEY|FILE");
      continue;
    }
    const auto bar = m->source.find('|');
    if (bar == std::string::npos) {
      d.error(field + ".source",
              shown(m->source) +
                  " is not KEY|FILE (KEY: a bucket, module:NAME, active, "
                  "reserved, peak:DEVICE:EVENT:BUCKET or peak-alloc:DEVICE:EVENT)");
      continue;
    }
    const std::string_view key = std::string_view(m->source).substr(0, bar);
    std::string_view file = std::string_view(m->source).substr(bar + 1);
    std::string_view where;
    const bool peak = key.starts_with(peak_key);
    if (peak) {
      const auto second = file.find('|');
      if (second == std::string_view::npos) {
        d.error(field + ".source",
                shown(m->source) + ": a peak entry is peak:D:E:N:BUCKET|FILE|WHERE");
        continue;
      }
      where = file.substr(second + 1);
      file = file.substr(0, second);
    }
    if (entries == 1) {
      out.file = std::string(file);
      out.stage = m->stage;
    } else if (file != out.file || m->stage != out.stage) {
      d.error(field, "entry of " + shown(file) + " on stage " + std::to_string(m->stage) +
                         ": every snapshot entry of a link names the same file and stage (the "
                         "first: " +
                         shown(out.file) + " on stage " + std::to_string(out.stage) + ")");
      continue;
    }
    SnapshotSummary& s = out.summary;
    if (peak || key.starts_with(peak_alloc_key)) {
      if (m->point != MeasurementPoint::steady_state_peak) {
        d.error(field + ".point", "a peak entry is read at steady-state-peak");
        continue;
      }
      std::int64_t device = 0, event = 0, events = 0;
      std::optional<SnapshotBucket> bucket;
      const std::string_view rest = key.substr(peak ? peak_key.size() : peak_alloc_key.size());
      if (!parse_peak_key(rest, device, event, events, peak ? &bucket : nullptr)) {
        d.error(field + ".source",
                shown(key) + " is not " +
                    (peak ? "peak:DEVICE:EVENT:EVENTS:BUCKET (EVENT < EVENTS, or EVENTS 0)"
                          : "peak-alloc:DEVICE:EVENT"));
        continue;
      }
      if (peak) {
        s.peak.found = true;
        s.peak.live_bytes = m->bytes;
        s.peak.attribution.bucket = *bucket;
        s.peak.where = std::string(where);
        s.peak.action = "alloc";
        s.peak_trace_events = events;
      } else {
        s.peak.size = m->bytes;
      }
      s.peak.device = static_cast<std::size_t>(device);
      s.peak.event = static_cast<std::size_t>(event);
      continue;
    }
    if (m->point != MeasurementPoint::after_first_step &&
        m->point != MeasurementPoint::after_optimizer_init) {
      d.error(field + ".point",
              "a snapshot's bytes are read at after-first-step (it holds optimizer state) or "
              "after-optimizer-init (it holds none)");
      continue;
    }
    if (point && *point != m->point) {
      d.error(field + ".point", "every bucket of one snapshot is read at the same point");
      continue;
    }
    point = m->point;
    if (const auto bucket = parse_snapshot_bucket_key(key)) {
      const auto i = static_cast<std::size_t>(*bucket);
      if (seen[i]) {
        d.error(field + ".source", "the bucket " + shown(key) + " is given twice");
        continue;
      }
      seen[i] = true;
      s.buckets[i].bytes = m->bytes;
    } else if (key.starts_with(module_key) && key.size() > module_key.size()) {
      s.buckets[static_cast<std::size_t>(SnapshotBucket::activations)]
          .by_module[std::string(key.substr(module_key.size()))] = m->bytes;
    } else if (key == "active") {
      s.active_bytes = m->bytes;
    } else if (key == "reserved") {
      s.reserved_bytes = m->bytes;
    } else {
      d.error(field + ".source", shown(key) +
                                     " is not a snapshot figure: expected a bucket "
                                     "(parameter-gradient-buffers, optimizer-state, activations, "
                                     "all-gather-buffers, moe-dispatch-buffers, other), "
                                     "module:NAME, active, reserved, peak:... or peak-alloc:...");
    }
  }
  if (entries == 0) return result;
  for (std::size_t i = 0; i < seen.size() && d.ok(); ++i) {
    if (!seen[i]) {
      d.error("url.snapshot", "the bucket " +
                                  std::string(snapshot_bucket_key(static_cast<SnapshotBucket>(i))) +
                                  " is missing: a snapshot's link carries all six buckets");
    }
  }
  if (!d.ok()) return result;
  out.summary.optimizer_state_seen = point == MeasurementPoint::after_first_step;
  result.snapshot = std::move(out);
  return result;
}

}  // namespace stagemem
