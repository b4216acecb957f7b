// baseline.h — the pinned baseline (BaselineState, state.h): pinning (also the bf16 twin),
// unpinning and swapping (the reducer's PinBaseline, CompareWithBf16, UnpinBaseline,
// SwapBaseline), a link's base= key (link.cpp), and the comparison with the report on screen,
// rebuilt by the frame's refresh when either changes.
// Every number and word of the comparison comes from the core: estimate/compare.h and
// render/comparison.h (the same cells `stagemem diff` prints).
#pragma once

#include <string>

#include "state.h"

// The report on screen (valid, not stale) becomes the baseline; false (and nothing changes) when
// there is no such report.
bool pin_baseline(AppState& state);
// "What did fp8 change?": the bf16 twin of the report on screen (config/low_precision_rules.h
// bf16_twin: no quantised recipe, bf16 weights, all else kept), estimated here, becomes the
// baseline, so the comparison is `stagemem diff --versus-bf16`'s. "" when pinned, else why not
// (bf16_comparison_unavailable, state.h, or the twin's first error); nothing changes then.
std::string pin_bf16_twin(AppState& state);
void unpin_baseline(AppState& state);
// The baseline's configuration goes on screen and the report that was on screen is pinned; false
// when no baseline is pinned or the report on screen is stale.
bool swap_baseline(AppState& state);
// A link's baseline (config/url_fragment.h decode_baseline), estimated once here: "" when pinned,
// else why not (the baseline's first error, named "url.base...").
void set_baseline_from_link(AppState& state, const stagemem::Config& config);
// Rebuilds the comparison and its texts when the report on screen or the baseline changed.
void refresh_comparison(AppState& state);
// The comparison as `stagemem diff --json` writes it (render/comparison.h comparison_json), with
// each side's fragment link; "" when no baseline is pinned or the report has errors.
std::string comparison_json_text(const AppState& state);
