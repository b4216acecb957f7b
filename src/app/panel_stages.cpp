// The main view: one bar per pipeline stage (bytes per rank), the largest stage highlighted,
// a shader-drawn heat strip of the same values underneath, and the selected stage's terms.
// Every string drawn here comes from state.report_labels (built when the report changes).
#include <algorithm>
#include <string>

#include "app.h"
#include "imgui.h"

namespace {

constexpr ImU32 bar_colour = IM_COL32(70, 130, 180, 255);
constexpr ImU32 hovered_bar_colour = IM_COL32(100, 160, 210, 255);
constexpr ImU32 binding_colour = IM_COL32(230, 150, 60, 255);
constexpr ImU32 axis_colour = IM_COL32(170, 172, 180, 255);

void text_view(std::string_view text) {
  ImGui::TextUnformatted(text.data(), text.data() + text.size());
}

// Exact bytes and formulas in the monospaced font, so digits line up. `wrap`: at the cell's
// right edge (only for stretched columns: a fixed column takes its width from its text).
void mono_text(const AppState& state, const std::string& text, bool wrap = false) {
  ImGui::PushFont(state.mono_font);
  if (wrap) ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text.c_str(), text.c_str() + text.size());
  if (wrap) ImGui::PopTextWrapPos();
  ImGui::PopFont();
}

