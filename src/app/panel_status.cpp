// The status bar: version and commit, binding stage, and behind a debug toggle the frame
// function's CPU time (mean and max over the last FrameTimes::capacity frames; "UI": the part
// before GL submission). Kept discreet (disabled text colour). ImGui formats into its own
// buffer: nothing is allocated here.
#include "actions.h"
#include "imgui.h"
#include "state.h"
#include "version.h"
#include "widgets.h"

void draw_status_bar(const AppState& state, StatusView& view, Actions& out) {
  const stagemem::Report& report = state.report;
  const std::string_view version = app_version();
  const std::string_view commit = app_commit();
  ImGui::AlignTextToFramePadding();
  ImGui::TextDisabled("stagemem %.*s (%.*s)", static_cast<int>(version.size()), version.data(),
                      static_cast<int>(commit.size()), commit.data());
  if (state.report_valid && !report_stale(state) && report.binding_stage >= 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("| binding stage %lld", static_cast<long long>(report.binding_stage));
  }
  ImGui::SameLine();
  ImGui::TextDisabled("|");
  ImGui::SameLine();
  ImGui::PushStyleVar(ImGuiStyleVar_FramePadding, ImVec2(ImGui::GetStyle().FramePadding.x, 0.0f));
  ImGui::Checkbox("frame times", &view.show_frame_times);
  ImGui::PopStyleVar();
  publish(out, Widget::frame_times);
  ImGui::SetItemTooltip("debug: the CPU time of drawing a frame (none are drawn while idle)");
  if (!view.show_frame_times) return;
  ImGui::SameLine();
  ImGui::TextDisabled(
      "frame %.2f ms mean, %.2f ms max; UI %.2f ms mean (last %d frames drawn; %llu idle "
      "callbacks)",
      static_cast<double>(state.frame_times.mean()), static_cast<double>(state.frame_times.max()),
      static_cast<double>(state.user_interface_times.mean()), state.frame_times.count,
      static_cast<unsigned long long>(state.redraw.idle_callbacks));
}
