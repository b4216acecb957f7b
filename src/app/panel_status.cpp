// The status bar: version, binding stage and the frame function's CPU time (mean and max over
// the last FrameTimes::capacity frames; "UI": the part before GL submission), kept discreet
// (disabled text colour). ImGui formats into its own buffer: nothing is allocated here.
#include "app.h"
#include "imgui.h"

void draw_status_bar(AppState& state, const stagemem::Report& report) {
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("stagemem %s", STAGEMEM_VERSION);
  if (report.diagnostics.ok() && report.binding_stage >= 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("| binding stage %lld", static_cast<long long>(report.binding_stage));
  }
  ImGui::SameLine();
  ImGui::TextDisabled(
      "| frame %.2f ms mean, %.2f ms max; UI %.2f ms mean (last %d frames)",
      static_cast<double>(state.frame_times.mean()), static_cast<double>(state.frame_times.max()),
      static_cast<double>(state.user_interface_times.mean()), state.frame_times.count);
}
