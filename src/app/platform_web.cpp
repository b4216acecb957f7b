// Web platform: Emscripten's GLFW on a WebGL2 canvas, driven by the browser's animation frames.
// The configuration comes from location.hash and goes back to it (src/web/browser.cpp).
//
// Hi-DPI: the canvas's backing store is sized to CSS size x devicePixelRatio and ImGui works in
// device pixels (Emscripten's GLFW reports the mouse in canvas pixels too), with fonts and
// style scaled by the ratio, so text is rasterised at the screen's real resolution.
#include <GLFW/glfw3.h>
#include <emscripten.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "browser.h"
#include "imgui.h"

namespace {

struct WebApp {
  AppState state;
  GLFWwindow* window = nullptr;
  int canvas_width = 0;
  int canvas_height = 0;
  float pixel_ratio = 0.0f;
};

void fit_canvas(WebApp& app) {
  double css_width = 0, css_height = 0;
  canvas_css_size(css_width, css_height);
  const auto ratio = static_cast<float>(device_pixel_ratio());
  const int width = std::max(1, static_cast<int>(std::lround(css_width * ratio)));
  const int height = std::max(1, static_cast<int>(std::lround(css_height * ratio)));
  if (ratio != app.pixel_ratio) {
    app.pixel_ratio = ratio;
    configure_imgui(app.state, ratio);
    if (app.state.frame_count > 0) {  // before the first frame, NewFrame builds the atlas
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
  }
  if (width != app.canvas_width || height != app.canvas_height) {
    app.canvas_width = width;
    app.canvas_height = height;
    set_canvas_size(width, height);
  }
}

void frame(void* argument) {
  auto& app = *static_cast<WebApp*>(argument);
  fit_canvas(app);
  run_frame(app.state, app.window);
  sync_location_fragment(app.state);
  if (app.state.frame_count == 1) mark_app_ready();
}

}  // namespace

std::string platform_copy_link(AppState& state) {
  // Edits made earlier in this frame reach the link first.
  sync_location_fragment(state);
  copy_location_to_clipboard();
  return "Link copied";
}

std::string platform_copy_text(AppState&, const std::string& text) {
  copy_text_to_clipboard(text);
  return "Copied";
}

std::string platform_save_text(AppState&, const std::string& file_name,
                               const std::string& mime_type, const std::string& text) {
  download_text(file_name, mime_type, text);
  return "Downloading " + file_name;
}

int main() {
  if (!glfwInit()) {
    std::puts("stagemem: GLFW could not initialise");
    return 1;
  }
  glfwWindowHint(GLFW_CLIENT_API, GLFW_OPENGL_ES_API);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 0);
  // Lives for the page's lifetime: the browser keeps calling frame() after main returns.
  auto* app = new WebApp;
  app->window = glfwCreateWindow(1280, 800, "stagemem", nullptr, nullptr);
  if (app->window == nullptr) {
    std::puts("stagemem: no WebGL2 context");
    return 1;
  }
  glfwMakeContextCurrent(app->window);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui_ImplGlfw_InitForOpenGL(app->window, true);
  ImGui_ImplOpenGL3_Init("#version 300 es");
  initialize_state(app->state);
  apply_fragment(app->state, read_location_fragment());
  register_app_state(&app->state);
  listen_for_hash_changes();
  emscripten_set_main_loop_arg(frame, app, 0, false);
  return 0;
}
