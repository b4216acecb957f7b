// scaling_points.h — measured peaks at several sequence lengths or micro-batch sizes of one
// configuration, as short text for the CLI (`stagemem scaling --point`) and links (`scaling=`).
//
// Purpose: the users split a constant from what grows with tokens by measuring one configuration
// at two or more sizes; estimate/scaling.h fits those points and sets the fit next to the derived
// constant and slope. A point is the field it varies, that field's value and the measured peak:
//
//   point:   AXIS=VALUE:AMOUNT[@SOURCE]
//            AXIS: seq (training.sequence_length) | mbs (training.micro_batch)
//            VALUE: the field's value at this point, a whole number >= 1
//            AMOUNT: measurement_text.h's amount (61.2GiB, 65712999219, 70 GB)
//            SOURCE: who measured it and how (optional; 1..200 characters of clean text)
//            e.g. seq=8192:70.4GiB@max_memory_allocated, run 17
//
// In a link each point is one repeated `scaling=` key, in the order given, and the stage the
// points were measured on, when chosen, one `scaling_stage=N` key:
//   #v=1&pp=4&scaling=seq=4096:61.2GiB&scaling=seq=8192:70.4GiB&scaling_stage=0
// These keys are not configuration: decode_fragment skips them, decode_scaling_link reads them.
// The text splits at the first '=', then the first ':' after it, then the first '@': SOURCE may
// hold any clean text (':' '=' '@' included).
// Units: bytes (int64), at most max_config_bytes (2^50); VALUE at most 2^24.
// Limitations: at most max_scaling_points points; one axis per set of points (estimate/scaling.h
// refuses a mix).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "base/enum_names.h"

namespace stagemem {

// The configuration field a set of points varies.
enum class ScalingAxis : std::uint8_t { sequence_length, micro_batch };
template <>
struct EnumNames<ScalingAxis> {
  static constexpr std::array<std::string_view, 2> names = {"seq", "mbs"};
};
static_assert(names_end_at<ScalingAxis::micro_batch>());

inline constexpr std::size_t max_scaling_points = 16;
inline constexpr std::int64_t max_scaling_value = std::int64_t{1} << 24;

struct ScalingPoint {
  ScalingAxis axis = ScalingAxis::sequence_length;
  std::int64_t value = 0;           // the field's value at this point
  std::int64_t measured_bytes = 0;  // the measured peak of the stage, per rank
  std::string source{};             // "" when not given
  friend bool operator==(const ScalingPoint&, const ScalingPoint&) = default;
};

// The points and the stage they were measured on (-1: not chosen; estimate/scaling.h then takes
// the stage that binds at the point with the most tokens).
struct ScalingPoints {
  std::vector<ScalingPoint> points{};
  std::int64_t stage = -1;
  friend bool operator==(const ScalingPoints&, const ScalingPoints&) = default;
};

// "seq=4096" as a point's head: the axis and the value, before the ':'.
struct ScalingPointHead {
  ScalingAxis axis = ScalingAxis::sequence_length;
  std::int64_t value = 0;
};
// The head of `text` (up to its first ':' after the '='); errors name `field` with the form.
// `rest` receives the text after that ':' (the amount and source, or what the CLI reads as a file).
std::optional<ScalingPointHead> parse_scaling_point_head(std::string_view text,
                                                         Diagnostics& diagnostics,
                                                         const std::string& field,
                                                         std::string_view* rest = nullptr);
// A whole point; errors name `field` (e.g. "--point", "url.scaling[1]") and the part that is
// wrong. parse_scaling_point_text(scaling_point_text(p)) == p for every point it accepts.
std::optional<ScalingPoint> parse_scaling_point_text(std::string_view text,
                                                     Diagnostics& diagnostics,
                                                     const std::string& field);
std::string scaling_point_text(const ScalingPoint& point);
// What a point looks like, for error messages.
std::string_view scaling_point_form();

// "&scaling=...&scaling=...&scaling_stage=N" (values percent-encoded as every value of a
// fragment); "" when there are no points.
std::string scaling_fragment(const ScalingPoints& scaling);

struct DecodedScalingLink {
  std::optional<ScalingPoints> scaling;  // none: the link has no scaling= key, or it has errors
  Diagnostics diagnostics;               // errors name "url.scaling[i]" or "url.scaling_stage"
};
// Reads the scaling= and scaling_stage= keys of a link (whole, or its fragment).
DecodedScalingLink decode_scaling_link(std::string_view link);

}  // namespace stagemem
