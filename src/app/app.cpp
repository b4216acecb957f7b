#include "app.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <utility>
#include <vector>

#include "config/url_fragment.h"
#include "embedded_fonts.h"
#include "estimate/estimate.h"
#include "imgui.h"
#include "model/model.h"

namespace {

constexpr float text_size = 15.0f;  // CSS pixels: DejaVu Sans reads well at 15 on any screen
constexpr float mono_size = 14.0f;  // DejaVu Sans Mono runs larger than Sans at the same size

ImFont* add_embedded_font(const EmbeddedFont& font, const char* name, float size_pixels) {
  ImFontConfig config;
  config.FontDataOwnedByAtlas = false;  // static bytes: the atlas must not free them
  config.OversampleH = 2;
  config.OversampleV = 1;
  std::snprintf(config.Name, sizeof config.Name, "%s, %.0fpx", name,
                static_cast<double>(size_pixels));
  // ImGui never writes through this pointer when it does not own the data.
  return ImGui::GetIO().Fonts->AddFontFromMemoryTTF(const_cast<unsigned char*>(font.data),
                                                    static_cast<int>(font.size), size_pixels,
                                                    &config, embedded_font_ranges);
}

void apply_theme(ImGuiStyle& style, float scale) {
  style = ImGuiStyle();
  ImGui::StyleColorsDark(&style);
  style.WindowRounding = 0.0f;
  style.ChildRounding = 4.0f;
  style.FrameRounding = 4.0f;
  style.GrabRounding = 4.0f;
  style.PopupRounding = 4.0f;
  style.WindowPadding = ImVec2(10.0f, 10.0f);
  style.FramePadding = ImVec2(8.0f, 4.0f);
  style.ItemSpacing = ImVec2(8.0f, 6.0f);
  style.CellPadding = ImVec2(6.0f, 3.0f);
  ImVec4* colors = style.Colors;
  colors[ImGuiCol_Text] = ImVec4(0.90f, 0.91f, 0.93f, 1.0f);
  colors[ImGuiCol_TextDisabled] = ImVec4(0.60f, 0.62f, 0.66f, 1.0f);
  colors[ImGuiCol_WindowBg] = ImVec4(0.09f, 0.10f, 0.12f, 1.0f);
  colors[ImGuiCol_ChildBg] = ImVec4(0.11f, 0.12f, 0.14f, 1.0f);
  colors[ImGuiCol_PopupBg] = ImVec4(0.13f, 0.14f, 0.17f, 0.98f);
  colors[ImGuiCol_Border] = ImVec4(0.25f, 0.27f, 0.31f, 1.0f);
  colors[ImGuiCol_FrameBg] = ImVec4(0.17f, 0.19f, 0.23f, 1.0f);
  colors[ImGuiCol_Button] = ImVec4(0.20f, 0.33f, 0.50f, 1.0f);
  colors[ImGuiCol_ButtonHovered] = ImVec4(0.26f, 0.42f, 0.63f, 1.0f);
  colors[ImGuiCol_ButtonActive] = ImVec4(0.30f, 0.49f, 0.73f, 1.0f);
  colors[ImGuiCol_TableRowBgAlt] = ImVec4(1.0f, 1.0f, 1.0f, 0.04f);
  style.ScaleAllSizes(scale);
}

}  // namespace

