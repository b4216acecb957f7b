// Web platform: Emscripten's GLFW on a WebGL2 canvas, driven by the browser's animation frames.
// The configuration comes from location.hash and goes back to it (src/web/browser.cpp).
// Idle costs nothing: an animation frame draws only when frame_needed() says so (input arrived,
// the canvas was resized, the configuration changed, a paste or a file came in, a timed change).
// Clipboard: Emscripten's GLFW clipboard calls are empty, so ImGui's copy writes through
// navigator.clipboard and its paste reads the text of the page's last paste event.
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
#include "config/url_fragment.h"
#include "imgui.h"

namespace {

struct WebApp {
  AppState state;
  GLFWwindow* window = nullptr;
  int canvas_width = 0;
  int canvas_height = 0;
  float pixel_ratio = 0.0f;
};

// True when the canvas's size or pixel ratio changed.
bool fit_canvas(WebApp& app) {
  double css_width = 0, css_height = 0;
  canvas_css_size(css_width, css_height);
  const auto ratio = static_cast<float>(device_pixel_ratio());
  const int width = std::max(1, static_cast<int>(std::lround(css_width * ratio)));
  const int height = std::max(1, static_cast<int>(std::lround(css_height * ratio)));
  bool changed = false;
  if (ratio != app.pixel_ratio) {
    changed = true;
    app.pixel_ratio = ratio;
    configure_imgui(app.state, ratio);
    if (app.state.frame_count > 0) {  // before the first frame, NewFrame builds the atlas
      ImGui_ImplOpenGL3_DestroyFontsTexture();
      ImGui_ImplOpenGL3_CreateFontsTexture();
    }
  }
  if (width != app.canvas_width || height != app.canvas_height) {
    changed = true;
    app.canvas_width = width;
    app.canvas_height = height;
    set_canvas_size(width, height);
  }
  return changed;
}

const char* get_clipboard(void* user_data) {
  return static_cast<AppState*>(user_data)->clipboard_text.c_str();
}

void set_clipboard(void* user_data, const char* text) {
  auto& state = *static_cast<AppState*>(user_data);
  state.clipboard_text = text;
  copy_text_to_clipboard(state.clipboard_text);
}

void frame(void* argument) {
  auto& app = *static_cast<WebApp*>(argument);
  const bool resized = fit_canvas(app);
  if (take_input_events() || resized) note_input(app.state);
  if (!frame_needed(app.state)) return;
  run_frame(app.state, app.window);
  sync_location_fragment(app.state);
  if (app.state.frame_count == 1) mark_app_ready();
}

}  // namespace

std::string platform_copy_link(AppState& state) {
  // Exactly the configuration on screen (edits made earlier in this frame included).
  sync_location_fragment(state);
  copy_text_to_clipboard(platform_link(state, link_fragment(state)));
  return "Link copied";
}

std::string platform_link(const AppState&, const std::string& fragment) {
  return page_address() + "#" + fragment;
}

std::string platform_open_file(AppState&) {
  open_file_picker();
  return "Choose a config.json or stagemem JSON";
}

std::string platform_open_snapshot(AppState&) {
  open_snapshot_picker();
  return "Choose an allocator snapshot (.pickle); it is read in the page, never uploaded";
}

void platform_push_link(AppState& state) {
  push_location_fragment(link_fragment(state));
  state.location_config = state.config;
  state.location_view = view_fragment(state);
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
  ImGuiIO& io = ImGui::GetIO();
  io.GetClipboardTextFn = get_clipboard;
  io.SetClipboardTextFn = set_clipboard;
  io.ClipboardUserData = &app->state;
  initialize_state(app->state);
  // A page opened without a configuration shows the app's default (app.h), written into the
  // link at once; links keep decoding against the core's defaults.
  const std::string fragment = read_location_fragment();
  apply_fragment(app->state, fragment.empty() ? std::string(default_link) : fragment);
  if (fragment.empty()) app->state.location_config = stagemem::Config{};  // write it at once
  app->state.history.committed = app->state.config;  // the first undo step is the first edit
  register_app_state(&app->state);
  listen_for_hash_changes();
  listen_for_page_events();
  emscripten_set_main_loop_arg(frame, app, 0, false);
  return 0;
}
