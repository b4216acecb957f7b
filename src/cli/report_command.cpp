#include "report_command.h"
#include "config/url_fragment.h"
#include "render/cross_check_text.h"
#include "render/report_json.h"
#include "render/term_text.h"

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "base/units.h"
#include "config/config.h"
#include "config/devices.h"
#include "config_sources.h"
#include "estimate/cross_check.h"
#include "estimate/estimate.h"
#include "memory/timeline.h"
#include "render/report_markdown.h"
#include "render/vocabulary.h"
#include "report/report.h"

namespace {

using stagemem::csv_field;
using stagemem::Diagnostics;
using stagemem::group_digits;

using stagemem_cli::exit_bad_input;
using stagemem_cli::print_diagnostics;

constexpr std::array<stagemem_cli::CommandOption, 4> report_options = {{
    {"--json", "",
     "JSON: stages[] {index, layers, terms[], peak_bytes, peak_moment}, binding_stage, "
     "device_bytes, cross_checks[] (the same as --format json)"},
    {"--format", "F",
     "text | markdown | csv | json (default text); markdown: summary, per-stage table and the "
     "link fragment, as the app's Copy as Markdown"},
    {"--terms", "", "markdown: also every stage's full term table"},
    {"--timeline", "",
     "the step timeline instead: per stage every forward/backward pass and the optimizer step "
     "with live bytes by family, and the peak moment (text, csv or json)"},
}};

}  // namespace

std::string layers_text(const stagemem::StageReport& stage) {
  std::string out;
  for (const auto& c : stage.chunks) {
    out += (out.empty() ? "" : ",") +
           (c.count > 0 ? std::to_string(c.first) + "-" + std::to_string(c.first + c.count - 1)
                        : std::string("-"));
  }
  return out;
}

namespace {

std::string ratio_text(const stagemem::CrossCheck& c) {
  if (!c.has_ratio) return "n/a (nothing derived is alive)";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "x%.3f", c.ratio);
  return buffer;
}

