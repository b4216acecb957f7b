// The toolbar: undo/redo, open a file, and share the current report. "Copy link" copies the link
// of exactly the configuration on screen (the URL fragment holds all of it, valid or not),
// "Copy as Markdown" the summary and per-stage table for a wiki page, "Download JSON" the report
// as a file. The texts are built only when a button is pressed, never per frame.
#include "app.h"
#include "config/url_fragment.h"
#include "imgui.h"
#include "render/report_json.h"

namespace {

constexpr double message_seconds = 4.0;

}  // namespace

void show_message(AppState& state, std::string message) {
  state.toolbar_message = std::move(message);
  state.toolbar_message_until = ImGui::GetTime() + message_seconds;
  redraw_after(state, message_seconds + 0.05);  // to take the message away
}

void draw_toolbar(AppState& state, const stagemem::Report& report) {
  if (ImGui::Button("Copy link")) show_message(state, platform_copy_link(state));
  record_widget_rect(state, Widget::copy_link);
  ImGui::SetItemTooltip("Copy this page's link: it reproduces exactly this configuration");

  ImGui::SameLine();
  // A stale report is not what the configuration on screen gives: nothing to share until valid.
  ImGui::BeginDisabled(!state.report_valid || report_stale(state));
  if (ImGui::Button("Copy as Markdown")) {
    show_message(state, platform_copy_text(state, markdown_text(state)));
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

  ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
  ImGui::BeginDisabled(!can_undo(state));
  if (ImGui::Button("Undo")) undo(state);
  record_widget_rect(state, Widget::undo);
  ImGui::SetItemTooltip("Undo the last edit (Ctrl+Z)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(!can_redo(state));
  if (ImGui::Button("Redo")) redo(state);
  record_widget_rect(state, Widget::redo);
  ImGui::SetItemTooltip("Redo (Ctrl+Shift+Z)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Open file...")) show_message(state, platform_open_file(state));
  record_widget_rect(state, Widget::open_file);
  ImGui::SetItemTooltip(
      "Load a Hugging Face config.json or a stagemem JSON (or drop one onto the page, or paste "
      "a link anywhere)");

  if (!state.toolbar_message.empty() && ImGui::GetTime() < state.toolbar_message_until) {
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", state.toolbar_message.c_str());
  }
}
