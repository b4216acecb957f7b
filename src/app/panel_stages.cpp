// The main view: one stacked bar per pipeline stage (bytes per rank), stacked by family
// (resident, measured gaps, then the phase that binds: stored activations and the co-live
// transient, or the optimizer step's transients) and within a family by term, each term in the
// colour of its name on every stage. Lines: the device capacity, and per stage the legacy flat
// headroom (resident + gaps + the flat constant) when one is set. The binding stage is outlined.
// Hovering a segment shows that term and the stage's largest terms; clicking a bar opens the
// stage's table. Under the chart: a shader-drawn heat strip and the per-stage summary.
// Every string drawn here comes from state.report_labels (built when the report changes).
#include <algorithm>
#include <string>

#include "actions.h"
#include "imgui.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

constexpr ImU32 binding_colour = IM_COL32(255, 170, 60, 255);
constexpr ImU32 axis_colour = IM_COL32(170, 172, 180, 255);
constexpr ImU32 capacity_colour = IM_COL32(235, 90, 80, 255);
constexpr ImU32 flat_over_colour = IM_COL32(120, 200, 120, 255);
constexpr ImU32 flat_under_colour = IM_COL32(255, 120, 200, 255);
constexpr ImU32 seam_colour = IM_COL32(20, 22, 26, 255);
constexpr ImVec4 warning_text(1.0f, 0.55f, 0.45f, 1.0f);

void colour_swatch(ImU32 colour) {
  const float size = ImGui::GetTextLineHeight() * 0.8f;
  const ImVec2 at = ImGui::GetCursorScreenPos();
  const float pad = (ImGui::GetTextLineHeight() - size) * 0.5f;
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(at.x, at.y + pad),
                                            ImVec2(at.x + size, at.y + pad + size), colour);
  ImGui::Dummy(ImVec2(size, ImGui::GetTextLineHeight()));
  ImGui::SameLine();
}

