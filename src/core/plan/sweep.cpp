#include "plan/sweep.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "config/config.h"
#include "parallel/layout.h"

namespace stagemem {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

std::string sweepable_key_list() {
  std::string keys;
  for (const ConfigField* field : sweepable_fields()) {
    keys += (keys.empty() ? "" : ", ") + std::string(field->key);
  }
  return keys;
}

std::string_view why_not_sweepable(const ConfigField& field) {
  switch (field.kind) {
    case FieldKind::integer_list:
      return "its value is a list";
    case FieldKind::name_set:
      return "its value is a set";
    case FieldKind::stack:
      return "its value is a list of name=version pairs";
    default:
      return "its value is free text";
  }
}

// How much of an EstimateCache (estimate.h) a change of the field discards, most first: 0 the
// model (another cache), 1 the parallel layout (everything the cache holds), 2 the training
// inputs the activation pieces are built from (LayerPieceCache::built_for: the training section
// but the global batch, recompute and the flat headroom), 3 the rest (the activations' memo, the
// state terms or only the headroom). Only the order of evaluation depends on it, never a number.
int discarded_cache(const ConfigField& field) {
  const std::string_view path = field.path;
  if (path == "model" || path == "custom_model") return 0;
  if (path.starts_with("parallel.")) return 1;
  if (path.starts_with("training.") && path != "training.global_batch" &&
      !path.starts_with("training.recompute.") && path != "training.flat_headroom_bytes") {
    return 2;
  }
  return 3;
}

std::string join_values(const std::vector<std::string>& values) {
  std::string text;
  for (const std::string& v : values) text += (text.empty() ? "" : ", ") + v;
  return text;
}

// The cell the counter `k` of the evaluation order reaches.
std::size_t cell_of(const SweepRun& run, std::size_t k) {
  std::size_t cell = 0;
  for (std::size_t i = run.order.size(); i-- > 0;) {
    const std::size_t axis = run.order[i];
    const std::size_t count = run.grid.axes[axis].values.size();
    cell += (k % count) * run.strides[axis];
    k /= count;
  }
  return cell;
}

SweepModel& model_for(SweepRun& run, const Config& config) {
  const auto same = [&](const SweepModel& m) {
    return m.preset == config.model && m.custom == config.custom_model;
  };
  if (run.last_model < run.models.size() && same(*run.models[run.last_model])) {
    return *run.models[run.last_model];
  }
  for (std::size_t i = 0; i < run.models.size(); ++i) {
    if (same(*run.models[i])) {
      run.last_model = i;
      return *run.models[i];
    }
  }
  auto entry = std::make_unique<SweepModel>();
  entry->preset = config.model;
  entry->custom = config.custom_model;
  Diagnostics resolved;
  entry->model = resolve_model(config, resolved);
  if (!resolved.ok()) {
    entry->error = resolved.errors.front();
  } else if (!entry->model) {
    entry->error = {"model", "the model did not resolve"};
  }
  run.models.push_back(std::move(entry));
  run.last_model = run.models.size() - 1;
  return *run.models.back();
}

std::int32_t device_index(SweepRun& run, const DeviceCapacity& device) {
  if (device.bytes <= 0) return -1;
  for (std::size_t i = run.devices.size(); i-- > 0;) {
    if (run.devices[i].bytes == device.bytes && run.devices[i].name == device.name) {
      return static_cast<std::int32_t>(i);
    }
  }
  run.devices.push_back(device);
  return static_cast<std::int32_t>(run.devices.size() - 1);
}

void evaluate_cell(SweepRun& run, std::size_t index) {
  // The cell holds its defaults (restart_sweep) and is evaluated once per run.
  SweepCell& cell = run.cells[index];
  cell.evaluated = true;
  Config& config = run.cell_config;
  // Only the axes' fields ever change in the scratch configuration: writing the values that
  // differ from the previous cell's makes it the base with this cell's values, without copying
  // the base per cell.
  run.parse.errors.clear();
  for (std::size_t a = 0; a < run.grid.axes.size(); ++a) {
    const std::size_t value = run.coordinates[a];
    if (!run.shared_fields && run.written[a] == value) continue;
    const SweepAxis& axis = run.grid.axes[a];
    const bool parsed =
        parse_field_text(*axis.field, axis.values[value], config, run.parse, axis.name);
    run.written[a] = parsed ? value : std::string::npos;
    // The GPU count changes with the parallel layout only.
    if (axis.field->path.starts_with("parallel.")) run.world_size = -1;
  }
  if (run.world_size < 0) run.world_size = world_size(config.parallel);
  cell.is_base = true;
  for (const SweepAxis& axis : run.grid.axes) {
    cell.is_base = cell.is_base && field_equals(*axis.field, config, run.grid.base);
  }
  cell.world_size = run.world_size;
  if (!run.parse.ok()) {
    cell.error = run.parse.errors.front();
    return;
  }
  SweepModel& model = run.model_swept              ? model_for(run, config)
                      : run.fixed_model != nullptr ? *run.fixed_model
                                                   : *(run.fixed_model = &model_for(run, config));
  if (!model.model) {
    cell.error = model.error;
    return;
  }
  Report& report = run.report;
  estimate_into(config, *model.model, model.cache, report, EstimateDetail::peaks);
  if (!report.diagnostics.ok() || report.binding_stage < 0) {
    cell.error = report.diagnostics.ok() ? FieldMessage{"parallel", "the estimate has no stages"}
                                         : report.diagnostics.errors.front();
    return;
  }
  cell.valid = true;
  cell.binding_stage = report.binding_stage;
  cell.device_bytes = report.device.bytes;
  if (run.device_swept || !run.fixed_device) {
    run.fixed_device = device_index(run, report.device);
  }
  cell.device = *run.fixed_device;
  cell.first_stage_peak = run.stage_peaks.size();
  cell.stage_count = report.stages.size();
  cell.min_headroom_bytes = report.device.bytes;
  for (const StageReport& stage : report.stages) {
    run.stage_peaks.push_back(stage.peak_bytes);
    cell.max_peak_bytes = std::max(cell.max_peak_bytes, stage.peak_bytes);
    cell.min_headroom_bytes = std::min(cell.min_headroom_bytes, stage.headroom_bytes);
  }
  cell.fit = report.device.bytes <= 0       ? SweepFit::no_device
             : cell.min_headroom_bytes >= 0 ? SweepFit::fits
                                            : SweepFit::does_not_fit;
  run.largest_peak_bytes = std::max(run.largest_peak_bytes, cell.max_peak_bytes);
}

}  // namespace

