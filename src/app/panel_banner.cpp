// The link banner: problems found in the link the page was opened with (or a pasted, dropped or
// opened file). Non-blocking; the good fields are applied, each bad one is named. Text is drawn by
// ImGui, never inserted into the page as HTML.
#include "actions.h"
#include "imgui.h"
#include "state.h"

void draw_link_banner(const AppState& state, Actions& out) {
  if (!state.link_banner_visible) return;
  ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0.35f, 0.12f, 0.10f, 1.0f));
  const float line = ImGui::GetTextLineHeightWithSpacing();
  const float height = line * (static_cast<float>(state.link_problems.size()) + 2.2f);
  ImGui::BeginChild("link_banner", ImVec2(0, height), true);
  ImGui::TextUnformatted(state.link_problems_title.c_str());
  for (const auto& problem : state.link_problems) {
    ImGui::BulletText("%s: %s", problem.field.c_str(), problem.message.c_str());
  }
  if (ImGui::SmallButton("Dismiss")) out.push(DismissBanner{});
  ImGui::EndChild();
  ImGui::PopStyleColor();
}