namespace {

// The app's own view state in a link: the open tab and the sweep's axes. Not configuration: these
// pairs are taken out before the core's decoder sees the fragment, and written after its pairs.
constexpr std::string_view view_prefix = "view.";
constexpr std::array<std::string_view, static_cast<std::size_t>(MainTab::count)> tab_keys = {
    "stages", "sweep", "cross-checks", "terms", "plan", "timeline", "snapshot"};
constexpr std::array<std::string_view, 2> axis_keys = {"view.x", "view.y"};
constexpr std::array<std::string_view, 2> default_axis_fields = {"seq", "mbs"};
constexpr std::array<std::string_view, 2> default_axis_values = {"2048, 4096, 8192, 16384, 32768",
                                                                 "1, 2, 4"};

struct SplitFragment {
  std::string config;                                     // for decode_fragment
  std::vector<std::pair<std::string, std::string>> view;  // view.* pairs, values decoded
};

SplitFragment split_fragment(std::string_view text) {
  SplitFragment out;
  if (const auto hash = text.find('#'); hash != std::string_view::npos)
    text.remove_prefix(hash + 1);
  while (!text.empty()) {
    const auto amp = text.find('&');
    const std::string_view pair = text.substr(0, amp);
    text = amp == std::string_view::npos ? std::string_view{} : text.substr(amp + 1);
    const auto eq = pair.find('=');
    std::string value;
    if (pair.starts_with(view_prefix) && eq != std::string_view::npos &&
        stagemem::percent_decode(pair.substr(eq + 1), value)) {
      out.view.emplace_back(std::string(pair.substr(0, eq)), std::move(value));
      continue;
    }
    if (!out.config.empty()) out.config += '&';
    out.config += pair;
  }
  return out;
}

void apply_view(AppState& state, const std::vector<std::pair<std::string, std::string>>& view) {
  for (const auto& [key, value] : view) {
    if (key == "view.tab") {
      const auto* at = std::find(tab_keys.begin(), tab_keys.end(), value);
      if (at == tab_keys.end()) {
        state.link_problems.push_back({"url.view.tab", "unknown tab '" + value.substr(0, 32) +
                                                           "': expected stages, sweep, "
                                                           "cross-checks, terms, plan, "
                                                           "timeline or snapshot"});
      } else {
        state.requested_tab = static_cast<MainTab>(at - tab_keys.begin());
      }
      continue;
    }
    const auto* axis = std::find(axis_keys.begin(), axis_keys.end(), key);
    if (axis == axis_keys.end()) {
      state.link_problems.push_back({"url." + key.substr(0, 32), "unknown view key ignored"});
      continue;
    }
    const auto colon = value.find(':');
    const std::string error = set_sweep_axis(
        state.sweep, static_cast<std::size_t>(axis - axis_keys.begin()), value.substr(0, colon),
        colon == std::string::npos ? std::string() : value.substr(colon + 1), state.config);
    if (!error.empty()) state.link_problems.push_back({"url." + key, error});
  }
}

}  // namespace

std::string view_fragment(const AppState& state) {
  // A loaded snapshot's summary first (snapshot= entries: measured figures, not configuration).
  std::string out = snapshot_link_part(state);
  const MainTab tab = state.requested_tab != MainTab::count ? state.requested_tab : state.main_tab;
  if (tab != MainTab::stages) {
    out += "&view.tab=" + std::string(tab_keys[static_cast<std::size_t>(tab)]);
  }
  for (std::size_t i = 0; i < 2; ++i) {
    const SweepAxisEdit& axis = state.sweep.axes[i];
    if (axis.key() == default_axis_fields[i] && axis.values_text == default_axis_values[i])
      continue;
    std::string values;
    for (const std::string& v : axis.axis.values) values += (values.empty() ? "" : ",") + v;
    out += "&" + std::string(axis_keys[i]) + "=" +
           stagemem::percent_encode(std::string(axis.key()) + ":" + values);
  }
  // The Plan tab's inputs ride along as plan_* keys.
  out += plan_link_keys(state.plan);
  return out;
}

std::string link_fragment(const AppState& state) {
  return stagemem::encode_fragment(state.config) + view_fragment(state);
}

