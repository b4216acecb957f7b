// The "Plan" tab: `stagemem plan` in the browser. The bounds are the controls; Search runs the
// time-sliced search (plan_tab.h) a few milliseconds per frame with a progress bar; the result is
// a frontier plot (GPUs, log scale, against the binding stage's headroom; hover a point for its
// bubble fraction and recompute overhead) and the ranked table. Click a point or a row to apply
// that configuration (the link follows through the usual sync). The factors are shown side by
// side, never combined into a score (plan.h). The frame advances the search (frame.h).
#include <algorithm>
#include <array>
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
  const std::string sharding = c.sharding == stagemem::ShardingStrategy::automatic
                                   ? std::string()
                                   : ", sharding " + std::string(stagemem::enum_name(c.sharding));
  char line[288];
  std::snprintf(line, sizeof line,
                "%lld GPUs: TP %lld, PP %lld, VPP %lld, CP %lld, EP %lld, DP %lld, mbs %lld, %s, "
                "fp8 recipe %s%s",
                static_cast<long long>(e.gpus), static_cast<long long>(c.tp),
                static_cast<long long>(c.pp), static_cast<long long>(c.vpp),
                static_cast<long long>(c.cp), static_cast<long long>(c.ep),
                static_cast<long long>(c.dp), static_cast<long long>(c.mbs),
                stagemem::enum_name(c.recompute).data(), stagemem::enum_name(c.recipe).data(),
                sharding.c_str());
  return line;
}

