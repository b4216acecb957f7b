// Tests of gaps.h: named gap rows are zero and NOT MEASURED until a measured value is entered.
#include "catch.h"
#include "gaps.h"
#include "term_text.h"

using namespace stagemem;

TEST_CASE("Every gap kind is a zero row until measured; never a percentage") {
  const auto rows = gap_terms(0, {});
  REQUIRE(rows.size() == 4);
  for (const Term& t : rows) {
    CHECK(t.family == Family::gap);
    CHECK(t.tag == Tag::not_measured);
    CHECK(t.bytes == 0);
    CHECK(term_formula(t).find('%') == std::string::npos);
  }
  CHECK(term_name(rows[0]) == "gap: allocator fragmentation");
}

TEST_CASE("A measured gap is MEASURED with its source; a stage entry beats an all-stage one") {
  const std::vector<GapEntry> entries = {
      {.kind = GapKind::communication_buffers, .stage = -1, .bytes = 1'000, .source = "all"},
      {.kind = GapKind::communication_buffers, .stage = 2, .bytes = 3'000, .source = "stage 2"},
  };
  const Term s0 = gap_terms(0, entries)[1];
  CHECK(s0.tag == Tag::measured);
  CHECK(s0.bytes == 1'000);
  CHECK(s0.source == "all");
  const Term s2 = gap_terms(2, entries)[1];
  CHECK(s2.bytes == 3'000);
  CHECK(s2.source == "stage 2");
  CHECK(gap_terms(2, entries)[0].bytes == 0);
}
