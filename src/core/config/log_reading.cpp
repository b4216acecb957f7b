#include "config/log_reading.h"

#include "config/measurement_text.h"

namespace stagemem {
namespace {

constexpr std::string_view source_prefix = "Megatron memory report, ";
constexpr std::string_view form =
    "rRANK/sSTAGE/iN/lLINE/cTP.CP.DP.EP=ALLOCATED,MAX_ALLOCATED[,RESERVED[,MAX_RESERVED]]@LOG";

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 40;
  return "'" + std::string(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

// A non-negative integer of at most `digits` digits filling `text`.
std::optional<std::int64_t> whole_number(std::string_view text, std::size_t digits = 13) {
  if (text.empty() || text.size() > digits) return std::nullopt;
  std::int64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// Cuts the text before `separator` off `rest` (all of it when there is none).
std::string_view take(std::string_view& rest, char separator) {
  const auto at = rest.find(separator);
  const std::string_view head = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + 1);
  return head;
}

bool printable_log_name(std::string_view log) {
  if (log.empty() || log.size() > max_log_name_length) return false;
  for (const char c : log) {
    if (c < ' ' || c > '~') return false;
  }
  return true;
}

// "TP 0 CP 0 DP 1 EP 0" into four numbers; false when it is not exactly that.
bool read_coordinates(std::string_view text, std::array<std::int64_t, 4>& out) {
  constexpr std::array<std::string_view, 4> names = {"TP ", "CP ", "DP ", "EP "};
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!text.starts_with(names[i])) return false;
    text.remove_prefix(names[i].size());
    const std::string_view digits = take(text, ' ');
    const auto value = whole_number(digits, 8);
    if (!value) return false;
    out[i] = *value;
  }
  return text.empty();
}

}  // namespace

std::string iterations_label(std::int64_t iteration) {
  return "(after " + std::to_string(iteration) + " iterations)";
}

std::string log_reading_where(std::string_view log, std::int64_t line, std::int64_t rank,
                              std::string_view label, const std::array<std::int64_t, 4>& c) {
  return std::string(log) + " line " + std::to_string(line) + ": [Rank " + std::to_string(rank) +
         "] " + std::string(label) + ", TP " + std::to_string(c[0]) + " CP " +
         std::to_string(c[1]) + " DP " + std::to_string(c[2]) + " EP " + std::to_string(c[3]);
}

std::vector<Measurement> log_reading_measurements(const LogReading& r) {
  const std::string source =
      std::string(source_prefix) +
      log_reading_where(r.log, r.line, r.rank, iterations_label(r.iteration), r.coordinates);
  std::vector<Measurement> out;
  const auto add = [&](MemoryFigure figure, MeasurementPoint point, std::int64_t bytes) {
    if (bytes < 0) return;
    out.push_back({.point = point,
                   .stage = r.stage,
                   .bytes = bytes,
                   .source = source,
                   .term = {},
                   .rank = r.rank,
                   .figure = figure,
                   .iteration = r.iteration});
  };
  // Megatron's figures and the points they are compared at (memory_log.h).
  add(MemoryFigure::allocated, MeasurementPoint::after_first_step, r.allocated);
  add(MemoryFigure::max_allocated, MeasurementPoint::steady_state_peak, r.max_allocated);
  add(MemoryFigure::reserved, MeasurementPoint::after_first_step, r.reserved);
  add(MemoryFigure::max_reserved, MeasurementPoint::steady_state_peak, r.max_reserved);
  return out;
}

std::string log_reading_text(const LogReading& r) {
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "r" + n(r.rank) + "/s" + n(r.stage) + "/i" + n(r.iteration) + "/l" + n(r.line) +
                    "/c" + n(r.coordinates[0]) + "." + n(r.coordinates[1]) + "." +
                    n(r.coordinates[2]) + "." + n(r.coordinates[3]) + "=" +
                    byte_amount_text(r.allocated) + "," + byte_amount_text(r.max_allocated);
  if (r.reserved >= 0 || r.max_reserved >= 0)
    out += "," + (r.reserved >= 0 ? byte_amount_text(r.reserved) : std::string("-"));
  if (r.max_reserved >= 0) out += "," + byte_amount_text(r.max_reserved);
  return out + "@" + r.log;
}

