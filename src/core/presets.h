// presets.h — built-in models, addressable by a stable name (used in links and on the CLI).
//
// Purpose: the models our users plan with, shaped exactly as their official configs describe.
// Limitations: a preset name, once published in a link, must never change meaning.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "model.h"

namespace stagemem {

std::vector<std::string_view> preset_names();
std::optional<Model> find_preset(std::string_view name);

}  // namespace stagemem
