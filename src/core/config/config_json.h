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
//
// The model: "model": "kimi-k3" (a preset name), or "custom_model": "<model text>" (model_text.h's
// one-line form; overrides the preset), or "hf_config": {...} (a Hugging Face config.json inline,
// read by import_hf_config and stored as custom_model; errors are named "json.hf_config.<key>").
// Export writes the preset name and custom_model, never hf_config.
// Measured values (never inputs of the model; compared in cross-checks):
//   "measurements": [{"point": "after-first-step", "stage": 0, "bytes": 151502187725,
//                     "source": "torch.cuda.memory_allocated, run 17"},
//                    {"point": "term", "term": "weights (bf16)", "stage": 1, "bytes": "7.1GB",
//                     "source": "..."}],
//   "gaps": [{"kind": "runtime-context", "stage": -1, "bytes": 536870912, "source": "..."}]
// "bytes" is an integer, or on import also an amount text ("141.1GiB"; measurement_text.h).
// A stage may be omitted (measurement 0, gap -1: every stage); the other keys are required.
// Import also checks what fields refer to: the preset and device names exist and a custom model
// text parses ("json.model", "json.custom_model.<item>", "json.device.preset").
// Bounds (json_reader.h): at most 1 MiB of JSON text and 32 levels of nesting are read (the error
// names the path and the limit); a key given twice in one object is an error naming both values;
// a section of the table ("parallel", "training.recompute") that is not an object is an error.
// Limitations: an unknown key is one warning, whatever it holds (its contents are not read).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "config/config_fields.h"

namespace stagemem {

inline constexpr int config_json_version = 1;
// The most JSON text config_from_json reads (1 MiB); front ends read files up to it.
inline constexpr std::size_t max_config_json_bytes = std::size_t{1} << 20;

std::string config_to_json(const Config& config);  // pretty-printed, 2-space indent
DecodedConfig config_from_json(std::string_view text);
// The same over `base` instead of the defaults: the fields a document holds replace base's (the
// CLI applies sources left to right); "measurements" and "gaps" replace whole lists.
DecodedConfig config_from_json(std::string_view text, const Config& base);

}  // namespace stagemem
