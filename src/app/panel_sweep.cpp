// The sweep heat map: two configuration fields (axes), each with a list of values; every cell is
// the estimate of the current configuration with both values, coloured by the binding stage's
// headroom (red: does not fit) or, without a device, by its peak. The grid is drawn by our own
// shader (heat_map.h), the numbers by ImGui on top. Hover a cell for its numbers; click it to
// apply its two values to the configuration (the link follows through the usual sync).
// The grid is the core's sweep engine's (plan/sweep.h), recomputed (sweep.h) only when the
// configuration or the axes change, a time slice per frame by the frame's refresh.
#include <algorithm>

#include "actions.h"
#include "config/config_fields.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
#include "plan/sweep.h"
#include "state.h"
#include "widgets.h"

namespace {

constexpr ImU32 text_on_cell = IM_COL32(15, 16, 20, 255);
constexpr ImU32 current_colour = IM_COL32(255, 255, 255, 255);
constexpr ImVec4 dropped_colour(0.95f, 0.80f, 0.35f, 1.0f);  // a warning: the grid is smaller

bool parallel_axis(std::string_view key) {
  return key == "tp" || key == "pp" || key == "cp" || key == "ep" || key == "dp";
}

// The heat map's colours with what they mean (the same ramps as shaders/heat_map.frag).
void draw_colour_legend(bool headroom_mode, float scale) {
  struct Stop {
    ImU32 colour;
    const char* text;
  };
  constexpr Stop headroom[] = {
      {IM_COL32(128, 10, 15, 255), "over by 25%+"},   {IM_COL32(237, 84, 71, 255), "does not fit"},
      {IM_COL32(237, 158, 51, 255), "fits, tight"},   {IM_COL32(158, 194, 77, 255), "25% headroom"},
      {IM_COL32(41, 140, 140, 255), "50%+ headroom"}, {IM_COL32(82, 84, 92, 255), "invalid"}};
  constexpr Stop peak[] = {{IM_COL32(68, 1, 84, 255), "smallest peak"},
                           {IM_COL32(33, 145, 140, 255), "half the largest"},
                           {IM_COL32(253, 231, 37, 255), "largest peak"},
                           {IM_COL32(82, 84, 92, 255), "invalid"}};
  const float size = ImGui::GetTextLineHeight() * 0.8f;
  bool first = true;
  const auto draw = [&](const Stop& stop) {
    if (!first) ImGui::SameLine(0.0f, 12.0f * scale);
    first = false;
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float pad = (ImGui::GetTextLineHeight() - size) * 0.5f;
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(at.x, at.y + pad),
                                              ImVec2(at.x + size, at.y + pad + size), stop.colour);
    ImGui::Dummy(ImVec2(size, ImGui::GetTextLineHeight()));
    ImGui::SameLine();
    ImGui::TextUnformatted(stop.text);
  };
  if (headroom_mode) {
    for (const Stop& stop : headroom) draw(stop);
  } else {
    for (const Stop& stop : peak) draw(stop);
  }
  ImGui::TextDisabled(
      "white frame inside a cell: this configuration; hover a cell for its numbers "
      "or why it is invalid");
}

void edit_axis(const AppState& state, SweepView& view, std::size_t axis, const char* name,
               Actions& out) {
  const SweepAxisEdit& edited = state.sweep.axes[axis];
  // The text being typed stays the panel's until it is applied; a new text of the axis (applied,
  // refused, suggested, or from a link) replaces it.
  std::string& text = view.values_text[axis];
  if (view.values_shown[axis] != edited.values_text) {
    text = edited.values_text;
    view.values_shown[axis] = edited.values_text;
  }
  ImGui::PushID(name);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(name);
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.0f);
  if (ImGui::BeginCombo("##field", edited.key())) {
    // The fields the engine can sweep (plan/sweep.h: sweepable), in the field table's order.
    for (const stagemem::ConfigField* field : stagemem::sweepable_fields()) {
      // Keys are string literals of the field table: NUL-terminated.
      if (ImGui::Selectable(field->key.data(), field == edited.axis.field)) {
        out.push(SetSweepAxis{axis, std::string(field->key), ""});
      }
      ImGui::SetItemTooltip("%.*s", static_cast<int>(field->help.size()), field->help.data());
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-1.0f);
  if (ImGui::InputText("##values", &text, ImGuiInputTextFlags_EnterReturnsTrue) ||
      ImGui::IsItemDeactivatedAfterEdit()) {
    out.push(SetSweepAxis{axis, edited.key(), text});
  }
  publish(out, axis == 0 ? Widget::sweep_x_values : Widget::sweep_y_values);
  ImGui::SetItemTooltip("comma-separated values in the field's link form; Enter applies");
  if (!edited.error.empty()) {
    ImGui::TextColored(error_colour, "%s", edited.error.c_str());
  }
  // Values no cell can make valid are left out of the grid: say which and why, in full.
  if (const std::string& dropped = state.sweep.dropped_text[axis]; !dropped.empty()) {
    ImGui::PushStyleColor(ImGuiCol_Text, dropped_colour);
    ImGui::TextWrapped("%s", dropped.c_str());
    ImGui::PopStyleColor();
  }
  ImGui::PopID();
}

