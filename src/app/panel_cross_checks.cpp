// The cross-check panel: a one-line verdict first (the binding peak reading against the derived
// peak), then each measured value on one line, its details folded: the sum of exactly the
// derived terms alive at its measurement point, the gap in bytes and GiB, the ratio, the terms
// summed and what could explain the gap. Measurements are entered under "Measured values" in
// the configuration; they never feed the model. Strings come from state.report_labels (built
// when the report changes).
// Then the scaling cross-check (ScalingState, state.h): measured peaks at several sequence
// lengths or micro-batch sizes, typed here one per line or from a link's scaling= keys, fitted as
// a + b x tokens beside the derived constant and slope; its texts come from the refresh
// (render/scaling_text.h, the cells `stagemem scaling` prints).
#include <algorithm>

#include "actions.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
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

// A table of render/table.h's cells, as wide as the panel: every column stretches, weighted by its
// widest cell (text columns at most a third of the panel), numbers right-aligned in the mono font.
void draw_table(const AppState& state, const char* id, const stagemem::Table& table) {
  if (table.columns.empty()) return;
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable(id, static_cast<int>(table.columns.size()), flags)) return;
  const float text_limit = ImGui::GetContentRegionAvail().x / 3.0f;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    const stagemem::TableColumn& column = table.columns[c];
    const bool number = column.align == stagemem::Align::right;
    float width = ImGui::CalcTextSize(column.header.c_str()).x;
    if (number) ImGui::PushFont(state.mono_font);
    for (const std::vector<std::string>& cells : table.rows) {
      if (c < cells.size()) width = std::max(width, ImGui::CalcTextSize(cells[c].c_str()).x);
    }
    if (number) ImGui::PopFont();
    if (!number) width = std::min(width, text_limit);
    ImGui::TableSetupColumn(column.header.c_str(), ImGuiTableColumnFlags_WidthStretch,
                            width + 2.0f * ImGui::GetStyle().CellPadding.x);
  }
  ImGui::TableHeadersRow();
  for (const std::vector<std::string>& cells : table.rows) {
    ImGui::TableNextRow();
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      ImGui::TableNextColumn();
      const std::string& cell = c < cells.size() ? cells[c] : std::string();
      if (table.columns[c].align != stagemem::Align::right) {
        ImGui::TextWrapped("%s", cell.c_str());
        continue;
      }
      ImGui::PushFont(state.mono_font);
      const float shift = ImGui::GetContentRegionAvail().x - ImGui::CalcTextSize(cell.c_str()).x;
      ImGui::PopFont();
      if (shift > 0.0f) ImGui::SetCursorPosX(ImGui::GetCursorPosX() + shift);
      mono_text(state.mono_font, cell);
    }
  }
  ImGui::EndTable();
}

void disabled_wrapped(const std::string& text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("%s", text.c_str());
  ImGui::PopStyleColor();
}

// The points being typed (one per line) and the stage, with the button that applies them.
void draw_scaling_input(const AppState& state, CrossChecksView& view, Actions& out) {
  const ScalingState& s = state.scaling;
  if (view.synced_generation != s.generation) {
    view.points_text.clear();
    for (const stagemem::ScalingPoint& point : s.points.points)
      view.points_text += stagemem::scaling_point_text(point) + "\n";
    view.stage_text = s.points.stage >= 0 ? std::to_string(s.points.stage) : "";
    view.synced_generation = s.generation;
  }
  disabled_wrapped(
      "Measured peaks of this configuration at two or more sizes, one per line: seq=4096:61.2GiB "
      "(or mbs=2:...), optionally @source; stage: where they were measured (empty: the stage "
      "that binds at the most tokens). The link carries them (scaling=); they never feed the "
      "model.");
  ImGui::InputTextMultiline("##scaling_points", &view.points_text,
                            ImVec2(-1.0f, ImGui::GetTextLineHeightWithSpacing() * 3.5f));
  publish(out, Widget::scaling_points);
  ImGui::SetNextItemWidth(ImGui::CalcTextSize("0000000").x);
  ImGui::InputTextWithHint("stage##scaling_stage", "binding", &view.stage_text);
  ImGui::SameLine();
  if (ImGui::Button("Apply points")) {
    out.push(SetScalingPoints{.text = view.points_text, .stage = view.stage_text});
  }
  publish(out, Widget::scaling_apply);
  if (!s.input_error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", s.input_error.c_str());
    ImGui::PopStyleColor();
  }
}

// The scaling cross-check: the points being typed, then its headline, notes, the fit, the points
// and the not-linear terms.
void draw_scaling(const AppState& state, CrossChecksView& view, Actions& out) {
  const ScalingState& s = state.scaling;
  view.scaling_drawn = true;
  ImGui::SeparatorText("Scaling: measured = a + b x tokens");
  draw_scaling_input(state, view, out);
  if (s.points.points.empty() || !s.has_check) return;
  ImGui::Spacing();
  if (!s.error.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.45f, 0.4f, 1.0f));
    ImGui::TextWrapped("%s", s.error.c_str());
    ImGui::PopStyleColor();
    return;
  }
  ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1.0f, 0.85f, 0.45f, 1.0f));
  ImGui::TextWrapped("%s", s.headline.c_str());
  ImGui::PopStyleColor();
  if (!s.notes.empty()) ImGui::TextWrapped("%s", s.notes.c_str());
  draw_table(state, "scaling_fit", s.fit_table);
  ImGui::Spacing();
  draw_table(state, "scaling_points_table", s.points_table);
  if (!s.not_linear_table.rows.empty()) {
    ImGui::TextUnformatted("Not linear in tokens (in neither a nor b):");
    draw_table(state, "scaling_not_linear", s.not_linear_table);
  }
  disabled_wrapped(s.subject);
}

void draw_readings(const AppState& state) {
  const stagemem::Report& report = state.report;
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

}  // namespace

// The measurements are edited in the configuration column; the scaling points here.
void draw_cross_checks(const AppState& state, CrossChecksView& view, Actions& out) {
  view.scaling_drawn = false;
  if (!state.report.diagnostics.ok()) {
    ImGui::TextWrapped("Fix the highlighted fields to see the cross-checks.");
    return;
  }
  // A link with scaling points opens this tab for them: they come first then.
  if (state.scaling.points.points.empty()) {
    draw_readings(state);
    ImGui::Spacing();
    draw_scaling(state, view, out);
  } else {
    draw_scaling(state, view, out);
    ImGui::Spacing();
    ImGui::SeparatorText("Measured values");
    draw_readings(state);
  }
}
