// widget_rects.h — where the key widgets were drawn in the last frame, so browser tests can
// drive them with real mouse events (Module.getWidgetRect) instead of calling into the app.
// Every generated configuration field is published too ("field_<key>", AppState::field_editors),
// and each sweep cell ("sweep_cell_<x>_<y>", from the heat map's rectangle).
// Units: ImGui coordinates (device pixels on the web; the binding converts to CSS pixels).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

enum class Widget : std::uint8_t {
  copy_link,
  copy_markdown,
  download_json,
  tp_minus,
  tp_plus,
  pp_minus,
  pp_plus,
  ep_minus,
  ep_plus,
  tab_stages,
  tab_sweep,
  tab_cross_checks,
  tab_model,
  hf_import,
  add_measurement,
  add_gap,
  catalogue_filter,
  undo,
  redo,
  open_file,
  field_fix,      // the first one-click fix shown under a field
  gpus_per_node,  // the summary line's editable GPUs per node
  frame_times,    // the status bar's debug toggle
  bar_tooltip,    // the stage bar's tooltip window
  tab_plan,
  plan_search,
  plan_first_row,
  tab_timeline,
  timeline_stage,  // the Timeline tab's stage selector
  timeline_chart,  // its chart
  tab_snapshot,
  snapshot_open,   // the Snapshot tab's file button
  snapshot_stage,  // its stage selector
  plan_margin,     // the Plan tab's safety margin input
  pin_baseline,    // the toolbar's "Pin as baseline" (Ctrl+B)
  unpin_baseline,  // its "Unpin"
  swap_baseline,   // its "Swap": the baseline on screen, what was on screen the baseline
  tab_compare,
  compare_stage,   // the Compare tab's stage selector (whose changed terms are listed)
  settings_line,   // the summary's line of the settings that change memory
  model_reset,     // the model-change notice's "Reset to the defaults"
  model_dismiss,   // and its "Dismiss"
  unit_gib,        // the toolbar's unit toggle: GiB (2^30 B)
  unit_gb,         // and GB (10^9 B)
  stages_chart,    // the Stages tab's bar chart (its labels included)
  stages_summary,  // its per-stage table
  config_panel,    // the configuration column (or block, stacked)
  main_panel,      // the tabs beside (or under) it
  sweep_x_values,  // the Sweep tab's values text of the columns axis
  sweep_y_values,  // and of the rows axis
  scaling_points,  // the Cross-checks tab's scaling points text
  scaling_apply,   // and its "Apply points" button
  bf16_baseline,   // the toolbar's "Compare with bf16" (the bf16 twin pinned as the baseline)
  compare_bf16,    // the same button in the Compare tab
  count
};

// Names used by Module.getWidgetRect, in the order of `Widget`.
inline constexpr std::array<std::string_view, static_cast<std::size_t>(Widget::count)>
    widget_names = {
        "copy_link",      "copy_markdown",    "download_json",  "tp_minus",       "tp_plus",
        "pp_minus",       "pp_plus",          "ep_minus",       "ep_plus",        "tab_stages",
        "tab_sweep",      "tab_cross_checks", "tab_model",      "hf_import",      "add_measurement",
        "add_gap",        "catalogue_filter", "undo",           "redo",           "open_file",
        "field_fix",      "gpus_per_node",    "frame_times",    "bar_tooltip",    "tab_plan",
        "plan_search",    "plan_first_row",   "tab_timeline",   "timeline_stage", "timeline_chart",
        "tab_snapshot",   "snapshot_open",    "snapshot_stage", "plan_margin",    "pin_baseline",
        "unpin_baseline", "swap_baseline",    "tab_compare",    "compare_stage",  "settings_line",
        "model_reset",    "model_dismiss",    "unit_gib",       "unit_gb",        "stages_chart",
        "stages_summary", "config_panel",     "main_panel",     "sweep_x_values", "sweep_y_values",
        "scaling_points", "scaling_apply",    "bf16_baseline",  "compare_bf16"};
static_assert(!widget_names.back().empty(), "every Widget needs its name in widget_names");

struct WidgetRect {
  float min_x = 0, min_y = 0, max_x = 0, max_y = 0;
  std::uint64_t frame = 0;  // AppState::frame_count while it was drawn; stale when older
  bool drawn = false;
};
