#include "sweep_command.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "command_steps.h"
#include "plan/sweep.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

// Enough for any grid a person reads; each point is a full estimate (microseconds each).
constexpr std::int64_t max_points = 10000;

constexpr std::array<stagemem_cli::CommandOption, 4> sweep_options = {{
    {"--json", "",
     "JSON: axes[] {key, path, values, invalid_values[] {value, field, message}}, device, "
     "points[] {values, valid, stage_peak_bytes[], max_peak_bytes, binding_stage, "
     "min_headroom_bytes, fits, error}"},
    {"--format", "F", "text | csv | markdown | json (default text; json is --json)"},
    {"--valid-only", "",
     "leave out the values no point can make valid (as the app's Sweep tab does); without it "
     "every point is printed and those values are named on stderr"},
    stagemem_cli::units_option,
}};

std::string fits_text(const stagemem::SweepCell& cell) {
  switch (cell.fit) {
    case stagemem::SweepFit::invalid:
      return "invalid";
    case stagemem::SweepFit::no_device:
      return "-";
    case stagemem::SweepFit::fits:
      return "yes";
    case stagemem::SweepFit::does_not_fit:
      return "no";
  }
  return "";
}

std::string error_text(const stagemem::SweepCell& cell) {
  return cell.valid ? std::string() : cell.error.field + ": " + cell.error.message;
}

// The column title of an axis: its flag as typed, without the dashes ("--seq-length": seq-length).
std::string axis_name(const stagemem::SweepAxis& axis) {
  return axis.name.substr(2);
}

// The most stages any valid point has: the table's stage columns.
std::size_t stage_count(const stagemem::SweepRun& run) {
  std::size_t count = 0;
  for (const stagemem::SweepCell& cell : run.cells) count = std::max(count, cell.stage_count);
  return count;
}

// The column titles: each axis (as typed), each stage's peak, then the verdict columns; CSV
// spells amounts in bytes with '_', text and Markdown in GiB with spaces.
std::vector<std::string> sweep_header(const std::vector<stagemem::SweepAxis>& axes,
                                      std::size_t stages, bool csv, stagemem::AmountUnit unit) {
  const std::string u(stagemem::unit_name(unit));
  std::vector<std::string> header;
  for (const auto& axis : axes) header.push_back(axis_name(axis));
  for (std::size_t s = 0; s < stages; ++s) {
    header.push_back(csv ? "stage_" + std::to_string(s) + "_peak_bytes"
                         : "stage " + std::to_string(s) + " " + u);
  }
  for (const char* column : {"max_peak", "binding_stage", "min_headroom", "fits", "error"}) {
    std::string name = column;
    if (csv && (name == "max_peak" || name == "min_headroom")) name += "_bytes";
    if (!csv && (name == "max_peak" || name == "min_headroom")) name += " " + u;
    if (!csv) std::replace(name.begin(), name.end(), '_', ' ');
    header.push_back(name);
  }
  return header;
}

// Point `i`: its axis values, stage peaks, max peak, binding stage, min headroom, fit, error.
std::vector<std::string> sweep_row(const stagemem::SweepRun& run, std::size_t i, std::size_t stages,
                                   bool csv, stagemem::AmountUnit unit) {
  const stagemem::SweepCell& p = run.cells[i];
  const auto amount = [csv, unit](std::int64_t bytes) {
    return csv ? std::to_string(bytes) : stagemem::amount_number(bytes, unit);
  };
  const auto peaks = stagemem::sweep_stage_peaks(run, p);
  std::vector<std::string> row;
  for (std::size_t a = 0; a < run.grid.axes.size(); ++a) {
    row.push_back(run.grid.axes[a].values[stagemem::sweep_value_index(run.grid, i, a)]);
  }
  for (std::size_t s = 0; s < stages; ++s) {
    row.push_back(s < peaks.size() ? amount(peaks[s]) : "");
  }
  row.push_back(p.valid ? amount(p.max_peak_bytes) : "");
  row.push_back(p.valid ? std::to_string(p.binding_stage) : "");
  row.push_back(p.valid && p.device_bytes > 0 ? amount(p.min_headroom_bytes) : "");
  row.push_back(fits_text(p));
  row.push_back(error_text(p));
  return row;
}

void print_sweep_table(const stagemem::SweepRun& run, const std::string& format,
                       stagemem::AmountUnit unit) {
  const std::size_t axes = run.grid.axes.size();
  const std::size_t stages = stage_count(run);
  const bool csv = format == "csv";
  const std::vector<std::string> header = sweep_header(run.grid.axes, stages, csv, unit);
  stagemem::Table table;
  for (std::size_t i = 0; i < run.cells.size(); ++i)
    table.rows.push_back(sweep_row(run, i, stages, csv, unit));
  // Numbers stagemem computed (the stage peaks, max peak, binding stage, min headroom) are
  // number columns: in CSV a negative headroom stays a number, while every text cell goes through
  // the escaper so a user's text cannot start a formula (render/table.h).
  for (std::size_t c = 0; c < header.size(); ++c) {
    const bool number = c >= axes && c < axes + stages + 3;
    table.columns.push_back(
        {.header = header[c],
         .kind = csv && number ? stagemem::CellKind::number : stagemem::CellKind::text});
  }
  std::fputs(stagemem_cli::table_text(table, format).c_str(), stdout);
}

