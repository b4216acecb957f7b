// sweep.h — the one sweep engine: per-stage peaks over the grid of every combination of a few
// configuration fields' values.
//
// Purpose: `stagemem sweep` (any number of axes, printed in one go) and the app's heat map (two
// axes, filled a time slice per frame) ask the same question — "which combinations fit?" — and
// get their answers here. An axis is a field of the field table (config/config_fields.h) and a
// list of its values in their text form (as in a link or on the command line). Which fields can
// be swept is one rule of the field table (sweepable below). Every cell is the base configuration
// with one value of each axis, estimated with estimate_into and EstimateDetail::peaks (numbers
// only: the same numbers as the full report, estimate.h) into one reused Report, with one
// EstimateCache per distinct model (a sweep over `model` resolves each preset once).
// A SweepRun is a resumable cursor: evaluate_sweep(run, n) estimates the next n cells, so a
// front end computes the grid in slices (the app) or at once (the CLI); the results do not
// depend on the slicing. Cells are evaluated with the axes whose change discards most of an
// EstimateCache varying slowest (the model, then the parallel layout, then the training inputs the
// activation pieces are built from), so a seq x recompute grid builds each sequence's pieces once;
// results are stored by cell index, whatever the order.
// Usage:
//   Diagnostics d;
//   auto seq = parse_sweep_axis(*find_field_by_key("seq"), "4096, 8192", config, 64, "seq", d);
//   SweepRun run = start_sweep({config, {*seq}});
//   evaluate_sweep(run, run.cells.size());   // or a few cells per frame
//   run.cells[i]: valid, max_peak_bytes, binding_stage, min_headroom_bytes, fit, error
// Units: bytes (int64) per rank; counts.
// Limitations: a grid holds at most max_sweep_cells cells (front ends bound it lower: the CLI
// 10,000, the app 64 x 64). An axis value is checked by the field's own text form only; what only
// the whole configuration can check (a preset that exists, a sequence divisible by CP) makes that
// cell invalid with the estimate's first error, not the axis.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "config/config_fields.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "report/report.h"

