// The first screen's answer, under the toolbar: which model on which device in which parallel
// layout (with the derived data-parallel size, world size and node count; GPUs per node is
// editable), and the verdict: "fits: stage 1 binds at 224.7 of 288.0 GiB" or "stage 0 is 71.6 GiB
// over". Under it, every setting that changes memory (render/vocabulary.h settings_text: seq, mbs,
// gbs and micro-batches, recompute, optimizer, precision, schedule) and whether the rest is the
// defaults the CLI and a link start from; after a model change, what the layout had to change and
// what was kept (fixes.h). While the configuration has errors the verdict is the last valid
// one's, marked stale, with the first error named and its one-click fix.
#include <algorithm>

#include "actions.h"
#include "fixes.h"
#include "imgui.h"
#include "parallel/layout.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

constexpr ImVec4 fits_colour(0.45f, 0.85f, 0.50f, 1.0f);
constexpr ImVec4 over_colour = error_colour;
constexpr ImVec4 stale_colour(0.95f, 0.75f, 0.30f, 1.0f);

std::string model_text(const AppState& state) {
  const stagemem::Config& c = state.config;
  if (c.custom_model.empty()) return c.model;
  // An imported model by its own name (its _name_or_path or file name), marked custom.
  const auto& model = state.fix_its.model;
  return model && !model->name.empty() ? model->name + " (custom)" : "a custom model";
}

std::string device_text(const stagemem::Config& c, stagemem::AmountUnit unit) {
  if (c.device.bytes > 0) {
    return "a custom device (" + stagemem::amount_text(c.device.bytes, unit) + ")";
  }
  return c.device.preset.empty() ? "no device" : c.device.preset;
}

// After a model change: what the layout had to change for the model, and the settings carried
// over that are not the defaults (they change memory), with a reset to the defaults.
void draw_model_notice(const AppState& state, Actions& out) {
  const FixIts& f = state.fix_its;
  if (f.model_changed.empty() && f.kept.empty()) return;
  if (!f.model_changed.empty()) {
    ImGui::TextColored(stale_colour, "%s", f.model_changed.c_str());
  }
  if (!f.kept.empty()) {
    ImGui::AlignTextToFramePadding();
    ImGui::TextColored(stale_colour, "Kept from before the model change (not the defaults): %s",
                       f.kept.c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("Reset to the defaults")) out.push(ResetToDefaults{});
    publish(out, Widget::model_reset);
    ImGui::SetItemTooltip("the CLI's and a link's defaults, with this model and device");
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("Dismiss")) out.push(DismissModelNotice{});
  publish(out, Widget::model_dismiss);
}

}  // namespace

void draw_summary_line(const AppState& state, SummaryView& view, Actions& out) {
  const stagemem::Report& report = state.report;
  const stagemem::Config& c = state.config;
  const stagemem::ParallelLayout& p = c.parallel;
  const std::int64_t dp = std::max<std::int64_t>(1, stagemem::data_parallel_size(p));
  const std::int64_t world = std::max<std::int64_t>(1, stagemem::world_size(p));
  const std::int64_t per_node = std::max(1, view.gpus_per_node);
  const std::int64_t nodes = (world + per_node - 1) / per_node;
  ImGui::AlignTextToFramePadding();
  ImGui::Text("%s on %s", model_text(state).c_str(), device_text(c, state.display.unit).c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("|");
  ImGui::SameLine();
  ImGui::Text("TP %lld x PP %lld x CP %lld x DP %lld = %lld GPU%s = %lld node%s of",
              static_cast<long long>(p.tensor_parallel),
              static_cast<long long>(p.pipeline_parallel),
              static_cast<long long>(p.context_parallel), static_cast<long long>(dp),
              static_cast<long long>(world), world == 1 ? "" : "s", static_cast<long long>(nodes),
              nodes == 1 ? "" : "s");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 6.0f);
  if (ImGui::InputInt("GPUs per node", &view.gpus_per_node)) {
    view.gpus_per_node = std::clamp(view.gpus_per_node, 1, 1024);
  }
  publish(out, Widget::gpus_per_node);
  ImGui::SetItemTooltip("for the node count only; not part of the configuration");
  if (p.expert_parallel > 1) {
    ImGui::SameLine();
    const std::int64_t expert_dp = stagemem::expert_data_parallel_size(p);
    if (expert_dp > 0) {
      ImGui::TextDisabled("| EP %lld, expert DP %lld", static_cast<long long>(p.expert_parallel),
                          static_cast<long long>(expert_dp));
    } else {
      // No expert-data-parallel group exists: say why instead of a size of 0.
      ImGui::TextColored(over_colour, "| EP %lld x ETP %lld does not divide TP x CP x DP = %lld",
                         static_cast<long long>(p.expert_parallel),
                         static_cast<long long>(p.expert_tensor_parallel),
                         static_cast<long long>(p.tensor_parallel * p.context_parallel * dp));
    }
  }
  // Every setting that changes memory, and whether they are the defaults the CLI and a link
  // without keys start from.
  const bool all_defaults = kept_settings(c).empty();
  const bool layout_only = kept_settings(c, /*beyond_layout=*/true).empty();
  // Wrapped at word boundaries: the line never runs off a narrow window.
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
  ImGui::TextWrapped("%s%s", stagemem::settings_text(c).c_str(),
                     all_defaults  ? " | the rest as the CLI's and a link's defaults"
                     : layout_only ? " | the rest but the layout as the defaults"
                                   : "");
  ImGui::PopStyleColor();
  publish(out, Widget::settings_line);
  draw_model_notice(state, out);

  if (report_stale(state) || !state.report_valid) {
    // The first error, named, with its one-click fix when it has one.
    const auto& first = state.diagnostics.errors.front();
    ImGui::AlignTextToFramePadding();
    if (state.report_valid) {
      ImGui::TextColored(stale_colour, "STALE (last valid configuration): %s |",
                         stagemem::verdict_text(report, state.display.unit).c_str());
    } else {
      ImGui::TextColored(over_colour, "No report yet |");
    }
    bool pressed = false;
    if (fix_button(state, 0, pressed, &out) != nullptr) {
      if (pressed) out.push(ApplyFix{0});
      ImGui::SameLine();
    }
    // Wrapped at word boundaries: a long message never runs off the window.
    ImGui::PushStyleColor(ImGuiCol_Text, over_colour);
    ImGui::TextWrapped("%s: %s", first.field.c_str(), first.message.c_str());
    ImGui::PopStyleColor();
    return;
  }
  const std::string verdict = stagemem::verdict_text(report, state.display.unit);
  const bool has_device = report.device.bytes > 0;
  const bool fits =
      has_device && report.binding_stage >= 0 &&
      report.stages[static_cast<std::size_t>(report.binding_stage)].headroom_bytes >= 0;
  ImGui::TextColored(!has_device ? ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]
                     : fits      ? fits_colour
                                 : over_colour,
                     "%s", verdict.c_str());
}