void print_text(const stagemem::Report& report, const stagemem::Config& config) {
  using stagemem::format_gib;
  std::printf("model %s: %s parameters\n", report.model.c_str(),
              group_digits(report.total_parameters).c_str());
  std::printf("optimizer %s, weights %s (routed experts %s), grads %s; DP %lld, expert DP %lld\n",
              std::string(stagemem::optimizer_kind_name(config.optimizer.kind)).c_str(),
              std::string(stagemem::weight_dtype_name(config.precision.dense_weights)).c_str(),
              std::string(stagemem::weight_dtype_name(config.precision.expert_weights)).c_str(),
              std::string(stagemem::grad_dtype_name(config.precision.grads)).c_str(),
              static_cast<long long>(report.data_parallel),
              static_cast<long long>(report.expert_data_parallel));
  const std::int64_t vpp = config.parallel.virtual_stages;
  const std::string schedule_note = report.schedule == stagemem::PipelineSchedule::dualpipev
                                        ? " (2 chunks per rank in a V)"
                                    : vpp > 1 ? " (interleaved, VPP " + std::to_string(vpp) + ")"
                                              : "";
  std::printf("pipeline PP %lld, schedule %s%s, %lld micro-batches per step\n",
              static_cast<long long>(config.parallel.pipeline_parallel),
              stagemem::pipeline_schedule_name(report.schedule), schedule_note.c_str(),
              static_cast<long long>(report.micro_batches));
  if (report.device.bytes > 0) {
    std::printf("device %s: %s B (%s); source: %s\n", report.device.name.c_str(),
                group_digits(report.device.bytes).c_str(), format_gib(report.device.bytes).c_str(),
                std::string(report.device.source).c_str());
  }
  std::printf("\n%-6s %-10s %-18s %-70s %s\n", "stage", "layers", "params/rank", "term",
              "bytes/rank");
  for (const auto& stage : report.stages) {
    const std::string layers = layers_text(stage);
    for (const auto& term : stage.terms) {
      std::printf(
          "%-6lld %-10s %-18s %-70s %s (%s B) [%s, %s, %s]\n", static_cast<long long>(stage.index),
          layers.c_str(), group_digits(stage.parameters_per_rank).c_str(),
          stagemem::term_name(term).c_str(), format_gib(term.bytes).c_str(),
          group_digits(term.bytes).c_str(), std::string(stagemem::family_name(term.family)).c_str(),
          std::string(stagemem::tag_name(term.tag)).c_str(),
          std::string(stagemem::allocation_point_name(term.allocated_at)).c_str());
      std::printf("%-36s = %s\n", "", stagemem::term_formula(term).c_str());
    }
    std::printf("%-6lld total: resident %s, measured gaps %s, peak %s",
                static_cast<long long>(stage.index), format_gib(stage.resident_bytes).c_str(),
                format_gib(stage.gap_bytes).c_str(), format_gib(stage.peak_bytes).c_str());
    if (report.device.bytes > 0) {
      std::printf(", headroom %s", format_gib(stage.headroom_bytes).c_str());
    }
    std::printf("\n\n");
  }
  if (report.binding_stage >= 0) {
    std::printf("binding stage: %lld\n", static_cast<long long>(report.binding_stage));
  }
  for (const auto& c : report.cross_checks) {
    const auto& m = c.measurement;
    const std::string figure = m.figure == stagemem::MemoryFigure::unspecified
                                   ? std::string()
                                   : std::string(stagemem::memory_figure_name(m.figure)) + " ";
    const std::string rank = m.rank >= 0 ? ", rank " + std::to_string(m.rank) : std::string();
    std::printf("\ncross-check %sat %s%s%s, stage %lld%s (source: %s)\n", figure.c_str(),
                std::string(stagemem::measurement_point_name(m.point)).c_str(),
                m.term.empty() ? "" : " ", m.term.c_str(), static_cast<long long>(m.stage),
                rank.c_str(), m.source.c_str());
    std::printf("  measured %s B (%s), derived %s B (%s), gap %s B (%s), ratio %s\n",
                group_digits(m.bytes).c_str(), format_gib(m.bytes).c_str(),
                group_digits(c.derived_bytes).c_str(), format_gib(c.derived_bytes).c_str(),
                group_digits(c.gap_bytes).c_str(), format_gib(c.gap_bytes).c_str(),
                ratio_text(c).c_str());
    if (const stagemem::StageReport* stage = stagemem::cross_check_stage(report, c)) {
      for (const std::string& e : stagemem::cross_check_explanations(c, *stage)) {
        std::printf("  - %s\n", e.c_str());
      }
    }
  }
}

std::string name_or_dash(const stagemem::StageReport& stage, std::int64_t i) {
  if (i < 0 || i >= static_cast<std::int64_t>(stage.terms.size())) return "-";
  return stagemem::term_name(stage.terms[static_cast<std::size_t>(i)]);
}

std::string_view phase_text(stagemem::StepPhase phase) {
  switch (phase) {
    case stagemem::StepPhase::forward:
      return "forward";
    case stagemem::StepPhase::backward:
      return "backward";
    case stagemem::StepPhase::optimizer_step:
      return "optimizer-step";
  }
  return "unknown";
}

void print_timeline_text(const stagemem::Report& report) {
  using stagemem::format_gib;
  std::printf("model %s: step timeline per stage, %lld micro-batches, schedule %s (GiB per rank)\n",
              report.model.c_str(), static_cast<long long>(report.micro_batches),
              stagemem::pipeline_schedule_name(report.schedule));
  for (const auto& stage : report.stages) {
    const stagemem::StageTimeline t = stagemem::stage_timeline(report, stage);
    std::printf("\nstage %lld: peak %s (%s B) at %s\n", static_cast<long long>(stage.index),
                format_gib(stage.peak_bytes).c_str(), group_digits(stage.peak_bytes).c_str(),
                stagemem::moment_name(stage, stagemem::peak_moment(stage)).c_str());
    std::printf("  %-5s %-15s %-5s %-5s %-11s %-11s %-11s %-11s %-11s %s\n", "event", "phase", "mb",
                "chunk", "resident", "activation", "transient", "gap", "live", "transient alive");
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      const stagemem::TimelineEvent& ev = t.events[e];
      const bool step = ev.phase == stagemem::StepPhase::optimizer_step;
      std::string transient = name_or_dash(stage, ev.transient);
      if (ev.enclosing >= 0) transient += " (inside " + name_or_dash(stage, ev.enclosing) + ")";
      std::printf(
          "%s %-5zu %-15s %-5s %-5s %-11s %-11s %-11s %-11s %-11s %s\n",
          static_cast<std::int64_t>(e) == t.peak_event ? "*" : " ", e,
          std::string(phase_text(ev.phase)).c_str(),
          step ? "-" : std::to_string(ev.micro_batch).c_str(),
          step ? "-" : std::to_string(ev.chunk).c_str(), format_gib(ev.live_by_family[0]).c_str(),
          format_gib(ev.live_by_family[1]).c_str(), format_gib(ev.live_by_family[2]).c_str(),
          format_gib(ev.live_by_family[3]).c_str(), format_gib(ev.live_bytes).c_str(),
          step && ev.live_by_family[2] > 0 ? "optimizer-step transients" : transient.c_str());
    }
  }
  std::printf("\n* the peak event (the first with the largest live bytes)\n");
}

