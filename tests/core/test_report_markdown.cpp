// Tests of report_markdown.h: the wiki text shared by the CLI and the app's Copy as Markdown,
// and `check --format markdown`.
#include <string>

#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "render/report_markdown.h"
#include "render/vocabulary.h"

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
  CHECK(md.find("| stage | layers | peak allocated | peak reserved | headroom | fits | binding "
                "phase | largest terms |\n"
                "| ---: | --- | ---: | ---: | ---: | --- | --- | --- |\n") != std::string::npos);
  // Header + separator + 4 stages: the per-stage table has 8 columns, not one per term.
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

TEST_CASE("Markdown: a report with errors lists them instead of tables") {
  Config c = llama_on_h100();
  c.parallel.tensor_parallel = 0;
  const Report r = estimate(c);
  CHECK(report_markdown(r, c, {}).starts_with("stagemem: the configuration has errors:"));
}

TEST_CASE("Markdown: the binding phase and the layers as the JSON and the CLI spell them") {
  // Llama-3.1-8B at PP 2 x VPP 2 (32 layers in 4 virtual stages of 8): rank 0 runs 0-7 and
  // 16-23, rank 1 8-15 and 24-31; forward/backward binds on both ("forward-backward", the JSON's
  // `binding_phase`).
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.parallel.virtual_stages = 2;
  c.training.global_batch = 8;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string md = report_markdown(r, c, {.link = "", .terms = true});
  CHECK(md.find("| 0 (binding) | 0-7,16-23 | ") != std::string::npos);
  CHECK(md.find("| 1 | 8-15,24-31 | ") != std::string::npos);
  CHECK(md.find(" | no device | - | forward-backward | ") != std::string::npos);
  CHECK(md.find("#### Stage 1 terms (layers 8-15,24-31)\n") != std::string::npos);
  // Not measured gap rows are 0 B and count in the peak (the JSON's counts_in_peak).
  CHECK(md.find("| gap: runtime context | 0.00 GiB | 0 | gap | NOT MEASURED | yes |") !=
        std::string::npos);
}

TEST_CASE("Markdown: check - the stage table, a stage that does not fit, the result line") {
  // On 40 GiB (42,949,672,960 B) against the replayed peak reserved: stage 0 (60,023,768,064 B
  // = 55.90 GiB allocated, 61,150,855,168 B = 56.95 GiB reserved) is over by 18,201,182,208 B
  // (16.95 GiB); stages 1 (43.44 GiB reserved) and 3 (47.12 GiB) are over too; stage 2
  // (39.07 GiB reserved) fits with 0.93 GiB to spare.
  Config c = llama_on_h100();
  c.device.preset.clear();
  c.device.bytes = std::int64_t{40} << 30;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string md = check_markdown(r);
  CHECK(md.starts_with(
      "**llama-3.1-8b** on **custom**: 42,949,672,960 B (40.00 GiB) per rank\n\n"
      "| stage | layers | allocated GiB | reserved GiB | device GiB | headroom GiB | fits |\n"
      "| ---: | --- | ---: | ---: | ---: | ---: | --- |\n"
      "| 0 | 0-7 | 55.90 | 56.95 | - | -16.95 | no |\n"));
  CHECK(md.find("| 2 | 16-23 | 38.59 | 39.07 | - | 0.93 | yes |\n") != std::string::npos);
  CHECK(md.find("\n**Stage 0 does not fit**: peak reserved 61,150,855,168 B (56.95 GiB) exceeds "
                "custom by 18,201,182,208 B (16.95 GiB).\nLargest terms:\n\n"
                "1. Adam exp\\_avg + exp\\_avg\\_sq (fp32): dense parameters (resident): "
                "18,161,860,608 B (16.91 GiB)\n") != std::string::npos);
  CHECK(count_of(md, "does not fit**") == 3);
  CHECK(md.ends_with("\ncheck FAILED: 3 of 4 stages do not fit custom\n"));
}

