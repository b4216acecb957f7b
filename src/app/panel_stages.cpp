// The main view: one bar per pipeline stage (bytes per rank), the largest stage highlighted,
// a shader-drawn heat strip of the same values underneath, and the selected stage's terms.
#include <algorithm>
#include <string>

#include "app.h"
#include "imgui.h"
#include "units.h"

namespace {

constexpr ImU32 bar_colour = IM_COL32(70, 130, 180, 255);
constexpr ImU32 binding_colour = IM_COL32(230, 150, 60, 255);
constexpr ImU32 axis_colour = IM_COL32(160, 160, 170, 255);

void draw_stage_table(const stagemem::StageReport& stage) {
  ImGui::SeparatorText(("Stage " + std::to_string(stage.index)).c_str());
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable("terms", 5, flags)) return;
  ImGui::TableSetupColumn("term");
  ImGui::TableSetupColumn("bytes per rank");
  ImGui::TableSetupColumn("formula");
  ImGui::TableSetupColumn("tag");
  ImGui::TableSetupColumn("allocated at");
  ImGui::TableHeadersRow();
  for (const auto& term : stage.terms) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(term.name.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%s", stagemem::format_gib(term.bytes).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(term.formula.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::string(stagemem::tag_name(term.tag)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(std::string(stagemem::allocation_point_name(term.allocated_at)).c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void draw_stages(AppState& state, const stagemem::Report& report) {
  if (!report.diagnostics.ok()) {
    ImGui::TextWrapped("Fix the highlighted fields to see the per-stage memory.");
    return;
  }
  ImGui::Text("Per-rank memory of each pipeline stage (%s)", report.model.c_str());
  ImGui::TextDisabled("bf16 weights; click a bar for its terms");
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
    const float x0 = origin.x + slot * static_cast<float>(stage.index) + (slot - bar_width) * 0.5f;
    const float fraction = static_cast<float>(static_cast<double>(stage.peak_bytes) /
                                              static_cast<double>(largest));
    const float y0 = plot_bottom - fraction * (plot_bottom - plot_top);
    const bool binding = stage.index == report.binding_stage;
    draw_list->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + bar_width, plot_bottom),
                             binding ? binding_colour : bar_colour, 2.0f * scale);
    const std::string value = stagemem::format_gib(stage.peak_bytes);
    draw_list->AddText(ImVec2(x0, y0 - label_height), axis_colour, value.c_str());
    const std::string name = "stage " + std::to_string(stage.index);
    draw_list->AddText(ImVec2(x0, plot_bottom + 2.0f * scale), axis_colour, name.c_str());
    ImGui::SetCursorScreenPos(ImVec2(x0, plot_top));
    ImGui::PushID(static_cast<int>(stage.index));
    if (ImGui::InvisibleButton("bar", ImVec2(bar_width, plot_bottom - plot_top))) {
      state.selected_stage = state.selected_stage == stage.index ? -1 : stage.index;
    }
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("stage %lld: layers %lld-%lld\n%s (%s B) per rank",
                        static_cast<long long>(stage.index), static_cast<long long>(stage.first_layer),
                        static_cast<long long>(stage.first_layer + stage.layer_count - 1),
                        value.c_str(), stagemem::group_digits(stage.peak_bytes).c_str());
    }
    ImGui::PopID();
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
    draw_stage_table(report.stages[static_cast<std::size_t>(state.selected_stage)]);
  }
}
