// Undo/redo over every edit of the configuration. The frame function commits once per frame:
// when the config differs from the one committed last, the committed one becomes an undo step,
// except while a widget is held or typed in (a drag, a number being typed), whose changes merge
// into the step that started it. Links loaded or pasted are steps too, so Ctrl+Z undoes them.
#include <algorithm>

#include "app.h"
#include "imgui.h"

void commit_edits(AppState& state) {
  EditHistory& h = state.history;
  if (!(state.config == h.committed)) {
    if (!h.editing) {
      h.undo.push_back(h.committed);
      if (h.undo.size() > EditHistory::capacity) h.undo.erase(h.undo.begin());
      h.redo.clear();
    }
    h.committed = state.config;
    h.editing = ImGui::IsAnyItemActive();
  } else if (!ImGui::IsAnyItemActive()) {
    h.editing = false;
  }
}

bool can_undo(const AppState& state) {
  return !state.history.undo.empty();
}
bool can_redo(const AppState& state) {
  return !state.history.redo.empty();
}

void undo(AppState& state) {
  EditHistory& h = state.history;
  if (h.undo.empty()) return;
  h.redo.push_back(state.config);
  state.config = std::move(h.undo.back());
  h.undo.pop_back();
  h.committed = state.config;
  h.editing = false;
}

void redo(AppState& state) {
  EditHistory& h = state.history;
  if (h.redo.empty()) return;
  h.undo.push_back(state.config);
  state.config = std::move(h.redo.back());
  h.redo.pop_back();
  h.committed = state.config;
  h.editing = false;
}

void handle_history_keys(AppState& state) {
  // Inside a text field Ctrl+Z is the field's own undo (ImGui's InputText handles it).
  if (ImGui::GetIO().WantTextInput) return;
  if (ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiMod_Shift | ImGuiKey_Z) ||
      ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiKey_Y)) {
    redo(state);
  } else if (ImGui::IsKeyChordPressed(ImGuiMod_Shortcut | ImGuiKey_Z)) {
    undo(state);
  }
}