void apply_fragment(AppState& state, std::string_view link) {
  const SplitFragment split = split_fragment(link);
  // The Plan tab's inputs ride along as plan_* keys; the configuration is the rest.
  stagemem::DecodedFragment decoded =
      stagemem::decode_fragment(take_plan_link_keys(split.config, state.plan));
  state.link_problems = decoded.diagnostics.errors;
  for (const auto& w : decoded.diagnostics.warnings) state.link_problems.push_back(w);
  // A link the decoder refuses whole (over its length limit) changes nothing on screen: the
  // user's configuration stays, and the banner says how long the link was.
  const bool refused_whole =
      decoded.diagnostics.errors.size() == 1 && decoded.diagnostics.errors.front().field == "url";
  if (refused_whole) decoded.config = state.config;
  // Every good field of the link is kept (a bad one keeps its default and is named in the
  // banner): one typo must not throw the rest of someone's setup away. A name that refers to
  // nothing (an unknown preset or device, a custom model that does not parse) falls back to the
  // default so that the rest can still be estimated.
  const stagemem::Config defaults;
  for (const auto& e : decoded.diagnostics.errors) {
    if (e.field == "url.model") decoded.config.model = defaults.model;
    if (e.field == "url.device") decoded.config.device.preset = defaults.device.preset;
    if (e.field.starts_with("url.custom")) decoded.config.custom_model.clear();
  }
  state.config = decoded.config;
  if (!refused_whole) apply_snapshot_link(state, split.config);
  apply_view(state, split.view);
  // What only the whole configuration can check (e.g. MoE with TP needs sequence parallelism)
  // is not a link problem: those fields are marked in place, with a fix where there is one.
  state.link_banner_visible = !state.link_problems.empty();
  state.location_config = state.config;
  state.location_view = view_fragment(state);
  state.selected_stage = -1;
}

bool load_link(AppState& state, std::string_view link) {
  apply_fragment(state, link);
  platform_push_link(state);
  return state.link_problems.empty();
}

void initialize_state(AppState& state) {
  init_field_editors(state);
  init_catalogue(state);
  for (std::size_t i = 0; i < 2; ++i) {
    set_sweep_axis(state.sweep, i, default_axis_fields[i], default_axis_values[i], state.config);
  }
}

void refresh_report(AppState& state) {
  if (state.checked && state.checked_config == state.config) return;
  sync_field_texts(state);
  stagemem::Report report = stagemem::estimate(state.config);
  state.diagnostics = report.diagnostics;
  state.checked_config = state.config;
  state.checked = true;
  stagemem::Diagnostics ignored;
  const auto model = stagemem::resolve_model(state.config, ignored);
  state.model_traits = ModelTraits{.known = model.has_value()};
  if (model) {
    for (const stagemem::LayerKind& k : model->layers) {
      state.model_traits.moe |= k.mlp == stagemem::MlpKind::moe;
      state.model_traits.kda |= k.attention == stagemem::AttentionKind::kda;
    }
    state.model_traits.attn_res = model->attn_res.block_size > 0;
  }
  // An invalid configuration keeps the last valid report on screen (marked stale) until it is
  // valid again: the user's work stays visible while a field is being fixed.
  if (!report.diagnostics.ok()) return;
  state.report = std::move(report);
  state.report_labels = make_report_labels(state.report);
  ++state.report_generation;
  state.bar_rects.assign(state.report.stages.size(), WidgetRect{});
  state.reported_config = state.config;
  state.report_valid = true;
  if (state.selected_stage >= static_cast<std::int64_t>(state.report.stages.size())) {
    state.selected_stage = -1;
  }
}

bool report_stale(const AppState& state) {
  return !state.diagnostics.ok();
}

void configure_imgui(AppState& state, float scale) {
  state.ui_scale = scale;
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the URL is the only persisted state
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  // A blinking cursor would need a frame every half second while a field is focused.
  io.ConfigInputTextCursorBlink = false;
  io.Fonts->Clear();
  // The first font added is the default one.
  add_embedded_font(dejavu_sans, "DejaVu Sans", text_size * scale);
  state.mono_font = add_embedded_font(dejavu_sans_mono, "DejaVu Sans Mono", mono_size * scale);
  apply_theme(ImGui::GetStyle(), scale);
}

WidgetRect last_item_rect(const AppState& state) {
  // Only what is on screen: a widget scrolled out of its panel cannot be clicked.
  if (!ImGui::IsItemVisible()) return WidgetRect{};
  const ImVec2 min = ImGui::GetItemRectMin();
  const ImVec2 max = ImGui::GetItemRectMax();
  return {min.x, min.y, max.x, max.y, state.frame_count, true};
}

void record_widget_rect(AppState& state, Widget widget) {
  state.widget_rects[static_cast<std::size_t>(widget)] = last_item_rect(state);
}