// Copies the sweep's cells into the heat map's texture values when the sweep changed.
void feed_heat_map(HeatMap& map, const Sweep& sweep, std::uint64_t sweeps) {
  if (map.version == sweeps) return;
  map.version = sweeps;
  map.columns = static_cast<int>(sweep.columns);
  map.rows = static_cast<int>(sweep.rows);
  map.headroom_mode = sweep_device_bytes(sweep) > 0;
  const stagemem::SweepRun& run = sweep.run;
  for (std::size_t i = 0; i < run.cells.size() && i < map.values.size(); ++i) {
    const stagemem::SweepCell& cell = run.cells[i];
    // Headroom as a fraction of the cell's own device (a sweep over `device` has several).
    map.values[i] = !cell.valid ? HeatMap::invalid_cell
                    : map.headroom_mode
                        ? (cell.device_bytes > 0
                               ? static_cast<float>(static_cast<double>(cell.min_headroom_bytes) /
                                                    static_cast<double>(cell.device_bytes))
                               : HeatMap::invalid_cell)
                        : static_cast<float>(static_cast<double>(cell.max_peak_bytes) /
                                             static_cast<double>(std::max<std::int64_t>(
                                                 1, run.largest_peak_bytes)));
  }
}

// How far the sweep has got: its timings when complete, else the cells evaluated so far.
void draw_progress(const Sweep& sweep) {
  if (sweep.complete) {
    ImGui::TextDisabled(
        "%zu cells in %.1f ms (%.1f ms computing, at most %.1f ms in one frame; each model "
        "resolved once, its estimate cache kept across edits)",
        sweep.run.cells.size(), sweep.last_milliseconds, sweep.compute_milliseconds,
        sweep.longest_slice_milliseconds);
  } else {
    ImGui::TextDisabled("computing: %zu of %zu cells", sweep.run.evaluated, sweep.run.cells.size());
  }
}

// The grid on screen (ImGui pixels): the row axis's labels left of it, the column axis's above.
struct Grid {
  ImVec2 origin;  // top left of the labelled grid
  float left = 0.0f, top = 0.0f, width = 0.0f, height = 0.0f;
  float cell_width = 0.0f, cell_height = 0.0f;
  float scale = 1.0f;                                     // AppState::ui_scale
  stagemem::AmountUnit unit = stagemem::AmountUnit::gib;  // of the cells' text (AppState::display)
};

// The grid at the cursor: as wide as the panel less the widest row label; as tall as the panel
// leaves over the two lines under it, at most 64 pixels a row.
Grid layout_grid(const AppState& state) {
  const Sweep& sweep = state.sweep;
  Grid grid;
  grid.scale = state.ui_scale;
  grid.unit = state.display.unit;
  const float scale = grid.scale;
  float row_label_width = ImGui::CalcTextSize(sweep.axes[1].key()).x;
  for (const std::string& value : sweep_values(sweep, 1)) {
    row_label_width = std::max(row_label_width, ImGui::CalcTextSize(value.c_str()).x);
  }
  row_label_width += 12.0f * state.ui_scale;
  const float header = ImGui::GetTextLineHeightWithSpacing();
  grid.origin = ImGui::GetCursorScreenPos();
  const ImVec2 available = ImGui::GetContentRegionAvail();
  grid.left = grid.origin.x + row_label_width;
  grid.top = grid.origin.y + header;
  grid.width = std::max(40.0f * scale, available.x - row_label_width);
  grid.height =
      std::clamp(available.y - header - 2.0f * ImGui::GetTextLineHeightWithSpacing() - 8.0f * scale,
                 60.0f * scale, static_cast<float>(sweep.rows) * 64.0f * scale);
  grid.cell_width = grid.width / static_cast<float>(sweep.columns);
  grid.cell_height = grid.height / static_cast<float>(sweep.rows);
  return grid;
}

