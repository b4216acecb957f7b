// Native platform: GLFW window with an OpenGL 3.3 core context, and the Platform (platform.h) of
// the desktop: GLFW's clipboard, files in the working directory, files dropped onto the window.
//   stagemem_app [--url FRAGMENT] [--frames N] [--screenshot FILE.png]
// --frames ends the run after N frames (headless smoke runs under Xvfb ignore vsync);
// --screenshot saves the last frame as PNG.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "actions.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "bounded_read.h"
#include "config/url_fragment.h"
#include "frame.h"
#include "gl_api.h"
#include "imgui.h"
#include "link.h"
#include "load_input.h"
#include "platform.h"
#include "png_writer.h"
#include "state.h"
#include "version.h"

namespace {

struct Options {
  std::string url;
  std::int64_t frames = 0;  // 0: run until the window is closed
  std::string screenshot;
};

bool parse_options(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (flag == "--help") {
      std::puts("usage: stagemem_app [--url FRAGMENT] [--frames N] [--screenshot FILE.png]");
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "error: %s: needs a value\n", argv[i]);
      return false;
    }
    const std::string_view value = argv[++i];
    if (flag == "--url") {
      options.url = value;
    } else if (flag == "--screenshot") {
      options.screenshot = value;
    } else if (flag == "--frames") {
      const auto [end, error] =
          std::from_chars(value.data(), value.data() + value.size(), options.frames);
      if (error != std::errc() || end != value.data() + value.size() || options.frames < 1) {
        std::fprintf(stderr, "error: --frames: '%s' is not an integer >= 1\n", argv[i]);
        return false;
      }
    } else {
      std::fprintf(stderr, "error: %s: unknown option\n", argv[i - 1]);
      return false;
    }
  }
  return true;
}

bool save_screenshot(GLFWwindow* window, const std::string& path) {
  int width = 0, height = 0;
  glfwGetFramebufferSize(window, &width, &height);
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) *
                                   static_cast<std::size_t>(height) * 4);
  glReadBuffer(GL_BACK);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL rows run bottom to top; PNG rows top to bottom.
  std::vector<std::uint8_t> flipped(pixels.size());
  const std::size_t row = static_cast<std::size_t>(width) * 4;
  for (int y = 0; y < height; ++y) {
    std::copy_n(pixels.begin() + static_cast<std::ptrdiff_t>(static_cast<std::size_t>(y) * row),
                row,
                flipped.begin() +
                    static_cast<std::ptrdiff_t>(static_cast<std::size_t>(height - 1 - y) * row));
  }
  return write_png(path, width, height, flipped);
}

// The desktop has no page link: it copies the fragment, which `--url` (and the web page after
// '#') accepts, and has no history to push links to.
class NativePlatform final : public Platform {
 public:
  std::string copy_link(const AppState& state) override {
    const std::string fragment = stagemem::encode_fragment(state.config);
    ImGui::SetClipboardText(fragment.c_str());
    return "Copied the configuration fragment (use it with --url or after '#' in a page link)";
  }
  std::string copy_text(const std::string& text) override {
    ImGui::SetClipboardText(text.c_str());
    return "Copied";
  }
  std::string save_text(const std::string& file_name, const std::string&,
                        const std::string& text) override {
    std::ofstream file(file_name, std::ios::binary);
    file << text;
    return file.good() ? "Saved " + file_name + " in the working directory"
                       : "Could not write " + file_name;
  }
  std::string open_file() override {
    return "Drop a config.json or stagemem JSON onto the window to load it";
  }
  std::string open_snapshot() override {
    return "Drop an allocator snapshot (.pickle) onto the window to load it";
  }
  std::string link(const std::string& fragment) const override { return "#" + fragment; }
  void push_link(const AppState&) override {}
};

// What the window's callbacks reach through its user pointer.
struct NativeApp {
  AppState state;
  NativePlatform platform;
};

// A file dropped onto the window: read it and load it like a pasted text, or as an allocator
// snapshot (LoadFile tells them apart). It is read within the limit of what it is (file_limit:
// by its name and first bytes), so a huge file or a device costs at most that limit.
void on_drop(GLFWwindow* window, int count, const char** paths) {
  auto* app = static_cast<NativeApp*>(glfwGetWindowUserPointer(window));
  if (app == nullptr || count < 1) return;
  const std::string path(paths[0]);
  std::string name = path.substr(path.find_last_of("/\\") + 1);
  stagemem_io::ReadResult read = stagemem_io::read_file(
      path, [&name](std::string_view head) { return file_limit(name, head); });
  if (read.status != stagemem_io::ReadStatus::ok) {
    apply_action(app->state,
                 RefuseFile{std::move(name),
                            stagemem_io::failure_text(read, stagemem_io::quoted_path(path))},
                 app->platform);
    return;
  }
  apply_action(app->state, LoadFile{std::move(name), std::move(read.bytes)}, app->platform);
}

