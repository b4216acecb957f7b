// Tests of resident_terms.h: every resident formula against a hand-worked derivation, sharding
// over DP x CP and expert DP, allocation points, and the users' worked numbers.
#include "base/units.h"
#include "catch.h"
#include "config/software_stack.h"
#include "memory/resident_terms.h"
#include "model/presets.h"
#include "parallel/layout.h"
#include "render/term_text.h"

using namespace stagemem;

namespace {

RoleCounts roles(std::int64_t hidden, std::int64_t expert, std::int64_t router,
                 std::int64_t embedding, std::int64_t vector) {
  RoleCounts c;
  c.elements[static_cast<int>(TensorRole::hidden_matrix)] = hidden;
  c.elements[static_cast<int>(TensorRole::expert_matrix)] = expert;
  c.elements[static_cast<int>(TensorRole::router_matrix)] = router;
  c.elements[static_cast<int>(TensorRole::embedding_or_head)] = embedding;
  c.elements[static_cast<int>(TensorRole::vector)] = vector;
  return c;
}

const Term& find(const std::vector<Term>& terms, std::string_view prefix) {
  for (const Term& t : terms) {
    if (term_name(t).starts_with(prefix)) return t;
  }
  FAIL("no term starting with " << prefix);
  return terms.front();
}

OptimizerConfig optimizer(OptimizerKind kind) {
  OptimizerConfig o;
  o.kind = kind;
  return o;
}

}  // namespace

