// Tests of pipeline_layout_string.h: Megatron's --pipeline-model-parallel-layout syntax.
#include <string>

#include "catch.h"
#include "parallel/pipeline_layout_string.h"

using namespace stagemem;

TEST_CASE("Megatron's DeepSeek-V3 example: Et*3|(tt|)*29,m|L") {
  Diagnostics d;
  const auto parsed = parse_pipeline_layout_string("Et*3|(tt|)*29,m|L", d);
  REQUIRE(parsed.has_value());
  CHECK(d.ok());
  // [[E,t,t,t]] + [[t,t]] x 29 + [[m], [L]]: 32 stages (PP 16 x VPP 2).
  REQUIRE(parsed->stages.size() == 32);
  CHECK(parsed->stages[0] == LayoutStageEntry{1, 3, 0, 0});
  CHECK(parsed->stages[1] == LayoutStageEntry{0, 2, 0, 0});
  CHECK(parsed->stages[29] == LayoutStageEntry{0, 2, 0, 0});
  CHECK(parsed->stages[30] == LayoutStageEntry{0, 0, 1, 0});
  CHECK(parsed->stages[31] == LayoutStageEntry{0, 0, 0, 1});
  std::int64_t decoders = 0;
  for (const auto& s : parsed->stages) decoders += s.decoder;
  CHECK(decoders == 61);
  CHECK(parsed->starts_with_embedding);
  CHECK(parsed->ends_with_loss);
  CHECK(!parsed->decoder_after_mtp);
}

TEST_CASE("Repetition of '|', groups with inner repetition, empty stages, commas") {
  Diagnostics d;
  const auto parsed = parse_pipeline_layout_string("E,(t*2|)*2,|*2tL", d);
  REQUIRE(parsed.has_value());
  // E tt | tt | | | t L -> [E tt], [tt], [], [], [tL]
  REQUIRE(parsed->stages.size() == 5);
  CHECK(parsed->stages[0] == LayoutStageEntry{1, 2, 0, 0});
  CHECK(parsed->stages[2] == LayoutStageEntry{});
  CHECK(parsed->stages[4] == LayoutStageEntry{0, 1, 0, 1});
}

TEST_CASE("Invalid layout strings name the position") {
  struct Case {
    std::string_view text;
    std::string_view fragment;
  };
  const Case corpus[] = {
      {"", "empty"},
      {"Et x|L", "position 2"},
      {"Etq|L", "'q' at position 2"},
      {"E(tt|L", "position 1 is never closed"},
      {"E(tt|)|L", "must be followed by '*N'"},
      {"Et)|L", "')' at position 2"},
      {"E*|L", "position 1 must be followed by a count"},
      {"*3E|L", "'*' at position 0"},
      {"E((t)*2)*2|L", "nested '(' at position 2"},
      {"E()*2|L", "empty group"},
      {"Et*2*3|L", "second repetition"},
      {"Et*99999999999|L", "exceeds"},
      {"(t*1000|)*1000000", "expands to more than"},
  };
  for (const Case& c : corpus) {
    INFO(std::string(c.text));
    Diagnostics d;
    CHECK(!parse_pipeline_layout_string(c.text, d).has_value());
    REQUIRE(d.errors.size() == 1);
    CHECK(d.errors[0].field == "parallel.layout_string");
    CHECK(d.errors[0].message.find(c.fragment) != std::string::npos);
  }
}
