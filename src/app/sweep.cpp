#include "sweep.h"

#include <algorithm>
#include <chrono>

#include "config/config_fields.h"
#include "estimate/estimate.h"
#include "parallel/layout.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

constexpr std::array<std::string_view, 10> keys = {
    "seq", "mbs", "gbs", "cp", "tp", "pp", "vpp", "ep", "recompute", "recompute_layers"};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Values around the current one: a choice's every name; an integer's quarter to four times.
std::string default_values(const stagemem::ConfigField& field, const stagemem::Config& config) {
  std::string text;
  if (field.kind == stagemem::FieldKind::choice) {
    for (std::string_view name : field.choices) {
      text += (text.empty() ? "" : ", ") + std::string(name);
    }
    return text;
  }
  const std::int64_t current = *field.integer(const_cast<stagemem::Config&>(config));
  std::vector<std::int64_t> values;
  if (field.key == "mbs") {
    // Only sizes that divide the global batch per data-parallel rank can be valid.
    const std::int64_t per_rank =
        config.training.global_batch /
        std::max<std::int64_t>(1, stagemem::data_parallel_size(config.parallel));
    for (std::int64_t v = 1; v <= per_rank && v <= 64; v *= 2) {
      if (per_rank % v == 0) values.push_back(v);
    }
    if (!values.empty()) {
      for (const std::int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
      return text;
    }
  }
  for (const std::int64_t v : {current / 4, current / 2, current, current * 2, current * 4}) {
    if (v >= std::max<std::int64_t>(1, field.min) && v <= field.max &&
        std::find(values.begin(), values.end(), v) == values.end()) {
      values.push_back(v);
    }
  }
  for (const std::int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

}  // namespace

std::span<const std::string_view> sweepable_keys() {
  return keys;
}

std::string set_sweep_axis(Sweep& sweep, std::size_t axis, std::string_view key,
                           std::string_view values_text, const stagemem::Config& config) {
  const stagemem::ConfigField* field = stagemem::find_field_by_key(key);
  if (axis >= sweep.axes.size() || field == nullptr ||
      std::find(keys.begin(), keys.end(), key) == keys.end()) {
    return std::string(key) + ": not a sweepable field";
  }
  const std::string text =
      trim(values_text).empty() ? default_values(*field, config) : std::string(values_text);
  std::vector<std::string> values;
  std::string_view rest = text;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view token = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (token.empty()) continue;
    stagemem::Config scratch = config;
    stagemem::Diagnostics diagnostics;
    if (!stagemem::parse_field_text(*field, token, scratch, diagnostics, key)) {
      SweepAxis& kept = sweep.axes[axis];
      kept.error = diagnostics.errors.front().field + ": " + diagnostics.errors.front().message;
      kept.values_text = std::string(values_text);
      return kept.error;
    }
    if (values.size() == Sweep::max_values) {
      sweep.axes[axis].error = "at most " + std::to_string(Sweep::max_values) + " values";
      sweep.axes[axis].values_text = std::string(values_text);
      return sweep.axes[axis].error;
    }
    values.emplace_back(token);
  }
  if (values.empty()) {
    sweep.axes[axis].error = "give at least one value";
    sweep.axes[axis].values_text = std::string(values_text);
    return sweep.axes[axis].error;
  }
  SweepAxis& out = sweep.axes[axis];
  out.key = std::string(key);
  out.values_text = text;
  out.values = std::move(values);
  out.error.clear();
  ++sweep.axes_version;
  return "";
}

namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void compute_cell(Sweep& sweep, std::size_t index, const stagemem::ConfigField& x_field,
                  const stagemem::ConfigField& y_field) {
  const std::size_t x = index % sweep.columns;
  const std::size_t y = index / sweep.columns;
  const stagemem::Config& config = sweep.computed_config;
  SweepCell& cell = sweep.cells[index];
  stagemem::Config& cell_config = sweep.cell_config;
  cell_config = config;
  stagemem::Diagnostics parse;
  stagemem::parse_field_text(x_field, sweep.axes[0].values[x], cell_config, parse, "x");
  stagemem::parse_field_text(y_field, sweep.axes[1].values[y], cell_config, parse, "y");
  stagemem::estimate_into(cell_config, *sweep.model, sweep.cache, sweep.cell_report,
                          stagemem::EstimateDetail::peaks);
  const stagemem::Report& report = sweep.cell_report;
  cell.current = cell_config == config;
  cell.gpus = stagemem::world_size(cell_config.parallel);
  if (!parse.ok() || !report.diagnostics.ok() || report.binding_stage < 0) {
    const auto& errors = parse.ok() ? report.diagnostics.errors : parse.errors;
    // The cell says why: the last part of the field its first error names.
    const std::string field = errors.empty() ? std::string("no stages") : errors.front().field;
    cell.label = "invalid: " + field.substr(field.rfind('.') + 1);
    cell.error = errors.empty() ? std::string("no stages")
                                : errors.front().field + ": " + errors.front().message;
    return;
  }
  const stagemem::StageReport& binding =
      report.stages[static_cast<std::size_t>(report.binding_stage)];
  cell.valid = true;
  cell.peak_bytes = binding.peak_bytes;
  cell.headroom_bytes = binding.headroom_bytes;
  cell.binding_stage = report.binding_stage;
  if (sweep.device_bytes != report.device.bytes || sweep.device_name != report.device.name) {
    sweep.device_bytes = report.device.bytes;
    sweep.device_name = report.device.name;
  }
  sweep.largest_peak = std::max(sweep.largest_peak, binding.peak_bytes);
  const bool device = report.device.bytes > 0;
  cell.label = stagemem::format_gib(device ? binding.headroom_bytes : binding.peak_bytes, 1);
}

}  // namespace

