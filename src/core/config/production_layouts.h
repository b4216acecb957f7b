// production_layouts.h — the parallel layouts and optimizers a preset's users actually run.
//
// Purpose: `--production-layout` (CLI), the planner's and the app's starting points: a preset
// model (model/presets.h) with the layout and optimizer of a real run, kept as data.
// Units: counts. Limitations: only presets whose users published a production layout have one.
#pragma once

#include <optional>
#include <string_view>

#include "config/config.h"
#include "parallel/layout.h"

namespace stagemem {

// A parallel layout a preset's users actually run, with the optimizer that run uses (a layout
// without its optimizer misstates the resident state by a factor of ~1.5: Adam keeps two moments,
// Muon one), kept as data so tools can start from both.
struct PresetLayout {
  ParallelLayout layout;
  OptimizerConfig optimizer;
  std::string_view description;
};
std::optional<PresetLayout> preset_production_layout(std::string_view name);

}  // namespace stagemem
