// The frame's refresh: what is derived from the state, brought up to date before the panels draw
// it. The report when the configuration changed (an invalid one keeps the last valid report on
// screen, marked stale); and only for the open tab, its own derived data: a time slice of the
// sweep's grid or of the plan search (while work remains the next frame continues it), the chosen
// stage's step timeline.
#include <algorithm>
#include <utility>

#include "config/low_precision_rules.h"
#include "estimate/estimate.h"
#include "fixes.h"
#include "frame.h"
#include "memory/timeline.h"
#include "model/model.h"
#include "panels.h"
#include "render/vocabulary.h"
#include "scaling_check.h"
#include "state.h"

namespace {

void refresh_timeline(AppState& state) {
  const stagemem::Report& report = state.report;
  if (!report.diagnostics.ok() || report.stages.empty()) return;
  TimelineTab& tab = state.timeline;
  const auto stages = static_cast<std::int64_t>(report.stages.size());
  if (tab.stage < 0 || tab.stage >= stages) {
    tab.stage = report.binding_stage >= 0 ? report.binding_stage : 0;
  }
  if (tab.built_stage == tab.stage && tab.built_generation == state.report_generation &&
      !tab.timeline.events.empty()) {
    return;
  }
  const stagemem::StageReport& stage = report.stages[static_cast<std::size_t>(tab.stage)];
  tab.timeline = stagemem::stage_timeline(report, stage);
  tab.built_stage = tab.stage;
  tab.built_generation = state.report_generation;
  ++tab.builds;
  tab.peak_name = stagemem::moment_name(stage, stagemem::peak_moment(stage));
  tab.peak_headline = stagemem::peak_headline(stage, state.display.unit);
}

// A loaded snapshot is compared with a stage of this report.
void refresh_snapshot_stage(AppState& state) {
  const stagemem::Report& report = state.report;
  if (!state.snapshot.loaded || !report.diagnostics.ok() || report.stages.empty()) return;
  const auto stages = static_cast<std::int64_t>(report.stages.size());
  state.snapshot.stage = std::clamp<std::int64_t>(state.snapshot.stage, 0, stages - 1);
}

}  // namespace

void refresh_report(AppState& state) {
  if (state.checked && state.checked_config == state.config) return;
  sync_field_texts(state.views.config, state.config);
  stagemem::Report report = stagemem::estimate(state.config);
  state.diagnostics = report.diagnostics;
  state.checked_config = state.config;
  state.checked = true;
  stagemem::Diagnostics ignored;
  const auto model = stagemem::resolve_model(state.config, ignored);
  state.model_traits = ModelTraits{.known = model.has_value()};
  if (model) {
    for (const stagemem::LayerKind& k : model->layers) {
      state.model_traits.moe |= k.mlp == stagemem::MlpKind::moe;
      state.model_traits.kda |= k.attention == stagemem::AttentionKind::kda;
    }
    state.model_traits.attn_res = model->attn_res.block_size > 0;
  }
  refresh_fix_its(state);
  // An invalid configuration keeps the last valid report on screen (marked stale) until it is
  // valid again: the user's work stays visible while a field is being fixed.
  if (!report.diagnostics.ok()) return;
  state.report = std::move(report);
  state.report_labels = make_report_labels(state.report, state.display.unit);
  ++state.report_generation;
  state.reported_config = state.config;
  state.reported_low_precision = stagemem::uses_low_precision(state.reported_config);
  state.report_valid = true;
  if (state.selected_stage >= static_cast<std::int64_t>(state.report.stages.size())) {
    state.selected_stage = -1;
  }
}

void refresh_open_tab(AppState& state) {
  switch (state.main_tab) {
    case MainTab::sweep:
      // A grid is filled a time slice per frame: while cells remain, the next frame continues it.
      if (update_sweep(state.sweep, state.config)) request_frames(state, 1);
      break;
    case MainTab::plan:
      // The same for a running search.
      if (advance_plan_search(state.plan)) request_frames(state, 1);
      break;
    case MainTab::timeline:
      refresh_timeline(state);
      break;
    case MainTab::snapshot:
      refresh_snapshot_stage(state);
      break;
    case MainTab::cross_checks:
      // The scaling check estimates every point again: only while its tab is open.
      refresh_scaling(state);
      break;
    default:
      break;
  }
}
