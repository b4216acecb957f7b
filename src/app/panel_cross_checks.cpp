// The cross-check panel: each measured value next to the sum of exactly the derived terms alive
// at its measurement point, the gap in bytes and GiB, the ratio, the terms summed and what could
// explain the gap. Measurements are entered under "Measured values" in the configuration; they
// never feed the model. Strings come from state.report_labels (built when the report changes).
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
  for (std::size_t i = 0; i < report.cross_checks.size() && i < labels.size(); ++i) {
    const stagemem::CrossCheck& check = report.cross_checks[i];
    const CrossCheckLabels& text = labels[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::SeparatorText(text.title.c_str());
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
    ImGui::PopID();
  }
}