void entry_tooltip(const stagemem::PlanEntry& e, stagemem::AmountUnit unit) {
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(summary(e).c_str());
  ImGui::Text("headroom %s (binding stage %lld, peak %s)",
              stagemem::amount_text(e.headroom_bytes, unit).c_str(),
              static_cast<long long>(e.binding_stage),
              stagemem::amount_text(e.peak_bytes, unit).c_str());
  if (e.margin_bytes > 0) {
    ImGui::Text("%s beyond the %s safety margin",
                stagemem::amount_text(e.spare_bytes(), unit).c_str(),
                stagemem::amount_text(e.margin_bytes, unit).c_str());
  }
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
    input("fp8 recipes", edited.recipes,
          "comma list of none, tensor, mxfp8, block, delayed, nvfp4 (none: the bf16 twin); "
          "empty: the configuration's",
          changed);
    input("sharding", edited.sharding,
          "comma list of no_shard, optim, optim_grads, optim_grads_params (or ddp, zero1, zero2, "
          "zero3); under megatron-core optim_grads and optim_grads_params run Megatron-FSDP; "
          "empty: the configuration's",
          changed);
    input("margin", edited.margin,
          "safety margin kept free below the capacity: an amount (8GiB) or a share of it (20%: "
          "the 80 % rule, peak <= 80 % of capacity); empty: none",
          changed);
    publish(out, Widget::plan_margin);
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
  // Across: the searched GPU range (log2), so a 16-256 search spans 16 to 256 GPUs.
  const auto [gpus_low, gpus_high] = plan_axis_gpus(tab);
  view.axis_low_gpus = gpus_low;
  view.axis_high_gpus = gpus_high;
  double x_low = std::log2(static_cast<double>(gpus_low));
  double x_high = std::log2(static_cast<double>(gpus_high));
  const bool one_count = x_high - x_low < 1e-9;
  if (one_count) {  // one GPU count: centred
    x_low -= 0.5;
    x_high += 0.5;
  }
  double y_low = 0.0, y_high = 0.0;
  const stagemem::AmountUnit unit = state.display.unit;
  const double unit_bytes = stagemem::unit_bytes(unit);  // the headroom axis in GiB or GB
  for (const auto& e : frontier) {
    y_high = std::max(y_high, static_cast<double>(e.headroom_bytes) / unit_bytes);
  }
  if (y_high <= 0.0) y_high = 1.0;
  // Points at the ends of the range are drawn whole: the scales stop short of the frame.
  const float pad = 8.0f * scale;
  const auto x_of = [&](double gpus) {
    return plot_min.x + pad +
           static_cast<float>((std::log2(gpus) - x_low) / (x_high - x_low)) *
               (plot_max.x - plot_min.x - 2.0f * pad);
  };
  const auto y_of = [&](double amount) {
    return plot_max.y - static_cast<float>((amount - y_low) / (y_high - y_low)) *
                            (plot_max.y - plot_min.y - pad);
  };
  const auto to_screen = [&](const stagemem::PlanEntry& e) {
    return ImVec2(x_of(static_cast<double>(e.gpus)),
                  y_of(static_cast<double>(e.headroom_bytes) / unit_bytes));
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
  // The safety margin: points below this line would eat into it (none is on the frontier).
  const double margin_units = static_cast<double>(tab.result.margin_bytes) / unit_bytes;
  if (margin_units > 0.0 && margin_units < y_high) {
    const float y = y_of(margin_units);
    draw->AddLine(ImVec2(plot_min.x, y), ImVec2(plot_max.x, y), IM_COL32(240, 110, 90, 200),
                  1.5f * scale);
    std::snprintf(label, sizeof label, "margin %.1f %s", margin_units, unit_label.c_str());
    draw->AddText(ImVec2(plot_min.x + 4.0f * scale, y - ImGui::GetTextLineHeight()),
                  IM_COL32(240, 110, 90, 255), label);
  }
  // Ticks at the searched ends and the powers of two between them, each label where it fits.
  // (A fixed array: a frame allocates nothing; 2^62 bounds the powers of two.)
  std::array<std::int64_t, 66> ticks{};
  std::size_t tick_count = 0;
  ticks[tick_count++] = gpus_low;
  for (std::int64_t g = 1; g <= gpus_high && g > 0 && g <= (std::int64_t{1} << 62); g *= 2) {
    if (g > gpus_low && g < gpus_high) ticks[tick_count++] = g;
  }
  if (gpus_high != gpus_low) ticks[tick_count++] = gpus_high;
  float last_right = -1e9f;
  for (std::size_t i = 0; i < tick_count; ++i) {
    const float x = x_of(static_cast<double>(ticks[i]));
    draw->AddLine(ImVec2(x, plot_max.y), ImVec2(x, plot_max.y + 3.0f * scale), axis);
    const bool last = i + 1 == tick_count;
    std::snprintf(label, sizeof label, last ? "%lld GPUs" : "%lld",
                  static_cast<long long>(ticks[i]));
    const float w = ImGui::CalcTextSize(label).x;
    const float lx = std::clamp(x - w / 2, plot_min.x, plot_max.x - w);
    // The last label always shows; a middle one only where it does not touch its neighbours.
    const float next_left = last ? 1e9f
                                 : x_of(static_cast<double>(ticks[tick_count - 1])) -
                                       ImGui::CalcTextSize("0000 GPUs").x;
    if (!last && (lx < last_right + 6.0f * scale || lx + w > next_left)) continue;
    draw->AddText(ImVec2(lx, plot_max.y + 2.0f * scale), text, label);
    last_right = lx + w;
  }

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
    // The row applied and still the configuration: ringed, as its table row is marked.
    if (static_cast<std::int64_t>(i) == view.current_row) {
      draw->AddCircle(to_screen(e), 8.0f * scale, IM_COL32(120, 230, 120, 255), 0, 2.0f * scale);
    }
  }
  if (nearest >= 0) {
    entry_tooltip(frontier[static_cast<std::size_t>(nearest)], unit);
    if (clicked) out.push(ApplyPlanRow{static_cast<std::size_t>(nearest)});
  }
  ImGui::SetCursorScreenPos(ImVec2(origin.x, origin.y + height));
  ImGui::TextDisabled(
      "GPUs on a log scale; colour: the factor a point ranks best on (blue bubble, green "
      "recompute, amber headroom)");
}

