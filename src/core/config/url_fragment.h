// url_fragment.h — the configuration as a URL fragment that a wiki link can carry.
//
// Purpose: `v=1&model=deepseek-v3&tp=2&pp=16`: a format version, then the short, human-readable
// keys of config_fields.h, only for fields that differ from the defaults (config.h), in table
// order. Decoding never trusts its input: every bad field is reported by name ("url.<key>") with
// its allowed values, unknown keys are warnings (forward compatibility: a newer link opened by an
// older build), and nothing is clamped silently.
//
// The model: `model=NAME` (a preset) or `custom=TEXT` (a whole model in model_text.h's one-line
// form, which overrides the preset). Measured values follow the table's fields as repeated keys
// in measurement_text.h's form, e.g.
//   &measured=after-first-step/0=141.1GiB@torch.cuda.memory_allocated%20run%2017
//   &gap=runtime-context=512MiB@nvidia-smi
// A training log's reading (log_reading.h: 2 to 4 figures of one rank sharing one source) is
// written as one compact key, e.g. &reading=r6/s1/i2/l9/c0.0.1.0=53199.09MiB,84019.37MiB@train.log;
// links written before it carry one measured= key per figure and decode exactly as before.
// Decoding also checks what the fields refer to: the preset and device names exist and a custom
// model text parses (errors "url.model", "url.custom.<item>", "url.device").
//
// Escaping: values are percent-encoded only where a fragment needs it (space, '"', '<', '>', '`',
// '#', '%', '&', control and non-ASCII bytes); everything else, '|' '*' '(' ')' ',' '=' '@' ':'
// '/' included, stays readable. ('=' inside a value is safe: a pair splits at its first '='.
// Links written before this rule escaped '=' as %3D; they decode the same.)
//
// Compatibility: every link of every published format version must keep decoding to the same
// configuration; tests/links/v1.txt is the corpus of version-1 links the tests hold us to.
// An allocator snapshot's summary rides along as repeated snapshot= keys (snapshot_link.h): this
// decoder skips them (they are not configuration).
// A scaling cross-check's measured points ride along as repeated scaling= keys and one
// scaling_stage= key (scaling_points.h): this decoder skips them too.
// A comparison's baseline rides along as one `base=` key (below): decode_fragment skips it (the
// configuration of the link is the compared one, B), decode_baseline reads it.
// Bounds: a key other than measured=, reading=, gap=, snapshot= and scaling= given twice is an
// error naming both values; a fragment over 16 KiB is refused whole (its length and the limit
// named; `base` is returned unchanged, so a front end keeps the configuration the user had).
// Limitations: at most 16 KiB of fragment is read; at most 64 measured values and 64 gaps.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "config/config_fields.h"

namespace stagemem {

inline constexpr int url_format_version = 1;

std::string encode_fragment(const Config& config);  // without the leading '#'

using DecodedFragment = DecodedConfig;  // the decoded fields over the defaults
// Accepts the fragment with or without a leading '#', or a whole link (everything up to and
// including the first '#' is skipped).
DecodedFragment decode_fragment(std::string_view text);
// The same over `base` instead of the defaults (the CLI applies sources left to right); a link
// that holds `measured=` or `gap=` keys replaces base's list.
DecodedFragment decode_fragment(std::string_view text, const Config& base);

// ---- A comparison's baseline in the link --------------------------------------------------
// `base=` followed by the baseline's own fragment (encode_fragment: "v=1&tp=8&..."),
// percent-encoded as a value, so its '&' read %26 and '%' %25 ('=' stays: a pair splits at its
// first '='). Example: the app's default page pinned as the baseline, then TP 8 -> 4:
//   v=1&model=llama-3.1-70b&tp=4&...&base=v=1%26model=llama-3.1-70b%26tp=8%26...
// The link's own configuration is the one compared (B); the baseline is A (differences B - A).
// A whole fragment rather than only the fields that differ: a baseline reads on its own (paste
// the decoded value as a link) and no field needs a "back to the default" spelling.
// Limitations: the 16 KiB bound holds for the whole link, so a custom model compared with
// another custom model may not fit; a baseline carries configuration only (no view, snapshot or
// plan keys; a nested base= is an error).
inline constexpr std::string_view baseline_key = "base";

// "base=v=1%26tp=8..." (no leading '&').
std::string encode_baseline(const Config& baseline);

struct DecodedBaseline {
  bool present = false;          // the link has a base= key
  std::optional<Config> config;  // the baseline; none when absent or when it has errors
  Diagnostics diagnostics;       // errors and warnings named "url.base" or "url.base.<key>"
};
// Reads the base= key of a link (whole, or its fragment). A baseline with any error is not
// returned (a half-read baseline would compare against something nobody pinned); its errors name
// the field inside it ("url.base.tp: ...").
DecodedBaseline decode_baseline(std::string_view link);

std::string percent_encode(std::string_view text);
// False when a '%' is not followed by two hex digits.
bool percent_decode(std::string_view text, std::string& out);

}  // namespace stagemem
