// The per-frame function shared by both platforms: poll, new frame, refresh what is derived from
// the state, panels (they read the state and emit actions), apply the actions, render. The
// platform swaps (the native one may read the frame back for a screenshot first).
// frame_needed() decides whether a frame is drawn at all: idle costs nothing.
#include "frame.h"

#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>

#include "actions.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "baseline.h"
#include "edit_history.h"
#include "gl_api.h"
#include "imgui.h"
#include "panels.h"
#include "state.h"
#include "widgets.h"

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
};
constexpr Tab tabs[] = {{"Stages", MainTab::stages, Widget::tab_stages},
                        {"Sweep", MainTab::sweep, Widget::tab_sweep},
                        {"Cross-checks", MainTab::cross_checks, Widget::tab_cross_checks},
                        {"Term catalogue", MainTab::model, Widget::tab_model},
                        {"Plan", MainTab::plan, Widget::tab_plan},
                        {"Timeline", MainTab::timeline, Widget::tab_timeline},
                        {"Snapshot", MainTab::snapshot, Widget::tab_snapshot},
                        {"Compare", MainTab::compare, Widget::tab_compare}};

void draw_tab(const AppState& state, MainTab tab, Views& views, Actions& out) {
  switch (tab) {
    case MainTab::stages:
      return draw_stages(state, views.stages, out);
    case MainTab::sweep:
      return draw_sweep(state, views.sweep, out);
    case MainTab::cross_checks:
      return draw_cross_checks(state, views.cross_checks, out);
    case MainTab::model:
      return draw_model(state, views.model, out);
    case MainTab::plan:
      return draw_plan(state, views.plan, out);
    case MainTab::timeline:
      return draw_timeline(state, views.timeline, out);
    case MainTab::snapshot:
      return draw_snapshot(state, out);
    case MainTab::compare:
      return draw_compare(state, views.compare, out);
    case MainTab::count:
      break;
  }
}

// The main view's tabs; only the open one is drawn (and only its data is refreshed).
void draw_main_tabs(const AppState& state, Views& views, Actions& out) {
  if (!ImGui::BeginTabBar("main_tabs")) return;
  for (const Tab& tab : tabs) {
    // A requested tab is selected until the tab bar shows it (ImGui does in the next frame).
    const ImGuiTabItemFlags flags =
        state.requested_tab == tab.tab ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
    const bool open = ImGui::BeginTabItem(tab.title, nullptr, flags);
    publish(out, tab.widget);
    if (!open) continue;
    // Reported when it changes, and when it is the requested one (which ends the request).
    if (tab.tab != state.main_tab || tab.tab == state.requested_tab) out.push(TabShown{tab.tab});
    ImGui::BeginChild("tab", ImVec2(0, 0));
    draw_tab(state, tab.tab, views, out);
    ImGui::EndChild();
    ImGui::EndTabItem();
  }
  ImGui::EndTabBar();
}

void draw_panels(AppState& state, Actions& out) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  constexpr ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                     ImGuiWindowFlags_NoSavedSettings |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("stagemem", nullptr, flags);
  Views& views = state.views;
  draw_link_banner(state, out);
  draw_toolbar(state, out);
  draw_summary_line(state, views.summary, out);

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
  draw_config(state, views.config, out);
  draw_measurements(state, out);
  ImGui::EndChild();
  publish(out, Widget::config_panel);
  if (!state.stacked_layout) ImGui::SameLine();
  ImGui::BeginChild("main", ImVec2(0, panels_height), ImGuiChildFlags_Border);
  draw_main_tabs(state, views, out);
  ImGui::EndChild();
  publish(out, Widget::main_panel);
  draw_status_bar(state, views.status, out);
  ImGui::End();
}

// Ctrl+Z, Ctrl+Shift+Z and Ctrl+Y outside text fields (inside one, Ctrl+Z is the field's own
// undo: ImGui's InputText handles it).
void history_shortcuts(Actions& out) {
  if (ImGui::GetIO().WantTextInput) return;
  if (ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiMod_Shift | ImGuiKey_Z) ||
      ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiKey_Y)) {
    out.push(Redo{});
  } else if (ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiKey_Z)) {
    out.push(Undo{});
  }
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

void run_frame(AppState& state, GLFWwindow* window, Platform& platform) {
  const auto start = std::chrono::steady_clock::now();
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  refresh_report(state);
  refresh_comparison(state);  // the baseline's marks show on every tab's chart
  refresh_open_tab(state);
  Actions actions(state.frame_count);
  history_shortcuts(actions);
  draw_panels(state, actions);
  apply_actions(state, actions, platform);
  commit_edits(state, ImGui::IsAnyItemActive());
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