void print_timeline_csv(const stagemem::Report& report) {
  std::printf(
      "stage,event,phase,micro_batch,chunk,resident_bytes,activation_bytes,transient_bytes,"
      "gap_bytes,live_bytes,transient,inside,peak\n");
  for (const auto& stage : report.stages) {
    const stagemem::StageTimeline t = stagemem::stage_timeline(report, stage);
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      const stagemem::TimelineEvent& ev = t.events[e];
      const bool step = ev.phase == stagemem::StepPhase::optimizer_step;
      std::printf("%lld,%zu,%s,%s,%s,%lld,%lld,%lld,%lld,%lld,%s,%s,%d\n",
                  static_cast<long long>(stage.index), e, std::string(phase_text(ev.phase)).c_str(),
                  step ? "" : std::to_string(ev.micro_batch).c_str(),
                  step ? "" : std::to_string(ev.chunk).c_str(),
                  static_cast<long long>(ev.live_by_family[0]),
                  static_cast<long long>(ev.live_by_family[1]),
                  static_cast<long long>(ev.live_by_family[2]),
                  static_cast<long long>(ev.live_by_family[3]),
                  static_cast<long long>(ev.live_bytes),
                  ev.transient < 0 ? "" : csv_field(name_or_dash(stage, ev.transient)).c_str(),
                  ev.enclosing < 0 ? "" : csv_field(name_or_dash(stage, ev.enclosing)).c_str(),
                  static_cast<std::int64_t>(e) == t.peak_event ? 1 : 0);
    }
  }
}

void print_csv(const stagemem::Report& report) {
  std::printf("stage,layers,term,family,tag,allocated_at,bytes,formula\n");
  for (const auto& stage : report.stages) {
    for (const auto& t : stage.terms) {
      const std::string family(stagemem::family_name(t.family));
      const std::string tag(stagemem::tag_name(t.tag));
      const std::string at(stagemem::allocation_point_name(t.allocated_at));
      std::printf("%lld,%s,%s,%s,%s,%s,%lld,%s\n", static_cast<long long>(stage.index),
                  csv_field(layers_text(stage)).c_str(), csv_field(stagemem::term_name(t)).c_str(),
                  csv_field(family).c_str(), csv_field(tag).c_str(), csv_field(at).c_str(),
                  static_cast<long long>(t.bytes), csv_field(stagemem::term_formula(t)).c_str());
    }
  }
}

}  // namespace

