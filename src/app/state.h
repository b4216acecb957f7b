// state.h — everything the app shows or remembers, in one struct: AppState.
//
// Who writes what (nothing else in the app keeps state; no function-local statics):
//  - The shared state: every member of AppState except `views` (the configuration, its report and
//    what is derived from it, the undo history, the link's problems, the open tab, the loaded
//    snapshot, the sweep's axes and grid, the plan search, the toolbar's message). After set-up it
//    changes only in the reducer (actions.h: the actions the panels emit, and the page's or the
//    window's events) and in the frame itself (frame.h: the refresh of what is derived from it
//    before the panels, the layout, the redraw and history bookkeeping).
//  - The panels' view state: AppState::views. What ImGui needs between frames (text being typed,
//    a field editor's rectangle), what a panel alone shows (hover, its own display toggles) and
//    its own GPU drawing. Each sub-struct is written only by the panel file named in its comment,
//    which receives it by reference (panels.h); anyone may read it (the bindings publish it).
// A panel receives `const AppState&`: it reads the state and emits actions (actions.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/repair.h"
#include "estimate/scaling.h"
#include "frame_times.h"
#include "heat_map.h"
#include "heat_strip.h"
#include "measured/snapshot.h"
#include "memory/timeline.h"
#include "plan_tab.h"
#include "render/comparison.h"
#include "render/term_catalogue.h"
#include "render/vocabulary.h"
#include "report/report.h"
#include "report_labels.h"
#include "sweep.h"
#include "widget_rects.h"

struct ImFont;

// The tabs of the main view (right of, or under, the configuration).
enum class MainTab : std::uint8_t {
  stages,
  sweep,
  cross_checks,
  model,
  plan,
  timeline,
  snapshot,
  compare,
  count
};

// Idle costs nothing: a frame is drawn only when one of these says so (frame_needed, frame.cpp).
struct Redraw {
  double active_until = 0.0;  // seconds (glfwGetTime): input settles, tooltip delays run out
  double wake_at = 0.0;       // a timed change on screen (a toolbar message expires); 0: none
  int requested_frames = 0;   // asked for outside a frame (a page call, a paste, tests)
  bool config_drawn = false;  // drawn_config holds the config of the last frame
  stagemem::Config drawn_config;
  std::uint64_t idle_callbacks = 0;  // animation frames that drew nothing (tests, measurements)
};

// Undo/redo over every edit of the configuration (Ctrl+Z, Ctrl+Shift+Z, toolbar buttons).
struct EditHistory {
  static constexpr std::size_t capacity = 200;
  std::vector<stagemem::Config> undo;  // oldest first
  std::vector<stagemem::Config> redo;  // most recently undone last
  stagemem::Config committed;          // the config at the end of the last frame
  bool editing = false;  // a widget is held or typed in: its changes merge into one step
};

// What the configured model has, to show only the fields that apply to it (panel_config.cpp).
struct ModelTraits {
  bool known = false;  // the model resolved; otherwise every field is shown
  bool moe = false;
  bool kda = false;
  bool attn_res = false;
};

// The "Timeline" tab's stage and its step timeline (timeline.h), rebuilt by the frame's refresh
// while the tab is open, when the report or the chosen stage changes.
struct TimelineTab {
  std::int64_t stage = -1;  // the stage shown; -1: the binding stage
  std::int64_t built_stage = -1;
  std::uint64_t built_generation = 0;  // AppState::report_generation it was built from
  std::uint64_t builds = 0;            // counts the rebuilds (a hover belongs to one build)
  stagemem::StageTimeline timeline;
  std::string peak_name;  // moment_name of the stage's peak
  // What makes the peak (vocabulary.h peak_headline): stored activations of the micro-batches in
  // flight + the transient at that moment + resident, then the moment.
  std::string peak_headline;
};

// A PyTorch allocator snapshot read in the page (snapshot.h; the file never leaves it), or its
// summary from a link (snapshot_link.h: then without the trace's curve). The Snapshot tab's
// comparison with the derived terms is recomputed from `summary` and the report when drawn.
struct SnapshotTab {
  bool loaded = false;
  bool from_link = false;  // the summary came from a link: no live-bytes curve
  std::string file;        // the snapshot's file name
  std::int64_t stage = 0;  // the pipeline stage it is compared with (and drawn over)
  stagemem::SnapshotSummary summary;
  std::int64_t file_bytes = 0;  // size of the file read (0 from a link)
  std::string error;            // the decoder's error for the last file that did not load
  std::string error_file;
};

