// Tests of report.h / estimate.cpp: the per-stage report, its totals and the binding stage.
#include "catch.h"
#include "term_text.h"
#include "report.h"

using namespace stagemem;

TEST_CASE("Llama-3.1-8B at PP 4: resident terms per stage (Adam, bf16, fp32 grads)") {
  Config c;
  c.parallel.pipeline_parallel = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(r.total_parameters == 8'030'261'248LL);
  REQUIRE(r.stages.size() == 4);
  // Stage 0: 8 x 218,112,000 + 525,336,576 (embedding) = 2,270,232,576 params x 2 B.
  CHECK(r.stages[0].terms.at(0).bytes == 4'540'465'152LL);
  // Stage 3 adds the final norm and LM head: 2,270,232,576 + 4,096 params, 18 B each (Adam).
  CHECK(r.stages[3].resident_bytes == 18 * (8 * 218'112'000LL + 4'096 + 525'336'576LL));
  // The peak adds the forward/backward phase: stored activations + the largest transient.
  for (const auto& s : r.stages) {
    CHECK(s.non_parameter_bytes == s.activation_bytes + s.largest_transient_bytes);
    CHECK(s.peak_bytes == s.resident_bytes + s.non_parameter_bytes);
  }
  // 1F1B: stage 0 holds 4 micro-batches, stage 3 one; the first stage binds.
  CHECK(r.stages[0].in_flight_per_chunk == std::vector<std::int64_t>{4});
  CHECK(r.stages[3].in_flight_per_chunk == std::vector<std::int64_t>{1});
  CHECK(r.binding_stage == 0);
  for (const auto& s : r.stages) {
    CHECK(s.terms.at(0).tag == Tag::derived);
    CHECK(term_name(s.terms.at(0)) == "weights (bf16)");
    CHECK(term_formula(s.terms.at(0)).find("2 B x") == 0);
  }
}

TEST_CASE("An unknown preset is an error naming the model field") {
  Config c;
  c.model = "no-such-model";
  const Report r = estimate(c);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "model");
  CHECK(r.stages.empty());
  CHECK(r.binding_stage == -1);
}

TEST_CASE("Sizes stay 64-bit: a 405B-class stage exceeds 4 GiB without wrapping") {
  Config c;
  c.parallel.pipeline_parallel = 1;
  const Report r = estimate(c);
  REQUIRE(r.stages.size() == 1);
  CHECK(r.stages[0].terms.at(0).bytes == 2 * 8'030'261'248LL);
  CHECK(r.stages[0].peak_bytes > (std::int64_t{1} << 32));
}

TEST_CASE("The binding stage is the one with the least headroom on the device") {
  Config c;
  c.device.preset = "h100-80gb";
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(r.device.bytes == 81'089LL << 20);
  // Stage 3's resident set: 18 B x 2,270,236,672 = 40,864,260,096 B.
  CHECK(r.stages[3].resident_bytes == 40'864'260'096LL);
  for (const auto& s : r.stages) CHECK(s.headroom_bytes == (81'089LL << 20) - s.peak_bytes);
  const auto binding = static_cast<std::size_t>(r.binding_stage);
  for (const auto& s : r.stages) CHECK(s.headroom_bytes >= r.stages[binding].headroom_bytes);
}

TEST_CASE("Gap rows appear on every stage and add to the peak only when measured") {
  Config c;
  c.gaps = {{.kind = GapKind::allocator_fragmentation,
             .stage = 1,
             .bytes = 1'000'000'000,
             .source = "torch.cuda.memory_reserved - memory_allocated, run 3"}};
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(r.stages[0].gap_bytes == 0);
  CHECK(r.stages[1].gap_bytes == 1'000'000'000);
  CHECK(r.stages[1].peak_bytes ==
        r.stages[1].resident_bytes + 1'000'000'000 + r.stages[1].non_parameter_bytes);
}

TEST_CASE("Every stage assignment works: an explicit list with VPP") {
  Config c;
  c.parallel.pipeline_parallel = 2;
  c.parallel.virtual_stages = 2;
  c.parallel.assignment = StageAssignment::explicit_list;
  c.parallel.layers_per_stage = {7, 9, 9, 7};
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  REQUIRE(r.stages.size() == 2);
  // Rank 0 runs virtual stages 0 (layers 0-6) and 2 (layers 16-24).
  REQUIRE(r.stages[0].chunks.size() == 2);
  CHECK(r.stages[0].chunks[1].first == 16);
  CHECK(r.stages[0].layer_count == 16);
}
