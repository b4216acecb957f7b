// edit_history.h — undo/redo over every edit of the configuration. The frame commits once per
// frame, after the actions are applied: when the configuration differs from the one committed
// last, the committed one becomes an undo step, except while a widget is held or typed in (a
// number being typed), whose changes merge into the step that started it. Links loaded or pasted
// are steps too, so Ctrl+Z undoes them. The reducer undoes and redoes (actions.h: Undo, Redo).
// Limitations: EditHistory::capacity steps; the oldest are dropped.
#pragma once

struct AppState;

// `widget_active`: a widget is held or typed in this frame (ImGui::IsAnyItemActive()).
void commit_edits(AppState& state, bool widget_active);
void undo(AppState& state);
void redo(AppState& state);
