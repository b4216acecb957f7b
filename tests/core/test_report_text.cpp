// Tests of report_text.h: the terminal text of `stagemem report`, `report --timeline` and
// `check`, with the words and amounts of vocabulary.h.
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/report_text.h"

using namespace stagemem;

namespace {

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// Llama-3.1-8B (32 layers, 2,270,232,576 parameters on stage 0 with the embedding) at PP 4.
Config llama_pp4() {
  Config c;
  c.parallel.pipeline_parallel = 4;
  return c;
}

}  // namespace

TEST_CASE("Report text: every term with its amount in bytes and GiB, totals, cross-checks") {
  Config c = llama_pp4();
  // A reading after optimizer init is compared with weights + grads + master weights only:
  // (2 + 4 + 4) B x 2,270,232,576 = 22,702,325,760 B; 25,000,000,000 / 22,702,325,760 = x1.101.
  Measurement m;
  m.point = MeasurementPoint::after_optimizer_init;
  m.stage = 0;
  m.bytes = 25'000'000'000;
  m.source = "run 17";
  c.measurements.push_back(m);
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string text = report_text(r, c);
  CHECK(
      text.starts_with("model llama-3.1-8b: 8,030,261,248 parameters\n"
                       "optimizer adam, weights bf16 (routed experts bf16), grads fp32; DP 1, "
                       "expert DP 1\npipeline PP 4, schedule 1f1b, "));
  // 2 B x 2,270,232,576 = 4,540,465,152 B of bf16 weights on stage 0 (4.23 GiB).
  CHECK(has(text, "\n0      0-7        2,270,232,576      weights (bf16)" + std::string(57, ' ') +
                      "4,540,465,152 B (4.23 GiB) [resident, DERIVED, model init]\n" +
                      std::string(37, ' ') + "= 2 B x 2,270,232,576 parameters on this rank\n"));
  CHECK(has(text, "\nbinding stage: 0\n"));
  CHECK(has(text,
            "\ncross-check after-optimizer-init, stage 0 (source: run 17)\n"
            "  measured 25,000,000,000 B (23.28 GiB), derived 22,702,325,760 B (21.14 GiB), "
            "gap 2,297,674,240 B (2.14 GiB), ratio x1.101\n"
            "  - not alive yet at this point"));
}

TEST_CASE("Report text: the timeline marks the peak event and names its moment") {
  // Llama-3.1-8B at PP 2, M = 4 (tests/cli: the first backward of stage 0 peaks at
  // 91,431,896,064 B = 85.15 GiB: resident 72,809,186,304 B + two micro-batches' activations
  // 18,270,388,224 B + the MLP backward working set 352,321,536 B).
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.training.global_batch = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string text = timeline_text(r);
  CHECK(
      text.starts_with("model llama-3.1-8b: step timeline per stage, 4 micro-batches, schedule "
                       "1f1b (GiB per rank)\n\nstage 0: peak 91,431,896,064 B (85.15 GiB) at "
                       "stage 0, backward of micro-batch 0 (layers 0-15), MLP backward working "
                       "set of one layer (gradients of the fc1 and activation outputs)\n"));
  CHECK(has(text,
            "\n* 2     backward        0     0     67.81 GiB   17.02 GiB   0.33 GiB    "
            "0.00 GiB    85.15 GiB   MLP backward working set"));
  // The optimizer step (event 8 of stage 0: 4 forwards and 4 backwards before it).
  CHECK(has(text, "\n  8     optimizer-step  -     -     67.81 GiB   0.00 GiB"));
  CHECK(text.ends_with("\n* the peak event (the first with the largest live bytes)\n"));
}

TEST_CASE("Check text: the table, the stages that do not fit, the result line") {
  Config c = llama_pp4();
  c.device.preset = "h200";  // 150,109,945,856 B = 139.80 GiB: every stage fits
  Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(stages_not_fitting(r) == 0);
  // Headroom is measured against the replayed peak reserved: stage 0 peaks at 60,023,768,064 B
  // allocated and 61,150,855,168 B reserved (the allocator replay, test_step_replay.cpp), so it
  // has the least headroom: 150,109,945,856 - 61,150,855,168 B = 82.85 GiB.
  CHECK(check_result_text(r) ==
        "check passed: every stage fits h200 (least headroom: stage 0, "
        "82.85 GiB)");
  std::string text = check_text(r);
  CHECK(text.starts_with(
      "model llama-3.1-8b on h200: 150,109,945,856 B (139.80 GiB) per rank\n\n"
      "stage  layers                allocated       reserved         device       headroom  fits\n"
      "0      0-7                   55.90 GiB      56.95 GiB              -      82.85 GiB  "
      "yes\n"));
  CHECK(has(text,
            "\nheadroom is measured against: peak reserved (allocator replay); the device "
            "figure needs the runtime-context and communication-buffers rows measured\n"));
  CHECK(
      text.ends_with("\n\ncheck passed: every stage fits h200 (least headroom: stage 0, "
                     "82.85 GiB)\n"));

  // 1,000,000,000 B holds no stage: 4 of 4 over; stage 0 by 61,150,855,168 - 1,000,000,000 =
  // 60,150,855,168 B (56.02 GiB), its largest term Adam's moments, 8 B x 2,270,232,576.
  c.device.preset.clear();
  c.device.bytes = 1'000'000'000;
  r = estimate(c);
  CHECK(stages_not_fitting(r) == 4);
  text = check_text(r);
  CHECK(has(text,
            "\n0      0-7                   55.90 GiB      56.95 GiB              -     "
            "-56.02 GiB  no\n"));
  CHECK(has(text,
            "\nstage 0 does not fit: peak reserved 61,150,855,168 B (56.95 GiB) exceeds custom by "
            "60,150,855,168 B (56.02 GiB)\n  largest terms:\n"
            "    Adam exp_avg + exp_avg_sq (fp32): dense parameters" +
                std::string(20, ' ') + "16.91 GiB  18,161,860,608 B  [resident]\n"));
  CHECK(text.ends_with("\n\ncheck FAILED: 4 of 4 stages do not fit custom\n"));
}
