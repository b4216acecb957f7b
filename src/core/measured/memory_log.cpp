#include "measured/memory_log.h"

#include "config/log_reading.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

namespace stagemem {
namespace {

constexpr std::string_view report_marker = " memory (";

std::string at_line(const std::string& field, std::int64_t line) {
  return field + ":" + std::to_string(line);
}

// Bytes per unit of a report header "memory (UNIT)"; 0 for a unit this reader does not know.
std::int64_t unit_bytes(std::string_view unit) {
  if (unit == "MB" || unit == "MiB") return std::int64_t{1} << 20;  // Megatron's MB is MiB
  if (unit == "GiB") return std::int64_t{1} << 30;
  if (unit == "GB") return 1000000000;
  if (unit == "KiB") return 1024;
  if (unit == "B") return 1;
  return 0;
}

// A non-negative decimal number of `unit` bytes, rounded to the nearest byte; false when it is
// not such a number or exceeds max_config_bytes.
bool parse_amount(std::string_view text, std::int64_t unit, std::int64_t& bytes) {
  std::size_t i = 0;
  std::int64_t whole = 0;
  bool digits = false;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    whole = whole * 10 + (text[i] - '0');
    digits = true;
    if (whole > max_config_bytes) return false;
    ++i;
  }
  double fraction = 0.0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    double scale = 0.1;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      fraction += (text[i] - '0') * scale;
      scale /= 10.0;
      digits = true;
      ++i;
    }
  }
  if (!digits || i != text.size()) return false;
  if (whole > max_config_bytes / unit) return false;
  const auto rest = static_cast<std::int64_t>(std::llround(fraction * static_cast<double>(unit)));
  bytes = whole * unit + rest;
  return bytes <= max_config_bytes;
}

