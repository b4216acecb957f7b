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

Fix fix_button(const stagemem::Config& config, const stagemem::FieldMessage& error, bool& pressed) {
  pressed = false;
  const Fix fix = fix_for(config, error);
  if (fix == Fix::none) return fix;
  const char* label = fix_label(fix);
  ImGui::PushID(label);
  pressed = ImGui::SmallButton(label);
  ImGui::SetItemTooltip("%s", error.message.c_str());
  ImGui::PopID();
  return fix;
}
