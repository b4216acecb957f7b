// The configuration panel: model and parallel layout. Errors from the core are shown inline
// under the field they name; the report is not drawn until the configuration is valid.
#include <algorithm>
#include <string>

#include "app.h"
#include "imgui.h"
#include "presets.h"
#include "units.h"

namespace {

void show_field_errors(const stagemem::Report& report, std::string_view field) {
  for (const auto& e : report.diagnostics.errors) {
    if (e.field == field)
      ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", e.message.c_str());
  }
}

// An integer field with "-" and "+" buttons (what ImGui::InputInt draws), built from parts so
// that the buttons' rectangles can be published for the browser tests. No hold-to-repeat: one
// click is one step, even when a slow frame makes a click last past ImGui's repeat delay.
void edit_positive(AppState& state, const char* label, std::int64_t& value, std::int64_t max,
                   Widget minus, Widget plus) {
  ImGui::PushID(label);
  const float button_size = ImGui::GetFrameHeight();
  const float spacing = ImGui::GetStyle().ItemInnerSpacing.x;
  ImGui::SetNextItemWidth(std::max(1.0f, ImGui::CalcItemWidth() - 2.0f * (button_size + spacing)));
  int shown = static_cast<int>(value);
  // Out-of-range values cannot be entered: the widget rejects them instead of clamping later.
  if (ImGui::InputInt("##value", &shown, 0, 0) && shown >= 1 && shown <= max) value = shown;
  ImGui::SameLine(0.0f, spacing);
  if (ImGui::Button("-", ImVec2(button_size, button_size)) && value > 1) --value;
  record_widget_rect(state, minus);
  ImGui::SameLine(0.0f, spacing);
  if (ImGui::Button("+", ImVec2(button_size, button_size)) && value < max) ++value;
  record_widget_rect(state, plus);
  ImGui::SameLine(0.0f, spacing);
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::PopID();
}

}  // namespace

void draw_config(AppState& state, const stagemem::Report& report) {
  ImGui::SeparatorText("Model");
  if (ImGui::BeginCombo("preset", state.config.model.c_str())) {
    for (std::string_view name : stagemem::preset_names()) {
      const std::string label(name);
      if (ImGui::Selectable(label.c_str(), label == state.config.model)) state.config.model = label;
    }
    ImGui::EndCombo();
  }
  show_field_errors(report, "model");
  if (report.diagnostics.ok()) {
    ImGui::Text("%s parameters", state.report_labels.total_parameters.c_str());
  }

  ImGui::SeparatorText("Parallelism");
  edit_positive(state, "TP", state.config.parallel.tensor_parallel, 1024, Widget::tp_minus,
                Widget::tp_plus);
  show_field_errors(report, "parallel.tp");
  edit_positive(state, "PP", state.config.parallel.pipeline_parallel, 1024, Widget::pp_minus,
                Widget::pp_plus);
  show_field_errors(report, "parallel.pp");
  edit_positive(state, "EP", state.config.parallel.expert_parallel, 4096, Widget::ep_minus,
                Widget::ep_plus);
  show_field_errors(report, "parallel.ep");
}
