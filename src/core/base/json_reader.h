// json_reader.h — parses untrusted JSON text into a document, within bounds.
//
// Purpose: every JSON decoder of the core (stagemem configuration files, Hugging Face
// config.json) reads its text through here, so the same limits hold everywhere:
//   - size: at most `max_bytes` bytes are read;
//   - depth: at most `max_depth` nested objects and arrays; the parse stops at the first
//     container deeper than that, so a 10,000-deep document costs nothing and the code that
//     walks the document (recursively) never sees more than `max_depth` levels;
//   - duplicate keys: an object that names a key twice is an error naming the key's path and
//     both values (nlohmann::json would silently keep the last one).
// Errors name `field` followed by the JSON path, e.g. "json.parallel.tensor_parallel" or
// "hf.text_config.rope_scaling[2]". Parsing never throws.
// Limitations: the path in a message shows at most 32 characters of each key.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/diagnostics.h"

namespace stagemem {

struct JsonLimits {
  std::size_t max_bytes = 1 << 20;
  int max_depth = 32;  // the root object is depth 1
};

// The document, or nullopt with at least one error in `diagnostics`.
std::optional<nlohmann::json> parse_json_bounded(std::string_view text, const JsonLimits& limits,
                                                 std::string_view field, Diagnostics& diagnostics);

}  // namespace stagemem