// Input callbacks installed before ImGui's backend, which chains to them: they only wake the
// idle loop (ImGui receives the events itself).
void wake(GLFWwindow* window) {
  if (auto* app = static_cast<NativeApp*>(glfwGetWindowUserPointer(window))) {
    note_input(app->state);
  }
}
void install_wake_callbacks(GLFWwindow* window) {
  glfwSetCursorPosCallback(window, [](GLFWwindow* w, double, double) { wake(w); });
  glfwSetMouseButtonCallback(window, [](GLFWwindow* w, int, int, int) { wake(w); });
  glfwSetScrollCallback(window, [](GLFWwindow* w, double, double) { wake(w); });
  glfwSetKeyCallback(window, [](GLFWwindow* w, int, int, int, int) { wake(w); });
  glfwSetCharCallback(window, [](GLFWwindow* w, unsigned int) { wake(w); });
  glfwSetWindowFocusCallback(window, [](GLFWwindow* w, int) { wake(w); });
  glfwSetCursorEnterCallback(window, [](GLFWwindow* w, int) { wake(w); });
  glfwSetFramebufferSizeCallback(window, [](GLFWwindow* w, int, int) { wake(w); });
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options)) return 2;
  if (!glfwInit()) {
    std::fprintf(stderr, "error: GLFW could not initialise (no display?)\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  const std::string title = "stagemem " + std::string(app_version());
  GLFWwindow* window = glfwCreateWindow(1280, 800, title.c_str(), nullptr, nullptr);
  if (window == nullptr) {
    std::fprintf(stderr, "error: no OpenGL 3.3 core context available\n");
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  NativeApp app;
  AppState& state = app.state;
  float scale_x = 1.0f, scale_y = 1.0f;
  glfwGetWindowContentScale(window, &scale_x, &scale_y);
  configure_imgui(state, scale_x);
  glfwSetWindowUserPointer(window, &app);
  install_wake_callbacks(window);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");
  initialize_state(state);
  glfwSetDropCallback(window, on_drop);
  apply_fragment(state, options.url.empty() ? default_link : std::string_view(options.url));
  state.history.committed = state.config;  // the first undo step is the first edit
  for (const auto& problem : state.link_problems) {
    std::fprintf(stderr, "link: %s: %s\n", problem.field.c_str(), problem.message.c_str());
  }

  int exit_code = 0;
  while (!glfwWindowShouldClose(window)) {
    // Interactive: idle costs nothing, as on the web (a smoke run with --frames draws every one).
    if (options.frames == 0 && !frame_needed(state)) {
      glfwWaitEventsTimeout(0.1);  // wakes on input (the callbacks above) or for timed redraws
      continue;
    }
    run_frame(state, window, app.platform);
    const bool last_frame =
        options.frames > 0 && static_cast<std::int64_t>(state.frame_count) >= options.frames;
    if (last_frame && !options.screenshot.empty() && !save_screenshot(window, options.screenshot)) {
      std::fprintf(stderr, "error: could not write %s\n", options.screenshot.c_str());
      exit_code = 1;
    }
    glfwSwapBuffers(window);
    if (last_frame) break;
  }
  if (options.frames > 0) {
    // The smoke run's evidence: frames drawn, the shader ran, and the report the app showed.
    const HeatStrip& strip = state.views.stages.heat_strip;
    std::printf(
        "frames %llu, heat strip draws %llu, shader %s, binding stage %lld, "
        "frame time %.3f ms mean, %.3f ms max (last %d)\n",
        static_cast<unsigned long long>(state.frame_count),
        static_cast<unsigned long long>(strip.draws), strip.failed ? "FAILED" : "ok",
        static_cast<long long>(state.report.binding_stage),
        static_cast<double>(state.frame_times.mean()), static_cast<double>(state.frame_times.max()),
        state.frame_times.count);
    if (strip.failed || strip.draws == 0) exit_code = 1;
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}
