// widgets.h — drawing helpers the panels share: publishing a widget's rectangle, text pieces, the
// one-click fix button, the "Compare with bf16" button. Nothing here lets a panel call another
// panel or the platform; a panel's only ways out are its own view state and its actions
// (actions.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "actions.h"
#include "base/diagnostics.h"
#include "config/config.h"
#include "fixes.h"
#include "imgui.h"
#include "widget_rects.h"

// Errors under fields and in the panels, in one red.
inline constexpr ImVec4 error_colour(1.0f, 0.45f, 0.4f, 1.0f);

// Where the last ImGui item was drawn in frame `frame`; not drawn when it is not visible (a widget
// scrolled out of its panel cannot be clicked).
WidgetRect last_item_rect(std::uint64_t frame);
// Publishes the last item's rectangle as `widget` (Module.getWidgetRect); call right after it.
void publish(Actions& out, Widget widget);

void text_view(std::string_view text);
// Exact bytes and formulas in the monospaced font, so digits line up. `wrap`: at the window's (or
// the table cell's) right edge.
void mono_text(ImFont* font, std::string_view text, bool wrap = false);

// The one-click fix of error `error` of state.diagnostics (fixes.h) as a small button saying
// exactly what it changes ("Set TP to 4 (divides 4 KV heads)"), when it has one; null when no
// button was drawn. `pressed`: the button was clicked this frame. `published`: publish the
// button's rectangle there as Widget::field_fix.
const stagemem::Repair* fix_button(const AppState& state, std::size_t error, bool& pressed,
                                   Actions* published = nullptr);

// "Compare with bf16": pins the bf16 twin of the report on screen as the baseline and opens the
// Compare tab (CompareWithBf16); disabled, with the reason as its tooltip, when the configuration
// uses no low precision or has errors (bf16_comparison_unavailable, state.h). Published as
// `widget`.
void compare_with_bf16_button(const AppState& state, Actions& out, Widget widget);
