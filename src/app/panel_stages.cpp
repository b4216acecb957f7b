// The main view: one stacked bar per pipeline stage (bytes per rank), stacked by family
// (resident, measured gaps, then the phase that binds: stored activations and the co-live
// transient, or the optimizer step's transients) and within a family by term, each term in the
// colour of its name on every stage. Lines: the device capacity, and per stage the legacy flat
// headroom (resident + gaps + the flat constant) when one is set. The binding stage is outlined.
// Hovering a segment shows that term and the stage's largest terms; clicking a bar opens the
// stage's table. Under the chart: a shader-drawn heat strip and the per-stage summary.
// With a baseline pinned (BaselineState), each stage's baseline peak is a ghost outline with a
// tick at its top, over and around the bar; the heading and the tooltip say the difference.
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
constexpr ImU32 baseline_colour = IM_COL32(120, 220, 255, 255);
constexpr ImU32 baseline_ghost = IM_COL32(120, 220, 255, 150);
constexpr ImVec4 baseline_text(0.47f, 0.86f, 1.0f, 1.0f);

// The pinned baseline's comparison, when it is of the report on screen (the frame's refresh
// rebuilds it before the panels draw); nullptr when none is pinned.
const BaselineState* compared_baseline(const AppState& state) {
  const BaselineState& b = state.baseline;
  if (!b.pinned || b.compared_report != state.report_generation ||
      b.compared_baseline != b.generation || !b.comparison.diagnostics.ok()) {
    return nullptr;
  }
  return &b;
}

// The baseline's stage `index`, or nullptr when the baseline has no such stage.
const stagemem::StageComparison* baseline_stage(const BaselineState* b, std::int64_t index) {
  if (b == nullptr || index < 0 ||
      index >= static_cast<std::int64_t>(b->comparison.stages.size())) {
    return nullptr;
  }
  const stagemem::StageComparison& s = b->comparison.stages[static_cast<std::size_t>(index)];
  return s.in_a ? &s : nullptr;
}

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
  // The column's title names the unit the amounts are in (AppState::display).
  const std::string amount_header =
      std::string(stagemem::unit_name(state.display.unit)) + " per rank";
  ImGui::TableSetupColumn(amount_header.c_str(), ImGuiTableColumnFlags_WidthFixed);
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

// The tooltip's top left and width. Placed by hand so that it never hides the bar being explained:
// under the chart (over the summary table) when it fits there, else beside the bar (right of it,
// or left when the bar is near the right edge). Kept inside the window using the height it had
// last frame.
struct TooltipPlace {
  float x = 0.0f, y = 0.0f, width = 0.0f;
};

TooltipPlace place_bar_tooltip(const AppState& state, const StagesView& view, const BarPlace& bar) {
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
  return {x, y, width};
}

