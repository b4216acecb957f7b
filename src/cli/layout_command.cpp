#include "layout_command.h"

#include <array>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "base/text_escaping.h"
#include "command_steps.h"
#include "config/url_fragment.h"
#include "plan/layout_advisor.h"
#include "plan/plan.h"
#include "render/table.h"
#include "render/vocabulary.h"

namespace {

using json = nlohmann::ordered_json;
using stagemem_cli::CommandLine;

constexpr std::array<stagemem_cli::CommandOption, 4> layout_options = {{
    {"--align-attn-res", "", "move whole AttnRes blocks only (boundaries at block multiples)"},
    {"--base", "URL", "prefix of the link (default: the fragment alone)"},
    {"--json", "", "JSON: even and advised per-stage peaks, layout, gain_bytes"},
    {"--format", "F", "text | json | markdown (default text)"},
}};

constexpr std::array<std::string_view, 3> layout_formats = {"text", "json", "markdown"};

constexpr const char* layout_help =
    "usage: stagemem layout [options]\n\n"
    "For the configuration's parallel layout, the uneven assignment of decoder layers (and\n"
    "of the MTP layers) to virtual stages that lowers the worst stage's peak, as Megatron's\n"
    "--pipeline-model-parallel-layout, with the gain over the even split. e.g.\n"
    "  stagemem layout --preset kimi-k3 --pp 16 --ep 28 --dp 28 --seq 8192 --gbs 896 \\\n"
    "    --recompute full --optimizer distributed-muon --device mi355x\n\noptions:\n";

// The advice applied: the configuration with the advised layout string, its link and its
// Megatron arguments.
struct Advised {
  stagemem::LayoutAdvice advice;
  std::string link;
  std::string megatron;
};

Advised advised_layout(const CommandLine& line, const stagemem::Model& model,
                       stagemem::LayoutAdvice advice) {
  stagemem::Config advised = line.config;
  advised.parallel.assignment = stagemem::StageAssignment::layout_string;
  advised.parallel.layout_string = advice.layout;
  return {std::move(advice),
          line.option("--base").value_or("") + "#" + stagemem::encode_fragment(advised),
          stagemem::megatron_arguments(advised, model)};
}

void print_layout_json(const stagemem::Model& model, const Advised& a) {
  const stagemem::LayoutAdvice& advice = a.advice;
  stagemem_cli::print_json({{"model", model.name},
                            {"device_bytes", advice.device_bytes},
                            {"even_layout", advice.even_layout},
                            {"even_stage_peak_bytes", advice.even_stage_peaks},
                            {"even_worst_peak_bytes", advice.even_worst_peak},
                            {"even_binding_stage", advice.even_binding_stage},
                            {"layout", advice.layout},
                            {"stage_peak_bytes", advice.stage_peaks},
                            {"worst_peak_bytes", advice.worst_peak},
                            {"binding_stage", advice.binding_stage},
                            {"gain_bytes", advice.gain_bytes},
                            {"attn_res_blocks_split", advice.attn_res_blocks_split},
                            {"moves", advice.moves},
                            {"estimates", advice.estimates},
                            {"link", a.link},
                            {"megatron_args", a.megatron}});
}

// Per stage: the even split's peak, the advised peak and the change (GiB).
stagemem::Table stage_peak_table(const stagemem::LayoutAdvice& advice) {
  constexpr auto number = stagemem::CellKind::number;
  stagemem::Table table{.columns = {{"stage", stagemem::Align::left, number},
                                    {"even GiB", stagemem::Align::left, number},
                                    {"advised GiB", stagemem::Align::left, number},
                                    {"change GiB", stagemem::Align::left, number}}};
  for (std::size_t s = 0; s < advice.stage_peaks.size(); ++s) {
    const std::int64_t even = s < advice.even_stage_peaks.size() ? advice.even_stage_peaks[s] : 0;
    table.rows.push_back({std::to_string(s), stagemem::gib_number(even),
                          stagemem::gib_number(advice.stage_peaks[s]),
                          stagemem::gib_number(advice.stage_peaks[s] - even)});
  }
  return table;
}

// Text, or Markdown (`md`: a bold title, the summary as a list, a Markdown table).
void print_layout_text(const stagemem::Model& model, const stagemem::ParallelLayout& parallel,
                       const Advised& a, bool md) {
  const stagemem::LayoutAdvice& advice = a.advice;
  const char* item = md ? "- " : "";
  // A custom model's name is the user's text: a cell's escaping keeps it inert in Markdown.
  const std::string name = md ? stagemem::markdown_cell(model.name) : model.name;
  std::printf("%slayout advice for %s (PP %lld x VPP %lld)%s\n\n", md ? "**" : "", name.c_str(),
              static_cast<long long>(parallel.pipeline_parallel),
              static_cast<long long>(parallel.virtual_stages), md ? "**" : "");
  std::printf("%seven split:  %s\n", item, advice.even_layout.c_str());
  std::printf("%sadvised:     %s\n", item, advice.layout.c_str());
  std::printf("%sworst stage peak: even %s (stage %lld) -> advised %s (stage %lld): gain %s\n",
              item, stagemem::format_gib(advice.even_worst_peak).c_str(),
              static_cast<long long>(advice.even_binding_stage),
              stagemem::format_gib(advice.worst_peak).c_str(),
              static_cast<long long>(advice.binding_stage),
              stagemem::bytes_text(advice.gain_bytes).c_str());
  if (advice.device_bytes > 0) {
    std::printf("%sdevice %s: headroom even %s, advised %s\n", item,
                stagemem::format_gib(advice.device_bytes).c_str(),
                stagemem::format_gib(advice.device_bytes - advice.even_worst_peak).c_str(),
                stagemem::format_gib(advice.device_bytes - advice.worst_peak).c_str());
  }
  std::printf("%sAttnRes blocks split by stage boundaries: %lld; %lld moves, %lld estimates\n\n",
              item, static_cast<long long>(advice.attn_res_blocks_split),
              static_cast<long long>(advice.moves), static_cast<long long>(advice.estimates));
  std::printf("%s\n",
              stagemem_cli::table_text(stage_peak_table(advice), md ? "markdown" : "text").c_str());
  std::printf("%slink: %s\n%smegatron: %s\n", item, a.link.c_str(), item, a.megatron.c_str());
}

}  // namespace

int run_layout(const std::vector<std::string_view>& args) {
  CommandLine line = stagemem_cli::parse_command_line(args, {.options = layout_options});
  if (line.help) {
    stagemem_cli::print_command_help(layout_help, layout_options);
    return stagemem_cli::exit_ok;
  }
  const std::string format =
      stagemem_cli::json_or_checked_format(line, layout_formats, line.diagnostics);
  stagemem_cli::require_model(line, "give a model: --preset NAME, --hf-config FILE, ...");
  const std::optional<stagemem::Model> model = stagemem_cli::resolved_model(line);
  if (!model) return stagemem_cli::refuse(line.diagnostics);

  stagemem::AdvisorOptions options;
  options.align_attn_res = line.option("--align-attn-res").has_value();
  stagemem::LayoutAdvice advice = stagemem::advise_layout(line.config, *model, options);
  if (!advice.diagnostics.ok()) return stagemem_cli::refuse(advice.diagnostics);
  const Advised advised = advised_layout(line, *model, std::move(advice));
  if (format == "json") {
    print_layout_json(*model, advised);
  } else {
    print_layout_text(*model, line.config.parallel, advised, format == "markdown");
  }
  return stagemem_cli::exit_ok;
}
