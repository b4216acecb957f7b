// The cross-check panel: a one-line verdict first (the binding peak reading against the derived
// peak), then each measured value on one line, its details folded: the sum of exactly the
// derived terms alive at its measurement point, the gap in bytes and GiB, the ratio, the terms
// summed and what could explain the gap. Measurements are entered under "Measured values" in
// the configuration; they never feed the model. Strings come from state.report_labels (built
// when the report changes).
#include "actions.h"
#include "imgui.h"
#include "state.h"
#include "widgets.h"

namespace {

void row(const char* name, const std::string& value, const AppState& state) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(name);
  ImGui::TableNextColumn();
  mono_text(state.mono_font, value);
}

}  // namespace

// Nothing to ask for here: the measurements are edited in the configuration column.
void draw_cross_checks(const AppState& state, Actions& /*out*/) {
  const stagemem::Report& report = state.report;
  if (!report.diagnostics.ok()) {
    ImGui::TextWrapped("Fix the highlighted fields to see the cross-checks.");
    return;
  }
  if (report.cross_checks.empty()) {
    ImGui::TextWrapped(
        "No measured values yet. Add one under \"Measured values\" in the "
        "configuration (a reading after optimizer init, after the first step, a "
        "steady-state peak or one named term) to compare it with the derived terms "
        "alive at that moment.");
    return;
  }
  const auto& labels = state.report_labels.cross_checks;
  // The verdict first: one line a reader can stop at; each reading's numbers on one line after
  // it, its details (source, sums, explanations, terms) folded, the verdict's reading open.
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.85f, 0.45f, 1.0f));
  ImGui::TextWrapped("%s", state.report_labels.cross_check_verdict.c_str());
  ImGui::PopStyleColor();
  ImGui::Spacing();
  for (std::size_t i = 0; i < report.cross_checks.size() && i < labels.size(); ++i) {
    const stagemem::CrossCheck& check = report.cross_checks[i];
    const CrossCheckLabels& text = labels[i];
    ImGui::PushID(static_cast<int>(i));
    const bool verdict = static_cast<std::int64_t>(i) == state.report_labels.verdict_check;
    ImGui::SetNextItemOpen(verdict, ImGuiCond_Once);
    // Where and the numbers first, so a narrow window still shows them; then what it is.
    const stagemem::Measurement& m = check.measurement;
    const bool open =
        m.rank >= 0 ? ImGui::TreeNodeEx(
                          "check", ImGuiTreeNodeFlags_SpanAvailWidth,
                          "stage %lld, rank %lld: %s | %s", static_cast<long long>(m.stage),
                          static_cast<long long>(m.rank), text.line.c_str(), text.title.c_str())
                    : ImGui::TreeNodeEx("check", ImGuiTreeNodeFlags_SpanAvailWidth,
                                        "stage %lld: %s | %s", static_cast<long long>(m.stage),
                                        text.line.c_str(), text.title.c_str());
    if (!open) {
      ImGui::PopID();
      continue;
    }
    ImGui::TextDisabled("source: %s", check.measurement.source.c_str());
    constexpr ImGuiTableFlags flags =
        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
    if (ImGui::BeginTable("numbers", 2, flags)) {
      row("measured", text.measured, state);
      row("derived (alive at the point)", text.derived, state);
      row("gap (measured - derived)", text.gap, state);
      row("ratio (measured / derived)", text.ratio, state);
      ImGui::EndTable();
    }
    if (!text.explanations.empty()) {
      ImGui::TextUnformatted("What could explain the gap, most specific first:");
      for (const std::string& explanation : text.explanations) {
        ImGui::Bullet();
        ImGui::TextWrapped("%s", explanation.c_str());
      }
    }
    if (ImGui::TreeNode("terms", "the %d derived terms summed",
                        static_cast<int>(text.alive_terms.size()))) {
      for (const std::string& term : text.alive_terms) ImGui::BulletText("%s", term.c_str());
      ImGui::TreePop();
    }
    ImGui::TreePop();
    ImGui::PopID();
  }
}
