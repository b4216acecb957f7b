// The toolbar: share the current report. "Copy link" copies the page's link (the URL fragment
// holds the whole configuration), "Copy as Markdown" a table for a wiki page, "Download JSON" the
// report as a file. The texts are built only when a button is pressed, never per frame.
#include "app.h"
#include "imgui.h"
#include "markdown_table.h"
#include "report_json.h"
#include "url_fragment.h"

namespace {

constexpr double message_seconds = 4.0;

void show_message(AppState& state, std::string message) {
  state.toolbar_message = std::move(message);
  state.toolbar_message_until = ImGui::GetTime() + message_seconds;
}

}  // namespace

void draw_toolbar(AppState& state, const stagemem::Report& report) {
  if (ImGui::Button("Copy link")) show_message(state, platform_copy_link(state));
  record_widget_rect(state, Widget::copy_link);
  ImGui::SetItemTooltip("Copy this page's link: it reproduces exactly this configuration");

  ImGui::SameLine();
  ImGui::BeginDisabled(!report.diagnostics.ok());
  if (ImGui::Button("Copy as Markdown")) {
    show_message(state, platform_copy_text(state, markdown_table(report)));
  }
  record_widget_rect(state, Widget::copy_markdown);
  ImGui::SetItemTooltip("Copy the per-stage table as Markdown, for a wiki page");

  ImGui::SameLine();
  if (ImGui::Button("Download JSON")) {
    const std::string json = stagemem::report_json(
        report, state.reported_config, "#" + stagemem::encode_fragment(state.reported_config), {});
    show_message(state,
                 platform_save_text(state, "stagemem-report.json", "application/json", json));
  }
  record_widget_rect(state, Widget::download_json);
  ImGui::SetItemTooltip("Save the report, every term with its exact bytes, as JSON");
  ImGui::EndDisabled();

  if (!state.toolbar_message.empty() && ImGui::GetTime() < state.toolbar_message_until) {
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", state.toolbar_message.c_str());
  }
}