bool sweepable(const ConfigField& field) {
  switch (field.kind) {
    case FieldKind::integer:
    case FieldKind::boolean:
    case FieldKind::number:
    case FieldKind::choice:
      return true;
    case FieldKind::text:
      return field.names != nullptr;
    case FieldKind::integer_list:
    case FieldKind::name_set:
    case FieldKind::stack:
      return false;
  }
  return false;
}

std::vector<const ConfigField*> sweepable_fields() {
  std::vector<const ConfigField*> fields;
  for (const ConfigField& field : config_fields()) {
    if (sweepable(field)) fields.push_back(&field);
  }
  return fields;
}

std::optional<SweepAxis> parse_sweep_axis(const ConfigField& field, std::string_view values_text,
                                          const Config& base, std::size_t max_values,
                                          std::string_view name, Diagnostics& diagnostics) {
  if (!sweepable(field)) {
    diagnostics.error(std::string(name), "cannot be swept (" +
                                             std::string(why_not_sweepable(field)) +
                                             "): expected one of: " + sweepable_key_list());
    return std::nullopt;
  }
  SweepAxis axis{.field = &field, .name = std::string(name), .values = {}};
  Config scratch = base;
  for (std::string_view rest = values_text; !rest.empty();) {
    const std::size_t comma = rest.find(',');
    const std::string_view value = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (value.empty()) continue;
    if (axis.values.size() == max_values) {
      diagnostics.error(std::string(name), "at most " + std::to_string(max_values) + " values");
      return std::nullopt;
    }
    if (!parse_field_text(field, value, scratch, diagnostics, name)) return std::nullopt;
    axis.values.emplace_back(value);
  }
  if (axis.values.empty()) {
    diagnostics.error(std::string(name),
                      "give at least one value: expected a comma-separated "
                      "list, each " +
                          allowed_values(field));
    return std::nullopt;
  }
  return axis;
}

