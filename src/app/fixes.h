// fixes.h — one-click fixes of configuration errors and what a model change keeps.
//
// Every error the core can repair obviously (config/repair.h: the nearest TP that divides the
// heads, the DP a world size implies, EP that divides the experts, gbs rounded up to mbs x DP,
// ...) gets a button that says exactly what changes ("Set TP to 4 (divides 4 KV heads)"). The
// repairs are computed with the diagnostics in the frame's refresh (AppState::fix_its); the
// summary line and the configuration panel draw the buttons (widgets.h: fix_button), and a click
// applies the repair like any other edit.
// A model change (a preset picked, a Hugging Face config.json pasted, dropped or imported) moves
// the layout to the nearest valid one for the new model and names each change, and names the
// settings carried over that are not the defaults (they change memory, and the CLI and a link
// without them would not have them).
// Limitations: one repair per error (repair_for's); errors without an obvious one are fixed by
// hand.
#pragma once

#include <cstddef>
#include <string>

#include "config/config.h"
#include "config/repair.h"

struct AppState;

// Fills state.fix_its (model, repairs) for state.diagnostics of state.config.
void refresh_fix_its(AppState& state);
// The repair of error `index` of state.diagnostics, or null.
const stagemem::Repair* repair_of(const AppState& state, std::size_t index);
// Applies error `index`'s repair to state.config; false when it has none.
bool apply_fix(AppState& state, std::size_t index);

// Whether `after` describes another model than `before` (preset or custom model text).
bool model_changed(const stagemem::Config& before, const stagemem::Config& after);
// After a model change: moves state.config to the nearest valid layout of its model and fills
// fix_its.model_changed ("Changed for <model>: TP 8 -> 4 (...)") and fix_its.kept (the settings
// carried over unchanged that are not the defaults). Returns the changes, "TP 8 -> 4 (divides 4
// KV heads)" ("" when the layout stayed as it was).
std::string settle_model_change(AppState& state);
// The fields (link keys and values) of `config` that are not the defaults, other than the model,
// the device and measured values: "tp=8, pp=4, seq=8192, optimizer=distributed-adam";
// `beyond_layout`: without the parallel layout's fields either.
std::string kept_settings(const stagemem::Config& config, bool beyond_layout = false);
// The defaults (default_config) with the configuration's model and device: what the CLI gives
// for `--preset <model> --device <device>`.
stagemem::Config defaults_for_model(const stagemem::Config& config);