TEST_CASE("Worked number: distributed Muon is 2 + 4 + 8/dp = 7.00 B/param at dp 8") {
  // bf16 weight 2 B + fp32 main grad 4 B + (fp32 master 4 B + fp32 momentum 4 B) / 8.
  const double derived =
      resident_bytes_per_parameter({}, optimizer(OptimizerKind::distributed_muon), 8);
  CHECK(derived == 7.0);
  // A measured 7.87 B/param leaves a gap of +0.87 B/param (never absorbed).
  CHECK(7.87 - derived == Approx(0.87));
  // 19.25e9 params x 7.87 B = 151,497,500,000 B = 151,497,500,000 / 2^30 GiB = 141.09 GiB.
  const auto bytes = static_cast<std::int64_t>(19.25e9 * 7.87);
  CHECK(bytes == 151'497'500'000LL);
  CHECK(format_gib(bytes, 1) == "141.1 GiB");
}

TEST_CASE("Worked number: Adam is 18 B/param, distributed Adam 6 + 12/dp (Megatron's table)") {
  // 2 (bf16) + 4 (fp32 grad) + 4 (fp32 master) + 4 + 4 (exp_avg, exp_avg_sq) = 18.
  for (std::int64_t dp : {1, 2, 4, 8}) {
    CHECK(resident_bytes_per_parameter({}, optimizer(OptimizerKind::adam), dp) == 18.0);
  }
  CHECK(resident_bytes_per_parameter({}, optimizer(OptimizerKind::distributed_adam), 2) == 12.0);
  CHECK(resident_bytes_per_parameter({}, optimizer(OptimizerKind::distributed_adam), 4) == 9.0);
  CHECK(resident_bytes_per_parameter({}, optimizer(OptimizerKind::distributed_adam), 8) == 7.5);
  // fp32 params with fp32 grads have no separate master copy: 16, and 8 + 8/d distributed.
  const Precision fp32{.dense_weights = WeightDtype::fp32};
  CHECK(resident_bytes_per_parameter(fp32, optimizer(OptimizerKind::adam), 1) == 16.0);
  CHECK(resident_bytes_per_parameter(fp32, optimizer(OptimizerKind::distributed_adam), 4) == 10.0);
  // Muon without sharding: 2 + 4 + 4 + 4 = 14.
  CHECK(resident_bytes_per_parameter({}, optimizer(OptimizerKind::muon), 8) == 14.0);
}

TEST_CASE("Distributed Muon terms: dense over DP x CP, experts over expert DP, AdamW split") {
  // hidden 1000, routed experts 2000, router 40, embedding 100, norms 10 elements on this rank.
  const RoleCounts c = roles(1000, 2000, 40, 100, 10);
  const auto terms =
      resident_terms(c, {}, optimizer(OptimizerKind::distributed_muon), {.dense = 8, .expert = 2});
  // Weights all bf16: one term, 2 B x 3,150.
  CHECK(find(terms, "weights (bf16)").bytes == 6'300);
  CHECK(find(terms, "weights (bf16)").allocated_at == AllocationPoint::model_init);
  // Main grads: 4 B x 3,150, not sharded.
  CHECK(find(terms, "main gradient buffer (fp32)").bytes == 12'600);
  // Dense master: 1,150 elements over 8 -> ceil = 144 -> 576 B; experts 2,000 / 2 -> 4,000 B.
  const Term& dense_master = find(terms, "fp32 master weights: dense");
  CHECK(dense_master.bytes == 576);
  CHECK(dense_master.allocated_at == AllocationPoint::optimizer_init);
  CHECK(find(terms, "fp32 master weights: routed experts").bytes == 4'000);
  // Muon momentum, dense: hidden 1,000 + router 40 = 1,040 / 8 = 130 -> 4 B x 130 = 520 B.
  const Term& dense_muon = find(terms, "Muon momentum (fp32): dense");
  CHECK(dense_muon.bytes == 520);
  CHECK(dense_muon.allocated_at == AllocationPoint::first_step);
  // AdamW (non-Muon): embedding 100 + norms 10 = 110 / 8 -> 14 -> (4 + 4) B x 14 = 112 B.
  CHECK(find(terms, "AdamW exp_avg + exp_avg_sq (fp32): dense").bytes == 112);
  // Experts' momentum: 2,000 / 2 = 1,000 -> 4,000 B.
  CHECK(find(terms, "Muon momentum (fp32): routed experts").bytes == 4'000);
  for (const Term& t : terms) CHECK(t.tag == Tag::derived);
}

TEST_CASE("The Muon/AdamW split is configurable") {
  const RoleCounts c = roles(1000, 0, 40, 100, 10);
  OptimizerConfig o = optimizer(OptimizerKind::muon);
  o.muon_routers = false;
  const auto terms = resident_terms(c, {}, o, {});
  // Muon: hidden 1,000 x 4 B. AdamW: router 40 + embedding 100 + norms 10 = 150 x 8 B = 1,200.
  CHECK(find(terms, "Muon momentum").bytes == 4'000);
  CHECK(find(terms, "AdamW exp_avg").bytes == 1'200);
  o.muon_embedding_and_head = true;
  const auto with_head = resident_terms(c, {}, o, {});
  CHECK(find(with_head, "Muon momentum").bytes == 4 * 1'100);
  CHECK(find(with_head, "AdamW exp_avg").bytes == 8 * 50);
}

TEST_CASE("Adam is not sharded without the distributed optimizer") {
  const RoleCounts c = roles(800, 0, 0, 200, 0);
  const StateShards shards = state_shards(OptimizerKind::adam, ParallelLayout{.data_parallel = 8});
  CHECK(shards.dense == 1);
  const auto terms = resident_terms(c, {}, optimizer(OptimizerKind::adam), shards);
  // 1,000 params: 2 + 4 + 4 + 8 = 18 B each.
  std::int64_t sum = 0;
  for (const Term& t : terms) sum += t.bytes;
  CHECK(sum == 18'000);
  CHECK(find(terms, "Adam exp_avg + exp_avg_sq (fp32): dense").bytes == 8'000);
}

TEST_CASE("State shards: DP x CP for dense parameters, expert DP for routed experts") {
  // TP 2, CP 2, DP 4, EP 4: dense state over DP x CP = 8; expert DP = TP x CP x DP / EP = 4.
  const ParallelLayout layout{
      .tensor_parallel = 2, .context_parallel = 2, .expert_parallel = 4, .data_parallel = 4};
  const StateShards s = state_shards(OptimizerKind::distributed_adam, layout);
  CHECK(s.dense == 8);
  CHECK(s.expert == 4);
  // Kimi K3 production: TP 1, PP 8, EP 28, world 224 -> DP 28, expert DP 1.
  const ParallelLayout k3{.pipeline_parallel = 8, .expert_parallel = 28, .world_size = 224};
  const StateShards k = state_shards(OptimizerKind::distributed_muon, k3);
  CHECK(k.dense == 28);
  CHECK(k.expert == 1);
}

TEST_CASE("fp8 block-scaled and MXFP4 weights carry their scale tensors") {
  RoleCounts c = roles(3 * 128 * 128, 3'200, 0, 0, 0);
  c.weight_tensors[static_cast<int>(TensorRole::hidden_matrix)] = 3;
  const Precision p{.dense_weights = WeightDtype::fp8_block_scaled,
                    .expert_weights = WeightDtype::mxfp4};
  const auto terms = resident_terms(c, p, optimizer(OptimizerKind::adam), {});
  // fp8: 1 B x 49,152; scales 4 B x 49,152 / 16,384 = 3 blocks -> 12 B.
  CHECK(find(terms, "weights (fp8-block)").bytes == 49'152);
  CHECK(find(terms, "weight scales (fp8 e4m3, 128x128 block scales)").bytes == 12);
  // MXFP4: 0.5 B x 3,200 = 1,600 B; one e8m0 byte per 32 values -> 100 B.
  CHECK(find(terms, "weights (mxfp4)").bytes == 1'600);
  CHECK(find(terms, "weight scales (mxfp4)").bytes == 100);
  // Per-tensor fp8: one fp32 scale per weight tensor -> 4 B x 3.
  const auto per_tensor = resident_terms(c, {.dense_weights = WeightDtype::fp8_tensor_scaled},
                                         optimizer(OptimizerKind::adam), {});
  CHECK(find(per_tensor, "weight scales (fp8 e4m3, per-tensor scale)").bytes == 12);
  // Master weights still cover every non-fp32 parameter: 4 B x (49,152 + 3,200).
  std::int64_t master = 0;
  for (const Term& t : terms) {
    if (term_name(t).starts_with("fp32 master")) master += t.bytes;
  }
  CHECK(master == 4 * (49'152 + 3'200));
}

TEST_CASE("fp32 weights are their own master - precision-aware moments shrink the state") {
  const RoleCounts c = roles(1'000, 0, 0, 0, 0);
  const auto fp32 =
      resident_terms(c, {.dense_weights = WeightDtype::fp32}, optimizer(OptimizerKind::adam), {});
  for (const Term& t : fp32) CHECK(!term_name(t).starts_with("fp32 master"));
  OptimizerConfig o = optimizer(OptimizerKind::adam);
  o.moments = MomentDtype::bf16;
  o.master_weights = MasterDtype::fp16;
  const auto aware = resident_terms(c, {}, o, {});
  CHECK(find(aware, "fp16 master weights").bytes == 2'000);
  CHECK(find(aware, "Adam exp_avg + exp_avg_sq (bf16)").bytes == 4'000);
}

TEST_CASE("A bf16 cast copy is an explicit, lazily allocated term") {
  const RoleCounts c = roles(1'000, 0, 0, 100, 0);
  OptimizerConfig o = optimizer(OptimizerKind::distributed_muon);
  o.cast_copy = CastCopy::muon_group;
  const auto terms = resident_terms(c, {}, o, {.dense = 8, .expert = 1});
  const Term& copy = find(terms, "bf16 cast copy");
  CHECK(copy.bytes == 2'000);  // 2 B x 1,000 Muon-group elements, not sharded
  CHECK(copy.allocated_at == AllocationPoint::first_step);
}

namespace {

std::vector<Term> dummy_wgrad_terms(const Model& m, const ParallelLayout& layout,
                                    const Precision& precision, std::size_t stage,
                                    std::string_view stack = "") {
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan);
  const auto stages = stage_parameters(m, layout, *plan);
  std::string error;
  const auto releases = parse_stack(stack, error);
  REQUIRE(releases);
  std::vector<Term> out;
  append_dummy_wgrad_terms(m, stages[stage], layout, precision, *releases, out);
  return out;
}

}  // namespace

TEST_CASE("TE dummy weight gradients: one bf16 buffer per distinct weight shape") {
  const Model m = *find_preset("llama-3.1-8b");
  // PP 1, TP 1: linear_qkv [(32 + 2 x 8) x 128 = 6144, 4096] = 25,165,824; linear_proj
  // [4096, 4096] = 16,777,216; fc1 [2 x 14336, 4096] = 117,440,512; fc2 [4096, 14336] =
  // 58,720,256; LM head [128,256, 4096] = 525,336,576 (Megatron's ColumnParallelLinear takes the
  // same dummy). 32 layers share the four layer shapes: 743,440,384 elements x 2 B.
  auto terms = dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].bytes == 1'486'880'768LL);
  CHECK(terms[0].name_value == 5);
  CHECK(term_name(terms[0]) ==
        "TE dummy weight-gradient buffers (gradient-accumulation fusion, 5 distinct weight "
        "shapes)");
  CHECK(terms[0].family == Family::resident);
  CHECK(terms[0].allocated_at == AllocationPoint::first_step);
  // PP 4, stage 0: no head, the four layer shapes: 218,103,808 x 2 B. Independent of how many
  // layers the stage holds.
  terms = dummy_wgrad_terms(m, {.pipeline_parallel = 4}, {}, 0);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].bytes == 436'207'616LL);
  // TP 2 halves every split shape: qkv [3072, 4096], proj [4096, 2048], fc1 [14336, 4096],
  // fc2 [4096, 7168]: 109,051,904 x 2 B.
  terms = dummy_wgrad_terms(m, {.tensor_parallel = 2, .pipeline_parallel = 4}, {}, 0);
  CHECK(terms[0].bytes == 218'103'808LL);
  // --no-gradient-accumulation-fusion: autograd gets real weight gradients, no dummy buffer.
  CHECK(dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {.gradient_accumulation_fusion = false}, 0)
            .empty());
  // Its name carries the shape count, which differs between stages (4 on stage 0 of PP 4, 5 on
  // the last, which also holds the LM head): the chart's legend names the term once, with both.
  // By release: Megatron-core 0.13 gives the LM head a fresh buffer per backward (its own
  // ColumnParallelLinear takes TE's kept one from 0.14): the four layer shapes only,
  // 218,103,808 x 2 B; so does TE 2.2 for every layer (no kept buffer at all).
  terms = dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0, "megatron-core=0.13");
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].bytes == 436'207'616LL);
  CHECK(dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0, "megatron-core=0.14")[0].bytes ==
        1'486'880'768LL);
  CHECK(dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0, "te=2.2").empty());
  CHECK(dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0, "te=2.3")[0].bytes ==
        1'486'880'768LL);
  terms = dummy_wgrad_terms(m, {.pipeline_parallel = 1}, {}, 0);
  CHECK(term_name_has_number(terms[0]));
  CHECK(term_name_with_number(terms[0], "4 or 5") ==
        "TE dummy weight-gradient buffers (gradient-accumulation fusion, 4 or 5 distinct weight "
        "shapes)");
}

TEST_CASE("TE dummy weight gradients of an MoE stage: grouped experts share one shape each") {
  // Qwen3-30B-A3B (h 2048, 128 experts of I 768, GQA 32 x 4 kv heads x 128) at EP 8, PP 4,
  // stage 0: qkv [(32 + 8) x 128 = 5120, 2048] = 10,485,760; proj [2048, 4096] = 8,388,608;
  // expert fc1 [1536, 2048] = 3,145,728; expert fc2 [2048, 768] = 1,572,864. The 16 local experts
  // and 12 layers share them: 23,592,960 x 2 B = 47,185,920 B, whatever EP is.
  const Model m = *find_preset("qwen3-30b-a3b");
  for (std::int64_t ep : {1, 8}) {
    const auto terms = dummy_wgrad_terms(m, {.pipeline_parallel = 4, .expert_parallel = ep}, {}, 0);
    REQUIRE(terms.size() == 1);
    CHECK(terms[0].bytes == 47'185'920LL);
  }
  // Before TE 2.10 GroupedLinear allocates fresh buffers per backward: the attention's two
  // shapes only, 18,874,368 x 2 B.
  const auto old =
      dummy_wgrad_terms(m, {.pipeline_parallel = 4, .expert_parallel = 8}, {}, 0, "te=2.9");
  REQUIRE(old.size() == 1);
  CHECK(old[0].bytes == 37'748'736LL);
}

namespace {
LowPrecisionResident quantised(Fp8Recipe recipe, bool one_copy = false) {
  return {.quantisation = {.recipe = recipe, .one_copy = one_copy}};
}
}  // namespace

TEST_CASE("fp8 compute: TE's cached fp8 weight copies of bf16 weights, column-wise of fp8 ones") {
  const RoleCounts counts = roles(1'000'000, 500'000, 1'000, 2'000'000, 3'000);
  const OptimizerConfig adam = optimizer(OptimizerKind::adam);
  // bf16 compute: no cache.
  for (const Term& t : resident_terms(counts, {}, adam, {})) {
    CHECK(!term_name(t).starts_with("TE cached"));
  }
  // Per-tensor scaling on Hopper: row-wise data and its transpose of the 1,500,000 linear-layer
  // elements (the router and the embedding are not TE linears): 2 x 1 B x 1,500,000.
  auto terms = resident_terms(counts, {}, adam, {}, quantised(Fp8Recipe::tensor));
  const Term& cache = find(terms, "TE cached quantised weight copies");
  CHECK(cache.bytes == 3'000'000);
  CHECK(cache.allocated_at == AllocationPoint::first_step);
  CHECK(term_formula(cache) ==
        "[linear-layer weight elements=1,500,000] x [usages (row-wise, column-wise)=2] x 1 B "
        "(fp8 e4m3)");
  // sm100 / sm103 (TE >= 2.0): one array serves both usages: 1 B x 1,500,000.
  terms = resident_terms(counts, {}, adam, {}, quantised(Fp8Recipe::tensor, true));
  CHECK(find(terms, "TE cached quantised weight copies").bytes == 1'500'000);
  // MXFP8: + e8m0 scales, one per 32 values per usage: ceil(2 x 1,500,000 / 32) = 93,750.
  terms = resident_terms(counts, {}, adam, {}, quantised(Fp8Recipe::mxfp8));
  CHECK(find(terms, "TE quantised weight-copy scales").bytes == 93'750);
  // Block scaling: fp32 per 128 x 128 block per usage: ceil(3,000,000 / 16,384) x 4 = 184 x 4.
  terms = resident_terms(counts, {}, adam, {}, quantised(Fp8Recipe::block));
  CHECK(find(terms, "TE quantised weight-copy scales").bytes == 736);
  // NVFP4: 0.5 B per value per usage (1,500,000 B) and an e4m3 scale per 16 values per usage.
  terms = resident_terms(counts, {}, adam, {}, quantised(Fp8Recipe::nvfp4));
  CHECK(find(terms, "TE cached quantised weight copies").bytes == 1'500'000);
  CHECK(find(terms, "TE quantised weight-copy scales").bytes == 187'500);
  // fp8 primary dense weights: they are the row-wise copy; the transpose adds 1 B each on
  // Hopper and nothing on sm100. The bf16 routed experts still get a whole cached copy.
  const Precision fp8_dense{.dense_weights = WeightDtype::fp8_tensor_scaled};
  terms = resident_terms(counts, fp8_dense, adam, {}, quantised(Fp8Recipe::tensor));
  CHECK(find(terms, "TE column-wise (transposed) copies").bytes == 1'000'000);
  CHECK(find(terms, "TE cached quantised weight copies").bytes == 1'000'000);
  terms = resident_terms(counts, fp8_dense, adam, {}, quantised(Fp8Recipe::tensor, true));
  for (const Term& t : terms) CHECK(!term_name(t).starts_with("TE column-wise"));
  // MXFP8 primary weights: the column-wise usage is a second quantisation with its own e8m0
  // scales: 1 B x 1,000,000 data; scales ceil((2 x 500,000 + 1,000,000) / 32) = 62,500 (the
  // bf16 experts' two usages and the primary weights' column-wise one).
  const Precision mx_dense{.dense_weights = WeightDtype::mxfp8};
  terms = resident_terms(counts, mx_dense, adam, {}, quantised(Fp8Recipe::mxfp8));
  CHECK(find(terms, "TE column-wise (transposed) copies").bytes == 1'000'000);
  CHECK(find(terms, "TE quantised weight-copy scales").bytes == 62'500);
}

TEST_CASE("Delayed scaling keeps an amax history and scales per quantised GEMM") {
  // 10 hidden and 30 expert weight tensors: 40 GEMMs. Per GEMM fp32
  // [L, 3] + [3] forward and [L, 2] + [2] backward: (5 L + 5) x 4 B.
  RoleCounts counts = roles(1'000'000, 500'000, 1'000, 2'000'000, 3'000);
  counts.weight_tensors[static_cast<int>(TensorRole::hidden_matrix)] = 10;
  counts.weight_tensors[static_cast<int>(TensorRole::expert_matrix)] = 30;
  const std::int64_t gemms =
      counts.tensors(TensorRole::hidden_matrix) + counts.tensors(TensorRole::expert_matrix);
  LowPrecisionResident lp = quantised(Fp8Recipe::delayed);
  lp.amax_history_len = 1024;
  const auto terms = resident_terms(counts, {}, optimizer(OptimizerKind::adam), {}, lp);
  CHECK(find(terms, "TE delayed-scaling amax histories").bytes == gemms * (5 * 1024 + 5) * 4);
  for (const Term& t : resident_terms(counts, {}, optimizer(OptimizerKind::adam), {},
                                      quantised(Fp8Recipe::tensor))) {
    CHECK(!term_name(t).starts_with("TE delayed-scaling"));
  }
}

TEST_CASE("bf16 first/last layers: no cached copies, bf16 matrices under quantised primaries") {
  const RoleCounts counts = roles(1'000'000, 500'000, 1'000, 2'000'000, 3'000);
  LowPrecisionResident lp = quantised(Fp8Recipe::tensor);
  lp.bf16_layers.elements[static_cast<int>(TensorRole::hidden_matrix)] = 200'000;
  lp.bf16_layers.weight_tensors[static_cast<int>(TensorRole::hidden_matrix)] = 2;
  const Precision fp8_all{.dense_weights = WeightDtype::fp8_tensor_scaled,
                          .expert_weights = WeightDtype::fp8_tensor_scaled};
  const auto terms = resident_terms(counts, fp8_all, optimizer(OptimizerKind::adam), {}, lp);
  // Transposes of the 1,300,000 quantised elements only.
  CHECK(find(terms, "TE column-wise (transposed) copies").bytes == 1'300'000);
  // Weights: 1,300,000 fp8 values; the bf16 group adds the 200,000 bf16-layer elements to the
  // router, embedding, vectors and convolutions.
  std::int64_t weights = 0;
  for (const Term& t : terms) {
    if (t.info->text == TermText::weights) weights += t.bytes;
  }
  CHECK(weights == 1'300'000 + 2 * (200'000 + 1'000 + 2'000'000 + 3'000));
}