std::optional<SweepAxis> parse_sweep_axis(std::string_view key, std::string_view values_text,
                                          const Config& base, std::size_t max_values,
                                          std::string_view name, Diagnostics& diagnostics) {
  const ConfigField* field = find_field_by_key(key);
  if (field == nullptr) {
    diagnostics.error(std::string(name), "'" + std::string(key.substr(0, 32)) +
                                             "' is not a configuration field: expected one of: " +
                                             sweepable_key_list());
    return std::nullopt;
  }
  return parse_sweep_axis(*field, values_text, base, max_values, name, diagnostics);
}

std::string suggested_sweep_values(const ConfigField& field, const Config& config) {
  if (!sweepable(field)) return {};
  std::vector<std::string> values;
  switch (field.kind) {
    case FieldKind::choice:
      for (std::string_view name : field.choices) values.emplace_back(name);
      return join_values(values);
    case FieldKind::text:
      for (std::string_view name : field.names()) values.emplace_back(name);
      return join_values(values);
    case FieldKind::boolean:
      return "0, 1";
    default:
      break;
  }
  Config scratch = config;
  // Each candidate in the field's own text form (a number's shortest fixed point).
  const auto add = [&](double candidate) {
    if (candidate < static_cast<double>(std::max<std::int64_t>(1, field.min)) ||
        candidate > static_cast<double>(field.max)) {
      return;
    }
    if (field.kind == FieldKind::integer) {
      *field.integer(scratch) = static_cast<std::int64_t>(candidate);
    } else {
      *field.number(scratch) = candidate;
    }
    std::string text = format_field_text(field, scratch);
    if (std::find(values.begin(), values.end(), text) == values.end()) {
      values.push_back(std::move(text));
    }
  };
  if (field.key == "mbs") {
    // Only sizes that divide the global batch per data-parallel rank can be valid.
    const std::int64_t per_rank = config.training.global_batch /
                                  std::max<std::int64_t>(1, data_parallel_size(config.parallel));
    for (std::int64_t v = 1; v <= per_rank && v <= 64; v *= 2) {
      if (per_rank % v == 0) add(static_cast<double>(v));
    }
    if (!values.empty()) return join_values(values);
  }
  const double current = field.kind == FieldKind::integer
                             ? static_cast<double>(*field.integer(scratch))
                             : *field.number(scratch);
  if (current < 1.0) {
    // 0 or -1 mean "derive it" or "not set": the current value, then powers of two.
    if (field.kind == FieldKind::integer && current >= static_cast<double>(field.min)) {
      values.push_back(format_field_text(field, config));
    }
    for (const double v : {1.0, 2.0, 4.0, 8.0}) add(v);
    return join_values(values);
  }
  if (field.kind == FieldKind::integer) {
    // Integer quarters and halves (as integer division gives them).
    const auto whole = static_cast<std::int64_t>(current);
    for (const std::int64_t v : {whole / 4, whole / 2, whole, whole * 2, whole * 4}) {
      add(static_cast<double>(v));
    }
  } else {
    for (const double v : {current / 4, current / 2, current, current * 2, current * 4}) add(v);
  }
  return join_values(values);
}

