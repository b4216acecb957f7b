// Tests of layout.h: stage assignment, vocabulary padding and per-rank shards.
#include "catch.h"
#include "model/presets.h"
#include "parallel/layout.h"

using namespace stagemem;

TEST_CASE("Even split gives earlier stages the remainder") {
  CHECK(even_split(32, 4) == std::vector<std::int64_t>{8, 8, 8, 8});
  CHECK(even_split(93, 8) == std::vector<std::int64_t>{12, 12, 12, 12, 12, 11, 11, 11});
  CHECK(even_split(5, 1) == std::vector<std::int64_t>{5});
}

TEST_CASE("Megatron vocabulary padding: multiple of 128 x TP") {
  CHECK(padded_vocab(128'256, {.tensor_parallel = 1}) == 128'256);  // already 1002 x 128
  CHECK(padded_vocab(50'257, {.tensor_parallel = 1}) == 50'304);
  CHECK(padded_vocab(50'257, {.tensor_parallel = 8}) == 51'200);  // multiple of 1024
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
  const auto tp1 =
      stage_parameters(m, {.tensor_parallel = 1, .pipeline_parallel = 2}, even_split(32, 2));
  const auto tp2 =
      stage_parameters(m, {.tensor_parallel = 2, .pipeline_parallel = 2}, even_split(32, 2));
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

namespace {

// Unique parameters over every rank of every stage: a replicated tensor once, a TP-split tensor
// TP shards, a routed-expert tensor EP x ETP shards; padding and replicas are not parameters.
std::int64_t unique_over_ranks(const std::vector<StageParameters>& stages,
                               const ParallelLayout& layout) {
  std::int64_t sum = 0;
  for (const auto& s : stages) {
    sum +=
        s.per_rank_split.replicated + layout.tensor_parallel * s.per_rank_split.tensor_parallel +
        layout.expert_parallel * layout.expert_tensor_parallel * s.per_rank_split.expert_parallel;
  }
  return sum;
}

std::int64_t logical_sum(const std::vector<StageParameters>& stages) {
  std::int64_t sum = 0;
  for (const auto& s : stages) sum += s.logical.total();
  return sum;
}

std::vector<StageParameters> planned(const Model& m, const ParallelLayout& layout) {
  Diagnostics d;
  validate_layout(m, layout, d);
  INFO((d.ok() ? std::string() : d.errors[0].field + ": " + d.errors[0].message));
  REQUIRE(d.ok());
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan.has_value());
  return stage_parameters(m, layout, *plan);
}

bool has_error(const Diagnostics& d, std::string_view field) {
  for (const auto& e : d.errors) {
    if (e.field == field) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("Per-stage sums and the union over ranks equal the total for every sharding") {
  struct Case {
    std::string_view preset;
    ParallelLayout layout;
  };
  const Case cases[] = {
      {"llama-3.1-70b", {.tensor_parallel = 8, .pipeline_parallel = 4}},
      {"llama-3.1-70b", {.tensor_parallel = 4, .pipeline_parallel = 4, .virtual_stages = 5}},
      {"mixtral-8x7b",
       {.tensor_parallel = 2,
        .pipeline_parallel = 2,
        .expert_parallel = 4,
        .expert_tensor_parallel = 2}},
      {"qwen3-30b-a3b", {.tensor_parallel = 4, .pipeline_parallel = 3, .expert_parallel = 8}},
      {"deepseek-v3", {.tensor_parallel = 2, .pipeline_parallel = 8, .expert_parallel = 64}},
      {"kimi-k2",
       {.tensor_parallel = 8,
        .pipeline_parallel = 4,
        .virtual_stages = 3,
        .expert_parallel = 32,
        .expert_tensor_parallel = 2}},
      {"kimi-linear-48b-a3b", {.tensor_parallel = 4, .pipeline_parallel = 3, .expert_parallel = 8}},
      {"kimi-k3",
       {.tensor_parallel = 2,
        .pipeline_parallel = 8,
        .expert_parallel = 28,
        .assignment = StageAssignment::attn_res_aligned}},
      {"gpt3-175b", {.tensor_parallel = 8, .pipeline_parallel = 8, .virtual_stages = 3}},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.preset));
    const Model m = *find_preset(c.preset);
    const auto stages = planned(m, c.layout);
    CHECK(static_cast<std::int64_t>(stages.size()) == c.layout.pipeline_parallel);
    CHECK(logical_sum(stages) == total_parameters(m));
    CHECK(unique_over_ranks(stages, c.layout) == total_parameters(m));
    std::int64_t layers = 0;
    for (const auto& s : stages) {
      layers += s.layer_count;
      CHECK(s.per_rank.total() == s.per_rank_split.total());
      CHECK(static_cast<std::int64_t>(s.chunks.size()) == c.layout.virtual_stages);
    }
    CHECK(layers == static_cast<std::int64_t>(m.layers.size()));
  }
}

TEST_CASE("VPP: a pipeline rank sums its chunks - virtual stage i runs on rank i % PP") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 4, .virtual_stages = 2};
  const auto stages = planned(m, layout);
  REQUIRE(stages.size() == 4);
  // 8 virtual stages of 4 layers: rank 0 holds layers 0-3 and 16-19.
  REQUIRE(stages[0].chunks.size() == 2);
  CHECK(stages[0].chunks[0].first_layer == 0);
  CHECK(stages[0].chunks[1].first_layer == 16);
  CHECK(stages[0].layer_count == 8);
  CHECK(stages[0].per_rank.total() == 8 * 218'112'000LL + 525'336'576LL);
  CHECK(stages[3].chunks[1].head);
  CHECK(stages[3].chunks[1].first_layer == 28);
}

TEST_CASE("Megatron first/last-stage layer counts") {
  const Model m = *find_preset("deepseek-v3");
  ParallelLayout layout{.pipeline_parallel = 8, .expert_parallel = 8};
  layout.assignment = StageAssignment::first_last;
  layout.first_stage_layers = 5;
  layout.last_stage_layers = 2;
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan.has_value());
  CHECK(plan->layers_per_rank() == std::vector<std::int64_t>{5, 9, 9, 9, 9, 9, 9, 2});
  layout.last_stage_layers = 3;  // 53 left for 6 middle stages
  Diagnostics d2;
  CHECK(!plan_stages(m, layout, d2).has_value());
  CHECK(has_error(d2, "parallel.first_stage_layers"));
  // With VPP every rank's count must divide by VPP.
  layout.last_stage_layers = 2;
  layout.virtual_stages = 2;
  Diagnostics d3;
  CHECK(!plan_stages(m, layout, d3).has_value());
  CHECK(has_error(d3, "parallel.vpp"));
}

TEST_CASE("AttnRes-aligned layout: whole blocks per stage, remainder last") {
  CHECK(attn_res_aligned_split(93, 12, 8) ==
        std::vector<std::int64_t>{12, 12, 12, 12, 12, 12, 12, 9});
  CHECK(attn_res_aligned_split(93, 12, 4) == std::vector<std::int64_t>{24, 24, 24, 21});
  CHECK(attn_res_aligned_split(93, 12, 3) == std::vector<std::int64_t>{36, 36, 21});
  CHECK(attn_res_aligned_split(93, 12, 16).empty());  // only 8 blocks
  const Model m = *find_preset("kimi-k3");
  ParallelLayout layout{.pipeline_parallel = 16, .expert_parallel = 28};
  layout.assignment = StageAssignment::attn_res_aligned;
  Diagnostics d;
  validate_layout(m, layout, d);
  REQUIRE(has_error(d, "parallel.attnres_aligned"));
  CHECK(d.errors.back().message.find("[1, 8]") != std::string::npos);
}

TEST_CASE("A stage boundary inside an AttnRes block is a warning") {
  const Model m = *find_preset("kimi-k3");
  Diagnostics d;
  const auto plan = plan_stages(m, {.pipeline_parallel = 8, .expert_parallel = 28}, d);
  REQUIRE(plan.has_value());
  CHECK(plan->layers_per_rank() == std::vector<std::int64_t>{12, 12, 12, 12, 12, 11, 11, 11});
  REQUIRE(d.warnings.size() == 2);  // uneven split, and the AttnRes boundaries
  CHECK(d.warnings[1].message.find("after layer counts 71, 82,") != std::string::npos);
  // PP 16: even split 6/5 layers per stage, boundaries not on multiples of 12 warn too.
  Diagnostics d16;
  const auto plan16 = plan_stages(m, {.pipeline_parallel = 16, .expert_parallel = 28}, d16);
  REQUIRE(plan16.has_value());
  CHECK(plan16->layers_per_rank() ==
        std::vector<std::int64_t>{6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 5});
}

TEST_CASE("Explicit list: one entry per virtual stage, summing to the layers") {
  const Model m = *find_preset("llama-3.1-8b");
  ParallelLayout layout{.pipeline_parallel = 4};
  layout.assignment = StageAssignment::explicit_list;
  layout.layers_per_stage = {7, 9, 9, 7};
  const auto stages = planned(m, layout);
  CHECK(stages[1].first_layer == 7);
  layout.layers_per_stage = {7, 9, 9};
  Diagnostics d;
  validate_layout(m, layout, d);
  CHECK(has_error(d, "parallel.layers_per_stage"));
  layout.layers_per_stage = {7, 9, 9, 8};
  Diagnostics d2;
  validate_layout(m, layout, d2);
  REQUIRE(has_error(d2, "parallel.layers_per_stage"));
  CHECK(d2.errors[0].message.find("sum to 33") != std::string::npos);
}

TEST_CASE("Layout string places embedding, loss and MTP (DeepSeek-V3, PP 16 x VPP 2)") {
  const Model m = *find_preset("deepseek-v3");
  ParallelLayout layout{.tensor_parallel = 1, .pipeline_parallel = 16, .expert_parallel = 8};
  layout.assignment = StageAssignment::layout_string;
  layout.layout_string = "Et*3|(tt|)*29,m|L";
  const auto stages = planned(m, layout);
  REQUIRE(stages.size() == 16);
  CHECK(stages[0].chunks.size() == 2);
  CHECK(stages[0].layer_count == 5);  // Ettt + tt
  // Virtual stage 30 (rank 14, chunk 1) holds the MTP layer and an embedding copy for it.
  CHECK(stages[14].chunks[1].mtp_layers == 1);
  CHECK(stages[14].logical[Component::mtp] == 11'610'068'224LL);
  CHECK(stages[14].per_rank_split.embedding_replicas == 129'280LL * 7168);
  CHECK(stages[15].chunks[1].head);
  CHECK(stages[15].logical[Component::lm_head] == 129'280LL * 7168);
  CHECK(logical_sum(stages) == total_parameters(m));
  CHECK(unique_over_ranks(stages, layout) == total_parameters(m));
}

TEST_CASE("Layout string structural errors") {
  const Model m = *find_preset("llama-3.1-8b");
  struct Case {
    std::string_view text;
    std::int64_t pp;
    std::string_view fragment;
  };
  const Case corpus[] = {
      {"Et*16|t*16L", 4, "PP 4 must divide"},
      {"t*16|Et*16L", 2, "'E'"},
      {"Et*16|t*16", 2, "'L'"},
      {"Et*16|t*15L", 2, "31 decoder layers"},
      {"Et*16|t*16mL", 2, "MTP layers"},
  };
  for (const Case& c : corpus) {
    INFO(std::string(c.text));
    ParallelLayout layout{.pipeline_parallel = c.pp};
    layout.assignment = StageAssignment::layout_string;
    layout.layout_string = std::string(c.text);
    Diagnostics d;
    validate_layout(m, layout, d);
    REQUIRE(has_error(d, "parallel.layout_string"));
    bool found = false;
    for (const auto& e : d.errors) found |= e.message.find(c.fragment) != std::string::npos;
    CHECK(found);
  }
}

TEST_CASE("World size, DP, CP and expert groups") {
  const Model m = *find_preset("deepseek-v3");
  CHECK(data_parallel_size({.pipeline_parallel = 8, .expert_parallel = 64}) == 64);
  CHECK(data_parallel_size({.tensor_parallel = 8, .pipeline_parallel = 8, .expert_parallel = 64}) ==
        8);
  CHECK(world_size({.tensor_parallel = 2,
                    .pipeline_parallel = 4,
                    .context_parallel = 2,
                    .data_parallel = 3}) == 48);
  Diagnostics d;
  validate_layout(
      m, {.tensor_parallel = 2, .pipeline_parallel = 4, .data_parallel = 8, .world_size = 100}, d);
  REQUIRE(has_error(d, "parallel.world_size"));
  CHECK(d.errors[0].message.find("= 64") != std::string::npos);
  Diagnostics d2;
  validate_layout(m, {.pipeline_parallel = 4, .expert_parallel = 64, .data_parallel = 8}, d2);
  CHECK(has_error(d2, "parallel.ep"));  // EP 64 cannot fit in TP x CP x DP = 8 ranks
  Diagnostics d3;
  validate_layout(m, {.pipeline_parallel = 4, .expert_parallel = 3}, d3);
  CHECK(has_error(d3, "parallel.ep"));  // 3 does not divide 256 experts
  Diagnostics d4;
  validate_layout(m, {.pipeline_parallel = 4, .expert_tensor_parallel = 3}, d4);
  CHECK(has_error(d4, "parallel.etp"));
  Diagnostics d5;
  validate_layout(m, {.pipeline_parallel = 4, .virtual_stages = 16}, d5);
  CHECK(has_error(d5, "parallel.vpp"));  // 64 virtual stages > 61 layers
  Diagnostics d6;
  validate_layout(m, {.pipeline_parallel = 4, .context_parallel = 0}, d6);
  CHECK(has_error(d6, "parallel.cp"));
}

TEST_CASE("Vocabulary padding multiple is configurable") {
  CHECK(padded_vocab(50'257, {.tensor_parallel = 8, .vocab_multiple = 1}) == 50'264);
  const Model m = *find_preset("gpt3-175b");
  // Tied embeddings at PP 2: the last stage keeps a padded replica; it is not a unique parameter.
  const auto stages = planned(m, {.tensor_parallel = 8, .pipeline_parallel = 2});
  CHECK(stages[1].per_rank_split.embedding_replicas == 51'200LL * 12'288 / 8);
  CHECK(stages[0].per_rank_split.vocab_padding == (51'200LL - 50'257) * 12'288 / 8);
}

TEST_CASE("Per-rank role counts add up to the per-rank total") {
  const Model m = *find_preset("deepseek-v3");
  const ParallelLayout layout{.tensor_parallel = 2,
                              .pipeline_parallel = 16,
                              .expert_parallel = 64,
                              .data_parallel = 64,
                              .sequence_parallel = true};
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan);
  for (const auto& s : stage_parameters(m, layout, *plan)) {
    CHECK(s.per_rank_roles.total() == s.per_rank.total());
    CHECK(s.per_rank_roles[TensorRole::expert_matrix] == s.per_rank_split.expert());
  }
  // Llama-3.1-8B, one stage: embedding + head 2 x 525,336,576; norms 65 x 4,096 = 266,240.
  const Model llama = *find_preset("llama-3.1-8b");
  const auto one = stage_parameters(llama, {}, std::vector<std::int64_t>{32});
  CHECK(one[0].per_rank_roles[TensorRole::embedding_or_head] == 2 * 525'336'576LL);
  CHECK(one[0].per_rank_roles[TensorRole::vector] == 266'240);
  // 32 layers x 7 matrices (q, k, v, o, gate, up, down) are separate weight tensors.
  CHECK(one[0].per_rank_roles.tensors(TensorRole::hidden_matrix) == 32 * 7);
}

TEST_CASE("DualPipeV: virtual stage i < PP on rank i, stage i >= PP on rank 2PP - 1 - i") {
  // Llama-3.1-8B (32 layers) at PP 4 with schedule dualpipev: 2 x 4 = 8 virtual stages of 4
  // layers placed in a V. Rank 0 runs stage 0 (layers 0-3, the embedding) as chunk 0 and stage 7
  // (layers 28-31, final norm and LM head) as chunk 1: 8 x 218,112,000 + 128,256 x 4,096
  // (embedding) + 4,096 (final norm) + 128,256 x 4,096 (untied head) parameters. Rank 3 runs
  // stages 3 (12-15) and 4 (16-19): the turn of the V.
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 4, .schedule = PipelineSchedule::dualpipev};
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan.has_value());
  CHECK(plan->chunks_per_rank == 2);
  CHECK(plan->schedule == PipelineSchedule::dualpipev);
  const auto stages = planned(m, layout);
  REQUIRE(stages.size() == 4);
  const std::int64_t firsts[4][2] = {{0, 28}, {4, 24}, {8, 20}, {12, 16}};
  for (std::size_t r = 0; r < 4; ++r) {
    INFO("rank " << r);
    REQUIRE(stages[r].chunks.size() == 2);
    CHECK(stages[r].chunks[0].chunk == 0);
    CHECK(stages[r].chunks[1].chunk == 1);
    CHECK(stages[r].chunks[0].first_layer == firsts[r][0]);
    CHECK(stages[r].chunks[1].first_layer == firsts[r][1]);
    CHECK(stages[r].layer_count == 8);
    CHECK(stages[r].chunks[0].embedding == (r == 0));
    CHECK(stages[r].chunks[1].head == (r == 0));
  }
  CHECK(stages[0].per_rank.total() == 8 * 218'112'000LL + 2 * 525'336'576LL + 4'096);
  CHECK(stages[3].per_rank.total() == 8 * 218'112'000LL);
  // vpp 2 says the same; MTP sits with the head on rank 0's chunk 1.
  const ParallelLayout two{
      .pipeline_parallel = 4, .virtual_stages = 2, .schedule = PipelineSchedule::dualpipev};
  CHECK(planned(m, two)[0].chunks[1].first_layer == 28);
  const Model v3 = *find_preset("deepseek-v3");
  const auto v3_stages = planned(v3, {.pipeline_parallel = 4,
                                      .expert_parallel = 8,
                                      .data_parallel = 8,
                                      .sequence_parallel = true,
                                      .schedule = PipelineSchedule::dualpipev});
  CHECK(v3_stages[0].chunks[1].mtp_layers == v3.mtp_layers);
}

TEST_CASE("DualPipeV layout errors name the field") {
  const Model m = *find_preset("llama-3.1-8b");
  Diagnostics d1;  // 2 chunks per rank exactly
  validate_layout(
      m, {.pipeline_parallel = 4, .virtual_stages = 3, .schedule = PipelineSchedule::dualpipev},
      d1);
  CHECK(has_error(d1, "parallel.vpp"));
  Diagnostics d2;  // first/last counts are per rank of Megatron's placement
  validate_layout(m,
                  {.pipeline_parallel = 4,
                   .assignment = StageAssignment::first_last,
                   .first_stage_layers = 4,
                   .schedule = PipelineSchedule::dualpipev},
                  d2);
  CHECK(has_error(d2, "parallel.first_stage_layers"));
  Diagnostics d3;  // 2 x PP virtual stages must not exceed the layers: PP 17 -> 34 > 32
  validate_layout(m, {.pipeline_parallel = 17, .schedule = PipelineSchedule::dualpipev}, d3);
  CHECK(has_error(d3, "parallel.pp"));
  CHECK(d3.errors[0].message.find("2 x PP = 34 virtual stages") != std::string::npos);
  Diagnostics d4;  // explicit lists have 2 x PP entries in model order
  validate_layout(m,
                  {.pipeline_parallel = 2,
                   .assignment = StageAssignment::explicit_list,
                   .layers_per_stage = {8, 8, 8, 8},
                   .schedule = PipelineSchedule::dualpipev},
                  d4);
  CHECK(d4.ok());
  Diagnostics d5;
  validate_layout(m,
                  {.pipeline_parallel = 2,
                   .assignment = StageAssignment::explicit_list,
                   .layers_per_stage = {16, 16},
                   .schedule = PipelineSchedule::dualpipev},
                  d5);
  CHECK(has_error(d5, "parallel.layers_per_stage"));
}
