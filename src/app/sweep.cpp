#include "sweep.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "config/config_fields.h"
#include "render/vocabulary.h"

namespace {

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t") == std::string_view::npos;
}

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The cell's value index on the columns (x) and rows (y) axes.
std::size_t column_of(const Sweep& sweep, std::size_t index) {
  return index % sweep.columns;
}
std::size_t row_of(const Sweep& sweep, std::size_t index) {
  return index / sweep.columns;
}

// The model entry of the grid's own configuration, when it was resolved and no axis sweeps it.
const stagemem::SweepModel* base_model(const Sweep& sweep) {
  for (const SweepAxisEdit& edit : sweep.axes) {
    if (edit.axis.field != nullptr && edit.axis.field->key == "model") return nullptr;
  }
  const stagemem::Config& base = sweep.run.grid.base;
  for (const auto& model : sweep.run.models) {
    if (model->preset == base.model && model->custom == base.custom_model) return model.get();
  }
  return nullptr;
}

}  // namespace

std::string set_sweep_axis(Sweep& sweep, std::size_t axis, std::string_view key,
                           std::string_view values_text, const stagemem::Config& config) {
  if (axis >= sweep.axes.size()) return "axis: 0 (columns) or 1 (rows)";
  const stagemem::ConfigField* field = stagemem::find_field_by_key(key);
  const std::string text = blank(values_text) && field != nullptr
                               ? stagemem::suggested_sweep_values(*field, config)
                               : std::string(values_text);
  stagemem::Diagnostics diagnostics;
  std::optional<stagemem::SweepAxis> parsed =
      stagemem::parse_sweep_axis(key, text, config, Sweep::max_values, key, diagnostics);
  SweepAxisEdit& edited = sweep.axes[axis];
  if (!parsed) {
    edited.error = diagnostics.errors.front().field + ": " + diagnostics.errors.front().message;
    edited.values_text = std::string(values_text);
    return edited.error;
  }
  edited.axis = std::move(*parsed);
  edited.values_text = text;
  edited.error.clear();
  ++sweep.axes_version;
  return "";
}

bool update_sweep(Sweep& sweep, const stagemem::Config& config) {
  if (sweep.computed_axes_version != sweep.axes_version || !(sweep.run.grid.base == config)) {
    sweep.computed_axes_version = sweep.axes_version;
    // Rows first: the engine's last axis varies fastest in the cell index (row-major). Values no
    // cell can make valid leave the grid (they depend on the configuration: the model's heads,
    // the world size, ...), and the tab names them.
    stagemem::FilteredSweep filtered =
        stagemem::filter_sweep_values({config, {sweep.axes[1].axis, sweep.axes[0].axis}});
    sweep.dropped_count = {};
    for (std::size_t i = 0; i < 2; ++i) {
      sweep.dropped_text[i] = stagemem::dropped_values_text(filtered, 1 - i, sweep.axes[i].key());
    }
    for (const stagemem::DroppedSweepValue& dropped : filtered.dropped) {
      ++sweep.dropped_count[1 - dropped.axis];
    }
    sweep.columns = filtered.grid.axes[1].values.size();
    sweep.rows = filtered.grid.axes[0].values.size();
    // The run keeps its resolved models and their caches from the previous grid.
    stagemem::restart_sweep(sweep.run, std::move(filtered.grid));
    sweep.model_error.clear();
    sweep.complete = false;
    sweep.compute_milliseconds = 0.0;
    sweep.longest_slice_milliseconds = 0.0;
    sweep.slices = 0;
    sweep.started_at_seconds = seconds_now();
  }
  if (sweep.complete) return false;
  stagemem::SweepRun& run = sweep.run;
  if (!run.error.message.empty()) {
    const bool emptied = sweep.columns == 0 || sweep.rows == 0;
    sweep.model_error = sweep.axes[0].axis.field == nullptr || sweep.axes[1].axis.field == nullptr
                            ? std::string("no axes")
                        : emptied ? "no value of " +
                                        std::string(sweep.axes[sweep.columns == 0 ? 0 : 1].key()) +
                                        " can be valid with this configuration: nothing to sweep"
                                  : run.error.field + ": " + run.error.message;
    sweep.complete = true;
    ++sweep.sweeps;
    return false;
  }
  // The evaluation order is the engine's: the axis whose change rebuilds more of the estimate
  // cache varies slowest (e.g. the sequence length under the global batch).
  const double slice_start = seconds_now();
  while (stagemem::evaluate_sweep(run, 1) > 0) {
    if ((seconds_now() - slice_start) * 1e3 >= Sweep::slice_milliseconds) break;
  }
  const double end = seconds_now();
  const double slice = (end - slice_start) * 1e3;
  sweep.compute_milliseconds += slice;
  sweep.longest_slice_milliseconds = std::max(sweep.longest_slice_milliseconds, slice);
  ++sweep.slices;
  if (const stagemem::SweepModel* model = base_model(sweep); model != nullptr && !model->model) {
    // Every cell would say the same: the tab shows the model's error instead of a grid.
    sweep.model_error = model->error.field + ": " + model->error.message;
  }
  if (!stagemem::sweep_complete(run)) return true;
  sweep.complete = true;
  ++sweep.sweeps;
  sweep.last_milliseconds = (end - sweep.started_at_seconds) * 1e3;
  return false;
}

std::span<const std::string> sweep_values(const Sweep& sweep, std::size_t axis) {
  const auto& axes = sweep.run.grid.axes;
  if (axes.size() != 2 || axis > 1) return {};
  return axes[1 - axis].values;
}

std::int64_t sweep_device_bytes(const Sweep& sweep) {
  return sweep.run.devices.empty() ? 0 : sweep.run.devices.front().bytes;
}

std::string sweep_cell_label(const Sweep& sweep, std::size_t index, stagemem::AmountUnit unit) {
  if (index >= sweep.run.cells.size()) return {};
  const stagemem::SweepCell& cell = sweep.run.cells[index];
  if (!cell.evaluated) return {};
  if (!cell.valid) {
    const std::string& field = cell.error.field;
    return "invalid: " + field.substr(field.rfind('.') + 1);
  }
  return stagemem::amount_text(
      cell.device_bytes > 0 ? cell.min_headroom_bytes : cell.max_peak_bytes, unit, 1);
}

std::string sweep_cell_detail(const Sweep& sweep, std::size_t index, stagemem::AmountUnit unit) {
  if (index >= sweep.run.cells.size() || sweep.columns == 0) return {};
  const stagemem::SweepCell& cell = sweep.run.cells[index];
  const std::string where =
      std::string(sweep.axes[0].key()) + "=" + sweep_values(sweep, 0)[column_of(sweep, index)] +
      ", " + sweep.axes[1].key() + "=" + sweep_values(sweep, 1)[row_of(sweep, index)];
  if (!cell.valid) return where + "\n" + cell.error.field + ": " + cell.error.message;
  const bool device = cell.device >= 0;
  return where + "\nbinding stage " + std::to_string(cell.binding_stage) + ": peak " +
         stagemem::bytes_text(cell.max_peak_bytes, unit) +
         (device ? "\nheadroom " + stagemem::bytes_text(cell.min_headroom_bytes, unit) + " on " +
                       sweep.run.devices[static_cast<std::size_t>(cell.device)].name
                 : std::string("\nno device chosen: coloured by peak")) +
         "\nclick to apply these values";
}

bool apply_sweep_cell(const Sweep& sweep, std::size_t index, stagemem::Config& config) {
  if (index >= sweep.run.cells.size() || !sweep.run.cells[index].valid) return false;
  return stagemem::apply_sweep_values(sweep.run.grid, index, config);
}
