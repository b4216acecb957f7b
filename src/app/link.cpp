#include "link.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "baseline.h"
#include "config/url_fragment.h"
#include "measured/snapshot_link.h"
#include "plan_tab.h"
#include "scaling_check.h"
#include "sweep.h"

namespace {

// The app's own view state in a link: the open tab and the sweep's axes. Not configuration: these
// pairs are taken out before the core's decoder sees the fragment, and written after its pairs.
constexpr std::string_view view_prefix = "view.";
constexpr std::array<std::string_view, static_cast<std::size_t>(MainTab::count)> tab_keys = {
    "stages", "sweep", "cross-checks", "terms", "plan", "timeline", "snapshot", "compare"};
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
  // A link sets the unit too: one without view.units shows GiB.
  stagemem::AmountUnit units = stagemem::AmountUnit::gib;
  for (const auto& [key, value] : view) {
    if (key == "view.tab") {
      const auto* at = std::find(tab_keys.begin(), tab_keys.end(), value);
      if (at == tab_keys.end()) {
        state.link_problems.push_back({"url.view.tab", "unknown tab '" + value.substr(0, 32) +
                                                           "': expected stages, sweep, "
                                                           "cross-checks, terms, plan, "
                                                           "timeline, snapshot or compare"});
      } else {
        state.requested_tab = static_cast<MainTab>(at - tab_keys.begin());
      }
      continue;
    }
    if (key == "view.units") {
      // The unit amounts are shown in; absent (every older link): GiB.
      const auto& names = stagemem::enum_names<stagemem::AmountUnit>;
      const auto at = std::find(names.begin(), names.end(), value);
      if (at == names.end()) {
        state.link_problems.push_back({"url.view.units", "unknown unit '" + value.substr(0, 32) +
                                                             "': expected gib (2^30 bytes, the "
                                                             "default) or gb (10^9 bytes)"});
      } else {
        units = static_cast<stagemem::AmountUnit>(at - names.begin());
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
  if (state.display.unit != units) {
    state.display.unit = units;
    state.report_labels = make_report_labels(state.report, units);
  }
}

// Applies a link's snapshot= entries: a summary replaces the loaded snapshot, a link without
// any clears it; problems go to state.link_problems.
void apply_snapshot_link(AppState& state, std::string_view link) {
  stagemem::DecodedSnapshotLink decoded = stagemem::decode_snapshot_link(link);
  for (auto& e : decoded.diagnostics.errors) state.link_problems.push_back(std::move(e));
  if (!decoded.snapshot) {
    // A link without a snapshot shows none; a bad one keeps nothing half-read.
    state.snapshot = SnapshotTab{};
    return;
  }
  state.snapshot = SnapshotTab{.loaded = true,
                               .from_link = true,
                               .file = std::move(decoded.snapshot->file),
                               .stage = decoded.snapshot->stage,
                               .summary = std::move(decoded.snapshot->summary),
                               .file_bytes = 0,
                               .error = {},
                               .error_file = {}};
}

}  // namespace

std::string snapshot_link_part(const AppState& state) {
  if (!state.snapshot.loaded) return {};
  return stagemem::snapshot_fragment(stagemem::snapshot_link_entries(
      state.snapshot.summary, state.snapshot.file, state.snapshot.stage));
}

std::string view_fragment(const AppState& state) {
  // A loaded snapshot's summary first (snapshot= entries: measured figures, not configuration).
  std::string out = snapshot_link_part(state);
  // A pinned baseline (config/url_fragment.h encode_baseline); such a link opens on the Compare
  // tab unless it names another.
  if (state.baseline.pinned) out += "&" + state.baseline.link_pair;
  // The scaling cross-check's points (scaling= keys: measured, not configuration).
  out += stagemem::scaling_fragment(state.scaling.points);
  const MainTab tab = state.requested_tab != MainTab::count ? state.requested_tab : state.main_tab;
  const MainTab link_default = state.baseline.pinned                  ? MainTab::compare
                               : !state.scaling.points.points.empty() ? MainTab::cross_checks
                                                                      : MainTab::stages;
  if (tab != link_default) {
    out += "&view.tab=" + std::string(tab_keys[static_cast<std::size_t>(tab)]);
  }
  if (state.display.unit != stagemem::AmountUnit::gib) {
    out += "&view.units=" + std::string(stagemem::enum_name(state.display.unit));
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
  out += plan_link_keys(state.plan.inputs);
  return out;
}

std::string link_fragment(const AppState& state) {
  return stagemem::encode_fragment(state.config) + view_fragment(state);
}

void apply_fragment(AppState& state, std::string_view link) {
  const SplitFragment split = split_fragment(link);
  // The Plan tab's inputs ride along as plan_* keys; the configuration is the rest.
  stagemem::DecodedFragment decoded =
      stagemem::decode_fragment(take_plan_link_keys(split.config, state.plan.inputs));
  // Checked now, so the tab shows a refused input (a recipe name, a margin) before any search.
  set_plan_inputs(state.plan, state.plan.inputs);
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
  const stagemem::Config defaults = stagemem::default_config();
  for (const auto& e : decoded.diagnostics.errors) {
    if (e.field == "url.model") decoded.config.model = defaults.model;
    if (e.field == "url.device") decoded.config.device.preset = defaults.device.preset;
    if (e.field.starts_with("url.custom")) decoded.config.custom_model.clear();
  }
  state.config = decoded.config;
  if (!refused_whole) apply_snapshot_link(state, split.config);
  // Measured points at several sizes: such a link opens the Cross-checks tab (unless it has a
  // baseline or names another tab).
  if (!refused_whole && apply_scaling_link(state, split.config))
    state.requested_tab = MainTab::cross_checks;
  // A link with a baseline opens the comparison (its view.tab, if any, is applied after this);
  // a link without one shows none.
  const stagemem::DecodedBaseline baseline =
      refused_whole ? stagemem::DecodedBaseline{} : stagemem::decode_baseline(split.config);
  for (const auto& e : baseline.diagnostics.errors) state.link_problems.push_back(e);
  for (const auto& w : baseline.diagnostics.warnings) state.link_problems.push_back(w);
  if (baseline.config) {
    set_baseline_from_link(state, *baseline.config);
    if (state.baseline.pinned) state.requested_tab = MainTab::compare;
  } else if (!refused_whole) {
    unpin_baseline(state);
  }
  apply_view(state, split.view);
  // What only the whole configuration can check (e.g. MoE with TP needs sequence parallelism)
  // is not a link problem: those fields are marked in place, with a fix where there is one.
  state.link_banner_visible = !state.link_problems.empty();
  state.selected_stage = -1;
}

void set_default_sweep_axes(AppState& state) {
  for (std::size_t i = 0; i < 2; ++i) {
    set_sweep_axis(state.sweep, i, default_axis_fields[i], default_axis_values[i], state.config);
  }
}
