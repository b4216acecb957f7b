#include "app.h"

#include "imgui.h"
#include "url_fragment.h"

void apply_fragment(AppState& state, std::string_view fragment) {
  stagemem::DecodedFragment decoded = stagemem::decode_fragment(fragment);
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

void refresh_report(AppState& state) {
  if (state.report_valid && state.reported_config == state.config) return;
  state.report = stagemem::estimate(state.config);
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
  ImFontConfig font;
  font.SizePixels = 13.0f * scale;
  io.Fonts->AddFontDefault(&font);
  ImGuiStyle& style = ImGui::GetStyle();
  style = ImGuiStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0.0f;
  style.FrameRounding = 3.0f;
  style.ScaleAllSizes(scale);
}
