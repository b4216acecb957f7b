// config_json.h — the whole configuration as a JSON document, for files, CI and "Download JSON".
//
// Purpose: a documented, stable JSON form of Config. Its shape follows the JSON paths of
// config_fields.h: {"format": "stagemem-config", "version": 1, "model": "...",
// "parallel": {"tensor_parallel": 2, ...}, ...}. Export writes every field (a file is read by
// people; it should not depend on knowing the defaults); import accepts any subset, takes the
// defaults for the rest, names each bad field by its JSON path ("json.parallel.tensor_parallel")
// with the allowed values, and warns about unknown keys (forward compatibility).
// Types are strict: an integer field takes a JSON integer (not 4.0, not "4"), a boolean a JSON
// boolean, a list a JSON array of integers.
// Limitations: at most 1 MiB of JSON text is read; nesting deeper than the paths is an error.
#pragma once

#include <string>
#include <string_view>

#include "config_fields.h"

namespace stagemem {

inline constexpr int config_json_version = 1;

std::string config_to_json(const Config& config);  // pretty-printed, 2-space indent
DecodedConfig config_from_json(std::string_view text);

}  // namespace stagemem
