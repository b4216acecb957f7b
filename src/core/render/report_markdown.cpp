#include "render/report_markdown.h"

#include <algorithm>
#include <array>
#include <string_view>
#include <vector>

#include "base/text_escaping.h"
#include "config/config_fields.h"
#include "parallel/layout.h"
#include "render/report_text.h"
#include "render/table.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {

namespace {

Table stage_table(const Report& report, AmountUnit unit) {
  Table table{.columns = {{"stage", Align::right},
                          {"layers"},
                          {"peak allocated", Align::right},
                          {"peak reserved", Align::right},
                          {"headroom", Align::right},
                          {"fits"},
                          {"binding phase"},
                          {"largest terms"}}};
  const bool has_device = report.device.bytes > 0;
  for (const StageReport& s : report.stages) {
    table.rows.push_back(
        {std::to_string(s.index) + (s.index == report.binding_stage ? " (binding)" : ""),
         stage_layers_text(s), amount_text(s.peak_bytes, unit),
         s.reserved_replayed ? amount_text(s.peak_reserved_bytes, unit) : "-",
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
  if (s.reserved_replayed) {
    table.rows.push_back(
        {"peak reserved", amount_text(s.peak_reserved_bytes, unit),
         group_digits(s.peak_reserved_bytes), "", "", "",
         "the caching allocator replayed over two steps (segments held: " +
             std::to_string(s.segments_at_reserved_peak.size()) + ")" +
             (s.alloc_retries > 0 || s.segments_released_for_room > 0 || s.out_of_memory
                  ? "; " + device_limit_text(s, unit)
                  : "")});
  }
  if (s.device_peak_bytes >= 0) {
    table.rows.push_back({"device", amount_text(s.device_peak_bytes, unit),
                          group_digits(s.device_peak_bytes), "", "", "",
                          "peak reserved + runtime context + communication buffers (measured)"});
  }
  return table;
}

// The keys written out in words by the lines above "Other settings" (settings_lines): the
// model, the layout, the device, the training line, recompute, precision and optimizer.
constexpr std::array<std::string_view, 25> keys_in_words = {
    "model",  "custom",       "tp",        "pp",      "vpp",
    "cp",     "ep",           "etp",       "dp",      "world",
    "sp",     "schedule",     "seq",       "mbs",     "gbs",
    "device", "device_bytes", "recompute", "weights", "expert_weights",
    "grads",  "fp8_recipe",   "optimizer", "master",  "moments"};

// Recompute as Megatron's flags say it: "full (uniform, 2 layers per checkpoint)",
// "selective (core_attn, moe_act)", "none".
std::string recompute_words(const RecomputeConfig& rc) {
  std::string out(enum_name(rc.policy));
  if (rc.policy == RecomputePolicy::full) {
    const std::string layers = std::to_string(rc.layers) + (rc.layers == 1 ? " layer" : " layers");
    // Megatron's --recompute-num-layers: per checkpointed chunk (uniform), or the first N
    // layers of each stage (block).
    out += rc.method == FullRecomputeMethod::uniform
               ? " (uniform, " + layers + " per checkpoint)"
               : " (block, the first " + layers + " of each stage)";
  } else if (rc.policy == RecomputePolicy::selective) {
    std::string modules;
    for (int i = 0; i < recompute_module_count; ++i) {
      if ((rc.modules & (std::uint32_t{1} << i)) == 0) continue;
      modules += (modules.empty() ? "" : ", ") +
                 std::string(enum_names<RecomputeModule>[static_cast<std::size_t>(i)]);
    }
    out += " (" + (modules.empty() ? std::string("no modules") : modules) + ")";
  }
  return out;
}

// The pipeline schedule a reader needs to redo the in-flight count: 1F1B, interleaved 1F1B with
// its virtual stages, or DualPipeV.
std::string schedule_words(const ParallelLayout& p) {
  if (p.schedule == PipelineSchedule::dualpipev) return "DualPipeV (2 chunks per rank in a V)";
  if (p.virtual_stages > 1) {
    return "interleaved 1F1B (VPP " + std::to_string(p.virtual_stages) + ")";
  }
  return "1F1B";
}

// Every setting that changes memory, in words, then every other field that differs from the
// defaults as its link key: with the link, a pasted table can be read back and reproduced.
std::string settings_lines(const Report& report, const Config& config) {
  const TrainingConfig& t = config.training;
  const Precision& pr = config.precision;
  const OptimizerConfig& o = config.optimizer;
  std::string out;
  out += "- Training: sequence " + std::to_string(t.sequence_length) + ", micro-batch " +
         std::to_string(t.micro_batch) + ", global batch " + std::to_string(t.global_batch) + " (" +
         std::to_string(report.micro_batches) + " micro-batches per step)\n";
  out += "- Schedule: " + markdown_cell(schedule_words(config.parallel)) + "\n";
  out += "- Recompute: " + markdown_cell(recompute_words(t.recompute)) + "\n";
  out += "- Precision: weights " + std::string(enum_name(pr.dense_weights)) + ", expert weights " +
         std::string(enum_name(pr.expert_weights)) + ", gradients " +
         std::string(enum_name(pr.grads)) + ", FP8 recipe " +
         std::string(enum_name(config.training.low_precision.recipe)) + "\n";
  out += "- Optimizer: " + markdown_cell(std::string(optimizer_kind_name(o.kind))) +
         " (master weights " + std::string(enum_name(o.master_weights)) + ", moments " +
         std::string(enum_name(o.moments)) + ")\n";
  const Config defaults;
  std::string others;
  for (const ConfigField& field : config_fields()) {
    if (!field_is_written(field, config, defaults)) continue;
    if (std::find(keys_in_words.begin(), keys_in_words.end(), field.key) != keys_in_words.end())
      continue;
    // Selective modules are in the recompute line when they apply.
    if (field.key == "recompute_modules" && t.recompute.policy == RecomputePolicy::selective)
      continue;
    // So are full recompute's method and layer count.
    if ((field.key == "recompute_method" || field.key == "recompute_layers") &&
        t.recompute.policy == RecomputePolicy::full)
      continue;
    others += (others.empty() ? "" : ", ") + std::string(field.key) + "=" +
              format_field_text(field, config);
  }
  out += "- Other settings (link keys, where they differ from the defaults): " +
         (others.empty() ? std::string("none") : markdown_cell(others)) + "\n";
  if (!config.measurements.empty() || !config.gaps.empty()) {
    out += "- Measured values: " + std::to_string(config.measurements.size()) + " readings and " +
           std::to_string(config.gaps.size()) +
           " measured gaps (in the link; never model inputs)\n";
  }
  return out;
}

}  // namespace

std::string markdown_link_line(const std::string& link, std::string_view link_text,
                               std::string_view fragment_label) {
  if (link.starts_with("http://") || link.starts_with("https://")) {
    // Angle brackets: a fragment keeps '(' and ')' readable, which would end a plain target.
    std::string target;
    for (const char c : link) {
      if (c == '<' || c == '>' || c == '\n' || c == '\r' || c == ' ') continue;
      target += c;
    }
    return "[" + std::string(link_text) + "](<" + target + ">)\n";
  }
  std::string code = link;
  std::replace(code.begin(), code.end(), '`', '\'');
  std::replace(code.begin(), code.end(), '\n', ' ');
  return std::string(fragment_label) + " (stagemem link fragment): `" + code + "`\n";
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
  out += settings_lines(report, config);
  out += "- Verdict: **" + markdown_cell(verdict_text(report, options.unit)) + "**\n\n";
  out += markdown_table(stage_table(report, options.unit));
  if (!options.link.empty()) out += '\n' + markdown_link_line(options.link);
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
                          {"allocated " + u, Align::right, CellKind::number},
                          {"reserved " + u, Align::right, CellKind::number},
                          {"device " + u, Align::right, CellKind::number},
                          {"headroom " + u, Align::right, CellKind::number},
                          {"fits"}}};
  for (const StageReport& s : report.stages) {
    table.rows.push_back(
        {std::to_string(s.index), stage_layers_text(s), amount_number(s.peak_bytes, unit),
         s.reserved_replayed ? amount_number(s.peak_reserved_bytes, unit) : "-",
         s.device_peak_bytes >= 0 ? amount_number(s.device_peak_bytes, unit) : "-",
         amount_number(s.headroom_bytes, unit), std::string(fits_text(s, report))});
  }
  out += markdown_table(table);
  if (!report.stages.empty())
    out += "\nHeadroom is measured against: " + fit_basis_text(report.stages.front()) + ".\n";
  for (const StageReport& s : report.stages) {
    if (s.headroom_bytes >= 0) continue;
    out += "\n**Stage " + std::to_string(s.index) +
           " does not fit**: " + (s.fit_basis == FitBasis::allocated ? "peak " : "peak reserved ") +
           bytes_text(s.fit_bytes, unit) + " exceeds " + markdown_cell(report.device.name) +
           " by " + bytes_text(-s.headroom_bytes, unit) + ".\nLargest terms:\n\n";
    for (const Term* t : largest_terms(s, check_largest_terms)) {
      out += "1. " + markdown_cell(term_name(*t)) + " (" + std::string(family_name(t->family)) +
             "): " + bytes_text(t->bytes, unit) + "\n";
    }
  }
  return out + "\n" + check_result_text(report, unit) + "\n";
}

}  // namespace stagemem
