// The "Model" panel: every term stagemem can produce (the core's term_catalogue(), computed once
// at start-up): name, family, tag, when it is allocated, what it scales with, an example formula
// (on a small synthetic model) and the option that brings it in. Filterable by text; the list of
// matching rows is rebuilt only when the filter changes.
#include <algorithm>
#include <cctype>

#include "actions.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

void filter_catalogue(ModelView& view) {
  const std::string needle = lower(view.catalogue_filter);
  view.catalogue_rows.clear();
  for (std::size_t i = 0; i < view.catalogue.size(); ++i) {
    if (view.catalogue_search[i].find(needle) != std::string::npos) {
      view.catalogue_rows.push_back(i);
    }
  }
}

}  // namespace

void init_model_view(ModelView& view) {
  view.catalogue = stagemem::term_catalogue();
  view.catalogue_search.clear();
  for (const auto& entry : view.catalogue) {
    view.catalogue_search.push_back(
        lower(entry.name + " " + std::string(stagemem::family_name(entry.family)) + " " +
              std::string(stagemem::tag_name(entry.tag)) + " " + entry.scaling + " " +
              entry.brought_in_by + " " +
              std::string(stagemem::allocation_point_name(entry.allocated_at))));
  }
  filter_catalogue(view);
}

void draw_model(const AppState& state, ModelView& view, Actions& out) {
  ImGui::TextWrapped(
      "Every term stagemem can produce, with the formula as the report shows it on "
      "a small synthetic model (h 1024, seq 4096, mbs 1) and the option that "
      "brings it in.");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 20.0f);
  if (ImGui::InputTextWithHint("##filter", "filter: name, family, tag, option...",
                               &view.catalogue_filter)) {
    filter_catalogue(view);
  }
  publish(out, Widget::catalogue_filter);
  ImGui::SameLine();
  ImGui::TextDisabled("%zu of %zu terms", view.catalogue_rows.size(), view.catalogue.size());
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg |
                                    ImGuiTableFlags_ScrollY | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("catalogue", 5, flags, ImVec2(0.0f, ImGui::GetContentRegionAvail().y))) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("term", ImGuiTableColumnFlags_WidthStretch, 1.4f);
  ImGui::TableSetupColumn("family, tag, allocated at", ImGuiTableColumnFlags_WidthFixed);
  ImGui::TableSetupColumn("scales with", ImGuiTableColumnFlags_WidthStretch, 2.4f);
  ImGui::TableSetupColumn("example formula", ImGuiTableColumnFlags_WidthStretch, 2.4f);
  ImGui::TableSetupColumn("brought in by", ImGuiTableColumnFlags_WidthStretch, 1.0f);
  ImGui::TableHeadersRow();
  for (const std::size_t i : view.catalogue_rows) {
    const stagemem::CatalogueEntry& entry = view.catalogue[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", entry.name.c_str());
    ImGui::TableNextColumn();
    text_view(stagemem::family_name(entry.family));
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    text_view(stagemem::tag_name(entry.tag));
    text_view(stagemem::allocation_point_name(entry.allocated_at));
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", entry.scaling.c_str());
    ImGui::TableNextColumn();
    ImGui::PushFont(state.mono_font);
    ImGui::TextWrapped("%s", entry.example_formula.c_str());
    ImGui::PopFont();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", entry.brought_in_by.c_str());
  }
  ImGui::EndTable();
}
