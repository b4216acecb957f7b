// The per-frame function shared by both platforms: poll, new frame, panels, render.
// The platform swaps (the native one may read the frame back for a screenshot first).
// frame_needed() decides whether a frame is drawn at all: idle costs nothing.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>

#include "app.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "gl_api.h"
#include "imgui.h"

namespace {

// After an input event frames keep coming for this long: ImGui's tooltips wait for the mouse to
// rest (0.15 s delays), a click needs its down and up frames, a popup opens a frame later.
constexpr double input_settle_seconds = 0.6;
// A changed configuration is drawn twice: ImGui sizes new content (tables, wrapped text) in the
// frame after it first appears.
constexpr int frames_after_change = 2;

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
    {"Term catalogue", MainTab::model, Widget::tab_model, draw_model},
    {"Plan", MainTab::plan, Widget::tab_plan, draw_plan},
    {"Timeline", MainTab::timeline, Widget::tab_timeline, draw_timeline},
    {"Snapshot", MainTab::snapshot, Widget::tab_snapshot, draw_snapshot}};

// The main view's tabs; only the open one is drawn (and only the sweep's tab runs sweeps).
void draw_main_tabs(AppState& state) {
  if (!ImGui::BeginTabBar("main_tabs")) return;
  for (const Tab& tab : tabs) {
    const ImGuiTabItemFlags flags =
        state.requested_tab == tab.tab ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
    const bool open = ImGui::BeginTabItem(tab.title, nullptr, flags);
    record_widget_rect(state, tab.widget);
    if (!open) continue;
    state.main_tab = tab.tab;
    ImGui::BeginChild("tab", ImVec2(0, 0));
    tab.draw(state, state.report);
    ImGui::EndChild();
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
  state.requested_tab = MainTab::count;
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
  draw_summary_line(state, state.report);

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

void note_input(AppState& state) {
  state.redraw.active_until = glfwGetTime() + input_settle_seconds;
}

void request_frames(AppState& state, int frames) {
  state.redraw.requested_frames = std::max(state.redraw.requested_frames, frames);
}

void redraw_after(AppState& state, double seconds) {
  const double at = glfwGetTime() + seconds;
  if (state.redraw.wake_at == 0.0 || at < state.redraw.wake_at) state.redraw.wake_at = at;
}

bool frame_needed(AppState& state) {
  Redraw& r = state.redraw;
  const double now = glfwGetTime();
  bool needed = now < r.active_until;
  if (r.requested_frames > 0) {
    --r.requested_frames;
    needed = true;
  }
  if (r.wake_at != 0.0 && now >= r.wake_at) {
    r.wake_at = 0.0;
    needed = true;
  }
  if (!r.config_drawn || !(r.drawn_config == state.config)) {
    // Changed outside a frame (a link, a page call): this frame and the next.
    request_frames(state, frames_after_change - 1);
    needed = true;
  }
  if (!needed) ++r.idle_callbacks;
  return needed;
}

void run_frame(AppState& state, GLFWwindow* window) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  refresh_report(state);
  handle_history_keys(state);
  draw_panels(state);
  commit_edits(state);
  // Edits made this frame (a click, a typed digit) show their result in the next one.
  if (!(state.redraw.drawn_config == state.config)) request_frames(state, frames_after_change);
  state.redraw.drawn_config = state.config;
  state.redraw.config_drawn = true;
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