int run_report(const std::vector<std::string_view>& args) {
  stagemem_cli::CommandLine line =
      stagemem_cli::parse_command_line(args, {.options = report_options});
  if (line.help) {
    std::printf(
        "usage: stagemem report [options]\n\nPer-stage memory per rank, term by term.\n\n"
        "output:\n%s%s\nExit codes: 0 success, 2 bad input (the error names the field "
        "and the allowed values).\n",
        stagemem_cli::command_options_help(report_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    return 0;
  }
  const stagemem::Config& config = line.config;
  Diagnostics& d = line.diagnostics;
  const std::string format = line.option("--format").value_or("text");
  const bool json_output = line.option("--json").has_value() || format == "json";
  const bool timeline = line.option("--timeline").has_value();
  if (format != "text" && format != "markdown" && format != "csv" && format != "json") {
    d.error("--format", "'" + format.substr(0, 32) + "' is not one of: text, markdown, csv, json");
  } else if (timeline && format == "markdown") {
    d.error("--format", "--timeline prints text, csv or json, not markdown");
  }
  if (!d.ok()) {
    print_diagnostics(d);
    return exit_bad_input;
  }
  const stagemem::Report report = stagemem::estimate(config);
  if (!report.diagnostics.ok()) {
    print_diagnostics(d);
    print_diagnostics(report.diagnostics);
    return exit_bad_input;
  }
  if (timeline) {
    if (json_output) {
      std::fputs(stagemem::timeline_json(report, "#" + stagemem::encode_fragment(config)).c_str(),
                 stdout);
      return 0;
    }
    if (format == "csv") {
      print_timeline_csv(report);
    } else {
      print_timeline_text(report);
    }
    print_diagnostics(d);
    print_diagnostics(report.diagnostics);
    return 0;
  }
  if (json_output) {
    std::fputs(
        stagemem::report_json(report, config, "#" + stagemem::encode_fragment(config), d).c_str(),
        stdout);
    return 0;
  }
  d.warnings.insert(d.warnings.end(), report.diagnostics.warnings.begin(),
                    report.diagnostics.warnings.end());
  if (format == "markdown") {
    const stagemem::MarkdownOptions options{.link = "#" + stagemem::encode_fragment(config),
                                            .terms = line.option("--terms").has_value()};
    std::fputs(stagemem::report_markdown(report, config, options).c_str(), stdout);
  } else if (format == "csv") {
    print_csv(report);
  } else {
    print_text(report, config);
  }
  print_diagnostics(d);  // warnings only here
  return 0;
}

int run_probe_check(const std::vector<std::string_view>& args) {
  bool json_output = false;
  for (std::string_view a : args) {
    if (a == "--json") {
      json_output = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(
          "usage: stagemem probe-check [--json]\n\nThe users' optimizer-state "
          "measurements on a 99M-parameter probe (TP 1, PP 1, EP 1, world = DP) next to "
          "the derived bytes per parameter, with the gap.\n",
          stdout);
      return 0;
    } else {
      std::fprintf(stderr, "error: %s: unknown argument; see `stagemem probe-check --help`\n",
                   std::string(a).c_str());
      return exit_bad_input;
    }
  }
  const auto checks = stagemem::optimizer_state_probe_cross_checks();
  if (json_output) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& c : checks) {
      rows.push_back(
          {{"optimizer", std::string(stagemem::optimizer_kind_name(c.measurement.optimizer))},
           {"data_parallel", c.measurement.data_parallel},
           {"derived_bytes_per_parameter", c.derived_bytes_per_parameter},
           {"derived_formula", stagemem::probe_formula(c)},
           {"measured_bytes_per_parameter", c.measurement.measured_bytes_per_parameter},
           {"gap_bytes_per_parameter", c.gap_bytes_per_parameter},
           {"ratio", c.ratio},
           {"explanations", stagemem::probe_explanations(c)}});
    }
    std::printf("%s\n", rows.dump(2).c_str());
    return 0;
  }
  std::printf("%-18s %-5s %-80s %8s %9s %8s %7s\n", "optimizer", "DP", "derived formula (B/param)",
              "derived", "measured", "gap", "ratio");
  for (const auto& c : checks) {
    const std::string dp =
        c.measurement.data_parallel == 0 ? "any" : std::to_string(c.measurement.data_parallel);
    std::printf("%-18s %-5s %-80s %8.2f %9.2f %+8.2f %7.3f\n",
                std::string(stagemem::optimizer_kind_name(c.measurement.optimizer)).c_str(),
                dp.c_str(), stagemem::probe_formula(c).c_str(), c.derived_bytes_per_parameter,
                c.measurement.measured_bytes_per_parameter, c.gap_bytes_per_parameter, c.ratio);
  }
  std::printf("\nmeasured values never feed the model; the gaps are shown, not absorbed.\n");
  return 0;
}