// Every `step`-th label fits: 1, 2, 4, 8, ... values apart.
std::size_t label_step(float needed, float available_per_value) {
  std::size_t step = 1;
  while (static_cast<float>(step) * available_per_value < needed) step *= 2;
  return step;
}

// Axis labels: the field's key and the values, every k-th one when they would overlap (a 64-value
// axis); a value's label always starts at its own column or row.
void draw_axis_labels(ImDrawList* draw_list, const Grid& grid, const Sweep& sweep,
                      ImU32 label_colour) {
  const float scale = grid.scale;
  draw_list->AddText(ImVec2(grid.origin.x, grid.origin.y), label_colour, sweep.axes[1].key());
  float widest_column_label = 0.0f;
  for (const std::string& value : sweep_values(sweep, 0)) {
    widest_column_label = std::max(widest_column_label, ImGui::CalcTextSize(value.c_str()).x);
  }
  const std::size_t column_step = label_step(widest_column_label + 8.0f * scale, grid.cell_width);
  const std::size_t row_step = label_step(ImGui::GetTextLineHeight(), grid.cell_height);
  for (std::size_t x = 0; x < sweep.columns; x += column_step) {
    const char* value = sweep_values(sweep, 0)[x].c_str();
    draw_list->AddText(
        ImVec2(grid.left + grid.cell_width * static_cast<float>(x) + 4.0f * scale, grid.origin.y),
        label_colour, value);
  }
  for (std::size_t y = 0; y < sweep.rows; y += row_step) {
    draw_list->AddText(
        ImVec2(grid.origin.x, grid.top + grid.cell_height * (static_cast<float>(y) + 0.5f) -
                                  ImGui::GetTextLineHeight() * 0.5f),
        label_colour, sweep_values(sweep, 1)[y].c_str());
  }
}

// The grid's button: notes the cell under the mouse in the view; true when it was clicked.
bool pick_cell(SweepView& view, const Grid& grid, const Sweep& sweep) {
  ImGui::SetCursorScreenPos(ImVec2(grid.left, grid.top));
  const bool clicked = ImGui::InvisibleButton("grid", ImVec2(grid.width, grid.height));
  view.hovered_cell = -1;
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetMousePos();
    const auto x = std::min(sweep.columns - 1,
                            static_cast<std::size_t>((mouse.x - grid.left) / grid.cell_width));
    const auto y =
        std::min(sweep.rows - 1, static_cast<std::size_t>((mouse.y - grid.top) / grid.cell_height));
    view.hovered_cell = static_cast<std::int64_t>(y * sweep.columns + x);
  }
  return clicked;
}

// Cell `i`'s text (and its GPU count on a sweep over a parallel size) when they fit, and its
// frames: this configuration's cell, the hovered one.
void draw_cell(ImDrawList* draw_list, const Grid& grid, const Sweep& sweep, std::size_t i,
               bool show_gpus, bool hovered, ImU32 label_colour) {
  const float scale = grid.scale;
  const float cell_width = grid.cell_width;
  const float cell_height = grid.cell_height;
  const stagemem::SweepCell& cell = sweep.run.cells[i];
  const float cx = grid.left + cell_width * static_cast<float>(i % sweep.columns);
  const float cy = grid.top + cell_height * static_cast<float>(i / sweep.columns);
  const std::string gpus = show_gpus ? std::to_string(cell.world_size) + " GPUs" : std::string();
  const std::string label = sweep_cell_label(sweep, i, grid.unit);
  const ImVec2 size = ImGui::CalcTextSize(label.c_str());
  const bool two_lines = !gpus.empty() && cell_height >= 2.2f * ImGui::GetTextLineHeight();
  const float text_top = cy + (cell_height - size.y * (two_lines ? 2.0f : 1.0f)) * 0.5f;
  const ImU32 text_colour = cell.valid ? text_on_cell : label_colour;
  if (size.x < cell_width - 4.0f * scale) {
    draw_list->AddText(ImVec2(cx + (cell_width - size.x) * 0.5f, text_top), text_colour,
                       label.c_str());
  }
  if (two_lines) {
    const ImVec2 gpu_size = ImGui::CalcTextSize(gpus.c_str());
    if (gpu_size.x < cell_width - 4.0f * scale) {
      draw_list->AddText(ImVec2(cx + (cell_width - gpu_size.x) * 0.5f, text_top + size.y),
                         text_colour, gpus.c_str());
    }
  }
  if (cell.is_base) {
    draw_list->AddRect(ImVec2(cx + 2.0f * scale, cy + 2.0f * scale),
                       ImVec2(cx + cell_width - 2.0f * scale, cy + cell_height - 2.0f * scale),
                       current_colour, 0.0f, 0, 3.0f * scale);
  }
  if (hovered) {
    draw_list->AddRect(ImVec2(cx, cy), ImVec2(cx + cell_width, cy + cell_height), IM_COL32_WHITE,
                       0.0f, 0, 2.0f * scale);
  }
}

