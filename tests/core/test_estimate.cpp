// Tests of report.h: the per-stage report of the thin slice (bf16 weights per rank).
#include "catch.h"
#include "report.h"

using namespace stagemem;

TEST_CASE("Llama-3.1-8B at PP 4: bf16 weights per stage") {
  Config c;
  c.parallel.pipeline_parallel = 4;
  const Report r = estimate(c);
  REQUIRE(r.diagnostics.ok());
  CHECK(r.total_parameters == 8'030'261'248LL);
  REQUIRE(r.stages.size() == 4);
  // Stage 0: 8 x 218,112,000 + 525,336,576 (embedding) = 2,270,232,576 params x 2 B.
  CHECK(r.stages[0].terms.at(0).bytes == 4'540'465'152LL);
  // Stage 3 adds the final norm and LM head: 2,270,232,576 + 4,096 params.
  CHECK(r.stages[3].peak_bytes == 2 * (8 * 218'112'000LL + 4'096 + 525'336'576LL));
  CHECK(r.binding_stage == 3);
  for (const auto& s : r.stages) {
    CHECK(s.terms.at(0).tag == Tag::derived);
    CHECK(s.terms.at(0).formula.find("2 B x") == 0);
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
  CHECK(r.stages[0].peak_bytes == 2 * 8'030'261'248LL);
  CHECK(r.stages[0].peak_bytes > (std::int64_t{1} << 32));
}