void draw_table(const AppState& state, PlanView& view, Actions& out, std::int64_t current_row) {
  const PlanTab& tab = state.plan;
  const auto& frontier = tab.result.frontier;
  constexpr ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                    ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit;
  const stagemem::AmountUnit unit = state.display.unit;
  const std::string headroom_header = "headroom " + std::string(stagemem::unit_name(unit));
  const std::array<const char*, 14> columns = {"GPUs",
                                               "nodes",
                                               "TP",
                                               "PP",
                                               "VPP",
                                               "EP",
                                               "DP",
                                               "mbs",
                                               "recompute",
                                               "fp8 recipe",
                                               "sharding",
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
    const bool current = static_cast<std::int64_t>(i) == current_row;
    if (current) {
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, IM_COL32(60, 110, 60, 170));
    }
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    char gpus[48];
    std::snprintf(gpus, sizeof gpus, current ? "%lld (current)" : "%lld",
                  static_cast<long long>(e.gpus));
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
    ImGui::TextUnformatted(stagemem::enum_name(c.recipe).data());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(stagemem::enum_name(c.sharding).data());
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
  view.progress_bar_drawn = tab.search != nullptr;
  view.changed_note = false;
  view.current_row = -1;
  view.axis_low_gpus = view.axis_high_gpus = 0;
  if (tab.search) {
    char overlay[160];
    if (tab.confirmation) {
      std::snprintf(overlay, sizeof overlay,
                    "%lld searched; %lld shown entries confirmed with the allocator replay, "
                    "%.0f ms",
                    static_cast<long long>(tab.search->searched()),
                    static_cast<long long>(tab.confirmation->confirmed()), tab.elapsed_ms);
    } else {
      std::snprintf(overlay, sizeof overlay, "%lld searched, %.0f ms, longest slice %.1f ms",
                    static_cast<long long>(tab.search->searched()), tab.elapsed_ms,
                    tab.longest_slice_ms);
    }
    ImGui::ProgressBar(static_cast<float>(plan_progress(tab)), ImVec2(-1.0f, 0.0f), overlay);
    view.status = overlay;
  } else {
    char line[160];
    if (tab.has_result) {
      std::snprintf(line, sizeof line,
                    "searched %s configurations in %.0f ms (longest slice %.1f ms)",
                    stagemem::group_digits(tab.result.configurations_searched).c_str(),
                    tab.elapsed_ms, tab.longest_slice_ms);
    } else {
      // Nothing searched yet: no bar (a full one would say a search had finished).
      std::snprintf(line, sizeof line, "no search yet: set the bounds and press Search");
    }
    view.status = line;
    ImGui::AlignTextToFramePadding();
    ImGui::TextDisabled("%s", line);
  }
  if (!tab.has_result) return;
  const stagemem::PlanResult& r = tab.result;
  const std::int64_t current_row = plan_current_row(tab, state.config);
  view.current_row = current_row;
  if (current_row >= 0) {
    ImGui::TextColored(ImVec4(0.55f, 0.85f, 0.55f, 1.0f),
                       "the configuration is row %lld of this search (marked current)",
                       static_cast<long long>(current_row + 1));
  } else if (!(tab.result_config == state.config)) {
    view.changed_note = true;
    ImGui::TextDisabled("(the configuration changed since this search; Search again to update)");
  }
  if (r.margin_bytes > 0) {
    ImGui::TextDisabled(
        "safety margin %s (%s) kept free: fits means every stage peaks at or "
        "below %s",
        stagemem::plan_margin_text(tab.result_bounds.margin).c_str(),
        stagemem::amount_text(r.margin_bytes, state.display.unit).c_str(),
        stagemem::amount_text(r.device_bytes - r.margin_bytes, state.display.unit).c_str());
  }
  if (r.has_minimum) {
    ImGui::Text("minimum: %s", summary(r.minimum).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("headroom %s; %lld of %lld configurations fit",
                        stagemem::amount_text(r.minimum.headroom_bytes, state.display.unit).c_str(),
                        static_cast<long long>(r.configurations_fitting),
                        static_cast<long long>(r.configurations_searched));
  } else {
    ImGui::TextColored(error_colour, "nothing in the space fits the device%s (%lld searched)",
                       r.margin_bytes > 0 ? " with the safety margin" : "",
                       static_cast<long long>(r.configurations_searched));
    return;
  }
  view.hovered = -1;
  draw_plot(state, view, out);
  draw_table(state, view, out, current_row);
}