// Every cell's text and frames over the shader's grid. Cells narrower than a short label draw
// none (a 64 x 64 grid): no text work per cell then.
void draw_cells(ImDrawList* draw_list, const Grid& grid, const Sweep& sweep,
                std::int64_t hovered_cell, ImU32 label_colour) {
  const bool show_gpus = parallel_axis(sweep.axes[0].key()) || parallel_axis(sweep.axes[1].key());
  const bool labels_fit = grid.cell_width >= ImGui::CalcTextSize("-00.0").x + 4.0f * grid.scale;
  for (std::size_t i = 0; i < sweep.run.cells.size() && labels_fit; ++i) {
    draw_cell(draw_list, grid, sweep, i, show_gpus, static_cast<std::int64_t>(i) == hovered_cell,
              label_colour);
  }
}

}  // namespace

void draw_sweep(const AppState& state, SweepView& view, Actions& out) {
  const Sweep& sweep = state.sweep;
  ImGui::TextWrapped(
      "Every cell is a full estimate of this configuration with the two values; "
      "coloured by the binding stage's headroom (red: does not fit), or by its "
      "peak when no device is chosen. Click a cell to apply its values.");
  edit_axis(state, view, 0, "columns", out);
  edit_axis(state, view, 1, "rows   ", out);
  draw_progress(sweep);
  if (!sweep.model_error.empty()) {
    ImGui::TextColored(error_colour, "%s", sweep.model_error.c_str());
    return;
  }
  if (sweep.columns == 0 || sweep.rows == 0) return;
  feed_heat_map(view.heat_map, sweep,
                sweep.sweeps * (Sweep::max_values * Sweep::max_values + 1) + sweep.run.evaluated);

  const Grid grid = layout_grid(state);
  ImDrawList* draw_list = ImGui::GetWindowDrawList();
  const ImU32 label_colour = ImGui::GetColorU32(ImGuiCol_Text);
  draw_axis_labels(draw_list, grid, sweep, label_colour);
  const ImVec2 grid_min(grid.left, grid.top);
  const ImVec2 grid_max(grid.left + grid.width, grid.top + grid.height);
  queue_heat_map(view.heat_map, draw_list, grid_min, grid_max);
  view.heat_map_rect = {grid_min.x, grid_min.y, grid_max.x, grid_max.y, out.frame(), true};
  const bool clicked = pick_cell(view, grid, sweep);
  draw_cells(draw_list, grid, sweep, view.hovered_cell, label_colour);
  if (view.hovered_cell >= 0) {
    const auto cell = static_cast<std::size_t>(view.hovered_cell);
    const std::string detail = sweep_cell_detail(sweep, cell, grid.unit);
    ImGui::SetTooltip("%s", detail.c_str());
    if (clicked) out.push(ApplySweepCell{cell});
  }
  ImGui::SetCursorScreenPos(ImVec2(grid.origin.x, grid_max.y + 4.0f * grid.scale));
  const bool headroom = sweep_device_bytes(sweep) > 0;
  ImGui::TextDisabled(headroom ? "cell text: headroom of the binding stage"
                               : "cell text: peak of the binding stage");
  draw_colour_legend(headroom, grid.scale);
}
