#include "widgets.h"

WidgetRect last_item_rect(std::uint64_t frame) {
  if (!ImGui::IsItemVisible()) return WidgetRect{};
  const ImVec2 min = ImGui::GetItemRectMin();
  const ImVec2 max = ImGui::GetItemRectMax();
  return {min.x, min.y, max.x, max.y, frame, true};
}

void publish(Actions& out, Widget widget) {
  out.publish(widget, last_item_rect(out.frame()));
}

void text_view(std::string_view text) {
  ImGui::TextUnformatted(text.data(), text.data() + text.size());
}

void mono_text(ImFont* font, std::string_view text, bool wrap) {
  ImGui::PushFont(font);
  if (wrap) ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text.data(), text.data() + text.size());
  if (wrap) ImGui::PopTextWrapPos();
  ImGui::PopFont();
}

const stagemem::Repair* fix_button(const AppState& state, std::size_t error, bool& pressed,
                                   Actions* published) {
  pressed = false;
  const stagemem::Repair* repair = repair_of(state, error);
  if (repair == nullptr) return nullptr;
  ImGui::PushID(static_cast<int>(error));
  // The whole label when it fits; else the action on the button and its reason beside it,
  // wrapped (a narrow configuration panel never cuts the label off).
  const float room = ImGui::GetContentRegionAvail().x;
  const bool fits =
      ImGui::CalcTextSize(repair->label.c_str()).x + 2.0f * ImGui::GetStyle().FramePadding.x <=
      room;
  pressed = ImGui::SmallButton(fits ? repair->label.c_str() : repair->action.c_str());
  if (published != nullptr) publish(*published, Widget::field_fix);
  if (!fits && !repair->reason.empty()) {
    const bool hovered = ImGui::IsItemHovered();
    ImGui::SameLine();
    ImGui::TextWrapped("(%s)", repair->reason.c_str());
    if (hovered) ImGui::SetTooltip("%s", repair->label.c_str());
    ImGui::PopID();
    return repair;
  }
  ImGui::SetItemTooltip("%s: %s", state.diagnostics.errors[error].field.c_str(),
                        state.diagnostics.errors[error].message.c_str());
  ImGui::PopID();
  return repair;
}

void compare_with_bf16_button(const AppState& state, Actions& out, Widget widget) {
  const char* unavailable = bf16_comparison_unavailable(state);
  ImGui::BeginDisabled(unavailable != nullptr);
  if (ImGui::Button("Compare with bf16")) out.push(CompareWithBf16{});
  publish(out, widget);
  ImGui::SetItemTooltip("%s", unavailable != nullptr
                                  ? unavailable
                                  : "Pin this configuration computed in bf16 as the baseline: "
                                    "what did its low precision change?");
  ImGui::EndDisabled();
}
