#include "render/report_markdown.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "base/text_escaping.h"
#include "base/units.h"
#include "parallel/layout.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {

namespace {

// One decimal: the verdict is read at a glance ("224.7 of 288.0 GiB").
std::string gib1(std::int64_t bytes) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.1f", static_cast<double>(bytes) / bytes_per_gib);
  return buffer;
}

std::string stage_layers(const StageReport& stage) {
  std::string out;
  for (const LayerRange& c : stage.chunks) {
    out += (out.empty() ? "" : ", ") +
           (c.count > 0 ? std::to_string(c.first) + "-" + std::to_string(c.first + c.count - 1)
                        : std::string("none"));
  }
  if (out.empty() && stage.layer_count > 0) {
    out = std::to_string(stage.first_layer) + "-" +
          std::to_string(stage.first_layer + stage.layer_count - 1);
  }
  return out.empty() ? "none" : out;
}

// The terms that make up the stage's peak (the same rule as the app's bars).
bool in_peak(const StageReport& stage, const Term& term) {
  switch (term.family) {
    case Family::resident:
      return true;
    case Family::gap:
      return term.bytes > 0;
    case Family::activation:
      return !stage.optimizer_phase_binds;
    case Family::transient:
      return term.counts_in_peak;
  }
  return false;
}

void row(std::string& out, const std::vector<std::string>& cells) {
  out += '|';
  for (const std::string& cell : cells) out += ' ' + markdown_cell(cell) + " |";
  out += '\n';
}

}  // namespace

std::string_view binding_phase_name(const StageReport& stage) {
  return stage.optimizer_phase_binds ? "optimizer step" : "forward/backward";
}

std::string verdict_text(const Report& report) {
  if (!report.diagnostics.ok() || report.binding_stage < 0 ||
      report.binding_stage >= static_cast<std::int64_t>(report.stages.size())) {
    return "";
  }
  const StageReport& binding = report.stages[static_cast<std::size_t>(report.binding_stage)];
  const std::string stage = "stage " + std::to_string(binding.index);
  if (report.device.bytes <= 0) {
    return "no device chosen: " + stage + " peaks at " + gib1(binding.peak_bytes) + " GiB";
  }
  if (binding.headroom_bytes < 0) {
    std::int64_t over = 0;
    for (const StageReport& s : report.stages) over += s.headroom_bytes < 0 ? 1 : 0;
    std::string text = stage + " is " + gib1(-binding.headroom_bytes) + " GiB over (peak " +
                       gib1(binding.peak_bytes) + " of " + gib1(report.device.bytes) + " GiB)";
    if (over > 1) text += "; " + std::to_string(over) + " stages do not fit";
    return text;
  }
  return "fits: " + stage + " binds at " + gib1(binding.peak_bytes) + " of " +
         gib1(report.device.bytes) + " GiB";
}

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

std::string largest_terms_text(const StageReport& stage, std::size_t count) {
  std::vector<const Term*> terms;
  for (const Term& t : stage.terms) {
    if (t.bytes > 0 && in_peak(stage, t)) terms.push_back(&t);
  }
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term* a, const Term* b) { return a->bytes > b->bytes; });
  std::string out;
  for (std::size_t i = 0; i < terms.size() && i < count; ++i) {
    out += (out.empty() ? "" : "; ") + term_name(*terms[i]) + " " + format_gib(terms[i]->bytes);
  }
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
          ? report.device.name + " (" + format_gib(report.device.bytes) + " per GPU)"
          : "none chosen";
  out += "**stagemem** per-rank device memory of each pipeline stage (GiB = 2^30 bytes)\n\n";
  out += "- Model: " + markdown_cell(report.model) + ", " + group_digits(report.total_parameters) +
         " parameters\n";
  out += "- Parallel layout: " + markdown_cell(layout_text(config)) + "\n";
  out += "- GPUs: " + std::to_string(world_size(config.parallel)) + "\n";
  out += "- Device: " + markdown_cell(device) + "\n";
  out += "- Training: sequence " + std::to_string(t.sequence_length) + ", micro-batch " +
         std::to_string(t.micro_batch) + ", global batch " + std::to_string(t.global_batch) + " (" +
         std::to_string(report.micro_batches) + " micro-batches per step), optimizer " +
         markdown_cell(std::string(optimizer_kind_name(config.optimizer.kind))) + "\n";
  out += "- Verdict: **" + markdown_cell(verdict_text(report)) + "**\n\n";

  const bool has_device = report.device.bytes > 0;
  row(out, {"stage", "layers", "peak", "headroom", "fits", "binding phase", "largest terms"});
  out += "| ---: | --- | ---: | ---: | --- | --- | --- |\n";
  for (const StageReport& s : report.stages) {
    row(out, {std::to_string(s.index) + (s.index == report.binding_stage ? " (binding)" : ""),
              stage_layers(s), format_gib(s.peak_bytes),
              has_device ? format_gib(s.headroom_bytes) : "no device",
              has_device ? (s.headroom_bytes >= 0 ? "yes" : "no") : "-",
              std::string(binding_phase_name(s)), largest_terms_text(s)});
  }
  if (!options.link.empty()) {
    out += '\n';
    if (options.link.starts_with("http://") || options.link.starts_with("https://")) {
      // Angle brackets: a fragment keeps '(' and ')' readable, which would end a plain target.
      std::string target;
      for (const char c : options.link) {
        if (c == '<' || c == '>' || c == '\n' || c == '\r' || c == ' ') continue;
        target += c;
      }
      out += "[Open this configuration in stagemem](<" + target + ">)\n";
    } else {
      std::string code = options.link;
      std::replace(code.begin(), code.end(), '`', '\'');
      std::replace(code.begin(), code.end(), '\n', ' ');
      out += "Configuration (stagemem link fragment): `" + code + "`\n";
    }
  }
  if (options.terms) {
    for (const StageReport& s : report.stages) {
      out +=
          "\n#### Stage " + std::to_string(s.index) + " terms (layers " + stage_layers(s) + ")\n\n";
      row(out, {"term", "GiB per rank", "bytes per rank", "family", "tag", "in peak", "formula"});
      out += "| --- | ---: | ---: | --- | --- | --- | --- |\n";
      for (const Term& term : s.terms) {
        row(out, {term_name(term), format_gib(term.bytes), group_digits(term.bytes),
                  std::string(family_name(term.family)), std::string(tag_name(term.tag)),
                  in_peak(s, term) ? "yes" : "no", term_formula(term)});
      }
      row(out, {"peak", format_gib(s.peak_bytes), group_digits(s.peak_bytes), "", "", "",
                "resident + measured gaps + the binding phase"});
    }
  }
  return out;
}

}  // namespace stagemem
