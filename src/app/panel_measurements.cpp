// Measured values: readings for the cross-checks (Config::measurements) and measured gaps
// (Config::gaps), as two small editable tables with add and remove. Measurements never feed the
// model; a gap is a named MEASURED amount that shapes cannot derive. Errors the core names
// ("measurements[2].source", "gaps[0].stage") are listed under their table. The tables edit copies
// of the two lists, emitted as one SetMeasuredValues when they changed.
#include <algorithm>
#include <array>
#include <type_traits>
#include <utility>

#include "actions.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

constexpr ImGuiTableFlags table_flags =
    ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp;

// An enum's names (base/enum_names.h) are string literals: NUL-terminated.
template <typename Enum>
void name_combo(const char* id, Enum& value) {
  const std::span<const std::string_view> names = stagemem::enum_names<Enum>;
  const auto index = static_cast<std::size_t>(value);
  ImGui::SetNextItemWidth(-1.0f);
  if (ImGui::BeginCombo(id, index < names.size() ? names[index].data() : "?")) {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (ImGui::Selectable(names[i].data(), i == index)) {
        value = static_cast<Enum>(i);
      }
    }
    ImGui::EndCombo();
  }
}

void bytes_cell(std::int64_t& bytes) {
  ImGui::SetNextItemWidth(-1.0f);
  std::int64_t shown = bytes;
  if (ImGui::InputScalar("##bytes", ImGuiDataType_S64, &shown) && shown >= 0 &&
      shown <= stagemem::max_config_bytes) {
    bytes = shown;
  }
  ImGui::SetItemTooltip("%s (%s)", stagemem::format_gib(bytes, 3).c_str(),
                        stagemem::format_gb(bytes, 3).c_str());
}

void stage_cell(std::int64_t& stage, std::int64_t lowest) {
  ImGui::SetNextItemWidth(-1.0f);
  std::int64_t shown = stage;
  if (ImGui::InputScalar("##stage", ImGuiDataType_S64, &shown) && shown >= lowest &&
      shown <= 4096) {
    stage = shown;
  }
}

void text_cell(const char* id, std::string& text, std::size_t limit) {
  ImGui::SetNextItemWidth(-1.0f);
  if (ImGui::InputText(id, &text) && text.size() > limit) text.resize(limit);
}

void list_errors(const stagemem::Diagnostics& diagnostics, std::string_view prefix) {
  for (const auto& e : diagnostics.errors) {
    if (!std::string_view(e.field).starts_with(prefix)) continue;
    ImGui::PushStyleColor(ImGuiCol_Text, error_colour);
    ImGui::TextWrapped("%s: %s", e.field.c_str(), e.message.c_str());
    ImGui::PopStyleColor();
  }
}

void measurements_table(std::vector<stagemem::Measurement>& measurements, Actions& out) {
  std::size_t remove = measurements.size();
  if (!measurements.empty() && ImGui::BeginTable("measurements", 6, table_flags)) {
    ImGui::TableSetupColumn("point", ImGuiTableColumnFlags_WidthStretch, 2.2f);
    ImGui::TableSetupColumn("stage", ImGuiTableColumnFlags_WidthStretch, 0.8f);
    ImGui::TableSetupColumn("bytes", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("source", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("term", ImGuiTableColumnFlags_WidthStretch, 1.6f);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableHeadersRow();
    for (std::size_t i = 0; i < measurements.size(); ++i) {
      stagemem::Measurement& m = measurements[i];
      ImGui::PushID(static_cast<int>(i));
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      name_combo("##point", m.point);
      ImGui::TableNextColumn();
      stage_cell(m.stage, 0);
      ImGui::TableNextColumn();
      bytes_cell(m.bytes);
      ImGui::TableNextColumn();
      text_cell("##source", m.source, stagemem::max_source_length);
      ImGui::SetItemTooltip("who measured it and how, e.g. torch.cuda.memory_allocated, run 17");
      ImGui::TableNextColumn();
      ImGui::BeginDisabled(m.point != stagemem::MeasurementPoint::term);
      text_cell("##term", m.term, stagemem::max_term_name_length);
      ImGui::EndDisabled();
      ImGui::TableNextColumn();
      if (ImGui::SmallButton("x")) remove = i;
      ImGui::SetItemTooltip("remove this measurement");
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  if (remove < measurements.size()) {
    measurements.erase(measurements.begin() + static_cast<std::ptrdiff_t>(remove));
  }
  ImGui::BeginDisabled(measurements.size() >= stagemem::max_measurements);
  if (ImGui::Button("Add measurement")) measurements.push_back(stagemem::Measurement{});
  publish(out, Widget::add_measurement);
  ImGui::EndDisabled();
}

void gaps_table(std::vector<stagemem::GapEntry>& gaps, Actions& out) {
  std::size_t remove = gaps.size();
  if (!gaps.empty() && ImGui::BeginTable("gaps", 5, table_flags)) {
    ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthStretch, 2.4f);
    ImGui::TableSetupColumn("stage", ImGuiTableColumnFlags_WidthStretch, 0.8f);
    ImGui::TableSetupColumn("bytes", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("source", ImGuiTableColumnFlags_WidthStretch, 2.0f);
    ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed);
    ImGui::TableHeadersRow();
    for (std::size_t i = 0; i < gaps.size(); ++i) {
      stagemem::GapEntry& g = gaps[i];
      ImGui::PushID(static_cast<int>(i));
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      name_combo("##kind", g.kind);
      ImGui::TableNextColumn();
      stage_cell(g.stage, -1);
      ImGui::SetItemTooltip("-1: the same reading applies to every stage");
      ImGui::TableNextColumn();
      bytes_cell(g.bytes);
      ImGui::TableNextColumn();
      text_cell("##source", g.source, stagemem::max_source_length);
      ImGui::TableNextColumn();
      if (ImGui::SmallButton("x")) remove = i;
      ImGui::SetItemTooltip("remove this gap");
      ImGui::PopID();
    }
    ImGui::EndTable();
  }
  if (remove < gaps.size()) gaps.erase(gaps.begin() + static_cast<std::ptrdiff_t>(remove));
  ImGui::BeginDisabled(gaps.size() >= stagemem::max_measurements);
  if (ImGui::Button("Add gap")) gaps.push_back(stagemem::GapEntry{});
  publish(out, Widget::add_gap);
  ImGui::EndDisabled();
}

}  // namespace

void draw_measurements(const AppState& state, Actions& out) {
  ImGui::SetNextItemOpen(true, ImGuiCond_FirstUseEver);
  if (!ImGui::CollapsingHeader("Measured values")) return;
  SetMeasuredValues edited{state.config.measurements, state.config.gaps};
  ImGui::TextDisabled("readings compared with the derived terms (never model inputs)");
  ImGui::PushID("measurements");
  measurements_table(edited.measurements, out);
  ImGui::PopID();
  list_errors(state.diagnostics, "measurements");
  ImGui::SeparatorText("Measured gaps");
  ImGui::TextDisabled("memory shapes cannot derive, as a named measured amount");
  ImGui::PushID("gaps");
  gaps_table(edited.gaps, out);
  ImGui::PopID();
  list_errors(state.diagnostics, "gaps");
  if (edited.measurements != state.config.measurements || edited.gaps != state.config.gaps) {
    out.push(std::move(edited));
  }
}
