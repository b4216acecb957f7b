#include "baseline.h"

#include <utility>

#include "config/low_precision_rules.h"
#include "config/url_fragment.h"
#include "estimate/compare.h"
#include "estimate/estimate.h"
#include "render/vocabulary.h"

namespace {

// The baseline becomes `config` with its `report`: a new generation, compared afresh.
void pin(BaselineState& baseline, const stagemem::Config& config, stagemem::Report report) {
  baseline.pinned = true;
  baseline.config = config;
  baseline.report = std::move(report);
  baseline.link_pair = stagemem::encode_baseline(config);
  ++baseline.generation;
}

bool report_on_screen(const AppState& state) {
  return state.report_valid && !report_stale(state);
}

}  // namespace

bool pin_baseline(AppState& state) {
  if (!report_on_screen(state)) return false;
  // A copy of the report on screen: pinning estimates nothing.
  pin(state.baseline, state.reported_config, state.report);
  return true;
}

std::string pin_bf16_twin(AppState& state) {
  if (const char* why = bf16_comparison_unavailable(state)) return why;
  stagemem::Config twin = stagemem::bf16_twin(state.reported_config);
  stagemem::Report report = stagemem::estimate(twin);
  if (!report.diagnostics.ok()) {
    const stagemem::FieldMessage& e = report.diagnostics.errors.front();
    return "The bf16 twin does not estimate (" + e.field + ": " + e.message + ")";
  }
  pin(state.baseline, twin, std::move(report));
  return {};
}

void unpin_baseline(AppState& state) {
  // The generation goes on counting, so that a later baseline is never taken as compared.
  const std::uint64_t generation = state.baseline.generation;
  state.baseline = BaselineState{};
  state.baseline.generation = generation;
}

bool swap_baseline(AppState& state) {
  BaselineState& baseline = state.baseline;
  if (!baseline.pinned || !report_on_screen(state)) return false;
  stagemem::Config shown = std::move(baseline.config);
  pin(baseline, state.reported_config, state.report);
  // The frame's refresh estimates it (an edit like any other: Undo returns).
  state.config = std::move(shown);
  return true;
}

void set_baseline_from_link(AppState& state, const stagemem::Config& config) {
  stagemem::Report report = stagemem::estimate(config);
  if (!report.diagnostics.ok()) {
    // A baseline that does not estimate compares with nothing: the banner says why.
    for (const stagemem::FieldMessage& e : report.diagnostics.errors) {
      state.link_problems.push_back(
          {"url.base", "the baseline does not estimate (" + e.field + ": " + e.message + ")"});
    }
    unpin_baseline(state);
    return;
  }
  pin(state.baseline, config, std::move(report));
}

void refresh_comparison(AppState& state) {
  BaselineState& b = state.baseline;
  if (!b.pinned || !state.report_valid) return;
  if (b.compared_report == state.report_generation && b.compared_baseline == b.generation) return;
  b.compared_report = state.report_generation;
  b.compared_baseline = b.generation;
  b.comparison = stagemem::compare_reports(b.report, state.report);
  const stagemem::ComparedReports compared{.a_config = b.config,
                                           .a = b.report,
                                           .b_config = state.reported_config,
                                           .b = state.report,
                                           .comparison = b.comparison,
                                           .unit = state.display.unit};
  b.changes_text = stagemem::setting_changes_text(
      stagemem::setting_changes(b.config, state.reported_config), " \u2192 ");
  b.binding_peaks = stagemem::binding_peaks_text(b.comparison, " \u2192 ", state.display.unit);
  b.a_summary = stagemem::comparison_side_summary(b.report, b.config);
  b.b_summary = stagemem::comparison_side_summary(state.report, state.reported_config);
  b.a_verdict = stagemem::verdict_text(b.report, state.display.unit);
  b.b_verdict = stagemem::verdict_text(state.report, state.display.unit);
  b.stage_table = stagemem::comparison_stage_table(compared);
  b.term_headings.clear();
  b.term_tables.clear();
  b.peak_text.clear();
  b.delta_text.clear();
  for (const stagemem::StageComparison& s : b.comparison.stages) {
    b.term_headings.push_back(stagemem::changed_terms_heading(s));
    b.term_tables.push_back(stagemem::changed_terms_table(compared, s, " \u2192 "));
    b.peak_text.push_back(
        s.in_a ? stagemem::comparison_amount_text(s.a_peak_bytes, state.display.unit) : "-");
    b.delta_text.push_back(stagemem::comparison_delta_text(s.peak_delta_bytes, state.display.unit));
  }
}

std::string comparison_json_text(const AppState& state) {
  const BaselineState& b = state.baseline;
  if (!b.pinned || !state.report_valid) return {};
  // Compared here, not taken from the refresh's: a page call may come before the next frame.
  const stagemem::Comparison comparison = stagemem::compare_reports(b.report, state.report);
  if (!comparison.diagnostics.ok()) return {};
  const stagemem::ComparedReports compared{.a_config = b.config,
                                           .a = b.report,
                                           .b_config = state.reported_config,
                                           .b = state.report,
                                           .comparison = comparison};
  return stagemem::comparison_json(compared, "#" + stagemem::encode_fragment(b.config),
                                   "#" + stagemem::encode_fragment(state.reported_config));
}
