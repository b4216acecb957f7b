// Tests of report_markdown.h: the wiki text shared by the CLI and the app's Copy as Markdown.
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/report_markdown.h"

using namespace stagemem;

namespace {

std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Config llama_on_h100() {
  Config c;
  c.parallel.pipeline_parallel = 4;
  c.parallel.data_parallel = 2;
  c.device.preset = "h100-80gb";
  return c;
}

}  // namespace

TEST_CASE("Markdown: summary, one row per stage with the three largest terms, the link") {
  const Config c = llama_on_h100();
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string md = report_markdown(r, c, {.link = "https://wiki.example/tools/#v=1&pp=4"});
  CHECK(md.find("- Model: llama-3.1-8b, 8,030,261,248 parameters\n") != std::string::npos);
  CHECK(md.find("- Parallel layout: TP 1 x PP 4 x CP 1 x DP 2 = 8 GPUs; EP 1, ETP 1, sequence "
                "parallel off\n") != std::string::npos);
  CHECK(md.find("- GPUs: 8\n") != std::string::npos);
  CHECK(md.find("- Device: h100-80gb (79.19 GiB per GPU)\n") != std::string::npos);
  CHECK(md.find("- Verdict: **" + verdict_text(r) + "**\n") != std::string::npos);
  CHECK(md.find("| stage | layers | peak | headroom | fits | binding phase | largest terms |\n"
                "| ---: | --- | ---: | ---: | --- | --- | --- |\n") != std::string::npos);
  // Header + separator + 4 stages: the per-stage table has 7 columns, not one per term.
  CHECK(count_of(md, "\n| ") == 6);
  CHECK(md.find("| 0 (binding) | 0-7 | ") != std::string::npos);
  // Stage 0's three largest terms at Adam (2,270,232,576 params): the fp32 moments (8 B/param),
  // the fp32 main gradients and the fp32 master weights (4 B/param each).
  // (Markdown cells escape inline markup: exp\_avg.)
  CHECK(
      md.find("| Adam exp\\_avg + exp\\_avg\\_sq (fp32): dense parameters 16.91 GiB; main gradient "
              "buffer (fp32) 8.46 GiB; fp32 master weights: dense parameters 8.46 GiB |") !=
      std::string::npos);
  CHECK(md.find("[Open this configuration in stagemem](<https://wiki.example/tools/#v=1&pp=4>)") !=
        std::string::npos);
  CHECK(md.find("#### Stage") == std::string::npos);  // the term table only on request
}

TEST_CASE("Markdown: the full term table with --terms - a bare fragment is code") {
  const Config c = llama_on_h100();
  const Report r = estimate(c);
  const std::string md = report_markdown(r, c, {.link = "#v=1&dp=2", .terms = true});
  CHECK(md.find("Configuration (stagemem link fragment): `#v=1&dp=2`\n") != std::string::npos);
  CHECK(count_of(md, "#### Stage ") == 4);
  CHECK(md.find("| weights (bf16) | 4.23 GiB | 4,540,465,152 | resident | DERIVED | yes |") !=
        std::string::npos);
}

TEST_CASE("Markdown: a table cell never breaks the table (model names are escaped)") {
  Config c = llama_on_h100();
  Report r = estimate(c);
  r.model = "evil | <b>model</b>\nnext";
  const std::string md = report_markdown(r, c, {});
  CHECK(md.find("evil | ") == std::string::npos);
  CHECK(md.find("evil \\|") != std::string::npos);
  // (HTML and line breaks: markdown_cell's own tests, text_escaping.h.)
}

TEST_CASE("Verdict line: fits, over, no device") {
  Config c = llama_on_h100();
  Report r = estimate(c);
  REQUIRE(r.binding_stage == 0);
  CHECK(verdict_text(r).starts_with("fits: stage 0 binds at "));
  CHECK(verdict_text(r).ends_with(" of 79.2 GiB"));
  c.device.preset.clear();
  c.device.bytes = std::int64_t{10} << 30;  // 10 GiB: every stage is over
  r = estimate(c);
  const std::string over = verdict_text(r);
  CHECK(over.starts_with("stage 0 is "));
  CHECK(over.find(" GiB over (peak ") != std::string::npos);
  CHECK(over.ends_with("; 4 stages do not fit"));
  c.device.bytes = 0;
  r = estimate(c);
  CHECK(verdict_text(r).starts_with("no device chosen: stage 0 peaks at "));
  c.parallel.tensor_parallel = 0;
  r = estimate(c);
  CHECK(verdict_text(r).empty());
  CHECK(report_markdown(r, c, {}).starts_with("stagemem: the configuration has errors:"));
}
