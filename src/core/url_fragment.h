// url_fragment.h — the configuration as a URL fragment that a wiki link can carry.
//
// Purpose: `v=1&model=llama-3.1-8b&pp=8&tp=2`: a format version, then human-readable keys, only
// the fields that differ from the defaults (config.h). Decoding never trusts its input: every bad
// field is reported by name with its allowed range, unknown keys are warnings (forward
// compatibility), and nothing is clamped silently.
// Limitations: format version 1 carries model, tp, pp, ep, etp.
#pragma once

#include <string>
#include <string_view>

#include "config.h"
#include "diagnostics.h"

namespace stagemem {

inline constexpr int url_format_version = 1;

std::string encode_fragment(const Config& config);  // without the leading '#'

struct DecodedFragment {
  Config config;  // defaults where a field was absent or bad
  Diagnostics diagnostics;
};
// Accepts the fragment with or without a leading '#', or a whole link (everything up to and
// including the first '#' is skipped).
DecodedFragment decode_fragment(std::string_view text);

}  // namespace stagemem