std::int64_t sweep_cell_count(std::span<const SweepAxis> axes) {
  std::int64_t count = 1;
  for (const SweepAxis& axis : axes) {
    if (__builtin_mul_overflow(count, static_cast<std::int64_t>(axis.values.size()), &count)) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return count;
}

std::size_t sweep_value_index(const SweepGrid& grid, std::size_t cell, std::size_t axis) {
  std::size_t stride = 1;
  for (std::size_t a = grid.axes.size(); a-- > axis + 1;) stride *= grid.axes[a].values.size();
  return (cell / stride) % grid.axes[axis].values.size();
}

bool apply_sweep_values(const SweepGrid& grid, std::size_t cell, Config& config) {
  Config edited = config;
  Diagnostics diagnostics;
  for (std::size_t a = 0; a < grid.axes.size(); ++a) {
    const SweepAxis& axis = grid.axes[a];
    if (axis.field == nullptr || axis.values.empty()) return false;
    parse_field_text(*axis.field, axis.values[sweep_value_index(grid, cell, a)], edited,
                     diagnostics, axis.name);
  }
  if (!diagnostics.ok()) return false;
  config = std::move(edited);
  return true;
}

SweepRun start_sweep(SweepGrid grid) {
  SweepRun run;
  restart_sweep(run, std::move(grid));
  return run;
}

void restart_sweep(SweepRun& run, SweepGrid grid) {
  run.grid = std::move(grid);
  run.error = {};
  run.cells.clear();
  run.stage_peaks.clear();
  run.devices.clear();
  run.largest_peak_bytes = 0;
  run.evaluated = 0;
  run.order.clear();
  run.strides.clear();
  run.coordinates.clear();
  run.written.clear();
  run.shared_fields = false;
  run.world_size = -1;
  run.model_swept = false;
  run.device_swept = false;
  run.fixed_model = nullptr;
  run.fixed_device.reset();
  if (run.models.size() > max_kept_models) run.models.clear();
  const std::vector<SweepAxis>& axes = run.grid.axes;
  for (const SweepAxis& axis : axes) {
    if (axis.field == nullptr || !sweepable(*axis.field) || axis.values.empty()) {
      run.error = {axis.name, axis.field == nullptr ? "no field"
                              : axis.values.empty() ? "no values"
                                                    : "cannot be swept"};
      return;
    }
  }
  const std::int64_t count = sweep_cell_count(axes);
  if (count > static_cast<std::int64_t>(max_sweep_cells)) {
    run.error = {"sweep", "the grid has more than " + std::to_string(max_sweep_cells) + " cells"};
    return;
  }
  run.cells.resize(static_cast<std::size_t>(count));
  run.strides.assign(axes.size(), 1);
  for (std::size_t a = axes.size(); a-- > 1;) {
    run.strides[a - 1] = run.strides[a] * axes[a].values.size();
  }
  run.order.resize(axes.size());
  for (std::size_t a = 0; a < axes.size(); ++a) run.order[a] = a;
  std::stable_sort(run.order.begin(), run.order.end(), [&](std::size_t a, std::size_t b) {
    return discarded_cache(*axes[a].field) < discarded_cache(*axes[b].field);
  });
  run.coordinates.assign(axes.size(), 0);
  run.written.assign(axes.size(), std::string::npos);
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const std::string_view path = axes[a].field->path;
    run.model_swept = run.model_swept || path == "model" || path == "custom_model";
    run.device_swept = run.device_swept || path.starts_with("device.");
    for (std::size_t b = a + 1; b < axes.size(); ++b) {
      run.shared_fields = run.shared_fields || axes[a].field == axes[b].field;
    }
  }
  run.cell_config = run.grid.base;
}

std::size_t evaluate_sweep(SweepRun& run, std::size_t max_cells) {
  std::size_t done = 0;
  while (done < max_cells && run.evaluated < run.cells.size()) {
    std::size_t index = 0;
    for (std::size_t a = 0; a < run.coordinates.size(); ++a) {
      index += run.coordinates[a] * run.strides[a];
    }
    evaluate_cell(run, index);
    ++run.evaluated;
    ++done;
    // The last axis of the evaluation order turns fastest.
    for (std::size_t i = run.order.size(); i-- > 0;) {
      const std::size_t axis = run.order[i];
      if (++run.coordinates[axis] < run.grid.axes[axis].values.size()) break;
      run.coordinates[axis] = 0;
    }
  }
  return done;
}

std::size_t sweep_evaluation_cell(const SweepRun& run, std::size_t k) {
  return cell_of(run, k);
}

