// Tests of layout.h: stage assignment, vocabulary padding and per-rank shards.
#include "catch.h"
#include "layout.h"
#include "presets.h"

using namespace stagemem;

TEST_CASE("Even split gives earlier stages the remainder") {
  CHECK(even_split(32, 4) == std::vector<std::int64_t>{8, 8, 8, 8});
  CHECK(even_split(93, 8) == std::vector<std::int64_t>{12, 12, 12, 12, 12, 11, 11, 11});
  CHECK(even_split(5, 1) == std::vector<std::int64_t>{5});
}

TEST_CASE("Megatron vocabulary padding: multiple of 128 x TP") {
  CHECK(padded_vocab(128'256, {.tensor_parallel = 1}) == 128'256);  // already 1002 x 128
  CHECK(padded_vocab(50'257, {.tensor_parallel = 1}) == 50'304);
  CHECK(padded_vocab(50'257, {.tensor_parallel = 8}) == 51'200);   // multiple of 1024
}

TEST_CASE("Llama-3.1-8B stages at PP 4: per-stage sums equal the total") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 4};
  const auto stages = stage_parameters(m, layout, even_split(32, 4));
  REQUIRE(stages.size() == 4);
  std::int64_t sum = 0;
  for (const auto& s : stages) sum += s.logical.total();
  CHECK(sum == 8'030'261'248LL);
  // Stage 0: 8 layers + embedding = 8 x 218,112,000 + 525,336,576.
  CHECK(stages[0].per_rank.total() == 2'270'232'576LL);
  // Stage 3: 8 layers + final norm + LM head.
  CHECK(stages[3].per_rank.total() == 8 * 218'112'000LL + 4'096 + 525'336'576LL);
  CHECK(stages[1].first_layer == 8);
}

TEST_CASE("TP 2 halves split tensors and keeps norms whole") {
  const Model m = *find_preset("llama-3.1-8b");
  const auto tp1 = stage_parameters(m, {.tensor_parallel = 1, .pipeline_parallel = 2}, even_split(32, 2));
  const auto tp2 = stage_parameters(m, {.tensor_parallel = 2, .pipeline_parallel = 2}, even_split(32, 2));
  // Norms: 16 layers x 2 x 4096 on stage 1, plus the final norm; replicated on every TP rank.
  CHECK(tp2[1].per_rank[Component::norms] == tp1[1].per_rank[Component::norms]);
  CHECK(tp2[1].per_rank[Component::attention_gqa] * 2 == tp1[1].per_rank[Component::attention_gqa]);
  CHECK(tp2[1].per_rank[Component::lm_head] * 2 == tp1[1].per_rank[Component::lm_head]);
}

TEST_CASE("Layout validation names the field and the allowed range") {
  const Model m = *find_preset("llama-3.1-8b");
  Diagnostics d;
  validate_layout(m, {.tensor_parallel = 3}, d);
  REQUIRE(!d.ok());
  CHECK(d.errors[0].field == "parallel.tp");
  Diagnostics d2;
  validate_layout(m, {.pipeline_parallel = 33}, d2);
  REQUIRE(!d2.ok());
  CHECK(d2.errors[0].field == "parallel.pp");
  CHECK(d2.errors[0].message.find("[1, 32]") != std::string::npos);
}
