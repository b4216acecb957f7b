// presets.h — built-in models, addressable by a stable name (used in links and on the CLI).
//
// Purpose: the models our users plan with, shaped exactly as their official configs describe.
// Each preset is the model's Hugging Face config.json, embedded verbatim and read through
// import_hf_config, so a preset and the same file given on the command line agree to the unit.
// Names are the lowercase file stems of shared/reference/hf-configs.
// Limitations: a preset name, once published in a link, must never change meaning. Shapes the
// config does not fix (Kimi K3's MLA output gate, latent-MoE projections, AttnRes parameters) are
// assumptions documented in presets.cpp and model.h.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "model/model.h"

namespace stagemem {

std::vector<std::string_view> preset_names();
std::optional<Model> find_preset(std::string_view name);
// The embedded config.json text of a preset.
std::optional<std::string_view> preset_hf_config(std::string_view name);

}  // namespace stagemem