std::span<const std::int64_t> sweep_stage_peaks(const SweepRun& run, const SweepCell& cell) {
  if (!cell.valid) return {};
  return std::span<const std::int64_t>(run.stage_peaks)
      .subspan(cell.first_stage_peak, cell.stage_count);
}

SweepRun compute_sweep(SweepGrid grid) {
  SweepRun run = start_sweep(std::move(grid));
  evaluate_sweep(run, run.cells.size());
  return run;
}

namespace {

// Which cells of a grid are valid configurations, each checked at most once (validate(), the
// model resolved once per distinct model).
struct ValidityCheck {
  const SweepGrid& grid;
  std::vector<std::size_t> strides;
  std::vector<std::int8_t> known;  // per cell: -1 not checked, 0 invalid, 1 valid
  std::vector<std::pair<std::string, std::optional<Model>>> models;  // by Config::model + custom
  std::vector<FieldMessage> model_errors;
  Config scratch;

  // Whether the cell is valid; `error` is set when it is checked here and invalid (a cell is
  // checked once: ask `check` for the error of one already known).
  bool valid(const std::vector<std::size_t>& coordinates, FieldMessage& error) {
    std::size_t cell = 0;
    for (std::size_t a = 0; a < coordinates.size(); ++a) cell += coordinates[a] * strides[a];
    if (known[cell] < 0) known[cell] = check(coordinates, error) ? 1 : 0;
    return known[cell] == 1;
  }

  bool check(const std::vector<std::size_t>& coordinates, FieldMessage& error) {
    scratch = grid.base;
    Diagnostics parse;
    for (std::size_t a = 0; a < coordinates.size(); ++a) {
      const SweepAxis& axis = grid.axes[a];
      parse_field_text(*axis.field, axis.values[coordinates[a]], scratch, parse, axis.name);
    }
    if (!parse.ok()) {
      error = parse.errors.front();
      return false;
    }
    const std::string key = scratch.model + '\n' + scratch.custom_model;
    std::size_t m = 0;
    while (m < models.size() && models[m].first != key) ++m;
    if (m == models.size()) {
      Diagnostics resolved;
      models.emplace_back(key, resolve_model(scratch, resolved));
      model_errors.push_back(!resolved.ok() ? resolved.errors.front()
                             : !models[m].second
                                 ? FieldMessage{"model", "the model did not resolve"}
                                 : FieldMessage{});
    }
    if (!models[m].second) {
      error = model_errors[m];
      return false;
    }
    const Diagnostics diagnostics = validate(scratch, *models[m].second);
    if (diagnostics.ok()) return true;
    error = diagnostics.errors.front();
    return false;
  }
};

}  // namespace

