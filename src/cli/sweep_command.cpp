#include "sweep_command.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "config_sources.h"
#include "estimate/estimate.h"
#include "render/table.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

using stagemem::csv_field;
using stagemem_cli::exit_bad_input;

// Enough for any grid a person reads; each point is a full estimate (microseconds each).
constexpr std::size_t max_points = 10000;

constexpr std::array<stagemem_cli::CommandOption, 2> sweep_options = {{
    {"--json", "",
     "JSON: axes[], device, points[] {values, valid, stage_peak_bytes[], "
     "max_peak_bytes, binding_stage, min_headroom_bytes, fits, error}"},
    {"--format", "F", "text | csv | markdown (default text)"},
}};

struct Point {
  std::vector<std::string> values;  // one per axis
  bool valid = false;
  std::string error;  // first error when not valid
  std::vector<std::int64_t> stage_peaks;
  std::int64_t max_peak = 0;
  std::int64_t binding_stage = -1;
  std::int64_t min_headroom = 0;
  std::int64_t device_bytes = 0;  // 0: no device
};

std::string gib(std::int64_t bytes) {
  return stagemem::gib_number(bytes);
}

std::string fits_text(const Point& p) {
  if (!p.valid) return "invalid";
  if (p.device_bytes == 0) return "-";
  return p.min_headroom >= 0 ? "yes" : "no";
}

std::string axis_name(const stagemem_cli::SweepAxis& axis) {
  return axis.flag.substr(2);
}