// The terms of a stage, largest first: the tooltip and the stage table share it. Names and
// formulas wrap inside their columns; `width` 0 fills the window; at most `max_rows` terms.
void draw_terms_table(const AppState& state, const char* id, const stagemem::StageReport& stage,
                      const StageLabels& labels, bool with_allocation, float width,
                      std::size_t max_rows) {
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable(id, with_allocation ? 6 : 5, flags, ImVec2(width, 0.0f))) return;
  ImGui::TableSetupColumn("term", ImGuiTableColumnFlags_WidthStretch, 1.3f);
  ImGui::TableSetupColumn("GiB per rank", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("exact bytes", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("formula", ImGuiTableColumnFlags_WidthStretch, 2.0f);
  ImGui::TableSetupColumn("tag", ImGuiTableColumnFlags_WidthFixed);
  if (with_allocation) ImGui::TableSetupColumn("allocated at", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableHeadersRow();
  const std::size_t rows = std::min(max_rows, labels.terms_by_size.size());
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t i = labels.terms_by_size[row];
    const stagemem::Term& term = stage.terms[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", term.name.c_str());
    ImGui::TableNextColumn();
    mono_text(state, labels.terms[i].gib);
    ImGui::TableNextColumn();
    mono_text(state, labels.terms[i].exact_bytes);
    ImGui::TableNextColumn();
    mono_text(state, term.formula, true);
    ImGui::TableNextColumn();
    text_view(stagemem::tag_name(term.tag));
    if (with_allocation) {
      ImGui::TableNextColumn();
      text_view(stagemem::allocation_point_name(term.allocated_at));
    }
  }
  ImGui::EndTable();
}

void draw_bar_tooltip(AppState& state, const stagemem::StageReport& stage,
                      const StageLabels& labels) {
  // Placed by hand: ImGui leaves a tooltip wider than either side of the mouse hanging off the
  // screen. Kept inside the window using the height it had last frame (the tooltip ignores the
  // mouse, so covering the pointer does not end the hover).
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float margin = 8.0f * state.ui_scale;
  const float width = std::min(viewport->WorkSize.x - 2.0f * margin, 720.0f * state.ui_scale);
  const ImVec2 mouse = ImGui::GetMousePos();
  const float right = viewport->WorkPos.x + viewport->WorkSize.x - margin;
  const float bottom = viewport->WorkPos.y + viewport->WorkSize.y - margin;
  const float x = std::clamp(mouse.x + 16.0f * state.ui_scale, viewport->WorkPos.x + margin,
                             std::max(viewport->WorkPos.x + margin, right - width));
  const float y = std::max(viewport->WorkPos.y + margin, std::min(mouse.y + 16.0f * state.ui_scale,
                                                                  bottom - state.tooltip_height));
  ImGui::SetNextWindowPos(ImVec2(x, y));
  ImGui::SetNextWindowSize(ImVec2(width, 0.0f));
  if (!ImGui::BeginTooltip()) return;
  ImGui::TextUnformatted(labels.title.c_str());
  ImGui::Text("peak %s per rank", labels.peak_gib.c_str());
  ImGui::SameLine();
  mono_text(state, labels.peak_bytes);
  // The largest terms only: a tooltip taller than the window would hide the rest anyway.
  constexpr std::size_t tooltip_rows = 8;
  draw_terms_table(state, "tooltip_terms", stage, labels, false, 0.0f, tooltip_rows);
  if (stage.terms.size() > tooltip_rows) {
    ImGui::TextDisabled("the %d largest of %d terms; click for the stage's table",
                        static_cast<int>(tooltip_rows), static_cast<int>(stage.terms.size()));
  } else {
    ImGui::TextDisabled("click for the stage's table");
  }
  state.tooltip_height = ImGui::GetWindowHeight();
  ImGui::EndTooltip();
}

}  // namespace

void draw_stages(AppState& state, const stagemem::Report& report) {
  state.hovered_stage = -1;
  if (!report.diagnostics.ok()) {
    ImGui::TextWrapped("Fix the highlighted fields to see the per-stage memory.");
    return;
  }
  ImGui::Text("Per-rank memory of each pipeline stage (%s)", report.model.c_str());
  ImGui::TextDisabled("hover a bar for its largest terms, click it for the full table");
  std::int64_t largest = 1;
  for (const auto& s : report.stages) largest = std::max(largest, s.peak_bytes);

  const float scale = state.ui_scale;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 available = ImGui::GetContentRegionAvail();
  const float chart_height = std::max(120.0f * scale, available.y * 0.55f);
  const float label_height = ImGui::GetTextLineHeightWithSpacing();
  const float plot_top = origin.y + label_height;
  const float plot_bottom = origin.y + chart_height - label_height;
  const auto count = static_cast<float>(report.stages.size());
  const float slot = available.x / std::max(1.0f, count);
  const float bar_width = slot * 0.7f;
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  draw_list->AddLine(ImVec2(origin.x, plot_bottom), ImVec2(origin.x + available.x, plot_bottom),
                     axis_colour, scale);

  for (const auto& stage : report.stages) {
    const auto index = static_cast<std::size_t>(stage.index);
    const StageLabels& labels = state.report_labels.stages[index];
    const float x0 = origin.x + slot * static_cast<float>(stage.index) + (slot - bar_width) * 0.5f;
    const float fraction =
        static_cast<float>(static_cast<double>(stage.peak_bytes) / static_cast<double>(largest));
    const float y0 = plot_bottom - fraction * (plot_bottom - plot_top);
    ImGui::SetCursorScreenPos(ImVec2(x0, plot_top));
    ImGui::PushID(static_cast<int>(stage.index));
    if (ImGui::InvisibleButton("bar", ImVec2(bar_width, plot_bottom - plot_top))) {
      state.selected_stage = state.selected_stage == stage.index ? -1 : stage.index;
    }
    const bool hovered = ImGui::IsItemHovered();
    state.bar_rects[index] = {x0, plot_top, x0 + bar_width, plot_bottom, state.frame_count, true};
    ImGui::PopID();

    const bool binding = stage.index == report.binding_stage;
    const ImU32 colour = binding ? binding_colour : hovered ? hovered_bar_colour : bar_colour;
    draw_list->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + bar_width, plot_bottom), colour,
                             2.0f * scale);
    if (stage.index == state.selected_stage) {
      draw_list->AddRect(ImVec2(x0, y0), ImVec2(x0 + bar_width, plot_bottom), IM_COL32_WHITE,
                         2.0f * scale, 0, 2.0f * scale);
    }
    draw_list->AddText(ImVec2(x0, y0 - label_height), axis_colour, labels.peak_gib.c_str());
    draw_list->AddText(ImVec2(x0, plot_bottom + 2.0f * scale), axis_colour, labels.axis.c_str());
    if (hovered) {
      state.hovered_stage = stage.index;
      draw_bar_tooltip(state, stage, labels);
    }
  }

  HeatStrip& strip = state.heat_strip;
  strip.cell_count = std::min(static_cast<int>(report.stages.size()), HeatStrip::max_cells);
  for (int i = 0; i < strip.cell_count; ++i) {
    strip.values[static_cast<std::size_t>(i)] = static_cast<float>(
        static_cast<double>(report.stages[static_cast<std::size_t>(i)].peak_bytes) /
        static_cast<double>(largest));
  }
  const float strip_top = origin.y + chart_height + 4.0f * scale;
  queue_heat_strip(strip, draw_list, ImVec2(origin.x, strip_top),
                   ImVec2(origin.x + available.x, strip_top + 14.0f * scale));
  ImGui::SetCursorScreenPos(ImVec2(origin.x, strip_top + 20.0f * scale));
  ImGui::TextDisabled("heat strip: each stage's bytes relative to the largest stage");

  if (state.selected_stage >= 0 &&
      state.selected_stage < static_cast<std::int64_t>(report.stages.size())) {
    const auto index = static_cast<std::size_t>(state.selected_stage);
    const StageLabels& labels = state.report_labels.stages[index];
    ImGui::SeparatorText(labels.title.c_str());
    ImGui::Text("peak %s per rank (%s); terms largest first", labels.peak_gib.c_str(),
                labels.peak_bytes.c_str());
    draw_terms_table(state, "terms", report.stages[index], labels, true, 0.0f,
                     labels.terms_by_size.size());
  }
}
