#include "config/measurement_text.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace stagemem {
namespace {

struct Unit {
  std::string_view name;
  double scale;
};
// Longest names first would not matter: a unit must match the whole rest of the text.
constexpr std::array<Unit, 9> units = {{{"B", 1.0},
                                        {"KiB", 1024.0},
                                        {"MiB", 1024.0 * 1024.0},
                                        {"GiB", 1024.0 * 1024.0 * 1024.0},
                                        {"TiB", 1024.0 * 1024.0 * 1024.0 * 1024.0},
                                        {"KB", 1e3},
                                        {"MB", 1e6},
                                        {"GB", 1e9},
                                        {"TB", 1e12}}};

// A stage is at most the largest pipeline size the field table allows, minus one.
constexpr std::int64_t max_stage = 1023;
constexpr std::size_t max_number_length = 32;

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 40;
  return "'" + std::string(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

// The parts of POINT[/STAGE]=AMOUNT@SOURCE; false when the separators are missing.
struct Parts {
  std::string_view head;  // POINT or KIND
  std::optional<std::int64_t> stage;
  std::int64_t bytes = 0;
  std::string source;
};

bool split_parts(std::string_view text, std::string_view form, Parts& out, Diagnostics& d,
                 const std::string& field) {
  const auto eq = text.find('=');
  const auto at = eq == std::string_view::npos ? std::string_view::npos : text.find('@', eq);
  if (at == std::string_view::npos) {
    d.error(field, shown(text) + " is not of the form " + std::string(form));
    return false;
  }
  std::string_view head = text.substr(0, eq);
  if (const auto slash = head.rfind('/'); slash != std::string_view::npos) {
    const std::string_view digits = head.substr(slash + 1);
    bool all_digits = !digits.empty();
    for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
    if (all_digits) {
      // At most 4 digits are needed for [0, 1023]; more is out of range, not an overflow.
      std::int64_t stage = digits.size() > 6 ? max_stage + 1 : 0;
      if (digits.size() <= 6) {
        for (char c : digits) stage = stage * 10 + (c - '0');
      }
      if (stage > max_stage) {
        d.error(field + ".stage", shown(digits) + " is out of range: expected an integer in [0, " +
                                      std::to_string(max_stage) + "]");
        return false;
      }
      out.stage = stage;
      head = head.substr(0, slash);
    }
  }
  out.head = head;
  const std::string_view amount = text.substr(eq + 1, at - eq - 1);
  const auto bytes = parse_byte_amount(amount);
  if (!bytes) {
    d.error(field + ".bytes", shown(amount) + " is not an amount: expected " + allowed_amounts());
    return false;
  }
  out.bytes = *bytes;
  const std::string_view source = text.substr(at + 1);
  if (source.empty() || source.size() > max_source_length || !is_clean_text(source)) {
    d.error(field + ".source", "a measured value needs its source: text of 1 to " +
                                   std::to_string(max_source_length) +
                                   " characters without control characters");
    return false;
  }
  out.source = std::string(source);
  return true;
}

// The first `count` names, comma-separated.
std::string names_of(std::span<const std::string_view> names, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count && i < names.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::string(names[i]);
  }
  return out;
}

}  // namespace

bool is_clean_text(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7f) return false;
    if (byte < 0x80) {
      ++i;
      continue;
    }
    // Multi-byte UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF, no C1 controls.
    std::size_t length = 0;
    std::uint32_t code = 0;
    if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
      code = byte & 0x1Fu;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      code = byte & 0x0Fu;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      code = byte & 0x07u;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if ((next & 0xC0u) != 0x80u) return false;
      code = (code << 6) | (next & 0x3Fu);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF) || (code >= 0x80 && code < 0xA0)) {
      return false;
    }
    i += length;
  }
  return true;
}

std::string allowed_amounts() {
  return "a number of bytes in [0, 2^50], optionally with a unit B, KiB, MiB, GiB, TiB, KB, MB, "
         "GB or TB (e.g. 141.1GiB)";
}

