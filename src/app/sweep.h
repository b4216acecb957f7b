// sweep.h — the "Sweep" tab's state: a grid of estimates over two configuration fields.
//
// Purpose: answer "which (seq, mbs) / (recompute, CP) / ... combinations fit?" at a glance. The
// grid is the core's sweep engine's (plan/sweep.h: which fields can be swept, the axis text, the
// per-cell numbers, one resolved model and EstimateCache per model, kept across edits); this file
// keeps what the tab edits (each axis's field and values text) and fills the grid a time slice per
// frame (the frame's refresh, while the tab is open), restarting it only when the configuration or
// the axes change.
// Units: bytes (int64) per rank; time in milliseconds.
// Values no cell can make valid (TP 3 on a 128-head model) are dropped from the grid, and the tab
// says which and why; the link keeps the values as typed.
// Limitations: at most max_values values per axis; a cell whose configuration is invalid shows the
// field its first error names, and the error in its tooltip. An empty values text picks values
// around the current one (suggested_sweep_values: e.g. micro-batch sizes dividing the batch per
// DP rank).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "config/config.h"
#include "plan/sweep.h"
#include "render/vocabulary.h"

// One axis as the tab edits it.
struct SweepAxisEdit {
  stagemem::SweepAxis axis;  // the field and its accepted values, in the field's text form
  std::string values_text;   // "2048, 4096, 8192" as the user typed it (or as suggested)
  std::string error;         // why values_text was refused ("" when accepted)
  // The field's key ("seq"; "" before one is set): a table literal, NUL-terminated.
  const char* key() const { return axis.field != nullptr ? axis.field->key.data() : ""; }
};

struct Sweep {
  static constexpr std::size_t max_values = 64;
  std::array<SweepAxisEdit, 2> axes;  // x (columns), y (rows)
  std::uint64_t axes_version = 1;     // bumped on every axis edit
  // The grid: base = the configuration it is computed for, axes {rows, columns}, so that cell
  // index = y * columns + x (row-major).
  stagemem::SweepRun run;
  std::size_t columns = 0;
  std::size_t rows = 0;
  std::string model_error;  // the configuration's model did not resolve, or no axes
  // The grid holds only the values some valid cell holds (plan/sweep.h: filter_sweep_values,
  // rerun with the grid); per axis, the sentence naming the typed values dropped and why ("" when
  // none was) and how many.
  std::array<std::string, 2> dropped_text;
  std::array<std::size_t, 2> dropped_count{};
  double last_milliseconds = 0.0;     // the last full sweep, from its start to its last cell (wall)
  double compute_milliseconds = 0.0;  // of that: time spent computing cells (all slices)
  double longest_slice_milliseconds = 0.0;  // the longest single frame's share of it
  std::uint64_t slices = 0;  // how many frames computed cells of the last (or current) grid
  std::uint64_t sweeps = 0;  // how many full sweeps ran (tests: recomputed only on change)
  // Progressive computation: a grid is filled a time slice per frame (slice_milliseconds), so a
  // 64 x 64 grid never stalls a frame; run.evaluated counts the cells computed so far.
  static constexpr double slice_milliseconds = 12.0;
  bool complete = true;
  double started_at_seconds = 0.0;  // steady clock, when the grid's first slice ran
  std::uint64_t computed_axes_version = 0;
};

// Sets an axis to a field and a values text; returns "" or why the text was refused (the axis
// keeps its previous field and values then). An empty text picks values around the config's own.
std::string set_sweep_axis(Sweep& sweep, std::size_t axis, std::string_view key,
                           std::string_view values_text, const stagemem::Config& config);
// Restarts the grid when the configuration or the axes changed since the last sweep, then
// computes cells for at most one time slice; returns true while cells remain (the caller asks
// for another frame).
bool update_sweep(Sweep& sweep, const stagemem::Config& config);
// The values of axis 0 (columns) or 1 (rows) in the grid: the typed ones less those dropped.
std::span<const std::string> sweep_values(const Sweep& sweep, std::size_t axis);
// The device the grid's headroom is measured against (the first the cells met); 0: none.
std::int64_t sweep_device_bytes(const Sweep& sweep);
// What cell `index` shows, rendered when drawn: headroom (or peak without a device) in GiB, or
// why it is invalid (the last part of the field its first error names); "" until computed.
std::string sweep_cell_label(const Sweep& sweep, std::size_t index,
                             stagemem::AmountUnit unit = stagemem::AmountUnit::gib);
// The tooltip of a cell, rendered when shown (the grid keeps numbers): its values, peak,
// headroom and binding stage, or its error.
std::string sweep_cell_detail(const Sweep& sweep, std::size_t index,
                              stagemem::AmountUnit unit = stagemem::AmountUnit::gib);
// Applies cell `index`'s two axis values to `config`; false when the cell is invalid.
bool apply_sweep_cell(const Sweep& sweep, std::size_t index, stagemem::Config& config);
