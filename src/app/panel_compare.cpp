// The "Compare" tab: the pinned baseline (A) against the configuration on screen (B), B - A.
// First what changed and each side's verdict, then every stage's peak in A and B with the
// difference and whether it fits (click a row to choose the stage), then the chosen stage's terms
// whose bytes changed, largest change first (default: B's binding stage). Every cell is the core's
// (render/comparison.h, built by the frame's refresh into BaselineState): the same words and
// numbers `stagemem diff` prints for the two links.
// Without a baseline the tab says how to pin one. "Compare with bf16" (there, and above a
// comparison) pins the bf16 twin of the configuration on screen: what its low precision changed.
#include <algorithm>
#include <string>

#include "actions.h"
#include "imgui.h"
#include "state.h"
#include "widgets.h"

namespace {

constexpr ImVec4 more_colour(1.0f, 0.55f, 0.45f, 1.0f);    // B needs more memory than A
constexpr ImVec4 less_colour(0.45f, 0.85f, 0.55f, 1.0f);   // B needs less
constexpr ImVec4 side_a_colour(0.47f, 0.86f, 1.0f, 1.0f);  // the baseline's marks' colour
constexpr ImVec4 heading_colour(1.0f, 0.67f, 0.24f, 1.0f);

// A signed difference cell ("+4.20 GiB", "-81,920 B", "0 B") in the colour of its sign.
void difference_cell(const AppState& state, const std::string& text) {
  ImGui::PushFont(state.mono_font);
  if (text.starts_with("+")) {
    ImGui::TextColored(more_colour, "%s", text.c_str());
  } else if (text.starts_with("-")) {
    ImGui::TextColored(less_colour, "%s", text.c_str());
  } else {
    ImGui::TextDisabled("%s", text.c_str());
  }
  ImGui::PopFont();
}

// One cell: right-aligned columns hold amounts (monospaced, right-aligned), a "difference" column
// is coloured by its sign, the rest is wrapped text.
void table_cell(const AppState& state, const stagemem::TableColumn& column,
                const std::string& text) {
  if (column.header == "difference") {
    const float width = ImGui::CalcTextSize(text.c_str()).x;
    ImGui::SetCursorPosX(ImGui::GetCursorPosX() +
                         std::max(0.0f, ImGui::GetContentRegionAvail().x - width * 1.1f));
    difference_cell(state, text);
  } else if (column.align == stagemem::Align::right) {
    ImGui::PushFont(state.mono_font);
    const float width = ImGui::CalcTextSize(text.c_str()).x;
    ImGui::SetCursorPosX(ImGui::GetCursorPosX() +
                         std::max(0.0f, ImGui::GetContentRegionAvail().x - width));
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopFont();
  } else {
    ImGui::TextWrapped("%s", text.c_str());
  }
}

// Amount columns (right-aligned) are as wide as their widest cell, in the monospaced font the
// cells are drawn in; the other text columns as wide as their widest cell or header (short:
// layers, family, fits), so none is cut; the first column (the stage, a term's name, which
// wraps) takes the rest.
void setup_columns(const AppState& state, const stagemem::Table& table) {
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    const stagemem::TableColumn& column = table.columns[c];
    if (column.align != stagemem::Align::right) {
      if (c == 0) {
        ImGui::TableSetupColumn(column.header.c_str(), ImGuiTableColumnFlags_WidthStretch);
        continue;
      }
      float natural = ImGui::CalcTextSize(column.header.c_str()).x;
      for (const std::vector<std::string>& cells : table.rows) {
        if (c < cells.size()) natural = std::max(natural, ImGui::CalcTextSize(cells[c].c_str()).x);
      }
      ImGui::TableSetupColumn(column.header.c_str(), ImGuiTableColumnFlags_WidthFixed,
                              natural + ImGui::GetStyle().CellPadding.x);
      continue;
    }
    float width = ImGui::CalcTextSize(column.header.c_str()).x;
    ImGui::PushFont(state.mono_font);
    for (const std::vector<std::string>& cells : table.rows) {
      if (c < cells.size()) width = std::max(width, ImGui::CalcTextSize(cells[c].c_str()).x);
    }
    ImGui::PopFont();
    ImGui::TableSetupColumn(column.header.c_str(), ImGuiTableColumnFlags_WidthFixed,
                            width * 1.1f + ImGui::GetStyle().CellPadding.x);
  }
}

// The per-stage table; a click on a row chooses its stage (view.stage). Scrolls inside a dozen
// rows, so the changed terms stay on the first screen at any PP, and sideways where its ten
// columns are wider than the panel (no column is cut).
void draw_stage_table(const AppState& state, CompareView& view, std::int64_t shown, Actions& out) {
  const stagemem::Table& table = state.baseline.stage_table;
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                                    ImGuiTableFlags_ScrollY | ImGuiTableFlags_ScrollX;
  const float rows = static_cast<float>(std::min<std::size_t>(table.rows.size(), 12) + 1);
  const float height =
      rows * (ImGui::GetTextLineHeight() + 2.0f * ImGui::GetStyle().CellPadding.y) +
      ImGui::GetStyle().ScrollbarSize;
  if (!ImGui::BeginTable("compare_stages", static_cast<int>(table.columns.size()), flags,
                         ImVec2(0.0f, height + ImGui::GetStyle().CellPadding.y * 2.0f))) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  setup_columns(state, table);
  ImGui::TableHeadersRow();
  view.row_rects.assign(table.rows.size(), WidgetRect{});
  for (std::size_t row = 0; row < table.rows.size(); ++row) {
    const auto index = static_cast<std::int64_t>(row);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(row));
    // The whole row is the stage's button; its first cell's text is drawn over it.
    if (ImGui::Selectable(
            "##row", index == shown,
            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowOverlap)) {
      view.stage = index;
    }
    view.row_rects[row] = last_item_rect(out.frame());
    ImGui::SameLine(0.0f, 0.0f);
    ImGui::PopID();
    const std::vector<std::string>& cells = table.rows[row];
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (c > 0) ImGui::TableNextColumn();
      table_cell(state, table.columns[c], c < cells.size() ? cells[c] : std::string());
    }
  }
  ImGui::EndTable();
}