bool update_sweep(Sweep& sweep, const stagemem::Config& config) {
  if (sweep.computed_axes_version != sweep.axes_version || !(sweep.computed_config == config)) {
    sweep.computed_config = config;
    sweep.computed_axes_version = sweep.axes_version;
    sweep.columns = sweep.axes[0].values.size();
    sweep.rows = sweep.axes[1].values.size();
    sweep.cells.assign(sweep.columns * sweep.rows, SweepCell{});
    sweep.hovered_cell = -1;
    sweep.largest_peak = 0;
    sweep.device_bytes = 0;
    sweep.device_name.clear();
    sweep.model_error.clear();
    sweep.next_cell = 0;
    sweep.complete = false;
    // Sequence length and micro-batch size change every activation piece; other fields reuse
    // them (EstimateCache). Vary such an axis slowest so each value builds its pieces once.
    const auto rebuilds_pieces = [](const std::string& key) {
      return key == "seq" || key == "mbs";
    };
    sweep.column_major = rebuilds_pieces(sweep.axes[0].key) && !rebuilds_pieces(sweep.axes[1].key);
    sweep.compute_milliseconds = 0.0;
    sweep.longest_slice_milliseconds = 0.0;
    sweep.started_at_seconds = seconds_now();
    stagemem::Diagnostics model_diagnostics;
    sweep.cache = {};  // the cache refers to the previous model: drop it with the model
    sweep.model = stagemem::resolve_model(config, model_diagnostics);
    if (!sweep.model) {
      sweep.model_error = model_diagnostics.errors.empty()
                              ? std::string("no model")
                              : model_diagnostics.errors.front().field + ": " +
                                    model_diagnostics.errors.front().message;
    }
  }
  if (sweep.complete) return false;
  const stagemem::ConfigField* x_field = stagemem::find_field_by_key(sweep.axes[0].key);
  const stagemem::ConfigField* y_field = stagemem::find_field_by_key(sweep.axes[1].key);
  if (!sweep.model || x_field == nullptr || y_field == nullptr) {
    if (sweep.model_error.empty()) sweep.model_error = "no axes";
    sweep.complete = true;
    ++sweep.sweeps;
    return false;
  }
  const double slice_start = seconds_now();
  while (sweep.next_cell < sweep.cells.size()) {
    const std::size_t k = sweep.next_cell++;
    const std::size_t index =
        sweep.column_major ? (k % sweep.rows) * sweep.columns + k / sweep.rows : k;
    compute_cell(sweep, index, *x_field, *y_field);
    if ((seconds_now() - slice_start) * 1e3 >= Sweep::slice_milliseconds) break;
  }
  const double end = seconds_now();
  const double slice = (end - slice_start) * 1e3;
  sweep.compute_milliseconds += slice;
  sweep.longest_slice_milliseconds = std::max(sweep.longest_slice_milliseconds, slice);
  if (sweep.next_cell < sweep.cells.size()) return true;
  sweep.complete = true;
  ++sweep.sweeps;
  sweep.last_milliseconds = (end - sweep.started_at_seconds) * 1e3;
  return false;
}

std::string sweep_cell_detail(const Sweep& sweep, std::size_t index) {
  if (index >= sweep.cells.size() || sweep.columns == 0) return {};
  const SweepCell& cell = sweep.cells[index];
  const std::size_t x = index % sweep.columns;
  const std::size_t y = index / sweep.columns;
  const std::string where = sweep.axes[0].key + "=" + sweep.axes[0].values[x] + ", " +
                            sweep.axes[1].key + "=" + sweep.axes[1].values[y];
  if (!cell.valid) return where + "\n" + cell.error;
  const bool device = sweep.device_bytes > 0;
  return where + "\nbinding stage " + std::to_string(cell.binding_stage) + ": peak " +
         stagemem::bytes_text(cell.peak_bytes) +
         (device ? "\nheadroom " + stagemem::bytes_text(cell.headroom_bytes) + " on " +
                       sweep.device_name
                 : std::string("\nno device chosen: coloured by peak")) +
         "\nclick to apply these values";
}

bool apply_sweep_cell(const Sweep& sweep, std::size_t index, stagemem::Config& config) {
  if (index >= sweep.cells.size() || sweep.columns == 0 || !sweep.cells[index].valid) return false;
  const std::size_t x = index % sweep.columns;
  const std::size_t y = index / sweep.columns;
  const stagemem::ConfigField* x_field = stagemem::find_field_by_key(sweep.axes[0].key);
  const stagemem::ConfigField* y_field = stagemem::find_field_by_key(sweep.axes[1].key);
  if (x_field == nullptr || y_field == nullptr) return false;
  stagemem::Config edited = config;
  stagemem::Diagnostics diagnostics;
  stagemem::parse_field_text(*x_field, sweep.axes[0].values[x], edited, diagnostics, "x");
  stagemem::parse_field_text(*y_field, sweep.axes[1].values[y], edited, diagnostics, "y");
  if (!diagnostics.ok()) return false;
  config = std::move(edited);
  return true;
}
