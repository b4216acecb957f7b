// platform.h — the one platform seam: the services the app asks of the platform it runs on.
// One implementation per platform, chosen by the build system: platform_native.cpp (the desktop:
// GLFW's clipboard, files in the working directory) and src/web/platform_web.cpp (the page: its
// address and history, the async clipboard API, Blob downloads, file pickers). The reducer
// (actions.cpp) and the input loaders it calls are the app's only callers: panels never see a
// Platform, they emit actions.
// Limitations: everything here is synchronous from the app's side; what the browser does later
// (a picked file, a clipboard refusal) comes back as a page event (src/web) or a console message.
#pragma once

#include <string>

struct AppState;

class Platform {
 public:
  // Each of these returns the toolbar's feedback line ("Link copied").
  // Web: the page's link of exactly the configuration on screen; native: the fragment (what
  // --url and the page after '#' accept).
  virtual std::string copy_link(const AppState& state) = 0;
  virtual std::string copy_text(const std::string& text) = 0;
  // Web: a Blob download; native: a file in the working directory.
  virtual std::string save_text(const std::string& file_name, const std::string& mime_type,
                                const std::string& text) = 0;
  // Opens the file picker for a config.json / stagemem JSON (web: an <input type=file>; the file
  // arrives later as a page event). Native: says to drop the file onto the window.
  virtual std::string open_file() = 0;
  // The same for an allocator snapshot (.pickle).
  virtual std::string open_snapshot() = 0;

  // The link of a fragment: the page's address + '#' + fragment (web); "#" + fragment (native).
  virtual std::string link(const std::string& fragment) const = 0;
  // A link the user loaded or pasted becomes a history entry (Back returns to the previous one);
  // native: nothing.
  virtual void push_link(const AppState& state) = 0;

 protected:
  ~Platform() = default;  // not deleted through this interface
};
