#include "config/url_fragment.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "config/config_fields.h"
#include "config/log_reading.h"
#include "config/measurement_text.h"

namespace stagemem {
namespace {

constexpr std::size_t max_fragment_length = 16384;

bool needs_escape(unsigned char c) {
  return c <= 0x20 || c >= 0x7f || c == '"' || c == '<' || c == '>' || c == '`' || c == '#' ||
         c == '%' || c == '&';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 32;
  return std::string(text.substr(0, limit)) + (text.size() > limit ? "..." : "");
}

}  // namespace

std::string percent_encode(std::string_view text) {
  constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (needs_escape(byte)) {
      out += '%';
      out += digits[byte >> 4];
      out += digits[byte & 0xF];
    } else {
      out += c;
    }
  }
  return out;
}

bool percent_decode(std::string_view text, std::string& out) {
  out.clear();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (i + 2 >= text.size()) return false;
    const int high = hex_value(text[i + 1]);
    const int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0) return false;
    out += static_cast<char>(high * 16 + low);
    i += 2;
  }
  return true;
}

std::string encode_fragment(const Config& config) {
  const Config defaults = default_config();
  std::string out = "v=" + std::to_string(url_format_version);
  for (const ConfigField& field : config_fields()) {
    if (!field_is_written(field, config, defaults)) continue;
    out += '&';
    out += field.key;
    out += '=';
    out += percent_encode(format_field_text(field, config));
  }
  // A training log's reading (its figures with one shared source) as one compact reading= key;
  // anything else, one measured= key per measurement. Decoding keeps the order.
  const std::vector<Measurement>& ms = config.measurements;
  for (std::size_t i = 0; i < ms.size();) {
    if (const auto run = log_reading_at(ms, i)) {
      out += "&reading=" + percent_encode(log_reading_text(run->reading));
      i += run->count;
    } else {
      out += "&measured=" + percent_encode(measurement_text(ms[i]));
      ++i;
    }
  }
  for (const GapEntry& g : config.gaps) out += "&gap=" + percent_encode(gap_text(g));
  return out;
}

DecodedFragment decode_fragment(std::string_view text) {
  return decode_fragment(text, default_config());
}

DecodedFragment decode_fragment(std::string_view text, const Config& base) {
  DecodedFragment result{.config = base, .diagnostics = {}};
  std::size_t measurements_seen = 0;
  std::size_t readings_seen = 0;
  bool measurements_replaced = false;  // the first measured= or reading= replaces base's list
  std::size_t gaps_seen = 0;
  Diagnostics& d = result.diagnostics;
  if (const auto hash = text.find('#'); hash != std::string_view::npos)
    text.remove_prefix(hash + 1);
  if (text.size() > max_fragment_length) {
    // Nothing is applied (a cut link would be half a configuration): `base` stays as it was.
    d.error("url", "the fragment is " + std::to_string(text.size()) +
                       " characters long; the limit is " + std::to_string(max_fragment_length) +
                       " (16 KiB), so none of it was applied and the configuration is unchanged");
    return result;
  }
  bool saw_version = false;
  std::string value;
  // Each key once (measured= and gap= repeat by design): a second pp= would silently win.
  std::vector<std::pair<std::string_view, std::string>> seen;
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    if (pair.empty()) continue;
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      d.error("url", "'" + shown(pair) + "' is not a key=value pair");
      continue;
    }
    const std::string_view key = pair.substr(0, eq);
    const std::string reported = "url." + shown(key);
    if (!percent_decode(pair.substr(eq + 1), value)) {
      d.error(reported, "a '%' must be followed by two hexadecimal digits");
      continue;
    }
    if (key != "measured" && key != "gap" && key != "snapshot" && key != "reading" &&
        key != "scaling") {
      const auto earlier = std::find_if(seen.begin(), seen.end(),
                                        [&](const auto& entry) { return entry.first == key; });
      if (earlier != seen.end()) {
        d.error(reported, "the key is given twice, first '" + earlier->second + "', then '" +
                              shown(value) + "'; give each key once");
        continue;
      }
      seen.emplace_back(key, shown(value));
    }
    if (key == "v") {
      saw_version = true;
      if (value != std::to_string(url_format_version)) {
        d.error("url.v", "format version '" + shown(value) +
                             "' is not supported; this build reads " + "version " +
                             std::to_string(url_format_version));
        return result;
      }
      continue;
    }
    if (key == "reading") {
      // A log's reading: its 2 to 4 measurements, in the list where the key stands.
      if (!measurements_replaced) result.config.measurements.clear();
      measurements_replaced = true;
      const std::string item = reported + "[" + std::to_string(readings_seen++) + "]";
      if (const auto reading = parse_log_reading_text(value, d, item)) {
        const std::vector<Measurement> figures = log_reading_measurements(*reading);
        if (result.config.measurements.size() + figures.size() > max_measurements) {
          d.error(item, "at most " + std::to_string(max_measurements) +
                            " measured values are read (readings count their figures)");
        } else {
          result.config.measurements.insert(result.config.measurements.end(), figures.begin(),
                                            figures.end());
        }
      }
    } else if (key == "measured" || key == "gap") {
      // The n-th occurrence of a key is item [n]; the first occurrence replaces base's list.
      const bool measured = key == "measured";
      std::size_t& occurrences = measured ? measurements_seen : gaps_seen;
      if (measured ? !measurements_replaced : occurrences == 0) {
        if (measured)
          result.config.measurements.clear();
        else
          result.config.gaps.clear();
      }
      if (measured) measurements_replaced = true;
      const std::string item = reported + "[" + std::to_string(occurrences) + "]";
      if (++occurrences > max_measurements) {
        if (occurrences == max_measurements + 1) {
          d.error(reported, "at most " + std::to_string(max_measurements) + " are read");
        }
      } else if (measured) {
        if (auto m = parse_measurement_text(value, d, item)) {
          if (result.config.measurements.size() >= max_measurements) {
            d.error(item, "at most " + std::to_string(max_measurements) +
                              " measured values are read (readings count their figures)");
          } else {
            result.config.measurements.push_back(*m);
          }
        }
      } else if (auto g = parse_gap_text(value, d, item)) {
        result.config.gaps.push_back(*g);
      }
    } else if (key == baseline_key) {
      // A comparison's baseline (decode_baseline reads it): not this link's configuration.
    } else if (key == "scaling" || key == "scaling_stage") {
      // Measured peaks at several sizes (scaling_points.h): the scaling cross-check's input,
      // never configuration; decode_scaling_link reads them.
    } else if (key == "snapshot") {
      // An allocator snapshot's summary (snapshot_link.h): measured figures for the front end's
      // comparison, never configuration; decode_snapshot_link reads them.
    } else if (const ConfigField* field = find_field_by_key(key)) {
      parse_field_text(*field, value, result.config, d, reported);
    } else if (!key.starts_with("view.") && !key.starts_with("plan_")) {
      // view.* (the app's open tab and sweep axes) and plan_* (its Plan tab's bounds) are the
      // browser app's own state in a shared link, not configuration: skipped without a word.
      d.warn(reported, "unknown key ignored (a link from a newer stagemem?)");
    }
  }
  check_references(result.config, d, "url.", /*by_path=*/false);
  if (!saw_version && !d.errors.empty()) return result;
  if (!saw_version && result.config != base) {
    d.warn("url.v", "no format version; read as version " + std::to_string(url_format_version));
  }
  return result;
}

