#include "actions.h"

#include <utility>

#include "baseline.h"
#include "edit_history.h"
#include "frame.h"
#include "imgui.h"
#include "link.h"
#include "load_input.h"
#include "platform.h"
#include "scaling_check.h"
#include "share.h"

namespace {

constexpr double message_seconds = 4.0;
// An applied action is drawn twice: ImGui sizes new content in the frame after it first appears.
constexpr int frames_after_action = 2;

// The toolbar's feedback line, shown for a few seconds.
void show_message(AppState& state, std::string message) {
  state.toolbar_message = std::move(message);
  state.toolbar_message_until = ImGui::GetTime() + message_seconds;
  redraw_after(state, message_seconds + 0.05);  // to take the message away
}

struct Reducer {
  AppState& state;
  Platform& platform;

  void operator()(const SetConfig& a) const {
    const bool new_model = model_changed(state.config, a.config);
    state.config = a.config;
    // Another model: the layout moves to the nearest valid one for it, and what changed and what
    // was kept is named under the summary line.
    if (new_model) {
      const std::string changed = settle_model_change(state);
      if (!changed.empty()) show_message(state, "Changed for the new model: " + changed);
    }
  }
  void operator()(const SetMeasuredValues& a) const {
    state.config.measurements = a.measurements;
    state.config.gaps = a.gaps;
  }
  void operator()(const ApplyFix& a) const { apply_fix(state, a.error); }
  void operator()(const Undo&) const { undo(state); }
  void operator()(const Redo&) const { redo(state); }
  void operator()(const CopyLink&) const { show_message(state, platform.copy_link(state)); }
  void operator()(const CopyMarkdown&) const {
    // A stale report is not what the configuration on screen gives: nothing to share until valid.
    if (!state.report_valid || report_stale(state)) return;
    // With a baseline pinned, the comparison (share.h copied_markdown).
    show_message(state, platform.copy_text(copied_markdown(state, platform)));
  }
  void operator()(const DownloadJson&) const {
    if (!state.report_valid || report_stale(state)) return;
    show_message(state, platform.save_text("stagemem-report.json", "application/json",
                                           report_json_text(state)));
  }
  void operator()(const OpenFile&) const { show_message(state, platform.open_file()); }
  void operator()(const OpenSnapshot&) const { show_message(state, platform.open_snapshot()); }
  void operator()(const DismissBanner&) const { state.link_banner_visible = false; }
  void operator()(const OpenTab& a) const { state.requested_tab = a.tab; }
  void operator()(const TabShown& a) const {
    state.main_tab = a.tab;
    if (state.requested_tab == a.tab) state.requested_tab = MainTab::count;
  }
  void operator()(const SelectStage& a) const { state.selected_stage = a.stage; }
  void operator()(const SetSweepAxis& a) const {
    set_sweep_axis(state.sweep, a.axis, a.key, a.values, state.config);
  }
  void operator()(const ApplySweepCell& a) const {
    apply_sweep_cell(state.sweep, a.cell, state.config);
  }
  void operator()(const SetPlanInputs& a) const { set_plan_inputs(state.plan, a.inputs); }
  void operator()(const StartPlanSearch&) const { start_plan_search(state.plan, state.config); }
  void operator()(const StopPlanSearch&) const { stop_plan_search(state.plan); }
  void operator()(const ApplyPlanRow& a) const {
    const PlanTab& plan = state.plan;
    if (!plan.has_result || a.row >= plan.result.frontier.size()) return;
    // Over the configuration the search ran for, so the applied one is exactly the one ranked.
    state.config =
        stagemem::candidate_config(plan.result_config, plan.result.frontier[a.row].candidate);
    // The tab recognises its own row as the current configuration (plan_current_row).
    state.plan.applied_row = static_cast<std::int64_t>(a.row);
  }
  void operator()(const SelectTimelineStage& a) const { state.timeline.stage = a.stage; }
  void operator()(const SetSnapshotStage& a) const { state.snapshot.stage = a.stage; }
  void operator()(const SetScalingPoints& a) const { set_scaling_points(state, a.text, a.stage); }
  void operator()(const ApplyLink& a) const { apply_fragment(state, a.link); }
  void operator()(const LoadText& a) const {
    show_message(state, load_text(state, a.name, a.text, platform));
  }
  void operator()(const LoadFile& a) const {
    show_message(state, load_file(state, a.name, a.bytes, platform));
  }
  void operator()(const RefuseFile& a) const {
    show_message(state, refuse_file(state, a.name, a.problem));
  }
  void operator()(const PinBaseline&) const {
    // The tab stays (the stages chart marks the baseline's peaks); the link carries it from now.
    if (!pin_baseline(state)) return;
    show_message(state, "Pinned as the baseline: edit, and see the differences in Compare");
  }
  void operator()(const CompareWithBf16&) const {
    // What fp8 changed: the bf16 twin is A, the configuration on screen B (diff --versus-bf16).
    const std::string why_not = pin_bf16_twin(state);
    if (!why_not.empty()) {
      show_message(state, why_not);
      return;
    }
    state.requested_tab = MainTab::compare;
    show_message(state, "Pinned the bf16 twin as A");
  }
  void operator()(const UnpinBaseline&) const {
    if (!state.baseline.pinned) return;
    unpin_baseline(state);
    show_message(state, "Baseline unpinned");
  }
  void operator()(const SwapBaseline&) const {
    if (swap_baseline(state)) show_message(state, "Swapped: the baseline is on screen");
  }
  void operator()(const ResetToDefaults&) const {
    state.config = defaults_for_model(state.config);
    settle_model_change(state);  // the default PP may not suit a small model
    state.fix_its.kept.clear();
  }
  void operator()(const DismissModelNotice&) const {
    state.fix_its.kept.clear();
    state.fix_its.model_changed.clear();
  }
  void operator()(const SetAmountUnit& a) const {
    if (state.display.unit == a.unit) return;
    state.display.unit = a.unit;
    // The report's display strings are built once per report: again, in the new unit.
    state.report_labels = make_report_labels(state.report, a.unit);
    state.baseline.compared_report = 0;   // and the comparison's (baseline.h refresh_comparison)
    state.timeline.built_generation = 0;  // and the timeline's headline (refresh.cpp)
    state.scaling.has_check = false;      // and the scaling cross-check's (scaling_check.h)
  }
};

}  // namespace

void apply_action(AppState& state, const Action& action, Platform& platform) {
  std::visit(Reducer{state, platform}, action);
  request_frames(state, frames_after_action);
}

void apply_actions(AppState& state, const Actions& actions, Platform& platform) {
  for (const auto& [widget, rect] : actions.rects()) {
    state.widget_rects[static_cast<std::size_t>(widget)] = rect;
  }
  for (const Action& action : actions.actions()) apply_action(state, action, platform);
}