// Printable ASCII only (a log line or file name may hold anything), at most `length` characters.
std::string printable(std::string_view s, std::size_t length) {
  std::string out;
  for (char c : s.substr(0, length)) out += c >= ' ' && c <= '~' ? c : '?';
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// The number after `word` ("after 12 iterations", "for iteration 12)"), else -1; a number past
// max_iteration is no iteration a measurement can name (-1: not known), never a cut-off one.
std::int64_t number_after(std::string_view text, std::string_view word) {
  const auto at = text.find(word);
  if (at == std::string_view::npos) return -1;
  std::int64_t value = 0;
  bool digits = false;
  for (std::size_t i = at + word.size(); i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    digits = true;
    if (value <= max_iteration) value = value * 10 + (text[i] - '0');
  }
  return digits && value <= max_iteration ? value : -1;
}

// The "[Rank r]" tag before the memory report into r.rank (none: rank 0, with one warning per
// log); `before` becomes the text between the tag and the report. False when the tag is not a
// rank.
bool read_rank_tag(std::string_view& before, const std::string& where, MemoryLogReading& r,
                   bool& warned_rankless, Diagnostics& d) {
  const auto tag = before.rfind("[Rank ");
  if (tag == std::string_view::npos) {
    r.rank_given = false;
    // Old Megatron wrote "after N iterations memory (MB)" after any logging prefix.
    if (const auto after = before.rfind("after "); after != std::string_view::npos)
      before = before.substr(after);
    if (!warned_rankless) {
      d.warn(where,
             "no \"[Rank r]\" before the memory report: read as global rank 0 (Megatron "
             "before commit 3574b8e6a3, 2020-12-06, printed it from rank 0 only)");
      warned_rankless = true;
    }
    return true;
  }
  const auto close = before.find(']', tag);
  const std::string_view digits = close == std::string_view::npos
                                      ? std::string_view()
                                      : before.substr(tag + 6, close - tag - 6);
  std::int64_t rank = 0;
  bool ok = !digits.empty() && digits.size() <= 7;
  for (char c : digits) {
    ok = ok && c >= '0' && c <= '9';
    if (ok) rank = rank * 10 + (c - '0');
  }
  if (!ok || rank > max_rank) {
    d.error(where, "\"[Rank " + std::string(digits.substr(0, 16)) +
                       "]\" is not a rank: expected an integer in [0, " + std::to_string(max_rank) +
                       "]");
    return false;
  }
  r.rank = rank;
  before = before.substr(close + 1);
  return true;
}

// The "| name: amount" figures after the unit: allocated, max allocated, reserved, max reserved
// (others, e.g. "total device memory used", are not allocator figures). False when an amount is
// malformed or allocated / max allocated is missing.
bool read_figures(std::string_view fields, std::int64_t unit, std::string_view unit_text,
                  const std::string& where, MemoryLogReading& r, Diagnostics& d) {
  bool has_allocated = false, has_max_allocated = false;
  while (!fields.empty()) {
    const auto bar = fields.find('|');
    if (bar == std::string_view::npos) break;
    fields = fields.substr(bar + 1);
    const auto next = fields.find('|');
    const std::string_view item = trim(fields.substr(0, next));
    const auto colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = trim(item.substr(0, colon));
    const std::string_view value = trim(item.substr(colon + 1));
    std::int64_t* target = nullptr;
    if (name == "allocated") {
      target = &r.allocated;
      has_allocated = true;
    } else if (name == "max allocated") {
      target = &r.max_allocated;
      has_max_allocated = true;
    } else if (name == "reserved") {
      target = &r.reserved;
    } else if (name == "max reserved") {
      target = &r.max_reserved;
    } else {
      continue;
    }
    if (!parse_amount(value, unit, *target)) {
      d.error(where, std::string(name) + ": \"" + std::string(value.substr(0, 24)) +
                         "\" is not an amount: expected a non-negative decimal number of " +
                         std::string(unit_text) + " up to 2^50 bytes");
      return false;
    }
  }
  if (!has_allocated || !has_max_allocated) {
    d.error(where, "a memory report needs both \"allocated\" and \"max allocated\"");
    return false;
  }
  return true;
}

// One memory report line (`marker`: where its report_marker starts): its rank, label, iteration,
// unit and figures; none (with an error) when it is malformed.
std::optional<MemoryLogReading> read_report_line(std::string_view line, std::size_t marker,
                                                 std::int64_t line_number, const std::string& where,
                                                 bool& warned_rankless, Diagnostics& d) {
  MemoryLogReading r;
  r.line = line_number;
  std::string_view before = line.substr(0, marker);
  if (!read_rank_tag(before, where, r, warned_rankless, d)) return std::nullopt;
  r.label = printable(trim(before), 48);
  r.iteration = number_after(r.label, "after ");
  if (r.iteration < 0) r.iteration = number_after(r.label, "iteration ");
  const std::string_view rest = line.substr(marker + report_marker.size());
  const auto close = rest.find(')');
  const std::string_view unit_text = close == std::string_view::npos ? rest : rest.substr(0, close);
  const std::int64_t unit = unit_bytes(unit_text);
  if (close == std::string_view::npos || unit == 0) {
    d.error(where, "\"memory (" + std::string(unit_text.substr(0, 16)) +
                       ")\": expected the unit MB (Megatron's, 2^20 B), MiB, GiB, GB, KiB or B");
    return std::nullopt;
  }
  if (!read_figures(rest.substr(close + 1), unit, unit_text, where, r, d)) return std::nullopt;
  return r;
}

}  // namespace

std::vector<MemoryLogReading> parse_memory_log(std::string_view text, const std::string& field,
                                               Diagnostics& d) {
  std::vector<MemoryLogReading> readings;
  if (text.size() > max_log_bytes) {
    d.error(field, "a memory log is at most " + std::to_string(max_log_bytes >> 20) +
                       " MiB of text, got " + std::to_string(text.size()) + " bytes");
    return readings;
  }
  std::int64_t line_number = 0;
  bool warned_rankless = false;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    ++line_number;
    const auto marker = line.find(report_marker);
    if (marker == std::string_view::npos ||
        line.find("| allocated:", marker) == std::string_view::npos)
      continue;
    const std::string where = at_line(field, line_number);
    if (readings.size() >= max_log_readings) {
      d.error(where, "a memory log holds at most " + std::to_string(max_log_readings) +
                         " memory report lines");
      break;
    }
    if (auto r = read_report_line(line, marker, line_number, where, warned_rankless, d)) {
      readings.push_back(std::move(*r));
    }
  }
  return readings;
}

