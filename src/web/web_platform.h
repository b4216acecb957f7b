// web_platform.h — the app in the page: the page's Platform (platform.h: its address and
// history, the async clipboard API, Blob downloads, file pickers) and the one app the page runs.
// platform_web.cpp drives it frame by frame; bindings.cpp is its Embind API.
// Limitations: one app per page (the Embind functions reach it through register_web_app).
#pragma once

#include <string>

#include "config/config.h"
#include "platform.h"
#include "state.h"

struct GLFWwindow;

class WebPlatform final : public Platform {
 public:
  std::string copy_link(const AppState& state) override;
  std::string copy_text(const std::string& text) override;
  std::string save_text(const std::string& file_name, const std::string& mime_type,
                        const std::string& text) override;
  std::string open_file() override;
  std::string open_snapshot() override;
  std::string link(const std::string& fragment) const override;
  void push_link(const AppState& state) override;

  // Keeps location.hash equal to what is on screen (called after every frame). The fragment is
  // rewritten only when the configuration or the view pairs differ from what the URL describes,
  // so an untouched bad link stays as the user pasted it.
  void sync_location(const AppState& state);
  // The URL already describes `state` (a link applied from it): nothing to rewrite.
  void location_shows(const AppState& state);
  // The URL describes nothing on screen yet: the next sync writes it (a page opened without a
  // configuration gets the default's link at once).
  void forget_location();

  // What ImGui's copy wrote and its paste reads (refreshed by the page's paste event, whose text
  // no permission prompt guards).
  std::string clipboard_text;

 private:
  bool location_known_ = false;
  stagemem::Config location_config_;  // what the page's URL currently describes
  std::string location_view_;         // and its view pairs (link.h view_fragment)
};

struct WebApp {
  AppState state;
  WebPlatform platform;
  GLFWwindow* window = nullptr;
  int canvas_width = 0;
  int canvas_height = 0;
  float pixel_ratio = 0.0f;
};

// Registers the page's app for the Embind API (bindings.cpp). Called once, before the first frame.
void register_web_app(WebApp* app);