void draw_term_table(const AppState& state, const stagemem::Table& table) {
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable("compare_terms", static_cast<int>(table.columns.size()), flags)) return;
  setup_columns(state, table);
  ImGui::TableHeadersRow();
  for (const std::vector<std::string>& cells : table.rows) {
    ImGui::TableNextRow();
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      ImGui::TableNextColumn();
      table_cell(state, table.columns[c], c < cells.size() ? cells[c] : std::string());
    }
  }
  ImGui::EndTable();
}

// The stage whose terms are listed: the chosen one while it exists, else B's binding stage.
std::int64_t shown_stage(const BaselineState& b, const CompareView& view) {
  const auto stages = static_cast<std::int64_t>(b.comparison.stages.size());
  if (view.stage >= 0 && view.stage < stages) return view.stage;
  if (b.comparison.b_binding_stage >= 0 && b.comparison.b_binding_stage < stages)
    return b.comparison.b_binding_stage;
  return stages > 0 ? 0 : -1;
}

void draw_stage_picker(const AppState& state, CompareView& view, std::int64_t shown, Actions& out) {
  const BaselineState& b = state.baseline;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.0f);
  const std::string preview = "stage " + std::to_string(shown);
  if (ImGui::BeginCombo("##compare_stage", preview.c_str())) {
    for (const stagemem::StageComparison& s : b.comparison.stages) {
      const std::string label = "stage " + std::to_string(s.index);
      if (ImGui::Selectable(label.c_str(), s.index == shown)) view.stage = s.index;
    }
    ImGui::EndCombo();
  }
  publish(out, Widget::compare_stage);
}

void draw_empty(const AppState& state, Actions& out) {
  ImGui::TextWrapped(
      "Compare two configurations: pin the one on screen as the baseline, then edit (TP 8 vs "
      "TP 4, bf16 vs fp8, the even split vs the advised layout). Each stage's bar then shows the "
      "baseline's peak as an outline, and this tab lists every stage's peak in both with the "
      "difference and the terms that changed. The link carries both.");
  ImGui::Spacing();
  ImGui::BeginDisabled(!state.report_valid || report_stale(state));
  if (ImGui::Button("Pin as baseline (Ctrl+B)")) out.push(PinBaseline{});
  ImGui::EndDisabled();
  ImGui::SameLine();
  compare_with_bf16_button(state, out, Widget::compare_bf16);
}

}  // namespace

void draw_compare(const AppState& state, CompareView& view, Actions& out) {
  const BaselineState& b = state.baseline;
  if (!b.pinned) return draw_empty(state, out);
  if (!state.report_valid || b.compared_report != state.report_generation ||
      b.compared_baseline != b.generation) {
    ImGui::TextWrapped("Fix the fields marked in red to compare with the baseline.");
    return;
  }
  if (!b.comparison.diagnostics.ok()) {
    for (const stagemem::FieldMessage& e : b.comparison.diagnostics.errors) {
      ImGui::TextColored(error_colour, "%s: %s", e.field.c_str(), e.message.c_str());
    }
    return;
  }
  if (report_stale(state)) {
    ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.30f, 1.0f),
                       "STALE: B is the report of the last valid configuration; fix the fields "
                       "marked in red");
  }
  ImGui::TextColored(heading_colour, "Settings changed: %s", b.changes_text.c_str());
  ImGui::Text("Binding peak: %s", b.binding_peaks.c_str());
  ImGui::TextColored(side_a_colour, "A (baseline):");
  ImGui::SameLine();
  ImGui::TextWrapped("%s. %s", b.a_summary.c_str(), b.a_verdict.c_str());
  ImGui::TextUnformatted("B (on screen):");
  ImGui::SameLine();
  ImGui::TextWrapped("%s. %s", b.b_summary.c_str(), b.b_verdict.c_str());
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("differences are B - A; click a stage for its changed terms");
  ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
  compare_with_bf16_button(state, out, Widget::compare_bf16);
  const std::int64_t shown = shown_stage(b, view);
  draw_stage_table(state, view, shown, out);
  if (shown < 0) return;
  const auto i = static_cast<std::size_t>(shown);
  ImGui::Spacing();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("Changed terms of");
  ImGui::SameLine();
  draw_stage_picker(state, view, shown, out);
  ImGui::SameLine();
  ImGui::TextDisabled("%s; largest change first", b.term_headings[i].c_str());
  if (b.term_tables[i].rows.empty()) {
    ImGui::TextDisabled("no term of this stage changed");
  } else {
    draw_term_table(state, b.term_tables[i]);
  }
}