RankCoordinates rank_coordinates(const ParallelLayout& layout, std::int64_t rank) {
  const std::int64_t tp = std::max<std::int64_t>(1, layout.tensor_parallel);
  const std::int64_t cp = std::max<std::int64_t>(1, layout.context_parallel);
  const std::int64_t pp = std::max<std::int64_t>(1, layout.pipeline_parallel);
  const std::int64_t world = world_size(layout);
  const std::int64_t per_stage = std::max<std::int64_t>(1, world / pp);
  const std::int64_t dp = std::max<std::int64_t>(1, per_stage / (tp * cp));
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  const std::int64_t ep = std::max<std::int64_t>(1, layout.expert_parallel);
  RankCoordinates c;
  const std::int64_t in_stage = rank % per_stage;
  c.pipeline = rank / per_stage;
  c.tensor = in_stage % tp;
  c.context = in_stage / tp % cp;
  c.data = in_stage / (tp * cp) % dp;
  c.expert_tensor = in_stage % etp;
  c.expert = in_stage / etp % ep;
  c.expert_data = in_stage / (etp * ep);
  return c;
}

std::vector<Measurement> memory_log_measurements(const std::vector<MemoryLogReading>& readings,
                                                 const ParallelLayout& layout,
                                                 std::string_view source, const std::string& field,
                                                 std::size_t room, Diagnostics& d) {
  const std::int64_t world = world_size(layout);
  std::map<std::int64_t, const MemoryLogReading*> latest;  // by rank: the last line wins
  for (const MemoryLogReading& r : readings) {
    if (r.rank >= world) {
      d.error(at_line(field, r.line),
              "rank " + std::to_string(r.rank) + " is outside the layout's " +
                  std::to_string(world) + " ranks (TP " + std::to_string(layout.tensor_parallel) +
                  " x CP " + std::to_string(layout.context_parallel) + " x DP " +
                  std::to_string(world / std::max<std::int64_t>(1, layout.pipeline_parallel) /
                                 std::max<std::int64_t>(1, layout.tensor_parallel) /
                                 std::max<std::int64_t>(1, layout.context_parallel)) +
                  " x PP " + std::to_string(layout.pipeline_parallel) + ")");
      continue;
    }
    latest[r.rank] = &r;
  }
  std::size_t figures = 0;
  for (const auto& [rank, r] : latest) figures += 2 + (r->reserved >= 0) + (r->max_reserved >= 0);
  if (figures > room) {
    // Per stage, the rank whose step peaked highest.
    std::map<std::int64_t, std::pair<std::int64_t, const MemoryLogReading*>> binding;
    for (const auto& [rank, r] : latest) {
      auto& [kept_rank, kept] = binding[rank_coordinates(layout, rank).pipeline];
      if (kept == nullptr || r->max_allocated > kept->max_allocated) {
        kept_rank = rank;
        kept = r;
      }
    }
    const std::size_t ranks_read = latest.size();
    latest.clear();
    figures = 0;
    for (const auto& [stage, kept] : binding) {
      latest[kept.first] = kept.second;
      figures += 2 + (kept.second->reserved >= 0) + (kept.second->max_reserved >= 0);
    }
    if (figures > room) {
      d.error(field, std::to_string(binding.size()) + " stages' readings need " +
                         std::to_string(figures) + " measurements, more than the " +
                         std::to_string(room) + " a configuration still holds");
      return {};
    }
    d.warn(field, std::to_string(ranks_read) + " ranks' readings are more than the " +
                      std::to_string(room) +
                      " measurements a configuration holds: each stage keeps its rank with the "
                      "largest max allocated (" +
                      std::to_string(latest.size()) + " ranks)");
  }
  std::vector<Measurement> out;
  const std::string log = printable(source, max_log_name_length);
  for (const auto& entry : latest) {
    const std::int64_t rank = entry.first;
    const MemoryLogReading* r = entry.second;
    const RankCoordinates c = rank_coordinates(layout, rank);
    // One spelling of the source, shared with the link's compact reading= form (log_reading.h).
    const std::string where =
        log_reading_where(log, r->line, rank, r->label, {c.tensor, c.context, c.data, c.expert});
    const auto add = [&](MemoryFigure figure, MeasurementPoint point, std::int64_t bytes) {
      if (bytes < 0) return;
      out.push_back({.point = point,
                     .stage = c.pipeline,
                     .bytes = bytes,
                     .source = "Megatron memory report, " + where,
                     .term = {},
                     .rank = rank,
                     .figure = figure,
                     .iteration = r->iteration});
    };
    add(MemoryFigure::allocated, MeasurementPoint::after_first_step, r->allocated);
    add(MemoryFigure::max_allocated, MeasurementPoint::steady_state_peak, r->max_allocated);
    add(MemoryFigure::reserved, MeasurementPoint::after_first_step, r->reserved);
    add(MemoryFigure::max_reserved, MeasurementPoint::steady_state_peak, r->max_reserved);
  }
  return out;
}

}  // namespace stagemem