// The scaling cross-check (estimate/scaling.h): measured peaks of the configuration on screen at
// two or more sequence lengths or micro-batch sizes, from a link's scaling= keys or typed in the
// Cross-checks tab, fitted as a + b x tokens beside the derived constant and slope. The refresh
// rebuilds the check and its texts (render/scaling_text.h, the cells `stagemem scaling` prints)
// when the points or the report change. The points never feed the model.
struct ScalingState {
  stagemem::ScalingPoints points;  // empty: no scaling cross-check
  std::uint64_t generation = 0;    // counts the changes of `points`
  std::string input_error;         // the last typed points that did not parse (points unchanged)
  // What the refresh checked last: `generation` and AppState::report_generation.
  std::uint64_t checked_points = 0;
  std::uint64_t checked_report = 0;
  bool has_check = false;  // `check` is of the current points and report (errors or not)
  stagemem::ScalingCheck check;
  std::string error;  // the check's errors, one per line ("" when it has none)
  std::string headline;
  std::string notes;
  std::string subject;
  stagemem::Table fit_table;
  stagemem::Table points_table;
  stagemem::Table not_linear_table;
};

// A pinned baseline and its comparison with the report on screen: the Compare tab, the baseline
// marks on the stages chart, Copy as Markdown and the link's base= key (config/url_fragment.h).
// The baseline's report is estimated once (pinning copies the report on screen; a link's baseline
// is estimated when the link is applied); the comparison (estimate/compare.h) and its texts
// (render/comparison.h) are rebuilt by the frame's refresh only when either report changes.
// The baseline is A, the configuration on screen B: differences are B - A.
struct BaselineState {
  bool pinned = false;
  stagemem::Config config;
  stagemem::Report report;
  std::string link_pair;         // encode_baseline(config): "base=v=1%26tp=8..." for the link
  std::uint64_t generation = 0;  // counts the baselines pinned (a new one is compared afresh)
  // What the refresh compared last: AppState::report_generation and `generation`.
  std::uint64_t compared_report = 0;
  std::uint64_t compared_baseline = 0;
  stagemem::Comparison comparison;  // indices into `report` (A) and AppState::report (B)
  // The comparison's words and tables, from render/comparison.h (the cells `stagemem diff`
  // prints), built with it:
  std::string changes_text;                  // "tp 8 -> 4, ..." or "none"
  std::string binding_peaks;                 // "74.32 GiB -> 70.20 GiB (-4.12 GiB)"
  std::string a_summary, b_summary;          // each side's model, layout and training settings
  std::string a_verdict, b_verdict;          // verdict_text of each
  stagemem::Table stage_table;               // one row per entry of comparison.stages
  std::vector<std::string> term_headings;    // "stage 0: 5 of 42 terms changed", per stage
  std::vector<stagemem::Table> term_tables;  // its changed terms, largest first, per stage
  std::vector<std::string> peak_text;        // the baseline's peak of each stage ("-" if none)
  std::vector<std::string> delta_text;       // B - A of each stage's peak ("+4.20 GiB")
};

// The one-click repairs of the configuration's errors ("Set TP to 4 (divides 4 KV heads)",
// config/repair.h), refreshed with `diagnostics`, and what the last model change did: the layout
// it repaired and the settings it kept that are not the defaults (shown under the summary line).
struct FixIts {
  std::optional<stagemem::Model> model;                  // the configuration's, when it resolves
  std::vector<std::optional<stagemem::Repair>> repairs;  // parallel to diagnostics.errors
  // After a model change (a preset picked, a config.json imported); empty: nothing to say.
  std::string model_changed;  // "Qwen3-30B-A3B: TP 8 -> 4 (divides 4 KV heads)"
  std::string kept;           // "tp=8, pp=4, dp=2, sp=1, seq=8192, optimizer=distributed-adam"
};

// ---- The panels' view state (see the top of this file) -------------------------------------

// Editing state of one row of config_fields() (parallel to it).
struct FieldEditor {
  std::string label;  // "tensor_parallel (tp)##tp": the widget's label, built once at start-up
  // integer_list fields: the text being edited (parsed with parse_field_text on every change);
  // rewritten from the config only when the config changes to a value the text does not parse to.
  std::string text;
  std::string error;  // the last parse error of `text`, shown under the field
  WidgetRect rect{};  // the value widget as drawn last frame (Module.getWidgetRect("field_<key>"))
  bool label_above = false;  // the panel is too narrow for label and value side by side
  // integer fields: the number is being typed (`text` holds it; applied on Enter or focus loss).
  bool typing = false;
};

