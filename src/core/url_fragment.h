// url_fragment.h — the configuration as a URL fragment that a wiki link can carry.
//
// Purpose: `v=1&model=deepseek-v3&tp=2&pp=16`: a format version, then the short, human-readable
// keys of config_fields.h, only for fields that differ from the defaults (config.h), in table
// order. Decoding never trusts its input: every bad field is reported by name ("url.<key>") with
// its allowed values, unknown keys are warnings (forward compatibility: a newer link opened by an
// older build), and nothing is clamped silently.
//
// Escaping: values are percent-encoded only where a fragment needs it (space, '"', '<', '>', '`',
// '#', '%', '&', '=', control and non-ASCII bytes); everything else, '|' '*' '(' ')' ',' included,
// stays readable.
// Limitations: at most 16 KiB of fragment is read.
#pragma once

#include <string>
#include <string_view>

#include "config_fields.h"

namespace stagemem {

inline constexpr int url_format_version = 1;

std::string encode_fragment(const Config& config);  // without the leading '#'

using DecodedFragment = DecodedConfig;  // the decoded fields over the defaults
// Accepts the fragment with or without a leading '#', or a whole link (everything up to and
// including the first '#' is skipped).
DecodedFragment decode_fragment(std::string_view text);

std::string percent_encode(std::string_view text);
// False when a '%' is not followed by two hex digits.
bool percent_decode(std::string_view text, std::string& out);

}  // namespace stagemem
