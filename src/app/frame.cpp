// The per-frame function shared by both platforms: poll, new frame, panels, render.
// The platform swaps (the native one may read the frame back for a screenshot first).
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>

#include "app.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "gl_api.h"
#include "imgui.h"

namespace {

// Below this width (CSS pixels, i.e. logical pixels) the configuration goes above the chart.
constexpr float narrow_window_width = 900.0f;
// The configuration column: a share of the window, never narrower than its widgets need.
constexpr float config_share = 0.30f;
constexpr float config_min_width = 300.0f;
constexpr float stacked_config_share = 0.42f;  // of the height, when stacked

struct Tab {
  const char* title;
  MainTab tab;
  Widget widget;
  void (*draw)(AppState&, const stagemem::Report&);
};
constexpr Tab tabs[] = {
    {"Stages", MainTab::stages, Widget::tab_stages, draw_stages},
    {"Sweep", MainTab::sweep, Widget::tab_sweep, draw_sweep},
    {"Cross-checks", MainTab::cross_checks, Widget::tab_cross_checks, draw_cross_checks},
    {"Model", MainTab::model, Widget::tab_model, draw_model},
    {"Plan", MainTab::plan, Widget::tab_plan, draw_plan}};

// The main view's tabs; only the open one is drawn (and only the sweep's tab runs sweeps).
void draw_main_tabs(AppState& state) {
  if (!ImGui::BeginTabBar("main_tabs")) return;
  for (const Tab& tab : tabs) {
    const bool open = ImGui::BeginTabItem(tab.title);
    record_widget_rect(state, tab.widget);
    if (!open) continue;
    state.main_tab = tab.tab;
    ImGui::BeginChild("tab", ImVec2(0, 0));
    tab.draw(state, state.report);
    ImGui::EndChild();
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void draw_panels(AppState& state) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  constexpr ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                     ImGuiWindowFlags_NoSavedSettings |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("stagemem", nullptr, flags);
  draw_link_banner(state);
  draw_toolbar(state, state.report);

  const float scale = state.ui_scale;
  state.stacked_layout = viewport->WorkSize.x / scale < narrow_window_width;
  // Room for the status bar under the panels.
  const float panels_height = -ImGui::GetFrameHeightWithSpacing();
  if (state.stacked_layout) {
    // A share of the height: the generated field list is long, and scrolls.
    ImGui::BeginChild("config", ImVec2(0, viewport->WorkSize.y * stacked_config_share),
                      ImGuiChildFlags_Border);
  } else {
    const float width = std::max(config_min_width * scale, viewport->WorkSize.x * config_share);
    ImGui::BeginChild("config", ImVec2(width, panels_height), ImGuiChildFlags_Border);
  }
  draw_config(state, state.report);
  ImGui::EndChild();
  if (!state.stacked_layout) ImGui::SameLine();
  ImGui::BeginChild("main", ImVec2(0, panels_height), ImGuiChildFlags_Border);
  draw_main_tabs(state);
  ImGui::EndChild();
  draw_status_bar(state, state.report);
  ImGui::End();
}

}  // namespace

void run_frame(AppState& state, GLFWwindow* window) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  refresh_report(state);
  draw_panels(state);
  ImGui::Render();
  const auto user_interface_done = std::chrono::steady_clock::now();
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.09f, 0.10f, 0.12f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++state.frame_count;
  using milliseconds = std::chrono::duration<float, std::milli>;
  state.frame_times.record(milliseconds(std::chrono::steady_clock::now() - start).count());
  state.user_interface_times.record(milliseconds(user_interface_done - start).count());
}