// panel_config.cpp and panel_measurements.cpp (the configuration column). The field texts are
// kept in step with the configuration by sync_field_texts (panel_config.cpp), which the frame's
// refresh calls when the configuration changes.
struct ConfigView {
  std::vector<FieldEditor> editors;       // parallel to config_fields()
  std::vector<std::string> preset_names;  // the model presets, listed once at start-up
  bool show_all_fields = false;           // also the fields that do not apply to this model
  int truncated_labels = 0;    // field labels drawn past the panel's edge last frame (tests)
  std::string hf_config_text;  // a pasted Hugging Face config.json
  std::vector<stagemem::FieldMessage> hf_import_errors;  // of the last Import press
  std::string hf_import_message;                         // "Imported as the custom model below"
  // The entries of the open model, device and choice lists as drawn last frame ("<key>_<name>":
  // Module.getWidgetRect("option_model_deepseek-v3")), for tests that pick one with the mouse;
  // also the kernel options' "follow the stack" ("follow_stack_<key>") and the groups' headers
  // ("group_<prefix>": "option_group_precision").
  std::vector<std::pair<std::string, WidgetRect>> option_rects;
};

// panel_summary.cpp.
struct SummaryView {
  int gpus_per_node = 8;  // for the node count of the first screen (not part of the config)
};

// panel_stages.cpp.
struct StagesView {
  std::int64_t hovered_stage = -1;    // stage whose bar is under the mouse this frame; -1 none
  std::int64_t hovered_term = -1;     // term (index into its stage's terms) under the mouse
  bool chart_scrolls = false;         // too many stages for the width: the bars scroll sideways
  std::int64_t axis_label_step = 1;   // every n-th stage is labelled under the bars
  float tooltip_height = 0.0f;        // the bar tooltip's height last frame, to keep it on screen
  std::vector<WidgetRect> bar_rects;  // parallel to report.stages, as drawn last frame
  HeatStrip heat_strip;               // GPU resources of our own shader drawing
};

// panel_sweep.cpp.
struct SweepView {
  // Each axis's values as being typed; applied (SetSweepAxis) on Enter or when the field is left,
  // and taken from the axis again whenever the axis's own text changes.
  std::array<std::string, 2> values_text;
  std::array<std::string, 2> values_shown;  // the axis text values_text was last taken from
  std::int64_t hovered_cell = -1;  // index into the cells under the mouse last frame; -1 none
  HeatMap heat_map;                // the grid drawn by our own shader
  WidgetRect heat_map_rect{};      // where the grid was drawn last frame
};

// panel_model.cpp: every term stagemem can produce, computed once at start-up, and the filter.
struct ModelView {
  std::vector<stagemem::CatalogueEntry> catalogue;
  std::vector<std::string> catalogue_search;  // parallel: each entry's text, lower case
  std::string catalogue_filter;
  std::vector<std::size_t> catalogue_rows;  // indices of the entries matching the filter
};

// panel_plan.cpp.
struct PlanView {
  std::int64_t hovered = -1;  // frontier entry under the mouse (plot or table); -1 none
  // What the tab drew last frame (tests read it through Module.getPlan): a progress bar only
  // while a search runs; the line beside it; the plot's GPU axis ends; the row marked current.
  bool progress_bar_drawn = false;
  std::string status;
  std::int64_t axis_low_gpus = 0, axis_high_gpus = 0;
  std::int64_t current_row = -1;
  bool changed_note = false;  // "the configuration changed since this search" shown
};

// What the Timeline tab drew of a loaded snapshot over the derived chart last frame (tests read it
// through Module.getTimeline().measured). Coordinates in ImGui pixels.
struct MeasuredOverlay {
  std::uint64_t frame = 0;  // AppState::frame_count when drawn
  bool drawn = false;
  bool from_link = false;           // only the peak level (a link carries no curve)
  std::int64_t points = 0;          // vertices of the curve drawn
  bool own_scale = false;           // the measured curve has its own bytes axis (right)
  std::int64_t axis_top_bytes = 0;  // the top of the measured curve's bytes axis
  float peak_x = 0.0f, peak_y = 0.0f;
  std::string legend;     // the legend entry's text
  std::string axis_note;  // how the two x axes map, as printed under the chart
};

// panel_timeline.cpp.
struct TimelineView {
  std::int64_t hovered_event = -1;  // event under the mouse last frame; -1 none
  std::string hovered_name;         // its event_name
  std::uint64_t hovered_build = 0;  // TimelineTab::builds the hover belongs to
  MeasuredOverlay measured;         // a snapshot's curve over it, as drawn last frame
};

// panel_compare.cpp.
struct CompareView {
  std::int64_t stage = -1;  // the stage whose changed terms are listed; -1: B's binding stage
  std::vector<WidgetRect> row_rects;  // the stage table's rows as drawn last frame (by stage)
};

// panel_cross_checks.cpp: the scaling points being typed, and the points they were last synced
// from (a link or an applied edit replaces the text).
struct CrossChecksView {
  std::string points_text;
  std::string stage_text;
  std::uint64_t synced_generation = ~std::uint64_t{0};
  bool scaling_drawn = false;  // the scaling section was drawn last frame (tests read it)
};

// panel_status.cpp.
struct StatusView {
  bool show_frame_times = false;  // the debug toggle
};