std::string encode_baseline(const Config& baseline) {
  return std::string(baseline_key) + "=" + percent_encode(encode_fragment(baseline));
}

namespace {

// The value of the first `key=` pair of a fragment, if any.
std::optional<std::string_view> find_pair(std::string_view fragment, std::string_view key) {
  while (!fragment.empty()) {
    const auto amp = fragment.find('&');
    const std::string_view pair = fragment.substr(0, amp);
    fragment = amp == std::string_view::npos ? std::string_view{} : fragment.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == key) return pair.substr(eq + 1);
  }
  return std::nullopt;
}

}  // namespace

DecodedBaseline decode_baseline(std::string_view link) {
  DecodedBaseline result;
  Diagnostics& d = result.diagnostics;
  if (const auto hash = link.find('#'); hash != std::string_view::npos)
    link.remove_prefix(hash + 1);
  // The link's own decoder bounds its length and refuses a second base= (a key given twice).
  if (link.size() > max_fragment_length) return result;
  const std::optional<std::string_view> value = find_pair(link, baseline_key);
  result.present = value.has_value();
  if (!result.present) return result;
  const std::string field = "url." + std::string(baseline_key);
  std::string fragment;
  if (!percent_decode(*value, fragment)) {
    d.error(field, "a '%' must be followed by two hexadecimal digits");
    return result;
  }
  if (fragment.empty()) {
    d.error(field,
            "empty: expected the baseline's own fragment, percent-encoded (base=v=1%26tp=8...)");
    return result;
  }
  if (fragment.find('#') != std::string::npos) {
    d.error(field, "'" + shown(fragment) +
                       "' holds a '#': expected the baseline's fragment only, not a whole link");
    return result;
  }
  DecodedFragment decoded = decode_fragment(fragment);
  // The baseline's own fields, named inside it: "url.tp" becomes "url.base.tp".
  const auto renamed = [&](std::string name) {
    return name.starts_with("url") ? field + name.substr(3) : field + "." + name;
  };
  for (auto& e : decoded.diagnostics.errors) d.error(renamed(e.field), e.message);
  for (auto& w : decoded.diagnostics.warnings) d.warn(renamed(w.field), w.message);
  if (find_pair(fragment, baseline_key)) {
    d.error(field + "." + std::string(baseline_key),
            "a baseline has no baseline of its own; give one base= key");
  }
  if (!d.ok()) return result;
  result.config = std::move(decoded.config);
  return result;
}

}  // namespace stagemem
