// Tests of report_csv.h: the report and its timeline as CSV, numbers as numbers, text escaped.
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "render/report_csv.h"

using namespace stagemem;

TEST_CASE("Report CSV: one row per term, the formula quoted where it holds commas") {
  // Llama-3.1-8B at PP 4: stage 0 holds layers 0-7 and 2,270,232,576 parameters, 2 B each in
  // bf16 = 4,540,465,152 B.
  Config c;
  c.parallel.pipeline_parallel = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string csv = report_csv(r);
  CHECK(
      csv.starts_with("stage,layers,term,family,tag,allocated_at,bytes,formula,stage_peak_bytes,"
                      "stage_peak_reserved_bytes,stage_device_peak_bytes,fit_basis\n"
                      "0,0-7,weights (bf16),resident,DERIVED,model init,4540465152,"
                      "\"2 B x 2,270,232,576 parameters on this rank\","));
  std::size_t rows = 0;
  for (const StageReport& s : r.stages) rows += s.terms.size();
  std::size_t lines = 0;
  for (const char ch : csv) lines += ch == '\n' ? 1 : 0;
  CHECK(lines == rows + 1);  // no formula holds a line break
}

TEST_CASE("Report CSV: each row carries its stage's peak allocated, reserved and device figures") {
  // The last four cells are the stage's peak_bytes, peak_reserved_bytes (the allocator replay),
  // device_peak_bytes and fit_basis, as in the report JSON. Without measured rows outside the
  // allocator the device figure is unknown: an empty cell, and the fit is against reserved.
  Config c;
  c.parallel.pipeline_parallel = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string csv = report_csv(r);
  for (const StageReport& s : r.stages) {
    REQUIRE(s.reserved_replayed);
    CHECK(s.device_peak_bytes < 0);
    CHECK(s.fit_basis == FitBasis::reserved);
    const std::string tail = "," + std::to_string(s.peak_bytes) + "," +
                             std::to_string(s.peak_reserved_bytes) + ",,reserved\n";
    std::size_t rows = 0;
    for (std::size_t at = csv.find(tail); at != std::string::npos; at = csv.find(tail, at + 1))
      ++rows;
    CHECK(rows == s.terms.size());
  }
  // A measured runtime context and communication buffers make the device figure known.
  c.gaps = {
      {.kind = GapKind::runtime_context, .bytes = std::int64_t{3} << 30, .source = "smi"},
      {.kind = GapKind::communication_buffers, .bytes = std::int64_t{1} << 30, .source = "nccl"}};
  const Report measured = estimate(c);
  REQUIRE(measured.diagnostics.ok());
  const StageReport& s0 = measured.stages[0];
  REQUIRE(s0.device_peak_bytes >= 0);
  CHECK(s0.device_peak_bytes == s0.peak_reserved_bytes + (std::int64_t{4} << 30));
  CHECK(report_csv(measured).find("," + std::to_string(s0.peak_reserved_bytes) + "," +
                                  std::to_string(s0.device_peak_bytes) + ",device\n") !=
        std::string::npos);
}

TEST_CASE("Report CSV: a stage's chunks are one quoted cell, an empty chunk guarded") {
  // PP 2 x VPP 2 with the layout "Et*16||t*8|t*8L": rank 0 runs virtual stages 0 and 2
  // (layers 0-15, 16-23), rank 1 stages 1 (no layers) and 3 (24-31). "-,24-31" starts with
  // '-', so the CSV guards it like any text a spreadsheet would read as a formula.
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.parallel.virtual_stages = 2;
  c.parallel.assignment = StageAssignment::layout_string;
  c.parallel.layout_string = "Et*16||t*8|t*8L";
  c.training.global_batch = 8;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string csv = report_csv(r);
  CHECK(csv.find("\n0,\"0-15,16-23\",weights (bf16),") != std::string::npos);
  CHECK(csv.find("\n1,\"'-,24-31\",weights (bf16),") != std::string::npos);
}

TEST_CASE("Timeline CSV: every pass and the optimizer step, the peak marked") {
  // Llama-3.1-8B at PP 2, M = 4, 1F1B (tests/cli/CMakeLists.txt derives these): stage 0's first
  // forward holds one micro-batch's activations (9,135,194,112 B) and the send buffer
  // (33,554,432 B) on the resident 72,809,186,304 B; its first backward (event 2) peaks at
  // 91,431,896,064 B; the optimizer step is event 8, with no micro-batch or chunk.
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.training.global_batch = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  const std::string csv = timeline_csv(r);
  CHECK(csv.starts_with(
      "stage,event,phase,micro_batch,chunk,resident_bytes,activation_bytes,transient_bytes,"
      "gap_bytes,live_bytes,transient,inside,peak\n"
      "0,0,forward,0,0,72809186304,9135194112,33554432,0,81977934848,pipeline send/receive "
      "buffers (hidden state),,0\n"));
  CHECK(csv.find("\n0,2,backward,0,0,72809186304,18270388224,352321536,0,91431896064,MLP backward "
                 "working set of one layer (gradients of the fc1 and activation outputs),,1\n") !=
        std::string::npos);
  CHECK(csv.find("\n0,8,optimizer-step,,,72809186304,0,0,0,72809186304,,,0\n") !=
        std::string::npos);
}
