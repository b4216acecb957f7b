#include "config/scaling_points.h"

#include "config/config.h"
#include "config/measurement_text.h"
#include "config/url_fragment.h"

namespace stagemem {
namespace {

constexpr std::string_view form =
    "AXIS=VALUE:AMOUNT[@SOURCE] (AXIS seq or mbs, e.g. "
    "seq=8192:70.4GiB@max_memory_allocated, run 17)";
// A link is read up to this length (url_fragment.h's bound).
constexpr std::size_t max_link_length = 16384;

std::string shown(std::string_view text) {
  constexpr std::size_t limit = 40;
  return "'" + std::string(text.substr(0, limit)) + (text.size() > limit ? "...'" : "'");
}

// A whole number in [1, limit] filling `text` (digits only).
std::optional<std::int64_t> whole_number(std::string_view text, std::int64_t limit) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > limit) return std::nullopt;
  return value;
}

}  // namespace

std::string_view scaling_point_form() {
  return form;
}

std::optional<ScalingPointHead> parse_scaling_point_head(std::string_view text,
                                                         Diagnostics& diagnostics,
                                                         const std::string& field,
                                                         std::string_view* rest) {
  const auto eq = text.find('=');
  const auto colon = eq == std::string_view::npos ? eq : text.find(':', eq + 1);
  if (colon == std::string_view::npos) {
    diagnostics.error(field, shown(text) + " is not a point: expected " + std::string(form));
    return std::nullopt;
  }
  const std::string_view axis_text = text.substr(0, eq);
  const std::optional<ScalingAxis> axis = parse_enum<ScalingAxis>(axis_text);
  if (!axis) {
    diagnostics.error(field + ".axis", shown(axis_text) +
                                           " is not a field a point varies: expected seq "
                                           "(sequence length) or mbs (micro-batch size)");
    return std::nullopt;
  }
  const std::string_view value_text = text.substr(eq + 1, colon - eq - 1);
  const std::optional<std::int64_t> value = whole_number(value_text, max_scaling_value);
  if (!value) {
    diagnostics.error(field + ".value", shown(value_text) + " is not a whole number in [1, " +
                                            std::to_string(max_scaling_value) + "]");
    return std::nullopt;
  }
  if (rest != nullptr) *rest = text.substr(colon + 1);
  return ScalingPointHead{.axis = *axis, .value = *value};
}

std::optional<ScalingPoint> parse_scaling_point_text(std::string_view text,
                                                     Diagnostics& diagnostics,
                                                     const std::string& field) {
  std::string_view rest;
  const std::optional<ScalingPointHead> head =
      parse_scaling_point_head(text, diagnostics, field, &rest);
  if (!head) return std::nullopt;
  const auto at = rest.find('@');
  const std::string_view amount_text = rest.substr(0, at);
  const std::optional<std::int64_t> bytes = parse_byte_amount(amount_text);
  if (!bytes || *bytes <= 0) {
    diagnostics.error(field + ".bytes", shown(amount_text) +
                                            " is not a measured peak above 0 bytes: expected " +
                                            allowed_amounts());
    return std::nullopt;
  }
  ScalingPoint point{.axis = head->axis, .value = head->value, .measured_bytes = *bytes};
  if (at != std::string_view::npos) {
    const std::string_view source = rest.substr(at + 1);
    if (source.empty() || source.size() > max_source_length || !is_clean_text(source)) {
      diagnostics.error(field + ".source", "expected 1.." + std::to_string(max_source_length) +
                                               " characters of UTF-8 text without control "
                                               "characters after '@'");
      return std::nullopt;
    }
    point.source = std::string(source);
  }
  return point;
}

std::string scaling_point_text(const ScalingPoint& point) {
  std::string out = std::string(enum_name(point.axis)) + "=" + std::to_string(point.value) + ":" +
                    byte_amount_text(point.measured_bytes);
  if (!point.source.empty()) out += "@" + point.source;
  return out;
}

std::string scaling_fragment(const ScalingPoints& scaling) {
  if (scaling.points.empty()) return {};
  std::string out;
  for (const ScalingPoint& point : scaling.points)
    out += "&scaling=" + percent_encode(scaling_point_text(point));
  if (scaling.stage >= 0) out += "&scaling_stage=" + std::to_string(scaling.stage);
  return out;
}

DecodedScalingLink decode_scaling_link(std::string_view link) {
  DecodedScalingLink result;
  Diagnostics& d = result.diagnostics;
  if (const auto hash = link.find('#'); hash != std::string_view::npos)
    link.remove_prefix(hash + 1);
  // decode_fragment refuses a longer link whole and names it.
  if (link.size() > max_link_length) return result;
  ScalingPoints scaling;
  bool stage_seen = false;
  std::size_t seen = 0;
  std::string value;
  while (!link.empty()) {
    const auto amp = link.find('&');
    const std::string_view pair = link.substr(0, amp);
    link = amp == std::string_view::npos ? std::string_view{} : link.substr(amp + 1);
    const auto eq = pair.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view key = pair.substr(0, eq);
    if (key != "scaling" && key != "scaling_stage") continue;
    const bool is_point = key == "scaling";
    const std::string field =
        is_point ? "url.scaling[" + std::to_string(seen++) + "]" : "url.scaling_stage";
    if (!percent_decode(pair.substr(eq + 1), value)) {
      d.error(field, "a '%' must be followed by two hexadecimal digits");
      continue;
    }
    if (!is_point) {
      // decode_fragment refuses a second scaling_stage= (a key given twice).
      if (stage_seen) continue;
      stage_seen = true;
      const std::optional<std::int64_t> stage = value == "0" ? 0 : whole_number(value, 1 << 20);
      if (!stage) {
        d.error(field, shown(value) + " is not a pipeline stage (a whole number from 0)");
      } else {
        scaling.stage = *stage;
      }
      continue;
    }
    if (seen > max_scaling_points) {
      if (seen == max_scaling_points + 1) {
        d.error("url.scaling", "at most " + std::to_string(max_scaling_points) + " are read");
      }
      continue;
    }
    if (auto point = parse_scaling_point_text(value, d, field))
      scaling.points.push_back(std::move(*point));
  }
  if (seen == 0) {
    if (stage_seen) d.warn("url.scaling_stage", "ignored: the link has no scaling= point");
    return result;
  }
  if (d.ok()) result.scaling = std::move(scaling);
  return result;
}

}  // namespace stagemem