std::optional<LogReading> parse_log_reading_text(std::string_view text, Diagnostics& d,
                                                 const std::string& field) {
  const auto refuse = [&](const std::string& part, const std::string& why) {
    d.error(field + part, why + "; expected " + std::string(form));
    return std::nullopt;
  };
  const auto eq = text.find('=');
  const auto at = eq == std::string_view::npos ? std::string_view::npos : text.find('@', eq);
  if (at == std::string_view::npos) return refuse("", shown(text) + " is not a reading");
  LogReading r;
  // The head: five parts, each a letter and its number(s), in this order.
  std::string_view head = text.substr(0, eq);
  constexpr std::array<char, 5> letters = {'r', 's', 'i', 'l', 'c'};
  constexpr std::array<std::string_view, 5> names = {".rank", ".stage", ".iteration", ".line",
                                                     ".coordinates"};
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const std::string_view part = take(head, '/');
    if (part.empty() || part.front() != letters[i]) {
      return refuse(std::string(names[i]),
                    shown(part) + " should start with '" + std::string(1, letters[i]) + "'");
    }
    std::string_view value = part.substr(1);
    if (letters[i] == 'c') {
      // Exactly four integers joined by '.'.
      std::size_t k = 0;
      bool ok = true;
      while (ok && k < 4) {
        const bool last = k == 3;
        if (!last && value.find('.') == std::string_view::npos) ok = false;
        const auto v = whole_number(last ? value : take(value, '.'), 8);
        ok = ok && v.has_value();
        if (ok) r.coordinates[k++] = *v;
      }
      if (!ok) {
        return refuse(".coordinates",
                      shown(part) + " is not four coordinates (TP.CP.DP.EP, integers)");
      }
      continue;
    }
    const std::array<std::int64_t, 4> highest = {max_rank, 1023, max_iteration, max_iteration};
    const auto v = whole_number(value);
    if (!v || *v > highest[i] || (letters[i] == 'l' && *v < 1)) {
      return refuse(std::string(names[i]),
                    shown(part) + " is out of range: expected an integer in [" +
                        (letters[i] == 'l' ? "1" : "0") + ", " + std::to_string(highest[i]) + "]");
    }
    (i == 0 ? r.rank : i == 1 ? r.stage : i == 2 ? r.iteration : r.line) = *v;
  }
  if (!head.empty()) return refuse("", shown(text.substr(0, eq)) + " has more than five parts");
  // The amounts: allocated, max allocated, then optionally reserved ("-": not printed) and max
  // reserved.
  std::string_view amounts = text.substr(eq + 1, at - eq - 1);
  std::array<std::int64_t*, 4> targets = {&r.allocated, &r.max_allocated, &r.reserved,
                                          &r.max_reserved};
  std::size_t count = 0;
  while (!amounts.empty() || count == 0) {
    if (count == targets.size()) return refuse(".bytes", "more than four amounts");
    const std::string_view amount = take(amounts, ',');
    if (count == 2 && amount == "-" && !amounts.empty()) {
      ++count;  // reserved not printed, max reserved follows
      continue;
    }
    const auto bytes = parse_byte_amount(amount);
    if (!bytes) {
      return refuse(".bytes", shown(amount) + " is not an amount: expected " + allowed_amounts());
    }
    *targets[count++] = *bytes;
  }
  if (count < 2) return refuse(".bytes", "allocated and max allocated are both needed");
  r.log = std::string(text.substr(at + 1));
  if (!printable_log_name(r.log)) {
    return refuse(".log", "the log's name must be 1 to " + std::to_string(max_log_name_length) +
                              " printable ASCII characters");
  }
  return r;
}

std::optional<LogReadingRun> log_reading_at(const std::vector<Measurement>& ms, std::size_t at) {
  if (at + 1 >= ms.size()) return std::nullopt;
  const Measurement& first = ms[at];
  if (first.figure != MemoryFigure::allocated || first.rank < 0 || first.iteration < 0 ||
      !first.source.starts_with(source_prefix)) {
    return std::nullopt;
  }
  // The source: "Megatron memory report, LOG line L: [Rank R] (after N iterations), TP t CP c
  // DP d EP e"; read from both ends, since LOG may hold any printable text.
  LogReadingRun run;
  LogReading& r = run.reading;
  const std::string_view where = std::string_view(first.source).substr(source_prefix.size());
  const std::string tail =
      ": [Rank " + std::to_string(first.rank) + "] " + iterations_label(first.iteration) + ", ";
  const auto tail_at = where.rfind(tail);
  if (tail_at == std::string_view::npos) return std::nullopt;
  if (!read_coordinates(where.substr(tail_at + tail.size()), r.coordinates)) return std::nullopt;
  const std::string_view log_line = where.substr(0, tail_at);
  const auto line_at = log_line.rfind(" line ");
  if (line_at == std::string_view::npos) return std::nullopt;
  const auto line = whole_number(log_line.substr(line_at + 6));
  if (!line || *line < 1) return std::nullopt;
  r.log = std::string(log_line.substr(0, line_at));
  if (!printable_log_name(r.log)) return std::nullopt;
  r.line = *line;
  r.rank = first.rank;
  r.stage = first.stage;
  r.iteration = first.iteration;
  r.allocated = first.bytes;
  // The figures that follow with the same source, in the reader's order.
  std::size_t next = at + 1;
  const auto take_figure = [&](MemoryFigure figure, std::int64_t& bytes) {
    if (next < ms.size() && ms[next].figure == figure && ms[next].source == first.source) {
      bytes = ms[next++].bytes;
    }
  };
  r.max_allocated = -1;
  take_figure(MemoryFigure::max_allocated, r.max_allocated);
  if (r.max_allocated < 0) return std::nullopt;
  take_figure(MemoryFigure::reserved, r.reserved);
  take_figure(MemoryFigure::max_reserved, r.max_reserved);
  run.count = next - at;
  // Only what decodes back to exactly these measurements.
  const std::vector<Measurement> rebuilt = log_reading_measurements(r);
  if (rebuilt.size() != run.count) return std::nullopt;
  for (std::size_t i = 0; i < run.count; ++i) {
    if (!(rebuilt[i] == ms[at + i])) return std::nullopt;
  }
  return run;
}

}  // namespace stagemem
