// The "Plan" tab: `stagemem plan` in the browser. The bounds are the controls; Search runs the
// time-sliced search (plan_tab.h) a few milliseconds per frame with a progress bar; the result is
// a frontier plot (GPUs, log scale, against the binding stage's headroom; hover a point for its
// bubble fraction and recompute overhead) and the ranked table. Click a point or a row to apply
// that configuration (the link follows through the usual sync). The factors are shown side by
// side, never combined into a score (plan.h). The frame advances the search (frame.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "actions.h"
#include "imgui.h"
#include "misc/cpp/imgui_stdlib.h"
#include "render/vocabulary.h"
#include "state.h"
#include "widgets.h"

namespace {

std::string summary(const stagemem::PlanEntry& e) {
  const auto& c = e.candidate;
  char line[256];
  std::snprintf(line, sizeof line,
                "%lld GPUs: TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, DP %lld, mbs %lld, %s",
                static_cast<long long>(e.gpus), static_cast<long long>(c.tp),
                static_cast<long long>(c.pp), static_cast<long long>(c.vpp),
                static_cast<long long>(c.cp), static_cast<long long>(c.ep),
                static_cast<long long>(c.dp), static_cast<long long>(c.mbs),
                stagemem::enum_name(c.recompute).data());
  return line;
}

void entry_tooltip(const stagemem::PlanEntry& e, stagemem::AmountUnit unit) {
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(summary(e).c_str());
  ImGui::Text("headroom %s (binding stage %lld, peak %s)",
              stagemem::amount_text(e.headroom_bytes, unit).c_str(),
              static_cast<long long>(e.binding_stage),
              stagemem::amount_text(e.peak_bytes, unit).c_str());
  if (e.candidate.vpp > 1) {
    ImGui::Text("bubble %.4f = (P-1)/(v M) = %lld/(%lld x %lld)", e.bubble_fraction,
                static_cast<long long>(e.candidate.pp - 1), static_cast<long long>(e.candidate.vpp),
                static_cast<long long>(e.micro_batches));
  } else {
    ImGui::Text("bubble %.4f = (P-1)/M = %lld/%lld", e.bubble_fraction,
                static_cast<long long>(e.candidate.pp - 1),
                static_cast<long long>(e.micro_batches));
  }
  ImGui::Text("recompute overhead %.4f (recomputed forward FLOPs / 3 x forward FLOPs)",
              e.recompute_overhead);
  ImGui::TextDisabled("click to apply");
  ImGui::EndTooltip();
}

void input(const char* label, std::string& text, const char* help, bool& changed) {
  ImGui::TableNextColumn();
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted(label);
  ImGui::TableNextColumn();
  ImGui::SetNextItemWidth(-1.0f);
  ImGui::PushID(label);
  changed |= ImGui::InputText("##v", &text);
  ImGui::PopID();
  ImGui::SetItemTooltip("%s", help);
}

// The inputs are edited as a copy, emitted as one SetPlanInputs when it changed (the reducer
// checks them at once: the error shows in the next frame).
void draw_inputs(const PlanTab& tab, Actions& out) {
  PlanInputs edited = tab.inputs;
  bool changed = false;
  if (ImGui::BeginTable("plan_inputs", 4, ImGuiTableFlags_SizingStretchProp)) {
    input("GPUs per node", edited.gpus_per_node, "TP stays within a node", changed);
    input("min GPUs", edited.min_gpus, "empty: 1", changed);
    input("max GPUs", edited.max_gpus, "empty: what the global batch allows", changed);
    input("TP", edited.tp, "comma list; empty: powers of 2 within a node", changed);
    input("PP", edited.pp, "comma list; empty: 1 .. min(layers, 32)", changed);
    input("VPP", edited.vpp, "comma list; empty: 1, 2, 3, 4", changed);
    input("EP", edited.ep, "comma list; empty: every divisor of the routed experts", changed);
    input("mbs", edited.mbs, "comma list; empty: 1, 2, 3, 4", changed);
    ImGui::EndTable();
  }
  ImGui::AlignTextToFramePadding();
  ImGui::TextUnformatted("recompute");
  const std::array<const char*, 3> names = {"none", "selective", "full"};
  for (std::size_t i = 0; i < names.size(); ++i) {
    ImGui::SameLine();
    bool on = edited.recompute[i];
    if (ImGui::Checkbox(names[i], &on)) {
      edited.recompute[i] = on;
      changed = true;
    }
  }
  if (changed) out.push(SetPlanInputs{std::move(edited)});
  if (!tab.input_error.empty()) ImGui::TextColored(error_colour, "%s", tab.input_error.c_str());
}

// GPUs (log2) across, headroom up; one point per frontier entry.
void draw_plot(const AppState& state, PlanView& view, Actions& out) {
  const PlanTab& tab = state.plan;
  const auto& frontier = tab.result.frontier;
  if (frontier.empty()) return;
  const float scale = state.ui_scale;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float width = std::max(120.0f * scale, ImGui::GetContentRegionAvail().x);
  const float height = 180.0f * scale;
  const float left = 56.0f * scale, bottom = 22.0f * scale;
  const ImVec2 plot_min(origin.x + left, origin.y + 4.0f * scale);
  const ImVec2 plot_max(origin.x + width - 8.0f * scale, origin.y + height - bottom);
  double x_low = 1e300, x_high = -1e300, y_low = 0.0, y_high = 0.0;
  const stagemem::AmountUnit unit = state.display.unit;
  const double unit_bytes = stagemem::unit_bytes(unit);  // the headroom axis in GiB or GB
  for (const auto& e : frontier) {
    const double x = std::log2(static_cast<double>(e.gpus));
    x_low = std::min(x_low, x);
    x_high = std::max(x_high, x);
    y_high = std::max(y_high, static_cast<double>(e.headroom_bytes) / unit_bytes);
  }
  if (x_high - x_low < 1.0) x_high = x_low + 1.0;
  if (y_high <= 0.0) y_high = 1.0;
  const auto to_screen = [&](const stagemem::PlanEntry& e) {
    const double x = (std::log2(static_cast<double>(e.gpus)) - x_low) / (x_high - x_low);
    const double y =
        (static_cast<double>(e.headroom_bytes) / unit_bytes - y_low) / (y_high - y_low);
    return ImVec2(plot_min.x + static_cast<float>(x) * (plot_max.x - plot_min.x),
                  plot_max.y - static_cast<float>(y) * (plot_max.y - plot_min.y));
  };
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const ImU32 axis = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  draw->AddRect(plot_min, plot_max, axis);
  char label[64];
  const std::string unit_label(stagemem::unit_name(unit));
  std::snprintf(label, sizeof label, "%.0f %s", y_high, unit_label.c_str());
  draw->AddText(ImVec2(origin.x, plot_min.y), text, label);
  draw->AddText(ImVec2(origin.x, plot_max.y - ImGui::GetTextLineHeight()), text,
                ("0 " + unit_label).c_str());
  std::snprintf(label, sizeof label, "%lld GPUs",
                static_cast<long long>(std::llround(std::exp2(x_low))));
  draw->AddText(ImVec2(plot_min.x, plot_max.y + 2.0f * scale), text, label);
  std::snprintf(label, sizeof label, "%lld GPUs (log scale)",
                static_cast<long long>(std::llround(std::exp2(x_high))));
  draw->AddText(ImVec2(plot_max.x - ImGui::CalcTextSize(label).x, plot_max.y + 2.0f * scale), text,
                label);

  ImGui::SetCursorScreenPos(plot_min);
  const bool clicked = ImGui::InvisibleButton(
      "frontier_plot", ImVec2(plot_max.x - plot_min.x, plot_max.y - plot_min.y));
  std::int64_t nearest = -1;
  if (ImGui::IsItemHovered()) {
    const ImVec2 mouse = ImGui::GetMousePos();
    float best = 12.0f * scale * 12.0f * scale;
    for (std::size_t i = 0; i < frontier.size(); ++i) {
      const ImVec2 p = to_screen(frontier[i]);
      const float d = (p.x - mouse.x) * (p.x - mouse.x) + (p.y - mouse.y) * (p.y - mouse.y);
      if (d < best) {
        best = d;
        nearest = static_cast<std::int64_t>(i);
      }
    }
  }
  if (nearest >= 0) view.hovered = nearest;
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const auto& e = frontier[i];
    // Colour by the factor the entry ranks on: bubble blue, recompute green, headroom amber.
    const ImU32 colour = (e.ranks & stagemem::rank_bubble)      ? IM_COL32(90, 160, 255, 255)
                         : (e.ranks & stagemem::rank_recompute) ? IM_COL32(110, 210, 120, 255)
                                                                : IM_COL32(240, 180, 70, 255);
    const bool hot = static_cast<std::int64_t>(i) == view.hovered;
    draw->AddCircleFilled(to_screen(e), (hot ? 6.0f : 4.0f) * scale, colour);
  }
  if (nearest >= 0) {
    entry_tooltip(frontier[static_cast<std::size_t>(nearest)], unit);
    if (clicked) out.push(ApplyPlanRow{static_cast<std::size_t>(nearest)});
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height));
  ImGui::TextDisabled(
      "colour: the factor a point ranks best on (blue bubble, green recompute, "
      "amber headroom)");
}

