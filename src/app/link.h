// link.h — the app's link: the configuration's URL fragment (config/url_fragment.h) followed by
// the app's own pairs: a loaded snapshot's summary (snapshot= entries, measured/snapshot_link.h),
// a pinned baseline (base=, config/url_fragment.h encode_baseline: a link with one opens the
// Compare tab unless its view.tab names another; a link without one unpins), the open tab, the
// unit of amounts and the sweep's axes (view.tab, view.units, view.x, view.y; each optional: an
// older link without them shows its defaults) and the Plan tab's inputs (plan_* keys,
// plan_tab.h). Applying a link sets all of them; writing one reads all of them. Limitations: the
// view and plan pairs are the app's own: they are taken out before the core's decoder sees the
// fragment, and a link without them shows the Stages tab and the default axes.
#pragma once

#include <string>
#include <string_view>

#include "state.h"

// What the app shows when opened without a link: the one default configuration (config.h
// default_config: what the CLI without flags and a link without keys mean) on one device, so the
// first screen has a verdict. The summary line says the rest is the defaults; the CLI gives the
// same answer for `stagemem check --device h100-80gb`.
inline constexpr std::string_view default_link = "v=1&device=h100-80gb";

// Applies a link (whole, or its fragment): every good field is applied, each bad one keeps its
// default and is named in the banner (warnings too).
void apply_fragment(AppState& state, std::string_view link);
// The fragment of what is on screen: the configuration's + view_fragment.
std::string link_fragment(const AppState& state);
// The app's own pairs after the configuration: "" or "&snapshot=...&view.tab=sweep&view.x=...".
std::string view_fragment(const AppState& state);
// The snapshot's summary in a link (snapshot_link.h), "" when none is loaded.
std::string snapshot_link_part(const AppState& state);
// The sweep's default axes (seq x mbs), which a link leaves out.
void set_default_sweep_axes(AppState& state);
