// state.h — everything the app shows or remembers, in one struct. Panels read it and edit it;
// nothing else in the app keeps state (no function-local statics).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "frame_times.h"
#include "heat_strip.h"
#include "report.h"
#include "report_labels.h"
#include "widget_rects.h"

struct ImFont;

struct AppState {
  stagemem::Config config;           // what the user edits; the URL fragment encodes it
  stagemem::Report report;           // estimate(config), refreshed when config changes
  ReportLabels report_labels;        // display strings of `report`, rebuilt with it
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
  std::int64_t hovered_stage = -1;   // stage whose bar is under the mouse this frame; -1 none
  bool stacked_layout = false;       // narrow window: configuration above the chart
  float tooltip_height = 0.0f;       // the bar tooltip's height last frame, to keep it on screen
  float ui_scale = 1.0f;             // device pixels per CSS pixel (web) or content scale (native)
  ImFont* mono_font = nullptr;       // DejaVu Sans Mono, for numbers and formulas (owned by ImGui)
  std::uint64_t frame_count = 0;     // published to tests (Embind frameCount / --frames)
  FrameTimes frame_times;            // CPU time of run_frame, shown in the status bar
  // The part of it before any GL call (events, report, panels, ImGui::Render). The rest is GL
  // submission, which blocks whenever the GL implementation must wait for the GPU (in headless
  // Chromium's software renderer that is most of the frame).
  FrameTimes user_interface_times;

  // Feedback of the last toolbar action ("Link copied"), shown until toolbar_message_until
  // (ImGui::GetTime() seconds).
  std::string toolbar_message;
  double toolbar_message_until = 0.0;

  // Screen rectangles of key widgets and of each stage's bar, as drawn in the last frame.
  std::array<WidgetRect, static_cast<std::size_t>(Widget::count)> widget_rects{};
  std::vector<WidgetRect> bar_rects;  // parallel to report.stages

  HeatStrip heat_strip;  // GPU resources of our own shader drawing
};

// Stores where the last ImGui item was drawn (call right after the widget).
void record_widget_rect(AppState& state, Widget widget);