void draw_table(const AppState& state, PlanView& view, Actions& out) {
  const PlanTab& tab = state.plan;
  const auto& frontier = tab.result.frontier;
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                    ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  const stagemem::AmountUnit unit = state.display.unit;
  const std::string headroom_header = "headroom " + std::string(stagemem::unit_name(unit));
  const std::array<const char*, 12> columns = {"GPUs",
                                               "nodes",
                                               "TP",
                                               "PP",
                                               "VPP",
                                               "EP",
                                               "DP",
                                               "mbs",
                                               "recompute",
                                               "bubble",
                                               "recompute overhead",
                                               headroom_header.c_str()};
  if (!ImGui::BeginTable(
          "plan_frontier", static_cast<int>(columns.size()) + 1, flags,
          ImVec2(0, std::max(120.0f * state.ui_scale, ImGui::GetContentRegionAvail().y)))) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* c : columns) ImGui::TableSetupColumn(c);
  ImGui::TableSetupColumn("ranked by");
  ImGui::TableHeadersRow();
  for (std::size_t i = 0; i < frontier.size(); ++i) {
    const auto& e = frontier[i];
    const auto& c = e.candidate;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    char gpus[32];
    std::snprintf(gpus, sizeof gpus, "%lld", static_cast<long long>(e.gpus));
    const bool selected = static_cast<std::int64_t>(i) == view.hovered;
    if (ImGui::Selectable(gpus, selected, ImGuiSelectableFlags_SpanAllColumns)) {
      out.push(ApplyPlanRow{i});
    }
    if (i == 0) publish(out, Widget::plan_first_row);
    if (ImGui::IsItemHovered()) {
      view.hovered = static_cast<std::int64_t>(i);
      entry_tooltip(e, unit);
    }
    ImGui::PopID();
    const std::int64_t per_node = std::max<std::int64_t>(1, tab.bounds.gpus_per_node);
    for (std::int64_t v :
         {(e.gpus + per_node - 1) / per_node, c.tp, c.pp, c.vpp, c.ep, c.dp, c.mbs}) {
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(v));
    }
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stagemem::enum_name(c.recompute).data());
    ImGui::TableNextColumn();
    ImGui::Text("%.4f", e.bubble_fraction);
    ImGui::TableNextColumn();
    ImGui::Text("%.4f", e.recompute_overhead);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stagemem::amount_number(e.headroom_bytes, unit).c_str());
    ImGui::TableNextColumn();
    std::string ranks;
    if (e.ranks & stagemem::rank_bubble) ranks += "bubble ";
    if (e.ranks & stagemem::rank_recompute) ranks += "recompute ";
    if (e.ranks & stagemem::rank_headroom) ranks += "headroom";
    ImGui::TextUnformatted(ranks.c_str());
  }
  ImGui::EndTable();
}

}  // namespace

