#include "browser.h"

#include <emscripten.h>
#include <emscripten/html5.h>

#include "state.h"
#include "url_fragment.h"

// clang-format off
EM_JS(char*, js_read_location_fragment, (), {
  const text = window.location.hash.replace(/^#/, "");
  const size = lengthBytesUTF8(text) + 1;
  const copy = _malloc(size);
  stringToUTF8(text, copy, size);
  return copy;
});

EM_JS(void, js_replace_location_fragment, (const char* fragment), {
  const url = new URL(window.location.href);
  url.hash = UTF8ToString(fragment);
  window.history.replaceState(window.history.state, "", url.href);
});

EM_JS(void, js_listen_for_hash_changes, (), {
  window.addEventListener("hashchange", () => {
    Module.stagememApplyFragment(window.location.hash.replace(/^#/, ""));
  });
});

// Browser.setCanvasSize notifies Emscripten's GLFW, which adopts the size as the window and
// framebuffer size. (glfwSetWindowSize would request fullscreen when the size equals the screen.)
EM_JS(void, js_set_canvas_size, (int width, int height), {
  Module.setCanvasSize(width, height);
});

EM_JS(void, js_mark_app_ready, (), {
  const loading = document.getElementById("loading");
  if (loading) loading.hidden = true;
  document.body.dataset.appReady = "true";
  // Milliseconds from navigation start to the first frame on screen (published to the tests).
  Module.firstFrameMs = performance.now();
  // Keys reach ImGui's keyboard navigation without a first click.
  Module.canvas.focus();
});

EM_JS(void, js_copy_to_clipboard, (const char* text), {
  const value = text ? UTF8ToString(text) : window.location.href;
  if (!navigator.clipboard) {
    console.warn("stagemem: no clipboard API on this page (it needs https or localhost)");
    return;
  }
  navigator.clipboard.writeText(value).catch((error) => {
    console.warn("stagemem: the clipboard refused the text: " + error);
  });
});

EM_JS(void, js_download_text, (const char* file_name, const char* mime_type, const char* text), {
  const blob = new Blob([UTF8ToString(text)], { type: UTF8ToString(mime_type) });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = UTF8ToString(file_name);
  link.style.display = "none";
  document.body.appendChild(link);
  link.click();
  link.remove();
  // The download has started from the URL by now; release the Blob a little later.
  setTimeout(() => URL.revokeObjectURL(url), 60000);
});
// clang-format on

std::string read_location_fragment() {
  char* text = js_read_location_fragment();
  std::string result(text);
  free(text);
  return result;
}

void replace_location_fragment(const std::string& fragment) {
  js_replace_location_fragment(fragment.c_str());
}

void set_canvas_size(int width, int height) {
  js_set_canvas_size(width, height);
}

void listen_for_hash_changes() {
  js_listen_for_hash_changes();
}
void mark_app_ready() {
  js_mark_app_ready();
}

void copy_location_to_clipboard() {
  js_copy_to_clipboard(nullptr);
}
void copy_text_to_clipboard(const std::string& text) {
  js_copy_to_clipboard(text.c_str());
}
void download_text(const std::string& file_name, const std::string& mime_type,
                   const std::string& text) {
  js_download_text(file_name.c_str(), mime_type.c_str(), text.c_str());
}

double device_pixel_ratio() {
  return emscripten_get_device_pixel_ratio();
}

void canvas_css_size(double& width, double& height) {
  emscripten_get_element_css_size("#canvas", &width, &height);
}

void sync_location_fragment(AppState& state) {
  const std::string plan_keys = plan_link_keys(state.plan);  // the Plan tab's inputs
  if (state.config == state.location_config && plan_keys == state.plan.plan_link_keys) return;
  // Only a valid configuration is written: an invalid edit must not become a link.
  if (!state.report_valid || !(state.reported_config == state.config) ||
      !state.report.diagnostics.ok()) {
    return;
  }
  replace_location_fragment(stagemem::encode_fragment(state.config) + plan_keys);
  state.location_config = state.config;
  state.plan.plan_link_keys = plan_keys;
}
