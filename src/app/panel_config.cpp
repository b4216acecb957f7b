// The configuration panel: model and parallel layout. Errors from the core are shown inline
// under the field they name; the report is not drawn until the configuration is valid.
#include <string>

#include "app.h"
#include "imgui.h"
#include "presets.h"
#include "units.h"

namespace {

void show_field_errors(const stagemem::Report& report, std::string_view field) {
  for (const auto& e : report.diagnostics.errors) {
    if (e.field == field) ImGui::TextColored(ImVec4(1.0f, 0.45f, 0.4f, 1.0f), "%s", e.message.c_str());
  }
}

void edit_positive(const char* label, std::int64_t& value, std::int64_t max) {
  int shown = static_cast<int>(value);
  if (ImGui::InputInt(label, &shown, 1, 8)) {
    // Out-of-range values cannot be entered: the widget rejects them instead of clamping later.
    if (shown >= 1 && shown <= max) value = shown;
  }
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
    ImGui::Text("%s parameters", stagemem::group_digits(report.total_parameters).c_str());
  }

  ImGui::SeparatorText("Parallelism");
  edit_positive("TP", state.config.parallel.tensor_parallel, 1024);
  show_field_errors(report, "parallel.tp");
  edit_positive("PP", state.config.parallel.pipeline_parallel, 1024);
  show_field_errors(report, "parallel.pp");
  edit_positive("EP", state.config.parallel.expert_parallel, 4096);
  show_field_errors(report, "parallel.ep");
}
