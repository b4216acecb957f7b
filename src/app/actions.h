// actions.h — what the user asks the app to do, as small values, and the one reducer that applies
// them.
//
// The panels draw from a const AppState and push what the user asked for (a click, an edit, a key)
// into an Actions list, with the rectangles of the widgets they publish; the frame applies the
// list after the panels, in order, before the next frame (apply_actions). Input from outside the
// widgets (the page's hashchange, paste, dropped and picked files; a file dropped on the native
// window) is applied the same way, one action at a time (apply_action). In the app, the reducer is
// the only place that reaches the platform's services (platform.h): the clipboard, downloads, file
// pickers, history entries.
// Usage (a panel):
//   if (ImGui::Button("Undo")) out.push(Undo{});
//   publish(out, Widget::undo);  // widgets.h
// Limitations: SetConfig carries the whole edited configuration (the panel edits a copy of it): of
// two in one frame the later would win, which ImGui's one active widget at a time rules out (the
// measured values, drawn after the configuration, replace only their own part).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "config/config.h"
#include "fixes.h"
#include "plan_tab.h"
#include "state.h"
#include "widget_rects.h"

class Platform;

// ---- From the panels and the keyboard ----
struct SetConfig {  // the configuration as edited (the configuration panel, a page call)
  stagemem::Config config;
};
struct SetMeasuredValues {  // the measurements and measured gaps as edited (measured values)
  std::vector<stagemem::Measurement> measurements;
  std::vector<stagemem::GapEntry> gaps;
};
struct ApplyFix {  // a one-click fix (fixes.h): the repair of this error of `diagnostics`
  std::size_t error = 0;
};
struct Undo {};
struct Redo {};
struct CopyLink {};      // the link of exactly the configuration on screen
struct CopyMarkdown {};  // the report on screen as Markdown, with its link
struct DownloadJson {};  // the report on screen as JSON, as a file
struct OpenFile {};      // the platform's file picker for a config.json / stagemem JSON
struct OpenSnapshot {};  // the same for an allocator snapshot
struct DismissBanner {};
struct OpenTab {  // select a tab (shown from the next frame)
  MainTab tab = MainTab::stages;
};
struct TabShown {  // the tab bar shows this tab (clicked, or an OpenTab's)
  MainTab tab = MainTab::stages;
};
struct SelectStage {  // the stage whose table is open; -1 none
  std::int64_t stage = -1;
};
struct SetSweepAxis {    // an axis's field and values text ("" picks values around the config's)
  std::size_t axis = 0;  // 0 columns, 1 rows
  std::string key;
  std::string values;
};
struct ApplySweepCell {  // the cell's two values into the configuration
  std::size_t cell = 0;
};
struct SetPlanInputs {
  PlanInputs inputs;
};
struct StartPlanSearch {};
struct StopPlanSearch {};
struct ApplyPlanRow {  // the frontier entry's configuration (over the one the search ran for)
  std::size_t row = 0;
};
struct SelectTimelineStage {
  std::int64_t stage = -1;
};
struct SetSnapshotStage {  // the stage a loaded snapshot is compared with
  std::int64_t stage = 0;
};
// ---- From the page or the window (src/web, platform_native.cpp) ----
struct SetScalingPoints {  // the scaling points as typed: one AXIS=VALUE:PEAK per line
  std::string text;
  std::string stage;  // "" or a stage number
};
struct ApplyLink {  // the page's fragment changed (back, forward, an edited address)
  std::string link;
};
struct LoadText {    // a link or a JSON document or memory report lines (load_input.h)
  std::string name;  // the file name, or "the clipboard"
  std::string text;
};
struct LoadFile {  // a file's bytes: an allocator snapshot, or else a text
  std::string name;
  std::string bytes;
};
struct RefuseFile {  // a file the platform could not read (missing, unreadable, too large)
  std::string name;
  std::string problem;
};
// ---- The baseline (the toolbar, Ctrl+B, the Compare tab; BaselineState) ----
struct PinBaseline {};      // the report on screen (valid, not stale) becomes the baseline
struct CompareWithBf16 {};  // its bf16 twin the baseline (pin_bf16_twin), the Compare tab open
struct UnpinBaseline {};    // no baseline: the comparison closes
struct SwapBaseline {};     // the baseline's configuration on screen, the one on screen pinned
// ---- From the summary line's model-change notice (fixes.h) ----
struct ResetToDefaults {};     // the defaults with this model and device (what the CLI starts from)
struct DismissModelNotice {};  // hide what the last model change kept or changed
struct SetAmountUnit {         // the toolbar's GiB/GB toggle: the unit of every amount shown
  stagemem::AmountUnit unit = stagemem::AmountUnit::gib;
};

using Action =
    std::variant<SetConfig, SetMeasuredValues, ApplyFix, Undo, Redo, CopyLink, CopyMarkdown,
                 DownloadJson, OpenFile, OpenSnapshot, DismissBanner, OpenTab, TabShown,
                 SelectStage, SetSweepAxis, ApplySweepCell, SetPlanInputs, StartPlanSearch,
                 StopPlanSearch, ApplyPlanRow, SelectTimelineStage, SetSnapshotStage,
                 SetScalingPoints, ApplyLink, LoadText, LoadFile, RefuseFile, PinBaseline,
                 CompareWithBf16, UnpinBaseline, SwapBaseline, ResetToDefaults, DismissModelNotice,
                 SetAmountUnit>;

// What the panels hand back from one frame: the actions, in the order they were pushed, and where
// the key widgets were drawn (stored in AppState::widget_rects with the actions).
class Actions {
 public:
  explicit Actions(std::uint64_t frame) : frame_(frame) {}
  void push(Action action) { actions_.push_back(std::move(action)); }
  void publish(Widget widget, const WidgetRect& rect) { rects_.emplace_back(widget, rect); }
  std::uint64_t frame() const { return frame_; }  // AppState::frame_count while drawing
  const std::vector<Action>& actions() const { return actions_; }
  const std::vector<std::pair<Widget, WidgetRect>>& rects() const { return rects_; }

 private:
  std::uint64_t frame_;
  std::vector<Action> actions_;
  std::vector<std::pair<Widget, WidgetRect>> rects_;
};

// Applies one action; asks for the frames that show its result.
void apply_action(AppState& state, const Action& action, Platform& platform);
// Stores the published rectangles, then applies the actions in order.
void apply_actions(AppState& state, const Actions& actions, Platform& platform);
