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
// Bounds: a key other than measured=, reading=, gap= and snapshot= given twice is an error naming
// both values; a fragment over 16 KiB is refused whole (its length and the limit named; `base` is
// returned unchanged, so a front end keeps the configuration the user had). Limitations: at most 16
// KiB of fragment is read; at most 64 measured values and 64 gaps.
#pragma once

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

std::string percent_encode(std::string_view text);
// False when a '%' is not followed by two hex digits.
bool percent_decode(std::string_view text, std::string& out);

}  // namespace stagemem