void print_sweep_json(const stagemem::SweepRun& run, const stagemem::FilteredSweep& filtered) {
  using json = nlohmann::ordered_json;
  const std::vector<stagemem::SweepAxis>& axes = run.grid.axes;
  json axis_list = json::array();
  for (std::size_t a = 0; a < axes.size(); ++a) {
    const stagemem::SweepAxis& axis = axes[a];
    // The values no point can make valid, and why (left out of `values` with --valid-only).
    json invalid = json::array();
    for (const stagemem::DroppedSweepValue& dropped : filtered.dropped) {
      if (dropped.axis != a) continue;
      invalid.push_back({{"value", dropped.value},
                         {"field", dropped.reason.field},
                         {"message", dropped.reason.message}});
    }
    axis_list.push_back({{"key", std::string(axis.field->key)},
                         {"path", std::string(axis.field->path)},
                         {"values", axis.values},
                         {"invalid_values", invalid}});
  }
  // The device of the last point that has one (a sweep over `device` has several).
  stagemem::DeviceCapacity device;
  json point_list = json::array();
  for (std::size_t i = 0; i < run.cells.size(); ++i) {
    const stagemem::SweepCell& p = run.cells[i];
    json values = json::object();
    for (std::size_t a = 0; a < axes.size(); ++a)
      values[std::string(axes[a].field->key)] =
          axes[a].values[stagemem::sweep_value_index(run.grid, i, a)];
    json item = {{"values", values}, {"valid", p.valid}};
    if (p.valid) {
      const auto peaks = stagemem::sweep_stage_peaks(run, p);
      item["stage_peak_bytes"] = std::vector<std::int64_t>(peaks.begin(), peaks.end());
      item["max_peak_bytes"] = p.max_peak_bytes;
      item["binding_stage"] = p.binding_stage;
      if (p.device_bytes > 0) {
        item["min_headroom_bytes"] = p.min_headroom_bytes;
        item["fits"] = p.min_headroom_bytes >= 0;
        device = run.devices[static_cast<std::size_t>(p.device)];
      } else {
        item["fits"] = nullptr;
      }
    } else {
      item["error"] = error_text(p);
    }
    point_list.push_back(std::move(item));
  }
  const json out = {{"axes", axis_list},
                    {"device", {{"name", device.name}, {"bytes", device.bytes}}},
                    {"points", point_list}};
  stagemem_cli::print_json(out);
}

constexpr std::array<std::string_view, 4> sweep_formats = {"text", "csv", "markdown", "json"};

constexpr const char* sweep_help =
    "usage: stagemem sweep [options] (any field flag may take a comma-separated list)\n\n"
    "Per-stage peaks and fits over the grid of every combination, e.g.\n"
    "  stagemem sweep --preset kimi-k3 --production-layout --device h200 \\\n"
    "    --seq 4096,8192,16384 --mbs 1,2,4 --recompute none,full\n"
    "Fields whose values are lists themselves (stages, recompute-modules), custom and "
    "layout cannot be swept.\n\noutput:\n";

}  // namespace

int run_sweep(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = sweep_options, .allow_lists = true});
  if (line.help) {
    stagemem_cli::print_command_help(sweep_help, sweep_options);
    return stagemem_cli::exit_ok;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = stagemem_cli::json_or_checked_format(line, sweep_formats, d);
  if (stagemem::sweep_cell_count(line.axes) > max_points) {
    d.error("sweep",
            "the grid has more than " + std::to_string(max_points) + " points; sweep fewer values");
  }
  if (!d.ok()) return stagemem_cli::refuse(d);

  const stagemem::AmountUnit unit = stagemem_cli::checked_units(line, d);
  const bool valid_only = line.option("--valid-only").has_value();
  if (!d.ok()) return stagemem_cli::refuse(d);

  // The values no point can make valid (plan/sweep.h: filter_sweep_values, as the app's Sweep tab
  // finds them): left out with --valid-only, else named in a note (every point is printed, as a
  // CI job parsing the grid expects).
  stagemem::FilteredSweep filtered = stagemem::filter_sweep_values({line.config, line.axes});
  for (std::size_t a = 0; a < line.axes.size(); ++a) {
    const std::size_t dropped = stagemem::dropped_value_count(filtered, a);
    if (dropped == 0) continue;
    const std::string& name = line.axes[a].name;
    const std::string list = stagemem::dropped_values_list(filtered, a);
    const std::string count =
        std::to_string(dropped) + " of " + std::to_string(line.axes[a].values.size()) + " values";
    if (valid_only && filtered.grid.axes[a].values.empty()) {
      d.error(name, "no value can be valid with this configuration: " + list);
    } else if (valid_only) {
      d.warn(name, "left out " + count + " that cannot be valid with this configuration: " + list);
    } else {
      d.warn(name, count +
                       " cannot be valid with this configuration (--valid-only leaves them "
                       "out): " +
                       list);
    }
  }
  if (!d.ok()) return stagemem_cli::refuse(d);
  // The grid, every point at once (plan/sweep.h: one model and EstimateCache per distinct model,
  // per-stage peaks only).
  const stagemem::SweepRun run = stagemem::compute_sweep(
      valid_only ? std::move(filtered.grid) : stagemem::SweepGrid{line.config, line.axes});
  if (format == "json") {
    print_sweep_json(run, filtered);
  } else {
    print_sweep_table(run, format, unit);
  }
  return stagemem_cli::finish(stagemem_cli::exit_ok, d);  // warnings only here
}