namespace stagemem {

// The rule of what can be swept, from the field table: a field whose value is one item — an
// integer, a boolean, a number, a choice, or a text that names one item of a list (model and
// device presets: ConfigField::names). Not lists (stages), sets (recompute_modules) or free text
// (custom model text, layout strings): their values hold commas themselves and are no single
// point of a grid.
bool sweepable(const ConfigField& field);
// Every sweepable field, in the table's order.
std::vector<const ConfigField*> sweepable_fields();

inline constexpr std::size_t max_sweep_cells = 1'000'000;

struct SweepAxis {
  const ConfigField* field = nullptr;
  std::string name;                 // the field as the user named it ("--seq-length", "seq")
  std::vector<std::string> values;  // each value's text form, in the order given
};

// Parses "4096, 8192, 16384": values separated by commas, blanks around them ignored, empty ones
// skipped; each must parse as the field's text form (parse_field_text over `base`). On error adds
// one error named `name` (the field as the user named it) that says the allowed values — of the
// field, or the sweepable fields when the field cannot be swept — and returns nullopt. At most
// `max_values` values, at least one.
std::optional<SweepAxis> parse_sweep_axis(const ConfigField& field, std::string_view values_text,
                                          const Config& base, std::size_t max_values,
                                          std::string_view name, Diagnostics& diagnostics);
// The same by field key ("seq"); an unknown key is an error naming the sweepable keys.
std::optional<SweepAxis> parse_sweep_axis(std::string_view key, std::string_view values_text,
                                          const Config& base, std::size_t max_values,
                                          std::string_view name, Diagnostics& diagnostics);

// Values worth sweeping around `config`'s own, as an axis text ("1024, 2048, 4096"): a choice's
// or a named text's every name, both booleans, an integer's or a number's quarter to four times
// (powers of two from 1 when it is 0 or unset); micro-batch sizes only where they divide the
// global batch per data-parallel rank (others cannot be valid). "" for a field that cannot be
// swept.
std::string suggested_sweep_values(const ConfigField& field, const Config& config);

// What to sweep: the base configuration and the axes. Cell index: the axes' value indices in
// mixed radix, the last axis varying fastest (a 2-axis grid {rows, columns} is row-major).
struct SweepGrid {
  Config base;
  std::vector<SweepAxis> axes;
};

// The product of the axes' value counts (1 without axes); saturates at INT64_MAX.
std::int64_t sweep_cell_count(std::span<const SweepAxis> axes);
// The index into grid.axes[axis].values of cell `cell`.
std::size_t sweep_value_index(const SweepGrid& grid, std::size_t cell, std::size_t axis);
// Writes cell `cell`'s values into `config` (in axis order; no other field changes): over
// grid.base, the cell's configuration. False, with `config` unchanged, when a value does not
// parse (never for axes from parse_sweep_axis).
bool apply_sweep_values(const SweepGrid& grid, std::size_t cell, Config& config);

enum class SweepFit : std::uint8_t { invalid, no_device, fits, does_not_fit };

// One cell's numbers (text is the front end's business).
struct SweepCell {
  bool evaluated = false;
  bool valid = false;    // estimated without error
  bool is_base = false;  // every axis value equals the base configuration's own
  SweepFit fit = SweepFit::invalid;
  std::int64_t binding_stage = -1;      // the stage with the largest peak (the first of equals)
  std::int64_t max_peak_bytes = 0;      // its peak
  std::int64_t min_headroom_bytes = 0;  // device bytes - max peak; 0 without a device
  std::int64_t device_bytes = 0;        // 0: no device
  std::int32_t device = -1;             // index into SweepRun::devices; -1: no device
  std::int64_t world_size = 0;          // GPUs of the cell's layout (TP x PP x CP x DP)
  std::size_t first_stage_peak = 0;     // the stages' peaks: SweepRun::stage_peaks from here
  std::size_t stage_count = 0;
  FieldMessage error;  // an invalid cell's first error (the model's or the estimate's)
};

// A model of the sweep (resolved once) and the cache its estimates share. Kept behind a pointer:
// an EstimateCache recognises its model by address.
struct SweepModel {
  std::string preset;  // what it was resolved from: Config::model and Config::custom_model
  std::string custom;
  std::optional<Model> model;
  FieldMessage error;  // why it did not resolve
  EstimateCache cache;
};

// The grid being evaluated, its results so far and the scratch they are computed with.
struct SweepRun {
  SweepGrid grid;
  FieldMessage error;  // the grid is refused (too many cells, an axis without a sweepable field)
  std::vector<SweepCell> cells;           // by cell index
  std::vector<std::int64_t> stage_peaks;  // every valid cell's per-stage peaks, in evaluation order
  std::vector<DeviceCapacity> devices;    // each distinct device the cells were estimated for
  std::int64_t largest_peak_bytes = 0;    // the largest max_peak_bytes of the valid cells so far
  std::size_t evaluated = 0;              // cells evaluated so far (in evaluation order)
  // Evaluation order: grid.axes indices, the one varying slowest first; and each axis's stride
  // in the cell index.
  std::vector<std::size_t> order;
  std::vector<std::size_t> strides;
  // The next cell's value index per axis: an odometer advanced in evaluation order (no division
  // per cell); and per axis, the value index cell_config holds (npos: to write), so that a cell
  // writes only the values that changed — all of them when two axes sweep one field.
  std::vector<std::size_t> coordinates;
  std::vector<std::size_t> written;
  bool shared_fields = false;
  std::int64_t world_size = -1;  // of cell_config's layout; -1: to compute
  std::vector<std::unique_ptr<SweepModel>> models;
  std::size_t last_model = 0;  // index into models: consecutive cells mostly share a model
  // Whether an axis sweeps the model (model, custom) or the device (device, device_bytes); when
  // not, every cell has the first cell's, looked up once per run.
  bool model_swept = false;
  bool device_swept = false;
  SweepModel* fixed_model = nullptr;
  std::optional<std::int32_t> fixed_device;
  Config cell_config;  // scratch of one cell, reused (assignment keeps storage)
  Report report;
  Diagnostics parse;
};

// A run over `grid` with no cell evaluated yet (or refused: `error` set, no cells).
SweepRun start_sweep(SweepGrid grid);
// The same in place, keeping the run's resolved models and their caches (the same preset name and
// custom text resolve to the same model; a cache is correct for any configuration of its model):
// the app restarts its grid on every edit, and an edit that keeps the layout keeps the layout's
// plan and parameters. At most max_kept_models are kept.
inline constexpr std::size_t max_kept_models = 8;
void restart_sweep(SweepRun& run, SweepGrid grid);
// Evaluates up to `max_cells` more cells; returns how many it evaluated (0 when complete).
std::size_t evaluate_sweep(SweepRun& run, std::size_t max_cells);
inline bool sweep_complete(const SweepRun& run) {
  return run.evaluated >= run.cells.size();
}
// The cell evaluated `k`-th (k < cells.size()).
std::size_t sweep_evaluation_cell(const SweepRun& run, std::size_t k);
// A valid cell's per-stage peaks, stage 0 first.
std::span<const std::int64_t> sweep_stage_peaks(const SweepRun& run, const SweepCell& cell);
// The whole grid at once.
SweepRun compute_sweep(SweepGrid grid);

// ---- Values that cannot be valid ---------------------------------------------------------------
// A typed axis such as `tp 1, 2, ..., 64` over a model with 128 heads holds mostly values that no
// cell can make valid (TP 3 divides no head count whatever the pipeline size is): a grid of them
// is mostly grey. filter_sweep_values keeps an axis value when at least one cell of the grid that
// holds it is a valid configuration (validate(): the model's divisibility rules, the world size,
// the expert groups, the batch per data-parallel rank, ...), and drops it otherwise, with the
// reason. Exact for any number of axes: a value some valid cell holds is kept, whatever the other
// axes hold, so that a TP that only fits a smaller world with a smaller PP stays (its other cells
// stay in the grid, invalid). Only values are dropped, never single cells. The app's Sweep tab
// and `stagemem sweep --valid-only` use it; plain `stagemem sweep` keeps every point and names the
// same values in a note.
// Cost: one validate() per cell tried (a few microseconds); a kept value usually needs one
// (the other axes start at the base configuration's own values), a dropped one tries every
// combination of the other axes, each at most once for the whole grid.
struct DroppedSweepValue {
  std::size_t axis = 0;  // index into SweepGrid::axes
  std::string value;     // as given
  // Why: the first error of the first cell tried with it (the other axes at the base
  // configuration's own values where they hold them).
  FieldMessage reason;
};

struct FilteredSweep {
  SweepGrid grid;  // the axes with only the values some valid cell holds, in the order given
  std::vector<DroppedSweepValue> dropped;  // by axis, then in the order given
  // Grids over max_sweep_cells are returned whole (start_sweep refuses them anyway).
  bool checked = false;
};

FilteredSweep filter_sweep_values(const SweepGrid& grid);
// The dropped values of `axis` in one sentence, their reasons grouped by the field each names:
// "tp: dropped 4 of 8 values that cannot be valid with this configuration: 3, 5, 6, 7
// (parallel.tp: tensor parallel size 3 must divide the attention heads (128))". "" when none was
// dropped. `name` is the axis as the user named it ("tp", "--tp").
std::string dropped_values_text(const FilteredSweep& filtered, std::size_t axis,
                                std::string_view name);
// Its list alone: "3, 5, 6, 7 (parallel.tp: tensor parallel size 3 must divide the attention
// heads (128))"; and how many values of `axis` were dropped.
std::string dropped_values_list(const FilteredSweep& filtered, std::size_t axis);
std::size_t dropped_value_count(const FilteredSweep& filtered, std::size_t axis);

}  // namespace stagemem
