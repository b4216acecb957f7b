// state.h — everything the app shows or remembers, in one struct. Panels read it and edit it;
// nothing else in the app keeps state (no function-local statics).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "heat_strip.h"
#include "report.h"

struct AppState {
  stagemem::Config config;           // what the user edits; the URL fragment encodes it
  stagemem::Report report;           // estimate(config), refreshed when config changes
  stagemem::Config reported_config;  // the config `report` was computed for
  bool report_valid = false;

  // Problems with the link the page was opened with (or a pasted link): shown as a banner
  // until dismissed; the app falls back to defaults for a link with errors.
  std::vector<stagemem::FieldMessage> link_problems;
  bool link_banner_visible = false;
  // The configuration the page's URL currently describes (web): the fragment is rewritten only
  // when `config` differs from it, so an untouched bad link stays as the user pasted it.
  stagemem::Config location_config;

  std::int64_t selected_stage = -1;  // stage whose table is open; -1 none
  float ui_scale = 1.0f;             // device pixels per CSS pixel (web) or content scale (native)
  std::uint64_t frame_count = 0;     // published to tests (Embind frameCount / --frames)

  HeatStrip heat_strip;  // GPU resources of our own shader drawing
};