TEST_CASE("Markdown: every setting that changes memory in words, and a link that reads back") {
  // Llama-3.1-8B (32 layers) at TP 2, PP 4, VPP 2, seq 8192, mbs 2, gbs 64 over DP 2: M = 64 /
  // (2 x 2) = 16 micro-batches per step; selective recompute of the attention core and the
  // norms; fp8 (block) weights, bf16 gradients; distributed Muon with bf16 moments; dropout and
  // the eager KDA backend are other fields, written as their link keys.
  Config c;
  c.parallel.tensor_parallel = 2;
  c.parallel.pipeline_parallel = 4;
  c.parallel.virtual_stages = 2;
  c.parallel.data_parallel = 2;
  c.parallel.sequence_parallel = true;
  c.training.sequence_length = 8192;
  c.training.micro_batch = 2;
  c.training.global_batch = 64;
  c.training.dropout = true;
  c.training.kernels.kda = KdaBackend::eager;
  c.training.recompute.policy = RecomputePolicy::selective;
  c.training.recompute.modules =
      module_bit(RecomputeModule::core_attn) | module_bit(RecomputeModule::layernorm);
  c.precision.dense_weights = WeightDtype::fp8_block_scaled;
  c.precision.grads = GradDtype::bf16;
  c.optimizer.kind = OptimizerKind::distributed_muon;
  c.optimizer.moments = MomentDtype::bf16;
  c.device.preset = "h200";
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  REQUIRE(r.micro_batches == 16);
  const std::string link = "#" + encode_fragment(c);
  const std::string md = report_markdown(r, c, {.link = link});
  CHECK(md.find("- Training: sequence 8192, micro-batch 2, global batch 64 (16 micro-batches per "
                "step)\n") != std::string::npos);
  CHECK(md.find("- Schedule: interleaved 1F1B (VPP 2)\n") != std::string::npos);
  CHECK(md.find("- Recompute: selective (core\\_attn, layernorm)\n") != std::string::npos);
  CHECK(md.find("- Precision: weights fp8-block, expert weights bf16, gradients bf16, FP8 recipe "
                "none\n") != std::string::npos);
  CHECK(md.find("- Optimizer: distributed-muon (master weights fp32, moments bf16)\n") !=
        std::string::npos);
  CHECK(md.find("- Other settings (link keys, where they differ from the defaults): dropout=1, "
                "kda\\_backend=eager\n") != std::string::npos);
  // The link line carries the whole configuration: pasted back, it is the same one.
  const std::string marker = "Configuration (stagemem link fragment): `";
  const auto start = md.find(marker);
  REQUIRE(start != std::string::npos);
  const auto end = md.find('`', start + marker.size());
  const std::string pasted = md.substr(start + marker.size(), end - start - marker.size());
  CHECK(pasted == link);
  const DecodedFragment back = decode_fragment(pasted);
  REQUIRE(back.diagnostics.ok());
  CHECK(back.config == c);
}

TEST_CASE("Markdown: full recompute, DualPipeV and the defaults say so in words") {
  Config c;
  c.parallel.pipeline_parallel = 4;
  c.parallel.schedule = PipelineSchedule::dualpipev;
  c.training.recompute.policy = RecomputePolicy::full;
  c.training.recompute.method = FullRecomputeMethod::block;
  c.training.recompute.layers = 2;
  c.training.global_batch = 64;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string md = report_markdown(r, c, {});
  CHECK(md.find("- Schedule: DualPipeV (2 chunks per rank in a V)\n") != std::string::npos);
  CHECK(md.find("- Recompute: full (block, the first 2 layers of each stage)\n") !=
        std::string::npos);
  CHECK(md.find("- Other settings (link keys, where they differ from the defaults): none\n") !=
        std::string::npos);
  c.parallel.schedule = PipelineSchedule::one_f_one_b;
  c.training.recompute.method = FullRecomputeMethod::uniform;
  c.training.recompute.layers = 1;
  const Report u = estimate(c);
  REQUIRE(u.diagnostics.ok());
  const std::string uniform = report_markdown(u, c, {});
  CHECK(uniform.find("- Schedule: 1F1B\n") != std::string::npos);
  CHECK(uniform.find("- Recompute: full (uniform, 1 layer per checkpoint)\n") != std::string::npos);
}