std::optional<std::int64_t> parse_byte_amount(std::string_view text) {
  std::size_t length = 0;
  bool digit_seen = false;
  bool point_seen = false;
  while (length < text.size()) {
    const char c = text[length];
    if (c >= '0' && c <= '9') {
      digit_seen = true;
    } else if (c == '.' && !point_seen) {
      point_seen = true;
    } else {
      break;
    }
    ++length;
  }
  if (!digit_seen || length > max_number_length) return std::nullopt;
  std::string_view unit = text.substr(length);
  if (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  double scale = 0.0;
  if (unit.empty()) scale = 1.0;
  for (const Unit& u : units) {
    if (u.name == unit) scale = u.scale;
  }
  if (scale == 0.0) return std::nullopt;
  // strtod, not from_chars: the wasm32 libc++ has no floating-point from_chars.
  const std::string number(text.substr(0, length));
  const double value = std::strtod(number.c_str(), nullptr) * scale;
  if (!(value >= 0.0) || value > static_cast<double>(max_config_bytes)) return std::nullopt;
  return static_cast<std::int64_t>(std::llround(value));
}

std::string byte_amount_text(std::int64_t bytes) {
  std::string best = std::to_string(bytes);
  if (bytes <= 0 || bytes > max_config_bytes) return best;
  for (const Unit& u : units) {
    if (u.scale <= 1.0 || static_cast<double>(bytes) < u.scale) continue;
    const double value = static_cast<double>(bytes) / u.scale;
    char buffer[64];
    for (int decimals = 0; decimals <= 12; ++decimals) {
      std::snprintf(buffer, sizeof buffer, "%.*f%s", decimals, value, std::string(u.name).c_str());
      if (parse_byte_amount(buffer) == bytes) {
        if (std::string_view(buffer).size() < best.size()) best = buffer;
        break;
      }
    }
  }
  return best;
}

std::optional<Measurement> parse_measurement_text(std::string_view text, Diagnostics& d,
                                                  const std::string& field) {
  // A reading from a log carries the figure it is and the rank that printed it:
  // FIGURE:POINT/STAGE/rRANK (never with term:NAME, whose name may hold '/' and ':').
  std::string rewritten;
  std::int64_t rank = -1;
  std::int64_t iteration = -1;
  MemoryFigure figure = MemoryFigure::unspecified;
  if (const auto eq = text.find('='); eq != std::string_view::npos && !text.starts_with("term:")) {
    std::string_view head = text.substr(0, eq);
    if (const auto colon = head.find(':'); colon != std::string_view::npos) {
      const auto parsed = parse_memory_figure(head.substr(0, colon));
      if (!parsed || *parsed == MemoryFigure::unspecified) {
        d.error(field + ".figure",
                shown(head.substr(0, colon)) +
                    " is not a memory figure: expected allocated, max-allocated, reserved or "
                    "max-reserved");
        return std::nullopt;
      }
      figure = *parsed;
      head.remove_prefix(colon + 1);
    }
    // FIGURE:POINT/STAGE/rRANK/iN: the iteration a log's reading was printed after.
    if (const auto slash = head.rfind('/');
        slash != std::string_view::npos && head.substr(slash + 1).starts_with('i')) {
      const std::string_view digits = head.substr(slash + 2);
      bool all_digits = !digits.empty() && digits.size() <= 13;
      std::int64_t value = 0;
      for (char c : digits) {
        all_digits = all_digits && c >= '0' && c <= '9';
        if (all_digits) value = value * 10 + (c - '0');
      }
      if (!all_digits || value > max_iteration) {
        d.error(field + ".iteration",
                shown(head.substr(slash + 1)) +
                    " is not an iteration: expected i followed by an integer in [0, " +
                    std::to_string(max_iteration) + "]");
        return std::nullopt;
      }
      iteration = value;
      head = head.substr(0, slash);
    }
    if (const auto slash = head.rfind('/');
        slash != std::string_view::npos && head.substr(slash + 1).starts_with('r')) {
      const std::string_view digits = head.substr(slash + 2);
      bool all_digits = !digits.empty() && digits.size() <= 7;
      std::int64_t value = 0;
      for (char c : digits) {
        all_digits = all_digits && c >= '0' && c <= '9';
        if (all_digits) value = value * 10 + (c - '0');
      }
      if (!all_digits || value > max_rank) {
        d.error(field + ".rank", shown(head.substr(slash + 1)) +
                                     " is not a rank: expected r followed by an integer in [0, " +
                                     std::to_string(max_rank) + "]");
        return std::nullopt;
      }
      rank = value;
      head = head.substr(0, slash);
    }
    rewritten = std::string(head) + std::string(text.substr(eq));
    text = rewritten;
  }
  Parts parts;
  if (!split_parts(text, "[FIGURE:]POINT[/STAGE][/rRANK][/iN]=AMOUNT@SOURCE", parts, d, field))
    return std::nullopt;
  Measurement m{.stage = parts.stage.value_or(0),
                .bytes = parts.bytes,
                .source = parts.source,
                .rank = rank,
                .figure = figure,
                .iteration = iteration};
  if (parts.head.starts_with("term:")) {
    if (rank != -1 || figure != MemoryFigure::unspecified || iteration != -1) {
      d.error(field + ".figure", "a term:NAME reading takes no FIGURE: prefix, /rRANK or /iN");
      return std::nullopt;
    }
    const std::string_view name = parts.head.substr(5);
    if (name.empty() || name.size() > max_term_name_length || !is_clean_text(name) ||
        name.find('@') != std::string_view::npos) {
      d.error(field + ".term", "a term name is text of 1 to " +
                                   std::to_string(max_term_name_length) +
                                   " characters without '=', '@' or control characters");
      return std::nullopt;
    }
    m.point = MeasurementPoint::term;
    m.term = std::string(name);
    return m;
  }
  const auto point = parse_measurement_point(parts.head);
  if (!point || *point == MeasurementPoint::term) {
    d.error(field + ".point",
            shown(parts.head) + " is not a measurement point: expected one of: " +
                names_of(enum_names<MeasurementPoint>, enum_count<MeasurementPoint> - 1) +
                ", term:NAME");
    return std::nullopt;
  }
  m.point = *point;
  return m;
}

std::optional<GapEntry> parse_gap_text(std::string_view text, Diagnostics& d,
                                       const std::string& field) {
  Parts parts;
  if (!split_parts(text, "KIND[/STAGE]=AMOUNT@SOURCE", parts, d, field)) return std::nullopt;
  const auto kind = parse_gap_kind(parts.head);
  if (!kind) {
    d.error(field + ".kind", shown(parts.head) + " is not a gap kind: expected one of: " +
                                 names_of(enum_names<GapKind>, enum_count<GapKind>));
    return std::nullopt;
  }
  return GapEntry{.kind = *kind,
                  .stage = parts.stage.value_or(-1),
                  .bytes = parts.bytes,
                  .source = parts.source};
}

std::string measurement_text(const Measurement& m) {
  const std::string point = m.point == MeasurementPoint::term
                                ? "term:" + m.term
                                : std::string(measurement_point_name(m.point));
  const std::string figure = m.figure == MemoryFigure::unspecified
                                 ? std::string()
                                 : std::string(memory_figure_name(m.figure)) + ":";
  const std::string rank = m.rank >= 0 ? "/r" + std::to_string(m.rank) : std::string();
  const std::string iteration = m.iteration >= 0 && m.point != MeasurementPoint::term
                                    ? "/i" + std::to_string(m.iteration)
                                    : std::string();
  return figure + point + "/" + std::to_string(m.stage) + rank + iteration + "=" +
         byte_amount_text(m.bytes) + "@" + m.source;
}

std::string gap_text(const GapEntry& g) {
  return std::string(gap_kind_name(g.kind)) + (g.stage >= 0 ? "/" + std::to_string(g.stage) : "") +
         "=" + byte_amount_text(g.bytes) + "@" + g.source;
}

}  // namespace stagemem
