// preset_sources.h — the preset models' Hugging Face config.json texts, embedded at build time.
//
// Purpose: the data behind model/presets.h. Each preset is a file
// src/core/model/presets/<name>.json (the model's published config.json, verbatim);
// cmake/EmbedPresets.cmake turns the files into a generated source that defines
// embedded_preset_sources(), in the order src/core/CMakeLists.txt lists the presets. Adding a
// preset means adding its file and its name there; no C++ changes. Units: none (text). Limitations:
// the texts are read by model/hf_config.h like any user's file.
#pragma once

#include <span>
#include <string_view>

namespace stagemem {

struct PresetSource {
  std::string_view name;    // the stable name links and the CLI use
  std::string_view config;  // the config.json text
};

std::span<const PresetSource> embedded_preset_sources();

}  // namespace stagemem
