// scaling_check.h — the scaling cross-check of the configuration on screen (ScalingState,
// state.h): its points from a link's scaling= keys (link.cpp) or typed in the Cross-checks tab
// (the reducer's SetScalingPoints), the check rebuilt by the frame's refresh when the points or
// the report change, and its JSON for the page. Every number and word comes from the core:
// estimate/scaling.h and render/scaling_text.h (the cells `stagemem scaling` prints).
#pragma once

#include <string>
#include <string_view>

#include "state.h"

// A link's scaling= and scaling_stage= keys (config/scaling_points.h) become the points (none:
// the points are cleared); problems go to state.link_problems. True when the link has points.
bool apply_scaling_link(AppState& state, std::string_view link);
// The points as typed (one AXIS=VALUE:PEAK[@SOURCE] per line; blank lines skipped) and the stage
// ("" for the binding stage at the most tokens). Text that does not parse leaves the points as
// they were and sets state.scaling.input_error; empty text clears them.
void set_scaling_points(AppState& state, std::string_view text, std::string_view stage);
// Rebuilds the check and its texts when the points or the report on screen changed.
void refresh_scaling(AppState& state);
// The check as `stagemem scaling --json` writes it (render/scaling_text.h scaling_json) with the
// link of the page; "" without points, or when the check has errors.
std::string scaling_json_text(const AppState& state);
