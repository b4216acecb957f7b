#include "render/report_markdown.h"

#include <algorithm>
#include <vector>

#include "base/text_escaping.h"
#include "parallel/layout.h"
#include "render/report_text.h"
#include "render/table.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {

namespace {

// The link line: a whole link as a Markdown link, a bare fragment as code.
std::string link_line(const std::string& link) {
  if (link.starts_with("http://") || link.starts_with("https://")) {
    // Angle brackets: a fragment keeps '(' and ')' readable, which would end a plain target.
    std::string target;
    for (const char c : link) {
      if (c == '<' || c == '>' || c == '\n' || c == '\r' || c == ' ') continue;
      target += c;
    }
    return "[Open this configuration in stagemem](<" + target + ">)\n";
  }
  std::string code = link;
  std::replace(code.begin(), code.end(), '`', '\'');
  std::replace(code.begin(), code.end(), '\n', ' ');
  return "Configuration (stagemem link fragment): `" + code + "`\n";
}

Table stage_table(const Report& report, AmountUnit unit) {
  Table table{.columns = {{"stage", Align::right},
                          {"layers"},
                          {"peak", Align::right},
                          {"headroom", Align::right},
                          {"fits"},
                          {"binding phase"},
                          {"largest terms"}}};
  const bool has_device = report.device.bytes > 0;
  for (const StageReport& s : report.stages) {
    table.rows.push_back(
        {std::to_string(s.index) + (s.index == report.binding_stage ? " (binding)" : ""),
         stage_layers_text(s), amount_text(s.peak_bytes, unit),
         has_device ? amount_text(s.headroom_bytes, unit) : "no device",
         std::string(fits_text(s, report)), std::string(binding_phase_name(s)),
         largest_terms_text(s, 3, unit)});
  }
  return table;
}

Table term_table(const StageReport& s, AmountUnit unit) {
  Table table{.columns = {{"term"},
                          {std::string(unit_name(unit)) + " per rank", Align::right},
                          {"bytes per rank", Align::right},
                          {"family"},
                          {"tag"},
                          {"in peak"},
                          {"formula"}}};
  for (const Term& term : s.terms) {
    table.rows.push_back({term_name(term), amount_text(term.bytes, unit), group_digits(term.bytes),
                          std::string(family_name(term.family)), std::string(tag_name(term.tag)),
                          std::string(in_peak_text(term)), term_formula(term)});
  }
  table.rows.push_back({"peak", amount_text(s.peak_bytes, unit), group_digits(s.peak_bytes), "", "",
                        "", "resident + measured gaps + the binding phase"});
  return table;
}

}  // namespace

std::string layout_text(const Config& config) {
  const ParallelLayout& p = config.parallel;
  const auto n = [](std::int64_t v) { return std::to_string(v); };
  std::string out = "TP " + n(p.tensor_parallel) + " x PP " + n(p.pipeline_parallel) + " x CP " +
                    n(p.context_parallel) + " x DP " + n(data_parallel_size(p)) + " = " +
                    n(world_size(p)) + " GPUs";
  if (p.schedule == PipelineSchedule::dualpipev) {
    out += "; schedule dualpipev (2 chunks per rank in a V)";
  } else if (p.virtual_stages > 1) {
    out += "; VPP " + n(p.virtual_stages);
  }
  out += "; EP " + n(p.expert_parallel) + ", ETP " + n(p.expert_tensor_parallel);
  out += p.sequence_parallel ? ", sequence parallel on" : ", sequence parallel off";
  return out;
}

std::string report_markdown(const Report& report, const Config& config,
                            const MarkdownOptions& options) {
  std::string out;
  if (!report.diagnostics.ok()) {
    out += "stagemem: the configuration has errors:\n\n";
    for (const auto& e : report.diagnostics.errors) {
      out += "- " + markdown_cell(e.field) + ": " + markdown_cell(e.message) + "\n";
    }
    return out;
  }
  const TrainingConfig& t = config.training;
  const std::string device =
      report.device.bytes > 0
          ? report.device.name + " (" + amount_text(report.device.bytes, options.unit) + " per GPU)"
          : "none chosen";
  out += "**stagemem** per-rank device memory of each pipeline stage (" +
         std::string(options.unit == AmountUnit::gb ? "GB = 10^9" : "GiB = 2^30") + " bytes)\n\n";
  out += "- Model: " + markdown_cell(report.model) + ", " + group_digits(report.total_parameters) +
         " parameters\n";
  out += "- Parallel layout: " + markdown_cell(layout_text(config)) + "\n";
  out += "- GPUs: " + std::to_string(world_size(config.parallel)) + "\n";
  out += "- Device: " + markdown_cell(device) + "\n";
  out += "- Training: sequence " + std::to_string(t.sequence_length) + ", micro-batch " +
         std::to_string(t.micro_batch) + ", global batch " + std::to_string(t.global_batch) + " (" +
         std::to_string(report.micro_batches) + " micro-batches per step), optimizer " +
         markdown_cell(std::string(optimizer_kind_name(config.optimizer.kind))) + "\n";
  out += "- Verdict: **" + markdown_cell(verdict_text(report, options.unit)) + "**\n\n";
  out += markdown_table(stage_table(report, options.unit));
  if (!options.link.empty()) out += '\n' + link_line(options.link);
  if (options.terms) {
    for (const StageReport& s : report.stages) {
      out += "\n#### Stage " + std::to_string(s.index) + " terms (layers " +
             markdown_cell(stage_layers_text(s)) + ")\n\n";
      out += markdown_table(term_table(s, options.unit));
    }
  }
  return out;
}

std::string check_markdown(const Report& report, AmountUnit unit) {
  std::string out = "**" + markdown_cell(report.model) + "** on **" +
                    markdown_cell(report.device.name) +
                    "**: " + bytes_text(report.device.bytes, unit) + " per rank\n\n";
  const std::string u(unit_name(unit));
  Table table{.columns = {{"stage", Align::right},
                          {"layers"},
                          {"peak " + u, Align::right, CellKind::number},
                          {"headroom " + u, Align::right, CellKind::number},
                          {"fits"}}};
  for (const StageReport& s : report.stages) {
    table.rows.push_back({std::to_string(s.index), stage_layers_text(s),
                          amount_number(s.peak_bytes, unit), amount_number(s.headroom_bytes, unit),
                          std::string(fits_text(s, report))});
  }
  out += markdown_table(table);
  for (const StageReport& s : report.stages) {
    if (s.headroom_bytes >= 0) continue;
    out += "\n**Stage " + std::to_string(s.index) + " does not fit**: peak " +
           bytes_text(s.peak_bytes, unit) + " exceeds " + markdown_cell(report.device.name) +
           " by " + bytes_text(-s.headroom_bytes, unit) + ".\nLargest terms:\n\n";
    for (const Term* t : largest_terms(s, check_largest_terms)) {
      out += "1. " + markdown_cell(term_name(*t)) + " (" + std::string(family_name(t->family)) +
             "): " + bytes_text(t->bytes, unit) + "\n";
    }
  }
  return out + "\n" + check_result_text(report, unit) + "\n";
}

}  // namespace stagemem