void print_table(const std::vector<stagemem_cli::SweepAxis>& axes, const std::vector<Point>& points,
                 std::size_t stage_count, const std::string& format) {
  std::vector<std::string> header;
  for (const auto& axis : axes) header.push_back(axis_name(axis));
  const bool csv = format == "csv";
  for (std::size_t s = 0; s < stage_count; ++s) {
    header.push_back(csv ? "stage_" + std::to_string(s) + "_peak_bytes"
                         : "stage " + std::to_string(s) + " GiB");
  }
  for (const char* column : {"max_peak", "binding_stage", "min_headroom", "fits", "error"}) {
    std::string name = column;
    if (csv && (name == "max_peak" || name == "min_headroom")) name += "_bytes";
    if (!csv && (name == "max_peak" || name == "min_headroom")) name += " GiB";
    if (!csv) std::replace(name.begin(), name.end(), '_', ' ');
    header.push_back(name);
  }
  std::vector<std::vector<std::string>> rows;
  for (const Point& p : points) {
    std::vector<std::string> row = p.values;
    for (std::size_t s = 0; s < stage_count; ++s) {
      row.push_back(s < p.stage_peaks.size()
                        ? (csv ? std::to_string(p.stage_peaks[s]) : gib(p.stage_peaks[s]))
                        : "");
    }
    row.push_back(p.valid ? (csv ? std::to_string(p.max_peak) : gib(p.max_peak)) : "");
    row.push_back(p.valid ? std::to_string(p.binding_stage) : "");
    row.push_back(p.valid && p.device_bytes > 0
                      ? (csv ? std::to_string(p.min_headroom) : gib(p.min_headroom))
                      : "");
    row.push_back(fits_text(p));
    row.push_back(p.error);
    rows.push_back(std::move(row));
  }
  if (csv) {
    // Numbers stagemem computed (the stage peaks, max peak, binding stage, min headroom) are
    // written as numbers; every other column is text and goes through the text-cell escaper
    // (text_escaping.h), so a negative headroom stays a number and a user's text cannot start
    // a formula.
    const std::size_t first_number = axes.size();
    const std::size_t end_numbers = first_number + stage_count + 3;
    for (std::size_t c = 0; c < header.size(); ++c)
      std::printf("%s%s", c ? "," : "", csv_field(header[c]).c_str());
    std::printf("\n");
    for (const auto& row : rows) {
      for (std::size_t c = 0; c < row.size(); ++c) {
        const bool number = c >= first_number && c < end_numbers;
        std::printf("%s%s", c ? "," : "", number ? row[c].c_str() : csv_field(row[c]).c_str());
      }
      std::printf("\n");
    }
    return;
  }
  if (format == "markdown") {
    stagemem::Table table{.rows = rows};
    for (const auto& h : header) table.columns.push_back({h});
    std::fputs(stagemem::markdown_table(table).c_str(), stdout);
    return;
  }
  std::vector<std::size_t> widths(header.size());
  for (std::size_t c = 0; c < header.size(); ++c) {
    widths[c] = header[c].size();
    for (const auto& row : rows) widths[c] = std::max(widths[c], row[c].size());
  }
  const auto print_row = [&](const std::vector<std::string>& row) {
    std::string out;
    for (std::size_t c = 0; c < row.size(); ++c) {
      std::string cell = row[c];
      if (c + 1 < row.size()) cell.resize(widths[c], ' ');
      out += (c ? "  " : "") + cell;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  print_row(header);
  for (const auto& row : rows) print_row(row);
}

void print_json(const std::vector<stagemem_cli::SweepAxis>& axes, const std::vector<Point>& points,
                const stagemem::DeviceCapacity& device) {
  using json = nlohmann::ordered_json;
  json axis_list = json::array();
  for (const auto& axis : axes) {
    axis_list.push_back({{"key", std::string(axis.field->key)},
                         {"path", std::string(axis.field->path)},
                         {"values", axis.values}});
  }
  json point_list = json::array();
  for (const Point& p : points) {
    json values = json::object();
    for (std::size_t a = 0; a < axes.size(); ++a)
      values[std::string(axes[a].field->key)] = p.values[a];
    json item = {{"values", values}, {"valid", p.valid}};
    if (p.valid) {
      item["stage_peak_bytes"] = p.stage_peaks;
      item["max_peak_bytes"] = p.max_peak;
      item["binding_stage"] = p.binding_stage;
      if (p.device_bytes > 0) {
        item["min_headroom_bytes"] = p.min_headroom;
        item["fits"] = p.min_headroom >= 0;
      } else {
        item["fits"] = nullptr;
      }
    } else {
      item["error"] = p.error;
    }
    point_list.push_back(std::move(item));
  }
  const json out = {{"axes", axis_list},
                    {"device", {{"name", device.name}, {"bytes", device.bytes}}},
                    {"points", point_list}};
  std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
}

}  // namespace

int run_sweep(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = sweep_options, .allow_lists = true});
  if (line.help) {
    std::printf(
        "usage: stagemem sweep [options] (any field flag may take a comma-separated list)\n\n"
        "Per-stage peaks and fits over the grid of every combination, e.g.\n"
        "  stagemem sweep --preset kimi-k3 --production-layout --device h200 \\\n"
        "    --seq 4096,8192,16384 --mbs 1,2,4 --recompute none,full\n"
        "Fields whose values are lists themselves (stages, recompute-modules), custom and "
        "layout cannot be swept.\n\noutput:\n%s%s",
        stagemem_cli::command_options_help(sweep_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  stagemem::Diagnostics& d = line.diagnostics;
  const std::string format = line.option("--format").value_or("text");
  if (format != "text" && format != "csv" && format != "markdown") {
    d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, csv, markdown");
  }
  std::size_t point_count = 1;
  for (const auto& axis : line.axes) {
    point_count *= axis.values.size();
    if (point_count > max_points) {
      d.error("sweep", "the grid has more than " + std::to_string(max_points) +
                           " points; sweep fewer values");
      break;
    }
  }
  if (!d.ok()) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }

  // Models resolved once each (a sweep over `model` resolves each preset once).
  std::map<std::string, std::optional<stagemem::Model>> models;
  std::map<std::string, std::string> model_errors;
  std::vector<Point> points;
  std::size_t stage_count = 0;
  stagemem::DeviceCapacity device;
  std::vector<std::size_t> index(line.axes.size(), 0);
  for (std::size_t n = 0; n < point_count; ++n) {
    stagemem::Config config = line.config;
    Point point;
    for (std::size_t a = 0; a < line.axes.size(); ++a) {
      const std::string& value = line.axes[a].values[index[a]];
      point.values.push_back(value);
      stagemem::Diagnostics ignored;  // every value was checked while parsing
      stagemem::parse_field_text(*line.axes[a].field, value, config, ignored, line.axes[a].flag);
    }
    const std::string model_key = config.model + '\n' + config.custom_model;
    auto found = models.find(model_key);
    if (found == models.end()) {
      stagemem::Diagnostics resolved;
      found = models.emplace(model_key, stagemem::resolve_model(config, resolved)).first;
      if (!resolved.ok())
        model_errors[model_key] = resolved.errors[0].field + ": " + resolved.errors[0].message;
    }
    if (!found->second) {
      point.error = model_errors[model_key];
    } else {
      const stagemem::Report report = stagemem::estimate(config, *found->second);
      if (!report.diagnostics.ok()) {
        point.error =
            report.diagnostics.errors[0].field + ": " + report.diagnostics.errors[0].message;
      } else {
        point.valid = true;
        point.device_bytes = report.device.bytes;
        if (report.device.bytes > 0) device = report.device;
        point.binding_stage = report.binding_stage;
        point.min_headroom = report.device.bytes;
        for (const auto& s : report.stages) {
          point.stage_peaks.push_back(s.peak_bytes);
          point.max_peak = std::max(point.max_peak, s.peak_bytes);
          point.min_headroom = std::min(point.min_headroom, s.headroom_bytes);
        }
        stage_count = std::max(stage_count, report.stages.size());
      }
    }
    points.push_back(std::move(point));
    // The last axis varies fastest.
    for (std::size_t a = line.axes.size(); a-- > 0;) {
      if (++index[a] < line.axes[a].values.size()) break;
      index[a] = 0;
    }
  }
  if (line.option("--json")) {
    print_json(line.axes, points, device);
  } else {
    print_table(line.axes, points, stage_count, format);
  }
  stagemem_cli::print_diagnostics(d);  // warnings only here
  return 0;
}
