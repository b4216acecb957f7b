#include "browser.h"

#include <emscripten.h>
#include <emscripten/html5.h>

#include <cstdlib>

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

EM_JS(void, js_push_location_fragment, (const char* fragment), {
  const url = new URL(window.location.href);
  url.hash = UTF8ToString(fragment);
  if (url.href !== window.location.href) window.history.pushState(null, "", url.href);
});

EM_JS(char*, js_page_address, (), {
  const text = window.location.href.split("#")[0];
  const size = lengthBytesUTF8(text) + 1;
  const copy = _malloc(size);
  stringToUTF8(text, copy, size);
  return copy;
});

// Input events only set a flag that the frame loop reads (take_input_events): ImGui receives the
// events themselves through Emscripten's GLFW. Paste hands the text to the app; dropped files
// (anywhere on the page, not only the canvas) are read as text and loaded.
EM_JS(void, js_listen_for_page_events, (), {
  Module.stagememInput = true;
  const wake = () => { Module.stagememInput = true; };
  for (const type of ["keydown", "keyup", "mousemove", "mousedown", "mouseup", "wheel",
                      "touchstart", "touchmove", "touchend", "focus", "blur", "resize",
                      "pointermove", "pointerdown", "pointerup", "visibilitychange"]) {
    window.addEventListener(type, wake, { capture: true, passive: true });
  }
  document.addEventListener("paste", (event) => {
    const text = event.clipboardData ? event.clipboardData.getData("text") : "";
    Module.stagememInput = true;
    if (text) Module.stagememPaste(text);
  });
  window.addEventListener("dragover", (event) => {
    event.preventDefault();
    Module.stagememInput = true;
  });
  // A file is read here, in the page, and handed to the app; nothing is sent anywhere. An
  // allocator snapshot (a pickle: by name, or pickle's PROTO opcode 0x80 and protocol 2-5 first)
  // goes over as bytes; any other file as UTF-8 text (what File.text() gives).
  // Its first bytes and size are checked against the limit of what it is first
  // (Module.stagememAcceptFile): a file over it is never read.
  Module.stagememReadFile = (file) => {
    file.slice(0, 16).arrayBuffer().then((head) => {
      if (!Module.stagememAcceptFile(file.name, new Uint8Array(head), file.size)) return null;
      return file.arrayBuffer();
    }).then((buffer) => {
      if (buffer === null) return;
      const bytes = new Uint8Array(buffer);
      const name = file.name.toLowerCase();
      const pickle = name.endsWith(".pickle") || name.endsWith(".pkl") ||
                     (bytes.length >= 2 && bytes[0] === 0x80 && bytes[1] >= 2 && bytes[1] <= 5);
      if (pickle) {
        Module.stagememLoadBytes(file.name, bytes);
      } else {
        Module.stagememLoadFile(file.name, new TextDecoder().decode(bytes));
      }
    });
  };
  window.addEventListener("drop", (event) => {
    event.preventDefault();
    Module.stagememInput = true;
    const files = event.dataTransfer ? event.dataTransfer.files : null;
    if (files && files.length > 0) {
      Module.stagememReadFile(files[0]);
    } else if (event.dataTransfer) {
      const text = event.dataTransfer.getData("text");
      if (text) Module.stagememLoadFile("the dropped text", text);
    }
  });
});

EM_JS(int, js_take_input_events, (), {
  const had = Module.stagememInput ? 1 : 0;
  Module.stagememInput = false;
  return had;
});

EM_JS(void, js_open_file_picker, (const char* accept), {
  const input = document.createElement("input");
  input.type = "file";
  input.accept = UTF8ToString(accept);
  input.style.display = "none";
  // Tests find the picker by this id (the element lives until a file is chosen or the page goes).
  input.id = "stagemem-file-input";
  input.addEventListener("change", () => {
    const file = input.files && input.files[0];
    if (file) Module.stagememReadFile(file);
    input.remove();
  });
  const earlier = document.getElementById(input.id);
  if (earlier) earlier.remove();
  document.body.appendChild(input);
  input.click();
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
  const value = UTF8ToString(text);
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

void push_location_fragment(const std::string& fragment) {
  js_push_location_fragment(fragment.c_str());
}

std::string page_address() {
  char* text = js_page_address();
  std::string result(text);
  free(text);
  return result;
}

void listen_for_hash_changes() {
  js_listen_for_hash_changes();
}

void listen_for_page_events() {
  js_listen_for_page_events();
}

bool take_input_events() {
  return js_take_input_events() != 0;
}

void open_file_picker() {
  js_open_file_picker(".json,application/json,.pickle,.pkl");
}

void open_snapshot_picker() {
  js_open_file_picker(".pickle,.pkl");
}
void mark_app_ready() {
  js_mark_app_ready();
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
