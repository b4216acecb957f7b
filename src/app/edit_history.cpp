#include "edit_history.h"

#include <utility>

#include "state.h"

void commit_edits(AppState& state, bool widget_active) {
  EditHistory& h = state.history;
  if (!(state.config == h.committed)) {
    if (!h.editing) {
      h.undo.push_back(h.committed);
      if (h.undo.size() > EditHistory::capacity) h.undo.erase(h.undo.begin());
      h.redo.clear();
    }
    h.committed = state.config;
    h.editing = widget_active;
  } else if (!widget_active) {
    h.editing = false;
  }
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
