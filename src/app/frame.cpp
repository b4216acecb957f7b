// The per-frame function shared by both platforms: poll, new frame, panels, render.
// The platform swaps (the native one may read the frame back for a screenshot first).
#include <GLFW/glfw3.h>

#include "app.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "gl_api.h"
#include "imgui.h"

namespace {

void draw_panels(AppState& state) {
  const ImGuiViewport* viewport = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(viewport->WorkPos);
  ImGui::SetNextWindowSize(viewport->WorkSize);
  constexpr ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                     ImGuiWindowFlags_NoSavedSettings |
                                     ImGuiWindowFlags_NoBringToFrontOnFocus;
  ImGui::Begin("stagemem", nullptr, flags);
  draw_link_banner(state);
  const float config_width = 300.0f * state.ui_scale;
  ImGui::BeginChild("config", ImVec2(config_width, 0), true);
  draw_config(state, state.report);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("stages", ImVec2(0, 0), true);
  draw_stages(state, state.report);
  ImGui::EndChild();
  ImGui::End();
}

}  // namespace

void run_frame(AppState& state, GLFWwindow* window) {
  glfwPollEvents();
  ImGui_ImplOpenGL3_NewFrame();
  ImGui_ImplGlfw_NewFrame();
  ImGui::NewFrame();
  refresh_report(state);
  draw_panels(state);
  ImGui::Render();
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  glViewport(0, 0, width, height);
  glClearColor(0.09f, 0.10f, 0.12f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
  ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
  ++state.frame_count;
}