struct Views {
  ConfigView config;
  SummaryView summary;
  StagesView stages;
  SweepView sweep;
  ModelView model;
  PlanView plan;
  TimelineView timeline;
  StatusView status;
  CompareView compare;
  CrossChecksView cross_checks;
};

// How amounts are shown: the toolbar's GiB/GB toggle (the link's view.units=gb). Every amount the
// app draws is formatted with it (render/vocabulary.h: amount_text), so one switch changes all.
struct DisplaySettings {
  stagemem::AmountUnit unit = stagemem::AmountUnit::gib;
};

// ---- The state -----------------------------------------------------------------------------

struct AppState {
  stagemem::Config config;  // what the user edits; the URL fragment encodes it
  // The last VALID configuration's report: an invalid edit keeps it on screen, marked stale.
  stagemem::Report report;
  ReportLabels report_labels;           // display strings of `report`, rebuilt with it
  std::uint64_t report_generation = 0;  // counts the reports computed (views rebuild on change)
  stagemem::Config reported_config;     // the config `report` was computed for
  bool report_valid = false;            // `report` is a real report (some config was valid)
  stagemem::Config checked_config;      // the config `diagnostics` belongs to
  // uses_low_precision(reported_config) (config/low_precision_rules.h): "Compare with bf16" can
  // pin its bf16 twin (baseline.h pin_bf16_twin). Refreshed with `report`.
  bool reported_low_precision = false;
  bool checked = false;
  // validate + estimate's diagnostics of `config` (errors: `report` is stale, or none yet).
  stagemem::Diagnostics diagnostics;
  ModelTraits model_traits;  // of `config`'s model, refreshed with `diagnostics`
  Redraw redraw;
  EditHistory history;

  // Problems with the link the page was opened with (or a pasted link, a loaded file): shown as a
  // banner until dismissed; the good fields of such a link are applied, the bad ones keep
  // defaults.
  std::vector<stagemem::FieldMessage> link_problems;
  bool link_banner_visible = false;
  std::string link_problems_title = "This link has problems; its other fields are applied:";

  MainTab main_tab = MainTab::stages;      // the tab shown last frame
  MainTab requested_tab = MainTab::count;  // to be selected (a link's view.tab, a loaded file)
  std::int64_t selected_stage = -1;        // stage whose table is open; -1 none
  bool stacked_layout = false;  // narrow window: the configuration above the chart (the frame's)

  float ui_scale = 1.0f;          // device pixels per CSS pixel (web) or content scale (native)
  ImFont* mono_font = nullptr;    // DejaVu Sans Mono, for numbers and formulas (owned by ImGui)
  std::uint64_t frame_count = 0;  // published to tests (Embind frameCount / --frames)
  FrameTimes frame_times;         // CPU time of run_frame, shown in the status bar
  // The part of it before any GL call (events, report, panels, ImGui::Render). The rest is GL
  // submission, which blocks whenever the GL implementation must wait for the GPU (in headless
  // Chromium's software renderer that is most of the frame).
  FrameTimes user_interface_times;

  // Feedback of the last toolbar action ("Link copied"), shown until toolbar_message_until
  // (ImGui::GetTime() seconds).
  std::string toolbar_message;
  double toolbar_message_until = 0.0;

  // Screen rectangles of key widgets as drawn in the last frame (the panels publish them with
  // their actions; Module.getWidgetRect).
  std::array<WidgetRect, static_cast<std::size_t>(Widget::count)> widget_rects{};

  Sweep sweep;             // the "Sweep" tab's axes and grid (sweep.h)
  PlanTab plan;            // the "Plan" tab: bounds, time-sliced search, frontier (plan_tab.h)
  TimelineTab timeline;    // the "Timeline" tab's stage and timeline
  SnapshotTab snapshot;    // the "Snapshot" tab (and the measured curve on the timeline)
  BaselineState baseline;  // the pinned baseline and the "Compare" tab's comparison
  ScalingState scaling;    // the scaling cross-check (the "Cross-checks" tab)
  FixIts fix_its;          // repairs of the errors; what the last model change kept or changed

  Views views;  // the panels' own (see the top of this file)

  DisplaySettings display;  // the unit of every amount shown
};

// The configuration on screen has errors: `report` is an older one (or none yet).
inline bool report_stale(const AppState& state) {
  return !state.diagnostics.ok();
}

// Why "Compare with bf16" (baseline.h pin_bf16_twin) is not offered now; null when it is. The
// toolbar's and the Compare tab's button say it as their tooltip, the page as getUiState's.
inline const char* bf16_comparison_unavailable(const AppState& state) {
  if (!state.report_valid || report_stale(state)) {
    return "Fix the fields marked in red first";
  }
  if (!state.reported_low_precision) {
    return "Nothing here is in low precision: pick an fp8_recipe (Precision)";
  }
  return nullptr;
}