// The term under the mouse: its name, family and tag, bytes, formula, scaling and source.
void hovered_term_lines(const AppState& state, const stagemem::StageReport& stage,
                        const StageLabels& labels, std::size_t i) {
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

void draw_bar_tooltip(const AppState& state, StagesView& view, const stagemem::StageReport& stage,
                      const StageLabels& labels, const BarPlace& bar, Actions& out) {
  const TooltipPlace place = place_bar_tooltip(state, view, bar);
  ImGui::SetNextWindowPos(ImVec2(place.x, place.y));
  ImGui::SetNextWindowSize(ImVec2(place.width, 0.0f));
  if (!ImGui::BeginTooltip()) return;
  ImGui::TextUnformatted(labels.title.c_str());
  ImGui::Text("peak %s per rank", labels.peak_gib.c_str());
  ImGui::SameLine();
  mono_text(state.mono_font, labels.peak_bytes);
  ImGui::Text("peak reserved %s, device %s", labels.peak_reserved.c_str(),
              labels.device_peak.c_str());
  ImGui::TextWrapped("headroom against %s", labels.fit_basis.c_str());
  const BaselineState* baseline = compared_baseline(state);
  if (baseline_stage(baseline, stage.index) != nullptr) {
    const auto i = static_cast<std::size_t>(stage.index);
    ImGui::TextColored(baseline_text, "baseline %s, difference %s", baseline->peak_text[i].c_str(),
                       baseline->delta_text[i].c_str());
  }
  if (view.hovered_term >= 0) {
    hovered_term_lines(state, stage, labels, static_cast<std::size_t>(view.hovered_term));
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
  if (!ImGui::BeginTable("summary", flat ? 9 : 8, flags)) return;
  ImGui::TableSetupColumn("stage");
  ImGui::TableSetupColumn("peak allocated");
  ImGui::TableSetupColumn("peak reserved");
  ImGui::TableSetupColumn("device");
  ImGui::TableSetupColumn(state.report_labels.headroom_column.c_str());
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
    ImGui::TextUnformatted(labels.peak_reserved.c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(labels.device_peak.c_str());
    ImGui::TableNextColumn();
    if (stage.headroom_bytes < 0) {
      ImGui::TextColored(warning_text, "%s", labels.headroom.c_str());
    } else {
      ImGui::TextUnformatted(labels.headroom.c_str());
    }
    ImGui::SetItemTooltip("headroom is measured against %s", labels.fit_basis.c_str());
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

// Some stage does not fit on the device.
bool any_stage_over(const stagemem::Report& report) {
  bool any_over = false;
  for (const auto& stage : report.stages)
    any_over |= report.device.bytes > 0 && stage.headroom_bytes < 0;
  return any_over;
}

// What the chart shows (or that it is stale), the device and the flat headroom.
// How the tab's parts share its height (ImGui pixels). In a short window (1024 x 640) the chart
// keeps a useful height and the per-stage table stays on screen: the heading's second line and
// the strip's caption become tooltips and the legend scrolls in two lines.
struct StagesFit {
  bool compact = false;
  float legend_lines = 6.0f;
  float chart_height = 0.0f;  // the chart's child window, its labels included
};

constexpr float min_useful_chart = 240.0f;  // CSS pixels: bars a reader can compare

StagesFit fit_stages(const AppState& state) {
  const float scale = state.ui_scale;
  const ImGuiStyle& style = ImGui::GetStyle();
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float available = ImGui::GetContentRegionAvail().y;
  const auto stages = static_cast<float>(std::min<std::size_t>(state.report.stages.size(), 8));
  const float table =
      (stages + 1.0f) * (ImGui::GetTextLineHeight() + 2.0f * style.CellPadding.y + 1.0f) +
      style.ItemSpacing.y;
  StagesFit fit;
  fit.legend_lines =
      std::min(6.0f, 1.0f + static_cast<float>(state.report_labels.legend.size()) / 2.0f);
  // As on a tall screen: half the room under the two heading lines, at least 140 pixels.
  const float heading = 2.0f * line;
  const float strip = 14.0f * scale + line;
  fit.chart_height = std::max(140.0f * scale, (available - heading) * 0.50f);
  if (heading + fit.chart_height + strip + fit.legend_lines * line + table <= available) {
    return fit;
  }
  fit.compact = true;
  fit.legend_lines = std::min(fit.legend_lines, 2.0f);
  const float room =
      available - line - (14.0f * scale + style.ItemSpacing.y) - fit.legend_lines * line - table;
  fit.chart_height = std::max(min_useful_chart * scale, room);
  return fit;
}

void draw_heading(const AppState& state, bool stale, bool any_over, bool compact) {
  const ReportLabels& all_labels = state.report_labels;
  if (stale) {
    ImGui::TextColored(ImVec4(0.95f, 0.75f, 0.30f, 1.0f),
                       "STALE: the report of the last valid configuration (%s); fix the fields "
                       "marked in red",
                       state.reported_config.model.c_str());
  } else {
    ImGui::Text("Per-rank memory of each pipeline stage (%s)", state.report.model.c_str());
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
  constexpr const char* how_to_read =
      "stacked: resident, gaps, then the binding phase; hover a segment, click a bar";
  if (compact) {
    ImGui::SetItemTooltip("%s", how_to_read);
  } else {
    ImGui::TextDisabled("%s", how_to_read);
  }
  if (const BaselineState* b = compared_baseline(state)) {
    // The marks' legend and the answer in one line: what changed, and the binding peaks.
    colour_swatch(baseline_colour);
    ImGui::TextColored(baseline_text, "baseline (outline): %s | binding peak %s",
                       b->changes_text.c_str(), b->binding_peaks.c_str());
    const std::size_t a_stages = b->report.stages.size();
    if (a_stages > state.report.stages.size()) {
      ImGui::TextDisabled("the baseline's stages %d-%d have no bar here: see Compare",
                          static_cast<int>(state.report.stages.size()),
                          static_cast<int>(a_stages) - 1);
    }
  }
}

// The bar chart's size, decided before its child window opens: half the panel's height, as wide
// as the panel or, with more stages than compact bars fit, wider (then it scrolls sideways).
struct ChartSize {
  ImVec2 available;  // the panel's room when the chart starts
  float width = 0.0f, height = 0.0f;
  bool scrolls = false;
  float scrollbar = 0.0f;  // the scroll bar's height under the chart, when it scrolls
};

ChartSize chart_size(const AppState& state, const StagesFit& fit) {
  const float scale = state.ui_scale;
  ChartSize size;
  size.available = ImGui::GetContentRegionAvail();
  size.height = fit.chart_height;
  const auto count = static_cast<float>(state.report.stages.size());
  // Compact bars down to a few pixels; beyond that the chart scrolls sideways.
  const float min_slot = 7.0f * scale;
  size.width = std::max(size.available.x, count * min_slot);
  size.scrolls = size.width > size.available.x;
  size.scrollbar = size.scrolls ? ImGui::GetStyle().ScrollbarSize : 0.0f;
  return size;
}

// Where the bars go inside the chart's child window (ImGui pixels) and which labels fit.
struct BarLayout {
  ImVec2 origin;  // the chart's top left
  float width = 0.0f, height = 0.0f;
  float scale = 1.0f;  // AppState::ui_scale
  float label_height = 0.0f;
  float plot_top = 0.0f, plot_bottom = 0.0f;
  float slot = 0.0f;       // one stage's width
  float bar_width = 0.0f;  // its bar's, centred in the slot
  bool long_axis = false;  // "stage 3" under each bar; else the bare number every axis_step-th
  std::int64_t axis_step = 1;
  bool peak_labels = false;      // every bar's peak over it; else only the binding stage's
  std::int64_t scale_bytes = 1;  // the bytes at the plot's top (ReportLabels::scale_bytes)

  float y(std::int64_t bytes) const { return y_of(bytes, scale_bytes, plot_bottom, plot_top); }
};

BarLayout layout_bars(const AppState& state, const ChartSize& size) {
  const stagemem::Report& report = state.report;
  BarLayout bars;
  const float scale = state.ui_scale;
  const auto count = static_cast<float>(report.stages.size());
  bars.origin = ImGui::GetCursorScreenPos();
  bars.width = size.width;
  bars.height = size.height;
  bars.scale = scale;
  bars.label_height = ImGui::GetTextLineHeightWithSpacing();
  bars.plot_top = bars.origin.y + bars.label_height;
  bars.plot_bottom = bars.origin.y + size.height - bars.label_height;
  bars.slot = size.width / std::max(1.0f, count);
  bars.bar_width = std::max(1.0f, bars.slot * (bars.slot > 12.0f * scale ? 0.7f : 0.8f));
  // Stage labels: "stage 3" when there is room, else the bare number every few stages.
  bars.long_axis = ImGui::CalcTextSize("stage 000").x + 6.0f * scale <= bars.slot;
  bars.axis_step =
      bars.long_axis
          ? 1
          : label_step(
                ImGui::CalcTextSize(std::to_string(report.stages.size()).c_str()).x + 8.0f * scale,
                bars.slot);
  // Peak labels above the bars only when each fits over its bar; else only the binding stage's.
  bars.peak_labels = ImGui::CalcTextSize("000.00 GiB").x + 4.0f * scale <= bars.slot;
  bars.scale_bytes = state.report_labels.scale_bytes;
  // A baseline peak above every bar stays inside the chart.
  if (const BaselineState* b = compared_baseline(state)) {
    for (const stagemem::StageComparison& s : b->comparison.stages) {
      if (s.index < static_cast<std::int64_t>(report.stages.size()))
        bars.scale_bytes = std::max(bars.scale_bytes, s.a_peak_bytes);
    }
  }
  return bars;
}

// The bar the tooltip explains: the hovered one, when a segment is under the mouse.
struct TooltipTarget {
  const stagemem::StageReport* stage = nullptr;
  const StageLabels* labels = nullptr;
  BarPlace bar;
};

// The bar's button (a click opens or closes the stage's table); true while hovered.
bool bar_button(const AppState& state, StagesView& view, const BarLayout& bars,
                const stagemem::StageReport& stage, float x0, Actions& out) {
  ImGui::SetCursorScreenPos(ImVec2(x0, bars.plot_top));
  ImGui::PushID(static_cast<int>(stage.index));
  if (ImGui::InvisibleButton("bar", ImVec2(bars.bar_width, bars.plot_bottom - bars.plot_top))) {
    out.push(SelectStage{state.selected_stage == stage.index ? -1 : stage.index});
  }
  const bool hovered = ImGui::IsItemHovered();
  view.bar_rects[static_cast<std::size_t>(stage.index)] = last_item_rect(out.frame());
  ImGui::PopID();
  return hovered;
}

// The bar's segments, one per term; the one under the mouse white (and noted in the view).
void draw_segments(ImDrawList* draw_list, StagesView& view, const BarLayout& bars,
                   const StageLabels& labels, float x0, float x1, bool hovered) {
  const ImVec2 mouse = ImGui::GetMousePos();
  for (const BarSegment& segment : labels.segments) {
    const float top = bars.y(segment.top);
    const float bottom = bars.y(segment.bottom);
    const bool under_mouse = hovered && mouse.y >= top && mouse.y < bottom;
    if (under_mouse) view.hovered_term = static_cast<std::int64_t>(segment.term);
    draw_list->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom),
                             under_mouse ? IM_COL32_WHITE : segment.colour);
    if (bottom - top > 2.0f * bars.scale && bars.bar_width > 4.0f * bars.scale) {
      draw_list->AddLine(ImVec2(x0, top), ImVec2(x1, top), seam_colour, 1.0f);
    }
  }
}

// Outlines (the binding stage, the selected one) and the flat headroom's dashes over a bar.
void draw_bar_marks(ImDrawList* draw_list, const AppState& state, const BarLayout& bars,
                    const stagemem::StageReport& stage, float x0, float x1) {
  const stagemem::Report& report = state.report;
  const float scale = bars.scale;
  const float peak_y = bars.y(stage.peak_bytes);
  if (stage.index == report.binding_stage) {
    draw_list->AddRect(ImVec2(x0 - 2.0f * scale, peak_y - 2.0f * scale),
                       ImVec2(x1 + 2.0f * scale, bars.plot_bottom), binding_colour, 2.0f * scale, 0,
                       2.5f * scale);
  }
  if (stage.index == state.selected_stage) {
    draw_list->AddRect(ImVec2(x0, peak_y), ImVec2(x1, bars.plot_bottom), IM_COL32_WHITE, 0.0f, 0,
                       2.0f * scale);
  }
  if (report.flat_headroom_bytes > 0) {
    const float flat_y =
        bars.y(stage.resident_bytes + stage.gap_bytes + report.flat_headroom_bytes);
    const ImU32 colour = stage.flat_headroom_margin < 0 ? flat_under_colour : flat_over_colour;
    for (float x = x0 - 4.0f * scale; x < x1 + 4.0f * scale; x += 8.0f * scale) {
      draw_list->AddLine(ImVec2(x, flat_y),
                         ImVec2(std::min(x + 5.0f * scale, x1 + 4.0f * scale), flat_y), colour,
                         2.0f * scale);
    }
  }
}

// The baseline's peak of this stage: a ghost outline from the axis up to it, a little wider than
// the bar, with a tick on top (dark-edged, so it reads over any segment colour).
// Its amount (`text`) over the tick when the tick stands clear above the bar's own peak label and
// the labels fit.
void draw_baseline_mark(ImDrawList* draw_list, const BarLayout& bars,
                        const stagemem::StageComparison& s, const std::string& text, float x0,
                        float x1) {
  const float scale = bars.scale;
  const float y = bars.y(s.a_peak_bytes);
  const float pad = std::min(3.0f * scale, bars.slot * 0.1f);
  draw_list->AddRect(ImVec2(x0 - pad, y), ImVec2(x1 + pad, bars.plot_bottom), baseline_ghost, 0.0f,
                     0, 1.5f * scale);
  draw_list->AddLine(ImVec2(x0 - pad - 2.0f * scale, y), ImVec2(x1 + pad + 2.0f * scale, y),
                     seam_colour, 5.0f * scale);
  draw_list->AddLine(ImVec2(x0 - pad - 2.0f * scale, y), ImVec2(x1 + pad + 2.0f * scale, y),
                     baseline_colour, 2.5f * scale);
  if (bars.peak_labels && y < bars.y(s.b_peak_bytes) - 2.0f * bars.label_height) {
    const float width = ImGui::CalcTextSize(text.c_str()).x;
    const float x =
        std::clamp((x0 + x1 - width) * 0.5f, bars.origin.x, bars.origin.x + bars.width - width);
    draw_list->AddText(ImVec2(x, y - bars.label_height), baseline_colour, text.c_str());
  }
}

// The bar's peak over it (when they fit, or it binds) and its stage under it (every axis_step-th),
// each centred on the bar and kept inside the chart.
// `baseline_y`: the baseline's tick over this bar (0: none); a label it would cross sits above it.
void draw_bar_labels(ImDrawList* draw_list, const BarLayout& bars,
                     const stagemem::StageReport& stage, const StageLabels& labels, bool binding,
                     float x0, float x1, float baseline_y) {
  const float left = bars.origin.x;
  const float right = bars.origin.x + bars.width;
  if (bars.peak_labels || binding) {
    const float width = ImGui::CalcTextSize(labels.peak_gib.c_str()).x;
    const float x = std::clamp((x0 + x1 - width) * 0.5f, left, right - width);
    float bottom = bars.y(stage.peak_bytes);
    if (baseline_y > 0.0f && baseline_y < bottom && baseline_y > bottom - bars.label_height) {
      bottom = baseline_y - 2.0f * bars.scale;
    }
    draw_list->AddText(ImVec2(x, bottom - bars.label_height),
                       binding ? binding_colour : axis_colour, labels.peak_gib.c_str());
  }
  if (stage.index % bars.axis_step == 0) {
    const std::string number = std::to_string(stage.index);
    const char* text = bars.long_axis ? labels.axis.c_str() : number.c_str();
    const float width = ImGui::CalcTextSize(text).x;
    const float x = std::clamp((x0 + x1 - width) * 0.5f, left, right - width);
    draw_list->AddText(ImVec2(x, bars.plot_bottom + 2.0f * bars.scale), axis_colour, text);
  }
}

// One bar per stage with its button, segments, marks and labels; returns the bar to explain.
TooltipTarget draw_bars(const AppState& state, StagesView& view, const BarLayout& bars,
                        Actions& out) {
  const stagemem::Report& report = state.report;
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  draw_list->AddLine(ImVec2(bars.origin.x, bars.plot_bottom),
                     ImVec2(bars.origin.x + bars.width, bars.plot_bottom), axis_colour, bars.scale);
  TooltipTarget target{.bar = {.chart_bottom = bars.origin.y + bars.height}};
  const BaselineState* baseline = compared_baseline(state);
  for (const auto& stage : report.stages) {
    const StageLabels& labels = state.report_labels.stages[static_cast<std::size_t>(stage.index)];
    const float x0 = bars.origin.x + bars.slot * static_cast<float>(stage.index) +
                     (bars.slot - bars.bar_width) * 0.5f;
    const float x1 = x0 + bars.bar_width;
    const bool hovered = bar_button(state, view, bars, stage, x0, out);
    draw_segments(draw_list, view, bars, labels, x0, x1, hovered);
    draw_bar_marks(draw_list, state, bars, stage, x0, x1);
    const stagemem::StageComparison* compared = baseline_stage(baseline, stage.index);
    if (compared != nullptr) {
      draw_baseline_mark(draw_list, bars, *compared,
                         baseline->peak_text[static_cast<std::size_t>(stage.index)], x0, x1);
    }
    draw_bar_labels(draw_list, bars, stage, labels, stage.index == report.binding_stage, x0, x1,
                    compared != nullptr ? bars.y(compared->a_peak_bytes) : 0.0f);
    if (hovered) view.hovered_stage = stage.index;
    // Only over a segment: above the bar's top there is nothing to explain.
    if (hovered && view.hovered_term >= 0) {
      target.stage = &stage;
      target.labels = &labels;
      target.bar.left = x0;
      target.bar.right = x1;
    }
  }
  return target;
}

// The device's capacity across the chart, red when some stage does not fit. The label sits on
// the line's right end (of the visible part), on a backing so that bars do not hide it.
void draw_capacity(const AppState& state, const BarLayout& bars, bool any_over) {
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  const std::string& device = state.report_labels.device;
  const float scale = bars.scale;
  const float y = bars.y(state.report.device.bytes);
  const ImU32 line_colour = any_over ? capacity_colour : IM_COL32(150, 170, 200, 255);
  draw_list->AddLine(ImVec2(bars.origin.x, y), ImVec2(bars.origin.x + bars.width, y), line_colour,
                     2.0f * scale);
  const ImVec2 text = ImGui::CalcTextSize(device.c_str());
  const float visible_right = ImGui::GetWindowPos().x + ImGui::GetWindowWidth();
  const ImVec2 at(visible_right - text.x - 6.0f * scale, y - text.y - 3.0f * scale);
  draw_list->AddRectFilled(ImVec2(at.x - 3.0f * scale, at.y - 1.0f * scale),
                           ImVec2(at.x + text.x + 3.0f * scale, at.y + text.y + 1.0f * scale),
                           IM_COL32(23, 25, 30, 220), 3.0f * scale);
  draw_list->AddText(at, line_colour, device.c_str());
}

// A stale report's chart is veiled: still readable, visibly not the configuration on screen.
void draw_stale_veil(const BarLayout& bars) {
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  draw_list->AddRectFilled(ImVec2(bars.origin.x, bars.origin.y),
                           ImVec2(bars.origin.x + bars.width, bars.origin.y + bars.height),
                           IM_COL32(23, 25, 30, 150));
  const char* mark = "STALE";
  const ImVec2 size = ImGui::CalcTextSize(mark);
  const float x = ImGui::GetWindowPos().x + (ImGui::GetWindowWidth() - size.x) * 0.5f;
  draw_list->AddText(ImVec2(x, bars.origin.y + bars.height * 0.4f), IM_COL32(240, 190, 80, 255),
                     mark);
}

// The bar chart in its own child window (it scrolls sideways with many stages); returns where it
// was drawn and the bar whose tooltip to show.
BarLayout draw_chart(const AppState& state, StagesView& view, const ChartSize& size, bool stale,
                     bool any_over, TooltipTarget& target, Actions& out) {
  const stagemem::Report& report = state.report;
  ImGui::BeginChild("chart", ImVec2(size.available.x, size.height + size.scrollbar),
                    ImGuiChildFlags_None,
                    ImGuiWindowFlags_HorizontalScrollbar | ImGuiWindowFlags_NoBackground);
  const BarLayout bars = layout_bars(state, size);
  view.chart_scrolls = size.scrolls;
  view.axis_label_step = bars.axis_step;
  if (view.bar_rects.size() != report.stages.size())
    view.bar_rects.assign(report.stages.size(), {});
  target = draw_bars(state, view, bars, out);
  if (report.device.bytes > 0) draw_capacity(state, bars, any_over);
  if (stale) draw_stale_veil(bars);
  ImGui::SetCursorScreenPos(bars.origin);
  ImGui::Dummy(ImVec2(size.width, size.height));
  ImGui::EndChild();
  publish(out, Widget::stages_chart);
  return bars;
}

// Under the chart: a shader-drawn strip of each stage's peak, and what the chart's marks mean.
void draw_heat_strip(const AppState& state, StagesView& view, float width, bool compact) {
  const stagemem::Report& report = state.report;
  const float scale = state.ui_scale;
  const ImVec2 below = ImGui::GetCursorScreenPos();
  HeatStrip& strip = view.heat_strip;
  strip.cell_count = std::min(static_cast<int>(report.stages.size()), HeatStrip::max_cells);
  for (int i = 0; i < strip.cell_count; ++i) {
    strip.values[static_cast<std::size_t>(i)] = static_cast<float>(
        static_cast<double>(report.stages[static_cast<std::size_t>(i)].peak_bytes) /
        static_cast<double>(state.report_labels.scale_bytes));
  }
  const float strip_top = below.y + 4.0f * scale;
  queue_heat_strip(strip, ImGui::GetWindowDrawList(), ImVec2(below.x, strip_top),
                   ImVec2(below.x + width, strip_top + 10.0f * scale));
  constexpr const char* caption =
      "heat strip: each stage's peak relative to the chart's full height";
  if (compact) {
    // A short window: the caption is the strip's tooltip.
    ImGui::SetCursorScreenPos(ImVec2(below.x, strip_top));
    ImGui::Dummy(ImVec2(width, 10.0f * scale));
    ImGui::SetItemTooltip("%s", caption);
    return;
  }
  ImGui::SetCursorScreenPos(ImVec2(below.x, strip_top + 14.0f * scale));
  ImGui::TextDisabled("%s", caption);
  if (report.flat_headroom_bytes > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("| dashes: resident + flat headroom (green over-, pink under-provisions)");
  }
}

// The legend scrolls inside a few lines, so that the summary table stays on the first screen.
void draw_legend_box(const ReportLabels& labels, float legend_lines) {
  ImGui::BeginChild("legend", ImVec2(0.0f, ImGui::GetTextLineHeightWithSpacing() * legend_lines),
                    ImGuiChildFlags_None);
  draw_legend(labels);
  ImGui::EndChild();
}

// The table of the stage a click selected, every term.
void draw_selected_stage(const AppState& state) {
  const stagemem::Report& report = state.report;
  if (state.selected_stage < 0 ||
      state.selected_stage >= static_cast<std::int64_t>(report.stages.size())) {
    return;
  }
  const auto index = static_cast<std::size_t>(state.selected_stage);
  const StageLabels& labels = state.report_labels.stages[index];
  ImGui::SeparatorText(labels.title.c_str());
  ImGui::Text("peak %s per rank (%s); terms largest first", labels.peak_gib.c_str(),
              labels.peak_bytes.c_str());
  draw_terms_table(state, "terms", report.stages[index], labels, true, 0.0f,
                   labels.terms_by_size.size());
}

}  // namespace

void draw_stages(const AppState& state, StagesView& view, Actions& out) {
  view.hovered_stage = -1;
  view.hovered_term = -1;
  if (!state.report_valid) {
    ImGui::TextWrapped("Fix the fields marked in red to see the per-stage memory.");
    return;
  }
  const bool stale = report_stale(state);
  const bool any_over = any_stage_over(state.report);
  const StagesFit fit = fit_stages(state);
  draw_heading(state, stale, any_over, fit.compact);
  const ChartSize size = chart_size(state, fit);
  TooltipTarget target;
  const BarLayout bars = draw_chart(state, view, size, stale, any_over, target, out);
  if (target.stage != nullptr) {
    draw_bar_tooltip(state, view, *target.stage, *target.labels, target.bar, out);
  }
  ImGui::SetCursorScreenPos(ImVec2(bars.origin.x, bars.origin.y + size.height + size.scrollbar));
  draw_heat_strip(state, view, size.available.x, fit.compact);
  draw_legend_box(state.report_labels, fit.legend_lines);
  ImGui::BeginGroup();
  draw_summary(state, state.report);
  ImGui::EndGroup();
  publish(out, Widget::stages_summary);
  draw_selected_stage(state);
}
