// The toolbar: share the current report, undo/redo, open a file, the unit of amounts (GiB or
// GB). "Copy link" copies the link of
// exactly the configuration on screen (the URL fragment holds all of it, valid or not), "Copy as
// Markdown" the summary and per-stage table for a wiki page, "Download JSON" the report as a
// file. Each button is an action: the texts are built when it is applied, never per frame.
// "Pin as baseline" (Ctrl+B) keeps the report on screen to compare against while editing;
// "Compare with bf16" pins its bf16 twin instead (what fp8 changed), offered when it computes or
// stores anything in low precision; with one pinned, "Unpin" and "Swap" (the baseline back on
// screen, what was there pinned instead).
#include "actions.h"
#include "imgui.h"
#include "state.h"
#include "widgets.h"

void draw_toolbar(const AppState& state, Actions& out) {
  if (ImGui::Button("Copy link")) out.push(CopyLink{});
  publish(out, Widget::copy_link);
  ImGui::SetItemTooltip("Copy this page's link: it reproduces exactly this configuration");

  ImGui::SameLine();
  // A stale report is not what the configuration on screen gives: nothing to share until valid.
  ImGui::BeginDisabled(!state.report_valid || report_stale(state));
  if (ImGui::Button("Copy as Markdown")) out.push(CopyMarkdown{});
  publish(out, Widget::copy_markdown);
  ImGui::SetItemTooltip("Copy the per-stage table as Markdown, for a wiki page");

  ImGui::SameLine();
  if (ImGui::Button("Download JSON")) out.push(DownloadJson{});
  publish(out, Widget::download_json);
  ImGui::SetItemTooltip("Save the report, every term with its exact bytes, as JSON");
  ImGui::EndDisabled();

  ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
  ImGui::BeginDisabled(state.history.undo.empty());
  if (ImGui::Button("Undo")) out.push(Undo{});
  publish(out, Widget::undo);
  ImGui::SetItemTooltip("Undo the last edit (Ctrl+Z)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  ImGui::BeginDisabled(state.history.redo.empty());
  if (ImGui::Button("Redo")) out.push(Redo{});
  publish(out, Widget::redo);
  ImGui::SetItemTooltip("Redo (Ctrl+Shift+Z)");
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Open file...")) out.push(OpenFile{});
  publish(out, Widget::open_file);
  ImGui::SetItemTooltip(
      "Load a Hugging Face config.json or a stagemem JSON (or drop one onto the page, or paste "
      "a link anywhere)");

  // The baseline: pinned from a valid report only (a stale one is not what is on screen).
  const bool can_pin = state.report_valid && !report_stale(state);
  ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
  ImGui::BeginDisabled(!can_pin);
  const bool pinned = state.baseline.pinned;
  if (ImGui::Button(pinned ? "Pin again" : "Pin as baseline")) out.push(PinBaseline{});
  publish(out, Widget::pin_baseline);
  ImGui::SetItemTooltip(pinned ? "Pin the configuration on screen as the baseline instead (Ctrl+B)"
                               : "Keep this configuration as the baseline: edit, and see each "
                                 "stage against it and what changed (Ctrl+B)");
  ImGui::EndDisabled();
  if (!ImGui::GetIO().WantTextInput && can_pin &&
      ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiKey_B)) {
    out.push(PinBaseline{});
  }
  ImGui::SameLine();
  compare_with_bf16_button(state, out, Widget::bf16_baseline);
  if (pinned) {
    ImGui::SameLine();
    if (ImGui::Button("Unpin")) out.push(UnpinBaseline{});
    publish(out, Widget::unpin_baseline);
    ImGui::SetItemTooltip("Stop comparing with the baseline");
    ImGui::SameLine();
    ImGui::BeginDisabled(!can_pin);
    if (ImGui::Button("Swap")) out.push(SwapBaseline{});
    publish(out, Widget::swap_baseline);
    ImGui::SetItemTooltip(
        "Put the baseline's configuration on screen and pin the one on screen (Undo returns)");
    ImGui::EndDisabled();
  }
  // The unit of every amount on the page (and in Copy as Markdown); the link keeps the choice.
  ImGui::SameLine(0.0f, ImGui::GetFontSize() * 1.5f);
  const stagemem::AmountUnit unit = state.display.unit;
  if (ImGui::RadioButton("GiB", unit == stagemem::AmountUnit::gib)) {
    out.push(SetAmountUnit{stagemem::AmountUnit::gib});
  }
  publish(out, Widget::unit_gib);
  ImGui::SetItemTooltip("Show amounts in GiB (2^30 bytes), as PyTorch and nvidia-smi count");
  ImGui::SameLine();
  if (ImGui::RadioButton("GB", unit == stagemem::AmountUnit::gb)) {
    out.push(SetAmountUnit{stagemem::AmountUnit::gb});
  }
  publish(out, Widget::unit_gb);
  ImGui::SetItemTooltip("Show amounts in GB (10^9 bytes), as vendors state device capacities");

  if (!state.toolbar_message.empty() && ImGui::GetTime() < state.toolbar_message_until) {
    ImGui::SameLine();
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", state.toolbar_message.c_str());
  }
}
