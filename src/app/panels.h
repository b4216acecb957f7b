// panels.h — the panels, as the frame draws them (frame.cpp is the only file that includes this;
// cmake/AppSeams.cmake checks it, so no panel can call another).
// Each panel reads the state (const AppState&), writes only its own view state (the Views member
// named in its signature, state.h) and emits what the user asked for into `out` (actions.h),
// with the rectangles of the widgets it publishes. One file per panel: panel_<name>.cpp.
#pragma once

#include "actions.h"
#include "state.h"

void draw_link_banner(const AppState& state, Actions& out);
void draw_toolbar(const AppState& state, Actions& out);
// The first screen's answer: model, device, layout with DP, world size and nodes, the verdict.
void draw_summary_line(const AppState& state, SummaryView& view, Actions& out);
// The configuration column: the generated fields, then the measured values.
void draw_config(const AppState& state, ConfigView& view, Actions& out);
void draw_measurements(const AppState& state, Actions& out);
// The main view's tabs.
void draw_stages(const AppState& state, StagesView& view, Actions& out);
void draw_sweep(const AppState& state, SweepView& view, Actions& out);
void draw_cross_checks(const AppState& state, CrossChecksView& view, Actions& out);
void draw_model(const AppState& state, ModelView& view, Actions& out);
void draw_plan(const AppState& state, PlanView& view, Actions& out);
void draw_timeline(const AppState& state, TimelineView& view, Actions& out);
void draw_snapshot(const AppState& state, Actions& out);
// The pinned baseline against the configuration on screen (BaselineState).
void draw_compare(const AppState& state, CompareView& view, Actions& out);
void draw_status_bar(const AppState& state, StatusView& view, Actions& out);

// The view state's upkeep outside drawing, in the panel's own file (called by the frame's set-up
// and refresh, frame.h).
// panel_config.cpp: the field editors' labels and the model presets, once; then the list fields'
// texts whenever the configuration changes to a value a text does not parse to.
void init_config_view(ConfigView& view, const stagemem::Config& config);
void sync_field_texts(ConfigView& view, const stagemem::Config& config);
// panel_model.cpp: the term catalogue, once.
void init_model_view(ModelView& view);