// The terms of a stage, largest first: the tooltip and the stage table share it. Names and
// formulas wrap inside their columns; `width` 0 fills the window; at most `max_rows` terms.
void draw_terms_table(const AppState& state, const char* id, const stagemem::StageReport& stage,
                      const StageLabels& labels, bool with_allocation, float width,
                      std::size_t max_rows) {
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg;
  if (!ImGui::BeginTable(id, with_allocation ? 7 : 5, flags, ImVec2(width, 0.0f))) return;
  ImGui::TableSetupColumn("term", ImGuiTableColumnFlags_WidthStretch, 1.3f);
  ImGui::TableSetupColumn("GiB per rank", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("exact bytes", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("formula", ImGuiTableColumnFlags_WidthStretch, 2.0f);
  ImGui::TableSetupColumn("tag", ImGuiTableColumnFlags_WidthFixed);
  if (with_allocation) {
    ImGui::TableSetupColumn("allocated at", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableSetupColumn("in peak", ImGuiTableColumnFlags_WidthFixed);
  }
  ImGui::TableHeadersRow();
  const std::size_t rows = std::min(max_rows, labels.terms_by_size.size());
  for (std::size_t row = 0; row < rows; ++row) {
    const std::size_t i = labels.terms_by_size[row];
    const stagemem::Term& term = stage.terms[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    colour_swatch(labels.terms[i].colour);
    ImGui::TextWrapped("%s", stagemem::term_name(term).c_str());
    ImGui::TableNextColumn();
    mono_text(state.mono_font, labels.terms[i].gib);
    ImGui::TableNextColumn();
    mono_text(state.mono_font, labels.terms[i].exact_bytes);
    ImGui::TableNextColumn();
    mono_text(state.mono_font, stagemem::term_formula(term), true);
    ImGui::TableNextColumn();
    text_view(stagemem::tag_name(term.tag));
    if (with_allocation) {
      ImGui::TableNextColumn();
      text_view(stagemem::allocation_point_name(term.allocated_at));
      ImGui::TableNextColumn();
      text_view(stagemem::in_peak_text(term));
    }
  }
  ImGui::EndTable();
}

// Where a stage's bar is, for its tooltip.
struct BarPlace {
  float chart_bottom = 0.0f;
  float left = 0.0f;
  float right = 0.0f;
};

void draw_bar_tooltip(const AppState& state, StagesView& view, const stagemem::StageReport& stage,
                      const StageLabels& labels, const BarPlace& bar, Actions& out) {
  // Placed by hand so that it never hides the bar being explained: under the chart (over the
  // summary table) when it fits there, else beside the bar (right of it, or left when the bar is
  // near the right edge). Kept inside the window using the height it had last frame.
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  const float margin = 8.0f * state.ui_scale;
  float width = std::min(viewport->WorkSize.x - 2.0f * margin, 720.0f * state.ui_scale);
  const ImVec2 mouse = ImGui::GetMousePos();
  const float left = viewport->WorkPos.x + margin;
  const float right = viewport->WorkPos.x + viewport->WorkSize.x - margin;
  const float bottom = viewport->WorkPos.y + viewport->WorkSize.y - margin;
  float x = std::clamp(mouse.x - width * 0.5f, left, std::max(left, right - width));
  float y = bar.chart_bottom + margin;
  if (y + view.tooltip_height > bottom) {
    // Beside the bar, on the side with room (narrower, down to 360 px, rather than over it).
    const float room_right = right - (bar.right + margin);
    const float room_left = bar.left - margin - left;
    const float narrowest = std::min(width, 360.0f * state.ui_scale);
    if (room_right >= width || (room_right >= room_left && room_right >= narrowest)) {
      width = std::min(width, room_right);
      x = bar.right + margin;
    } else if (room_left >= narrowest) {
      width = std::min(width, room_left);
      x = bar.left - margin - width;
    }
    y = std::clamp(mouse.y - view.tooltip_height * 0.5f, viewport->WorkPos.y + margin,
                   std::max(viewport->WorkPos.y + margin, bottom - view.tooltip_height));
  }
  ImGui::SetNextWindowPos(ImVec2(x, y));
  ImGui::SetNextWindowSize(ImVec2(width, 0.0f));
  if (!ImGui::BeginTooltip()) return;
  ImGui::TextUnformatted(labels.title.c_str());
  ImGui::Text("peak %s per rank", labels.peak_gib.c_str());
  ImGui::SameLine();
  mono_text(state.mono_font, labels.peak_bytes);
  if (view.hovered_term >= 0) {
    const auto i = static_cast<std::size_t>(view.hovered_term);
    const stagemem::Term& term = stage.terms[i];
    ImGui::SeparatorText("under the mouse");
    colour_swatch(labels.terms[i].colour);
    ImGui::TextWrapped("%s (%s, %s)", stagemem::term_name(term).c_str(),
                       stagemem::family_name(term.family).data(),
                       stagemem::tag_name(term.tag).data());
    ImGui::Text("%s", labels.terms[i].gib.c_str());
    ImGui::SameLine();
    mono_text(state.mono_font, labels.terms[i].exact_bytes);
    ImGui::TextDisabled("formula");
    mono_text(state.mono_font, stagemem::term_formula(term), true);
    ImGui::TextDisabled("scales with");
    ImGui::SameLine();
    ImGui::TextWrapped("%s", stagemem::term_scaling(term).c_str());
    const std::string_view source = stagemem::term_source(term, state.reported_config);
    if (!source.empty()) {
      ImGui::TextWrapped("source: %.*s", static_cast<int>(source.size()), source.data());
    }
    ImGui::SeparatorText("largest terms of the stage");
  }
  // The largest terms only: a tooltip taller than the window would hide the rest anyway.
  constexpr std::size_t tooltip_rows = 6;
  draw_terms_table(state, "tooltip_terms", stage, labels, false, 0.0f, tooltip_rows);
  if (stage.terms.size() > tooltip_rows) {
    ImGui::TextDisabled("the %d largest of %d terms; click for the stage's table",
                        static_cast<int>(tooltip_rows), static_cast<int>(stage.terms.size()));
  } else {
    ImGui::TextDisabled("click for the stage's table");
  }
  view.tooltip_height = ImGui::GetWindowHeight();
  const ImVec2 at = ImGui::GetWindowPos();
  const ImVec2 size = ImGui::GetWindowSize();
  out.publish(Widget::bar_tooltip, {at.x, at.y, at.x + size.x, at.y + size.y, out.frame(), true});
  ImGui::EndTooltip();
}

// The per-stage numbers under the chart; the binding stage's row is marked.
void draw_summary(const AppState& state, const stagemem::Report& report) {
  constexpr ImGuiTableFlags flags =
      ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit;
  const bool flat = report.flat_headroom_bytes > 0;
  if (!ImGui::BeginTable("summary", flat ? 7 : 6, flags)) return;
  ImGui::TableSetupColumn("stage");
  ImGui::TableSetupColumn("peak");
  ImGui::TableSetupColumn("headroom");
  ImGui::TableSetupColumn("non-parameter");
  ImGui::TableSetupColumn("phase that binds");
  ImGui::TableSetupColumn("in flight");
  if (flat) ImGui::TableSetupColumn("flat headroom margin");
  ImGui::TableHeadersRow();
  for (const auto& stage : report.stages) {
    const StageLabels& labels = state.report_labels.stages[static_cast<std::size_t>(stage.index)];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (stage.index == report.binding_stage) {
      ImGui::TextColored(ImVec4(1.0f, 0.67f, 0.24f, 1.0f), "%s (binding)", labels.axis.c_str());
    } else {
      ImGui::TextUnformatted(labels.axis.c_str());
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(labels.peak_gib.c_str());
    ImGui::TableNextColumn();
    if (stage.headroom_bytes < 0) {
      ImGui::TextColored(warning_text, "%s", labels.headroom.c_str());
    } else {
      ImGui::TextUnformatted(labels.headroom.c_str());
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(labels.non_parameter.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(labels.phase.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(labels.in_flight.c_str());
    if (flat) {
      ImGui::TableNextColumn();
      if (stage.flat_headroom_margin < 0) {
        ImGui::TextColored(warning_text, "%s", labels.flat_margin.c_str());
      } else {
        ImGui::TextUnformatted(labels.flat_margin.c_str());
      }
    }
  }
  ImGui::EndTable();
}

float y_of(std::int64_t bytes, std::int64_t scale, float bottom, float top) {
  return bottom - static_cast<float>(static_cast<double>(bytes) / static_cast<double>(scale)) *
                      (bottom - top);
}

// Every `step`-th stage label fits in `slot` pixels per stage: 1, 2, 4, 8, ... stages apart.
std::int64_t label_step(float label_width, float slot) {
  std::int64_t step = 1;
  while (static_cast<float>(step) * slot < label_width && step < (std::int64_t{1} << 20)) step *= 2;
  return step;
}

// The legend of the terms on the chart, as swatches with names that never break inside a word:
// an entry moves to the next line whole.
void draw_legend(const ReportLabels& labels) {
  const float right = ImGui::GetContentRegionAvail().x;
  float used = 0.0f;
  stagemem::Family family = stagemem::Family::resident;
  bool first = true;
  for (const LegendEntry& entry : labels.legend) {
    const std::string_view family_text = stagemem::family_name(entry.family);
    const bool new_family = first || entry.family != family;
    const float swatch = ImGui::GetTextLineHeight() * 0.8f;
    const float width = swatch + ImGui::GetStyle().ItemSpacing.x +
                        ImGui::CalcTextSize(entry.name.c_str()).x +
                        (new_family ? ImGui::CalcTextSize(family_text.data()).x + swatch : 0.0f);
    if (!first && !new_family && used + width + ImGui::GetStyle().ItemSpacing.x * 2.0f < right) {
      ImGui::SameLine(0.0f, ImGui::GetStyle().ItemSpacing.x * 2.0f);
      used += width + ImGui::GetStyle().ItemSpacing.x * 2.0f;
    } else {
      used = width;
    }
    if (new_family) {
      ImGui::TextDisabled("%.*s:", static_cast<int>(family_text.size()), family_text.data());
      ImGui::SameLine();
    }
    family = entry.family;
    first = false;
    colour_swatch(entry.colour);
    ImGui::TextUnformatted(entry.name.c_str());
  }
}

}  // namespace

void draw_stages(const AppState& state, StagesView& view, Actions& out) {
  const stagemem::Report& report = state.report;
  view.hovered_stage = -1;
  view.hovered_term = -1;
  if (!state.report_valid) {
    ImGui::TextWrapped("Fix the fields marked in red to see the per-stage memory.");
    return;
  }
  const bool stale = report_stale(state);
  const ReportLabels& all_labels = state.report_labels;
  bool any_over = false;
  for (const auto& stage : report.stages)
    any_over |= report.device.bytes > 0 && stage.headroom_bytes < 0;
  if (stale) {
    ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.30f, 1.0f),
                       "STALE: the report of the last valid configuration (%s); fix the fields "
                       "marked in red",
                       state.reported_config.model.c_str());
  } else {
    ImGui::Text("Per-rank memory of each pipeline stage (%s)", report.model.c_str());
  }
  if (!all_labels.device.empty()) {
    ImGui::SameLine();
    // Red only when some stage does not fit.
    const ImVec4 colour =
        any_over ? ImVec4(0.92f, 0.35f, 0.31f, 1.0f) : ImGui::GetStyle().Colors[ImGuiCol_Text];
    ImGui::TextColored(colour, "| device %s", all_labels.device.c_str());
  }
  if (!all_labels.flat_headroom.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("| flat headroom %s", all_labels.flat_headroom.c_str());
  }
  ImGui::TextDisabled(
      "stacked: resident, gaps, then the binding phase; hover a segment, click a bar");
  const std::int64_t scale_bytes = all_labels.scale_bytes;

  const float scale = state.ui_scale;
  const ImVec2 available = ImGui::GetContentRegionAvail();
  const float chart_height = std::max(140.0f * scale, available.y * 0.50f);
  const auto count = static_cast<float>(report.stages.size());
  // Compact bars down to a few pixels; beyond that the chart scrolls sideways.
  const float min_slot = 7.0f * scale;
  const float chart_width = std::max(available.x, count * min_slot);
  const bool scrolls = chart_width > available.x;
  const float scrollbar = scrolls ? ImGui::GetStyle().ScrollbarSize : 0.0f;
  ImGui::BeginChild("chart", ImVec2(available.x, chart_height + scrollbar), ImGuiChildFlags_None,
                    ImGuiWindowFlags_HorizontalScrollbar | ImGuiWindowFlags_NoBackground);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float label_height = ImGui::GetTextLineHeightWithSpacing();
  const float plot_top = origin.y + label_height;
  const float plot_bottom = origin.y + chart_height - label_height;
  const float slot = chart_width / std::max(1.0f, count);
  const float bar_width = std::max(1.0f, slot * (slot > 12.0f * scale ? 0.7f : 0.8f));
  // Stage labels: "stage 3" when there is room, else the bare number every few stages.
  const bool long_axis = ImGui::CalcTextSize("stage 000").x + 6.0f * scale <= slot;
  const std::int64_t axis_step =
      long_axis ? 1
                : label_step(ImGui::CalcTextSize(std::to_string(report.stages.size()).c_str()).x +
                                 8.0f * scale,
                             slot);
  // Peak labels above the bars only when each fits over its bar; else only the binding stage's.
  const bool peak_labels = ImGui::CalcTextSize("000.00 GiB").x + 4.0f * scale <= slot;
  view.chart_scrolls = scrolls;
  view.axis_label_step = axis_step;
  if (view.bar_rects.size() != report.stages.size())
    view.bar_rects.assign(report.stages.size(), {});
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  draw_list->AddLine(ImVec2(origin.x, plot_bottom), ImVec2(origin.x + chart_width, plot_bottom),
                     axis_colour, scale);
  const ImVec2 mouse = ImGui::GetMousePos();
  const stagemem::StageReport* tooltip_stage = nullptr;
  const StageLabels* tooltip_labels = nullptr;
  BarPlace tooltip_bar{.chart_bottom = origin.y + chart_height};

  for (const auto& stage : report.stages) {
    const auto index = static_cast<std::size_t>(stage.index);
    const StageLabels& labels = all_labels.stages[index];
    const float x0 = origin.x + slot * static_cast<float>(stage.index) + (slot - bar_width) * 0.5f;
    const float x1 = x0 + bar_width;
    ImGui::SetCursorScreenPos(ImVec2(x0, plot_top));
    ImGui::PushID(static_cast<int>(stage.index));
    if (ImGui::InvisibleButton("bar", ImVec2(bar_width, plot_bottom - plot_top))) {
      out.push(SelectStage{state.selected_stage == stage.index ? -1 : stage.index});
    }
    const bool hovered = ImGui::IsItemHovered();
    view.bar_rects[index] = last_item_rect(out.frame());
    ImGui::PopID();

    for (const BarSegment& segment : labels.segments) {
      const float top = y_of(segment.top, scale_bytes, plot_bottom, plot_top);
      const float bottom = y_of(segment.bottom, scale_bytes, plot_bottom, plot_top);
      const bool under_mouse = hovered && mouse.y >= top && mouse.y < bottom;
      if (under_mouse) view.hovered_term = static_cast<std::int64_t>(segment.term);
      draw_list->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom),
                               under_mouse ? IM_COL32_WHITE : segment.colour);
      if (bottom - top > 2.0f * scale && bar_width > 4.0f * scale) {
        draw_list->AddLine(ImVec2(x0, top), ImVec2(x1, top), seam_colour, 1.0f);
      }
    }
    const float peak_y = y_of(stage.peak_bytes, scale_bytes, plot_bottom, plot_top);
    const bool binding = stage.index == report.binding_stage;
    if (binding) {
      draw_list->AddRect(ImVec2(x0 - 2.0f * scale, peak_y - 2.0f * scale),
                         ImVec2(x1 + 2.0f * scale, plot_bottom), binding_colour, 2.0f * scale, 0,
                         2.5f * scale);
    }
    if (stage.index == state.selected_stage) {
      draw_list->AddRect(ImVec2(x0, peak_y), ImVec2(x1, plot_bottom), IM_COL32_WHITE, 0.0f, 0,
                         2.0f * scale);
    }
    if (report.flat_headroom_bytes > 0) {
      const float flat_y = y_of(stage.resident_bytes + stage.gap_bytes + report.flat_headroom_bytes,
                                scale_bytes, plot_bottom, plot_top);
      const ImU32 colour = stage.flat_headroom_margin < 0 ? flat_under_colour : flat_over_colour;
      for (float x = x0 - 4.0f * scale; x < x1 + 4.0f * scale; x += 8.0f * scale) {
        draw_list->AddLine(ImVec2(x, flat_y),
                           ImVec2(std::min(x + 5.0f * scale, x1 + 4.0f * scale), flat_y), colour,
                           2.0f * scale);
      }
    }
    if (peak_labels || binding) {
      // Centred over the bar, kept inside the chart.
      const float width = ImGui::CalcTextSize(labels.peak_gib.c_str()).x;
      const float x =
          std::clamp((x0 + x1 - width) * 0.5f, origin.x, origin.x + chart_width - width);
      draw_list->AddText(ImVec2(x, peak_y - label_height), binding ? binding_colour : axis_colour,
                         labels.peak_gib.c_str());
    }
    if (stage.index % axis_step == 0) {
      const std::string number = std::to_string(stage.index);
      const char* text = long_axis ? labels.axis.c_str() : number.c_str();
      const float width = ImGui::CalcTextSize(text).x;
      const float x =
          std::clamp((x0 + x1 - width) * 0.5f, origin.x, origin.x + chart_width - width);
      draw_list->AddText(ImVec2(x, plot_bottom + 2.0f * scale), axis_colour, text);
    }
    if (hovered) view.hovered_stage = stage.index;
    // Only over a segment: above the bar's top there is nothing to explain.
    if (hovered && view.hovered_term >= 0) {
      tooltip_stage = &stage;
      tooltip_labels = &labels;
      tooltip_bar.left = x0;
      tooltip_bar.right = x1;
    }
  }
  if (report.device.bytes > 0) {
    const float y = y_of(report.device.bytes, scale_bytes, plot_bottom, plot_top);
    const ImU32 line_colour = any_over ? capacity_colour : IM_COL32(150, 170, 200, 255);
    draw_list->AddLine(ImVec2(origin.x, y), ImVec2(origin.x + chart_width, y), line_colour,
                       2.0f * scale);
    // The label sits on the line's right end (of the visible part), on a backing so that bars
    // do not hide it.
    const ImVec2 text = ImGui::CalcTextSize(all_labels.device.c_str());
    const float visible_right = ImGui::GetWindowPos().x + ImGui::GetWindowWidth();
    const ImVec2 at(visible_right - text.x - 6.0f * scale, y - text.y - 3.0f * scale);
    draw_list->AddRectFilled(ImVec2(at.x - 3.0f * scale, at.y - 1.0f * scale),
                             ImVec2(at.x + text.x + 3.0f * scale, at.y + text.y + 1.0f * scale),
                             IM_COL32(23, 25, 30, 220), 3.0f * scale);
    draw_list->AddText(at, line_colour, all_labels.device.c_str());
  }
  if (stale) {
    // Veiled: still readable, visibly not the configuration on screen.
    draw_list->AddRectFilled(ImVec2(origin.x, origin.y),
                             ImVec2(origin.x + chart_width, origin.y + chart_height),
                             IM_COL32(23, 25, 30, 150));
    const char* mark = "STALE";
    const ImVec2 size = ImGui::CalcTextSize(mark);
    const float x = ImGui::GetWindowPos().x + (ImGui::GetWindowWidth() - size.x) * 0.5f;
    draw_list->AddText(ImVec2(x, origin.y + chart_height * 0.4f), IM_COL32(240, 190, 80, 255),
                       mark);
  }
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(chart_width, chart_height));
  ImGui::EndChild();
  if (tooltip_stage != nullptr) {
    draw_bar_tooltip(state, view, *tooltip_stage, *tooltip_labels, tooltip_bar, out);
  }

  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + chart_height + scrollbar));
  const ImVec2 below = ImGui::GetCursorScreenPos();
  HeatStrip& strip = view.heat_strip;
  strip.cell_count = std::min(static_cast<int>(report.stages.size()), HeatStrip::max_cells);
  for (int i = 0; i < strip.cell_count; ++i) {
    strip.values[static_cast<std::size_t>(i)] = static_cast<float>(
        static_cast<double>(report.stages[static_cast<std::size_t>(i)].peak_bytes) /
        static_cast<double>(scale_bytes));
  }
  const float strip_top = below.y + 4.0f * scale;
  queue_heat_strip(strip, ImGui::GetWindowDrawList(), ImVec2(below.x, strip_top),
                   ImVec2(below.x + available.x, strip_top + 10.0f * scale));
  ImGui::SetCursorScreenPos(ImVec2(below.x, strip_top + 14.0f * scale));
  ImGui::TextDisabled("heat strip: each stage's peak relative to the chart's full height");
  if (report.flat_headroom_bytes > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("| dashes: resident + flat headroom (green over-, pink under-provisions)");
  }
  // The legend scrolls inside a few lines, so that the summary table stays on the first screen.
  const float legend_lines =
      std::min(6.0f, 1.0f + static_cast<float>(all_labels.legend.size()) / 2.0f);
  ImGui::BeginChild("legend", ImVec2(0.0f, ImGui::GetTextLineHeightWithSpacing() * legend_lines),
                    ImGuiChildFlags_None);
  draw_legend(all_labels);
  ImGui::EndChild();
  draw_summary(state, report);

  if (state.selected_stage >= 0 &&
      state.selected_stage < static_cast<std::int64_t>(report.stages.size())) {
    const auto index = static_cast<std::size_t>(state.selected_stage);
    const StageLabels& labels = all_labels.stages[index];
    ImGui::SeparatorText(labels.title.c_str());
    ImGui::Text("peak %s per rank (%s); terms largest first", labels.peak_gib.c_str(),
                labels.peak_bytes.c_str());
    draw_terms_table(state, "terms", report.stages[index], labels, true, 0.0f,
                     labels.terms_by_size.size());
  }
}
