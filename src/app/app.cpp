#include "app.h"

#include <cstdio>

#include "embedded_fonts.h"
#include "imgui.h"
#include "url_fragment.h"

namespace {

constexpr float text_size = 15.0f;  // CSS pixels: DejaVu Sans reads well at 15 on any screen
constexpr float mono_size = 14.0f;  // DejaVu Sans Mono runs larger than Sans at the same size

ImFont* add_embedded_font(const EmbeddedFont& font, const char* name, float size_pixels) {
  ImFontConfig config;
  config.FontDataOwnedByAtlas = false;  // static bytes: the atlas must not free them
  config.OversampleH = 2;
  config.OversampleV = 1;
  std::snprintf(config.Name, sizeof config.Name, "%s, %.0fpx", name,
                static_cast<double>(size_pixels));
  // ImGui never writes through this pointer when it does not own the data.
  return ImGui::GetIO().Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(font.data),
                                                    static_cast<int>(font.size), size_pixels,
                                                    &config, embedded_font_ranges);
}

void apply_theme(ImGuiStyle& style, float scale) {
  style = ImGuiStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0.0f;
  style.ChildRounding = 4.0f;
  style.FrameRounding = 4.0f;
  style.GrabRounding = 4.0f;
  style.PopupRounding = 4.0f;
  style.WindowPadding = ImVec2(10.0f, 10.0f);
  style.FramePadding = ImVec2(8.0f, 4.0f);
  style.ItemSpacing = ImVec2(8.0f, 6.0f);
  style.CellPadding = ImVec2(6.0f, 3.0f);
  ImVec4* colors = style.Colors;
  colors[ImGuiCol_Text] = ImVec4(0.90f, 0.91f, 0.93f, 1.0f);
  colors[ImGuiCol_TextDisabled] = ImVec4(0.60f, 0.62f, 0.66f, 1.0f);
  colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
  colors[ImGuiCol_ChildBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.0f);
  colors[ImGuiCol_PopupBg] = ImVec4(0.13f, 0.14f, 0.17f, 0.98f);
  colors[ImGuiCol_Border] = ImVec4(0.25f, 0.27f, 0.31f, 1.0f);
  colors[ImGuiCol_FrameBg] = ImVec4(0.17f, 0.19f, 0.23f, 1.0f);
  colors[ImGuiCol_Button] = ImVec4(0.20f, 0.33f, 0.50f, 1.0f);
  colors[ImGuiCol_ButtonHovered] = ImVec4(0.26f, 0.42f, 0.63f, 1.0f);
  colors[ImGuiCol_ButtonActive] = ImVec4(0.30f, 0.49f, 0.73f, 1.0f);
  colors[ImGuiCol_TableRowBgAlt] = ImVec4(1.0f, 1.0f, 1.0f, 0.04f);
  style.ScaleAllSizes(scale);
}

}  // namespace

void apply_fragment(AppState& state, std::string_view fragment) {
  // The Plan tab's inputs ride along as plan_* keys; the configuration is the rest.
  stagemem::DecodedFragment decoded =
      stagemem::decode_fragment(take_plan_link_keys(fragment, state.plan));
  state.link_problems = decoded.diagnostics.errors;
  for (const auto& w : decoded.diagnostics.warnings) state.link_problems.push_back(w);
  // A link is applied whole or not at all: half a configuration is nobody's configuration.
  state.config = decoded.diagnostics.ok() ? decoded.config : stagemem::Config{};
  if (decoded.diagnostics.ok()) {
    const stagemem::Diagnostics semantic = stagemem::validate(state.config);
    if (!semantic.ok()) {
      for (const auto& e : semantic.errors) state.link_problems.push_back(e);
      state.config = stagemem::Config{};
    }
  }
  state.link_banner_visible = !state.link_problems.empty();
  state.location_config = state.config;
  state.selected_stage = -1;
}

void initialize_state(AppState& state) {
  init_field_editors(state);
  init_catalogue(state);
  set_sweep_axis(state.sweep, 0, "seq", "2048, 4096, 8192, 16384, 32768", state.config);
  set_sweep_axis(state.sweep, 1, "mbs", "1, 2, 4", state.config);
}

void refresh_report(AppState& state) {
  if (state.report_valid && state.reported_config == state.config) return;
  sync_field_texts(state);
  state.report = stagemem::estimate(state.config);
  state.report_labels = make_report_labels(state.report);
  state.bar_rects.assign(state.report.stages.size(), WidgetRect{});
  state.reported_config = state.config;
  state.report_valid = true;
  if (state.selected_stage >= static_cast<std::int64_t>(state.report.stages.size())) {
    state.selected_stage = -1;
  }
}

void configure_imgui(AppState& state, float scale) {
  state.ui_scale = scale;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the URL is the only persisted state
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  io.Fonts->Clear();
  // The first font added is the default one.
  add_embedded_font(dejavu_sans, "DejaVu Sans", text_size * scale);
  state.mono_font = add_embedded_font(dejavu_sans_mono, "DejaVu Sans Mono", mono_size * scale);
  apply_theme(ImGui::GetStyle(), scale);
}

WidgetRect last_item_rect(const AppState& state) {
  // Only what is on screen: a widget scrolled out of its panel cannot be clicked.
  if (!ImGui::IsItemVisible()) return WidgetRect{};
  const ImVec2 min = ImGui::GetItemRectMin();
  const ImVec2 max = ImGui::GetItemRectMax();
  return {min.x, min.y, max.x, max.y, state.frame_count, true};
}

void record_widget_rect(AppState& state, Widget widget) {
  state.widget_rects[static_cast<std::size_t>(widget)] = last_item_rect(state);
}