void draw_plan(const AppState& state, PlanView& view, Actions& out) {
  const PlanTab& tab = state.plan;
  ImGui::TextWrapped(
      "The fewest GPUs at which some layout fits every stage, and at each GPU count the best 2 "
      "by each factor: bubble (P-1)/(v M), recompute overhead (recomputed forward FLOPs / 3 x "
      "forward), headroom of the binding stage. Empty bounds take the default ranges of "
      "`stagemem plan`; the model, device, seq and gbs are the configuration's.");
  draw_inputs(tab, out);
  if (tab.search) {
    if (ImGui::Button("Stop")) out.push(StopPlanSearch{});
  } else if (ImGui::Button("Search")) {
    out.push(StartPlanSearch{});
  }
  publish(out, Widget::plan_search);
  ImGui::SameLine();
  char overlay[160];
  const std::int64_t searched = tab.search       ? tab.search->searched()
                                : tab.has_result ? tab.result.configurations_searched
                                                 : 0;
  std::snprintf(overlay, sizeof overlay, "%lld searched, %.0f ms, longest slice %.1f ms",
                static_cast<long long>(searched), tab.elapsed_ms, tab.longest_slice_ms);
  ImGui::ProgressBar(static_cast<float>(plan_progress(tab)), ImVec2(-1.0f, 0.0f), overlay);
  if (!tab.has_result) return;
  const stagemem::PlanResult& r = tab.result;
  if (!(tab.result_config == state.config)) {
    ImGui::TextDisabled("(the configuration changed since this search; Search again to update)");
  }
  if (r.has_minimum) {
    ImGui::Text("minimum: %s", summary(r.minimum).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("headroom %s; %lld of %lld configurations fit",
                        stagemem::amount_text(r.minimum.headroom_bytes, state.display.unit).c_str(),
                        static_cast<long long>(r.configurations_fitting),
                        static_cast<long long>(r.configurations_searched));
  } else {
    ImGui::TextColored(error_colour, "nothing in the space fits the device (%lld searched)",
                       static_cast<long long>(r.configurations_searched));
    return;
  }
  view.hovered = -1;
  draw_plot(state, view, out);
  draw_table(state, view, out);
}
