// Web platform: Emscripten's GLFW on a WebGL2 canvas, driven by the browser's animation frames,
// and the page's Platform (web_platform.h). The configuration comes from location.hash and goes
// back to it (WebPlatform::sync_location).
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
#include <utility>

#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "browser.h"
#include "config/url_fragment.h"
#include "frame.h"
#include "imgui.h"
#include "link.h"
#include "web_platform.h"

std::string WebPlatform::copy_link(const AppState& state) {
  // Exactly the configuration on screen (edits made earlier in this frame included).
  sync_location(state);
  copy_text_to_clipboard(link(link_fragment(state)));
  return "Link copied";
}

std::string WebPlatform::copy_text(const std::string& text) {
  copy_text_to_clipboard(text);
  return "Copied";
}

std::string WebPlatform::save_text(const std::string& file_name, const std::string& mime_type,
                                   const std::string& text) {
  download_text(file_name, mime_type, text);
  return "Downloading " + file_name;
}

std::string WebPlatform::open_file() {
  open_file_picker();
  return "Choose a config.json or stagemem JSON";
}

std::string WebPlatform::open_snapshot() {
  open_snapshot_picker();
  return "Choose an allocator snapshot (.pickle); it is read in the page, never uploaded";
}

std::string WebPlatform::link(const std::string& fragment) const {
  return page_address() + "#" + fragment;
}

void WebPlatform::push_link(const AppState& state) {
  push_location_fragment(link_fragment(state));
  location_shows(state);
}

void WebPlatform::sync_location(const AppState& state) {
  std::string view = view_fragment(state);
  if (location_known_ && state.config == location_config_ && view == location_view_) return;
  // Whatever is on screen, valid or not: the link reproduces it, errors marked in place, so
  // reloading or sharing never loses the user's work.
  replace_location_fragment(stagemem::encode_fragment(state.config) + view);
  location_known_ = true;
  location_config_ = state.config;
  location_view_ = std::move(view);
}

void WebPlatform::location_shows(const AppState& state) {
  location_known_ = true;
  location_config_ = state.config;
  location_view_ = view_fragment(state);
}

void WebPlatform::forget_location() {
  location_known_ = false;
}

namespace {

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
  return static_cast<WebPlatform*>(user_data)->clipboard_text.c_str();
}

void set_clipboard(void* user_data, const char* text) {
  auto& platform = *static_cast<WebPlatform*>(user_data);
  platform.clipboard_text = text;
  copy_text_to_clipboard(platform.clipboard_text);
}

void frame(void* argument) {
  auto& app = *static_cast<WebApp*>(argument);
  const bool resized = fit_canvas(app);
  if (take_input_events() || resized) note_input(app.state);
  if (!frame_needed(app.state)) return;
  run_frame(app.state, app.window, app.platform);
  app.platform.sync_location(app.state);
  if (app.state.frame_count == 1) mark_app_ready();
}

}  // namespace

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
  io.ClipboardUserData = &app->platform;
  initialize_state(app->state);
  // A page opened without a configuration shows the app's default (link.h), written into the
  // link at once; links keep decoding against the core's defaults.
  const std::string fragment = read_location_fragment();
  apply_fragment(app->state, fragment.empty() ? std::string(default_link) : fragment);
  if (fragment.empty()) {
    app->platform.forget_location();
  } else {
    app->platform.location_shows(app->state);
  }
  app->state.history.committed = app->state.config;  // the first undo step is the first edit
  register_web_app(app);
  listen_for_hash_changes();
  listen_for_page_events();
  emscripten_set_main_loop_arg(frame, app, 0, false);
  return 0;
}
