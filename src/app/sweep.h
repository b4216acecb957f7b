// sweep.h — the "Sweep" tab's computation: a grid of estimates over two configuration fields.
//
// Purpose: answer "which (seq, mbs) / (recompute, CP) / ... combinations fit?" at a glance. Each
// axis is one field of a short list of sweepable fields of config_fields() with a list of values
// (in the field's text form, as in a link); every cell is estimate(config with both values,
// model, peaks only). The model is resolved once per configuration change and reused, with one
// EstimateCache, for every cell; the grid is recomputed only when the configuration or the axes
// change, a time slice per frame until it is complete.
// Units: bytes (int64) per rank; time in milliseconds.
// Limitations: at most max_values values per axis; a cell whose configuration is invalid shows the
// field its first error names, and the error in its tooltip. An empty values text picks values
// around the current one that can be valid (micro-batch sizes dividing the batch per DP rank).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "config/config.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "report/report.h"

// Keys of the fields an axis can sweep (config_fields.h keys).
std::span<const std::string_view> sweepable_keys();

struct SweepAxis {
  std::string key;                  // a sweepable key, e.g. "seq"
  std::string values_text;          // "2048, 4096, 8192" as the user typed it
  std::vector<std::string> values;  // parsed and checked, in the field's text form
  std::string error;                // why values_text was refused ("" when accepted)
};

struct SweepCell {
  bool valid = false;
  std::int64_t peak_bytes = 0;      // of the binding stage
  std::int64_t headroom_bytes = 0;  // device bytes - peak (0 without a device)
  std::int64_t binding_stage = -1;
  bool current = false;   // both values are the configuration's own (the cell is marked)
  std::int64_t gpus = 0;  // world size of the cell's layout (shown when an axis is a parallel size)
  std::string label;      // drawn in the cell: headroom (or peak without a device) in GiB, or why
                          // the cell is invalid (the field the error names)
  std::string error;      // an invalid cell's first error, "field: message"
};

struct Sweep {
  static constexpr std::size_t max_values = 64;
  std::array<SweepAxis, 2> axes;   // x (columns), y (rows)
  std::uint64_t axes_version = 1;  // bumped on every axis edit
  // The grid, row-major: cells[y * columns + x].
  std::vector<SweepCell> cells;
  std::size_t columns = 0;
  std::size_t rows = 0;
  std::int64_t device_bytes = 0;  // of the swept configuration (0: no device; colour by peak)
  std::string device_name;        // its name, for the tooltips
  std::int64_t largest_peak = 0;
  std::string model_error;            // the configuration's model did not resolve
  double last_milliseconds = 0.0;     // the last full sweep, from its start to its last cell (wall)
  double compute_milliseconds = 0.0;  // of that: time spent computing cells (all slices)
  double longest_slice_milliseconds = 0.0;  // the longest single frame's share of it
  std::uint64_t sweeps = 0;  // how many full sweeps ran (tests: recomputed only on change)
  // Progressive computation: a grid is filled a time slice per frame (slice_milliseconds), so a
  // 64 x 64 grid never stalls a frame; `next_cell` is the first cell not computed yet.
  static constexpr double slice_milliseconds = 12.0;
  std::size_t next_cell = 0;  // cells computed so far (in `column_major` order or row-major)
  bool column_major = false;  // rows vary fastest: when only the columns rebuild the pieces
  bool complete = true;
  double started_at_seconds = 0.0;       // steady clock, when the grid's first slice ran
  std::optional<stagemem::Model> model;  // resolved once per configuration change
  stagemem::EstimateCache cache;         // shared by every cell of the grid (layout reuse)
  // Scratch of compute_cell, reused cell after cell (assignment and estimate_into keep storage).
  stagemem::Config cell_config;
  stagemem::Report cell_report;
  // What the grid was computed for.
  stagemem::Config computed_config;
  std::uint64_t computed_axes_version = 0;
  std::int64_t hovered_cell = -1;  // index into cells under the mouse last frame; -1 none
};

// Sets an axis to a field and a values text; returns "" or why the text was refused (the axis
// keeps its previous values then). An empty text picks values around the config's current one.
std::string set_sweep_axis(Sweep& sweep, std::size_t axis, std::string_view key,
                           std::string_view values_text, const stagemem::Config& config);
// Restarts the grid when the configuration or the axes changed since the last sweep, then
// computes cells for at most one time slice; returns true while cells remain (the caller asks
// for another frame).
bool update_sweep(Sweep& sweep, const stagemem::Config& config);
// Applies cell `index`'s two axis values to `config`; false when the cell is invalid.
// The tooltip of a cell, rendered when shown (the grid keeps numbers): its values, peak,
// headroom and binding stage, or its error.
std::string sweep_cell_detail(const Sweep& sweep, std::size_t index);
bool apply_sweep_cell(const Sweep& sweep, std::size_t index, stagemem::Config& config);
