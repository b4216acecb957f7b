// Set-up done once by the platform: fonts and style for the screen's scale, and the state's
// start-up work (the field editors, the term catalogue, the sweep's default axes).
#include <cstdio>

#include "embedded_fonts.h"
#include "frame.h"
#include "imgui.h"
#include "link.h"
#include "panels.h"
#include "state.h"

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

void configure_imgui(AppState& state, float scale) {
  state.ui_scale = scale;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the URL is the only persisted state
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  // A blinking cursor would need a frame every half second while a field is focused.
  io.ConfigInputTextCursorBlink = false;
  io.Fonts->Clear();
  // The first font added is the default one.
  add_embedded_font(dejavu_sans, "DejaVu Sans", text_size * scale);
  state.mono_font = add_embedded_font(dejavu_sans_mono, "DejaVu Sans Mono", mono_size * scale);
  apply_theme(ImGui::GetStyle(), scale);
}

void initialize_state(AppState& state) {
  init_config_view(state.views.config, state.config);
  init_model_view(state.views.model);
  set_default_sweep_axes(state);
}