FilteredSweep filter_sweep_values(const SweepGrid& grid) {
  FilteredSweep out{.grid = grid, .dropped = {}, .checked = false};
  const std::vector<SweepAxis>& axes = grid.axes;
  for (const SweepAxis& axis : axes) {
    if (axis.field == nullptr || axis.values.empty()) return out;
  }
  const std::int64_t count = sweep_cell_count(axes);
  if (axes.empty() || count > static_cast<std::int64_t>(max_sweep_cells)) return out;
  out.checked = true;
  ValidityCheck check{.grid = grid,
                      .strides = std::vector<std::size_t>(axes.size(), 1),
                      .known = std::vector<std::int8_t>(static_cast<std::size_t>(count), -1),
                      .models = {},
                      .model_errors = {},
                      .scratch = {}};
  for (std::size_t a = axes.size(); a-- > 1;) {
    check.strides[a - 1] = check.strides[a] * axes[a].values.size();
  }
  // Each axis's values are tried from the base configuration's own (when the axis holds it):
  // a kept value is then found valid at its first cell, and a dropped value's reason is the one
  // the user would meet by setting it alone.
  std::vector<std::size_t> first(axes.size(), 0);
  {
    Diagnostics ignored;
    Config scratch = grid.base;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      for (std::size_t v = 0; v < axes[a].values.size(); ++v) {
        if (parse_field_text(*axes[a].field, axes[a].values[v], scratch, ignored, axes[a].name) &&
            field_equals(*axes[a].field, scratch, grid.base)) {
          first[a] = v;
          break;
        }
      }
      scratch = grid.base;
    }
  }
  std::vector<std::vector<bool>> keep(axes.size());
  for (std::size_t a = 0; a < axes.size(); ++a) {
    keep[a].assign(axes[a].values.size(), false);
  }
  std::vector<std::size_t> coordinates(axes.size());
  for (std::size_t a = 0; a < axes.size(); ++a) {
    for (std::size_t v = 0; v < axes[a].values.size(); ++v) {
      if (keep[a][v]) continue;  // a valid cell found for another value holds it
      // Every combination of the other axes, as an odometer of offsets from their first values.
      std::vector<std::size_t> offset(axes.size(), 0);
      FieldMessage reason;
      bool tried = false;
      for (;;) {
        for (std::size_t b = 0; b < axes.size(); ++b) {
          coordinates[b] = b == a ? v : (first[b] + offset[b]) % axes[b].values.size();
        }
        FieldMessage error;
        if (check.valid(coordinates, error)) {
          // Every value of this cell can be valid.
          for (std::size_t b = 0; b < axes.size(); ++b) keep[b][coordinates[b]] = true;
          break;
        }
        if (!tried) {
          // The reason is the first cell's (checked again when another value's search met it).
          if (error.message.empty()) check.check(coordinates, error);
          reason = std::move(error);
          tried = true;
        }
        std::size_t b = axes.size();
        while (b-- > 0) {
          if (b == a) continue;
          if (++offset[b] < axes[b].values.size()) break;
          offset[b] = 0;
        }
        if (b == static_cast<std::size_t>(-1)) break;  // every combination tried
      }
      if (!keep[a][v]) out.dropped.push_back({a, axes[a].values[v], std::move(reason)});
    }
  }
  for (std::size_t a = 0; a < axes.size(); ++a) {
    std::vector<std::string>& values = out.grid.axes[a].values;
    values.clear();
    for (std::size_t v = 0; v < axes[a].values.size(); ++v) {
      if (keep[a][v]) values.push_back(axes[a].values[v]);
    }
  }
  return out;
}

std::size_t dropped_value_count(const FilteredSweep& filtered, std::size_t axis) {
  return static_cast<std::size_t>(
      std::count_if(filtered.dropped.begin(), filtered.dropped.end(),
                    [axis](const DroppedSweepValue& d) { return d.axis == axis; }));
}

std::string dropped_values_list(const FilteredSweep& filtered, std::size_t axis) {
  std::vector<const DroppedSweepValue*> dropped;
  for (const DroppedSweepValue& d : filtered.dropped) {
    if (d.axis == axis) dropped.push_back(&d);
  }
  // One group per field the reasons name, in the order first met; each group's values, then the
  // first value's reason (the others differ only in their numbers, or name the same rule).
  std::string text;
  std::vector<bool> done(dropped.size(), false);
  for (std::size_t i = 0; i < dropped.size(); ++i) {
    if (done[i]) continue;
    std::string values;
    for (std::size_t j = i; j < dropped.size(); ++j) {
      if (done[j] || dropped[j]->reason.field != dropped[i]->reason.field) continue;
      done[j] = true;
      values += (values.empty() ? "" : ", ") + dropped[j]->value;
    }
    text += (text.empty() ? "" : "; ") + values + " (" + dropped[i]->reason.field + ": " +
            dropped[i]->reason.message + ")";
  }
  return text;
}

std::string dropped_values_text(const FilteredSweep& filtered, std::size_t axis,
                                std::string_view name) {
  const std::size_t dropped = dropped_value_count(filtered, axis);
  if (dropped == 0 || axis >= filtered.grid.axes.size()) return {};
  const std::size_t given = filtered.grid.axes[axis].values.size() + dropped;
  return std::string(name) + ": dropped " + std::to_string(dropped) + " of " +
         std::to_string(given) + (given == 1 ? " value" : " values") +
         " that cannot be valid with this configuration: " + dropped_values_list(filtered, axis);
}

}  // namespace stagemem
