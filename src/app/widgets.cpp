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

const stagemem::Repair* fix_button(const AppState& state, std::size_t error, bool& pressed) {
  pressed = false;
  const stagemem::Repair* repair = repair_of(state, error);
  if (repair == nullptr) return nullptr;
  ImGui::PushID(static_cast<int>(error));
  pressed = ImGui::SmallButton(repair->label.c_str());
  ImGui::SetItemTooltip("%s: %s", state.diagnostics.errors[error].field.c_str(),
                        state.diagnostics.errors[error].message.c_str());
  ImGui::PopID();
  return repair;
}
