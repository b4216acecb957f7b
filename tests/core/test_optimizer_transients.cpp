// Tests of optimizer_transients.h: the parameter all-gather by implementation, Muon's
// Newton-Schulz working set by TP mode, and the fp32 copy of bf16 main gradients.
#include "catch.h"
#include "memory/optimizer_transients.h"
#include "model/presets.h"
#include "parallel/layout.h"
#include "render/term_text.h"

using namespace stagemem;

namespace {

std::vector<StageParameters> stages_of(const Model& m, const ParallelLayout& layout) {
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan);
  return stage_parameters(m, layout, *plan);
}

const Term* find_term(const std::vector<Term>& terms, std::string_view prefix) {
  for (const Term& t : terms) {
    if (term_name(t).starts_with(prefix)) return &t;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Largest Muon matrix: Llama-3.1-8B's fused SwiGLU fc1 at TP 1 and TP 2") {
  const Model m = *find_preset("llama-3.1-8b");
  const OptimizerConfig muon{.kind = OptimizerKind::muon};
  // Megatron's Muon orthogonalises the fused gate+up weight as one [2 x 14336, 4096] matrix.
  MatrixShape shape = largest_muon_matrix(m, {m.layers[0]}, {}, muon);
  CHECK(shape.rows == 28'672);
  CHECK(shape.cols == 4'096);
  CHECK(shape.name == label_id("MLP fc1 (gate and up, fused)"));
  CHECK(shape.split_dim == -1);
  // At TP 2 fc1 is column-parallel: the shard is [14336, 4096], split along rows.
  shape = largest_muon_matrix(m, {m.layers[0]}, {.tensor_parallel = 2}, muon);
  CHECK(shape.rows == 14'336);
  CHECK(shape.cols == 4'096);
  CHECK(shape.split_dim == 0);
  CHECK(shape.ways == 2);
}

TEST_CASE("Newton-Schulz working set: 2 m^2 (not 3), and the full matrix under duplicated TP") {
  // TP 1, [28672, 4096]: s = 117,440,512. 4 s + (2 s + 2 x 4096^2) x 2
  // = 469,762,048 + (234,881,024 + 33,554,432) x 2 = 469,762,048 + 536,870,912 = 1,006,632,960.
  const MatrixShape whole{.rows = 28'672, .cols = 4'096};
  CHECK(newton_schulz_bytes(whole, MuonTpMode::duplicated) == 1'006'632'960LL);
  CHECK(newton_schulz_bytes(whole, MuonTpMode::blockwise) == 1'006'632'960LL);
  // TP 2 shard [14336, 4096] (s = 58,720,256), duplicated: (2 x 2 + 1) s x 4 = 1,174,405,120
  // (two gathered shards, their concatenation, the local update) + the full-matrix iteration
  // (2 x 117,440,512 + 2 x 4096^2) x 2 = 536,870,912 -> 1,711,276,032.
  const MatrixShape shard{.rows = 14'336, .cols = 4'096, .split_dim = 0, .ways = 2};
  CHECK(newton_schulz_bytes(shard, MuonTpMode::duplicated) == 1'711'276'032LL);
  // Blockwise: the shard alone: 4 s + (2 s + 2 x 4096^2) x 2 = 234,881,024 + 301,989,888.
  CHECK(newton_schulz_bytes(shard, MuonTpMode::blockwise) == 536'870'912LL);
  // Distributed: X X^T over the non-partitioned dimension (4096 columns): the same here.
  CHECK(newton_schulz_bytes(shard, MuonTpMode::distributed) == 536'870'912LL);
  // A row-parallel shard [4096, 7168] of fc2 (split along columns), distributed: d = 4096 rows.
  const MatrixShape fc2{.rows = 4'096, .cols = 7'168, .split_dim = 1, .ways = 2};
  const std::int64_t s = 4'096LL * 7'168;
  CHECK(newton_schulz_bytes(fc2, MuonTpMode::distributed) ==
        4 * s + (2 * s + 2 * 4'096LL * 4'096) * 2);
  // Property: duplicated never costs less than blockwise, and equals it without a split.
  for (std::int64_t ways : {1, 2, 4, 8}) {
    const MatrixShape m{.rows = 1'024, .cols = 512, .split_dim = ways > 1 ? 0 : -1, .ways = ways};
    CHECK(newton_schulz_bytes(m, MuonTpMode::duplicated) >=
          newton_schulz_bytes(m, MuonTpMode::blockwise));
    if (ways == 1) {
      CHECK(newton_schulz_bytes(m, MuonTpMode::duplicated) ==
            newton_schulz_bytes(m, MuonTpMode::blockwise));
    }
  }
  CHECK(newton_schulz_bytes(MatrixShape{}, MuonTpMode::duplicated) == 0);
}

TEST_CASE("Distributed Adam gathers in place: no optimizer-step transient") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 1, .data_parallel = 8};
  const auto stages = stages_of(m, layout);
  CHECK(optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::adam}).empty());
  // Megatron's bucketed all-gather writes into the bf16 parameter buffer itself.
  CHECK(optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::distributed_adam})
            .empty());
  // The param-gather choice does not apply to Adam.
  CHECK(optimizer_step_transients(
            m, stages[0], layout,
            {.kind = OptimizerKind::distributed_adam, .param_gather = ParamGather::layer_wise})
            .empty());
}

TEST_CASE("Distributed Muon's parameter gather by implementation") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 1, .data_parallel = 8};
  const auto stages = stages_of(m, layout);
  const std::int64_t params = 8'030'261'248LL;  // the whole model on one stage, all dense
  OptimizerConfig muon{.kind = OptimizerKind::distributed_muon};
  // buffer (current Megatron): in place, only Newton-Schulz remains (fc1 [28672, 4096]).
  auto terms = optimizer_step_transients(m, stages[0], layout, muon);
  REQUIRE(terms.size() == 1);
  CHECK(term_name(terms[0]).starts_with("Muon Newton-Schulz buffers"));
  CHECK(terms[0].bytes == 1'006'632'960LL);
  // layer-wise (legacy): the whole bf16 dense group, 2 x 8,030,261,248.
  muon.param_gather = ParamGather::layer_wise;
  terms = optimizer_step_transients(m, stages[0], layout, muon);
  REQUIRE(terms.size() == 2);
  CHECK(terms[0].bytes == 2 * params);
  CHECK(terms[0].family == Family::transient);
  CHECK(terms[0].allocated_at == AllocationPoint::optimizer_step);
  CHECK(term_formula(terms[0]).find("layer-wise") != std::string::npos);
  // layer-wise-2026-01: also a slot for the own rank: 2 x (G + ceil(G / 8)) = 2 x 9,034,043,904.
  muon.param_gather = ParamGather::layer_wise_2026_01;
  terms = optimizer_step_transients(m, stages[0], layout, muon);
  CHECK(terms[0].bytes == 2 * (params + params / 8));
  CHECK(terms[0].bytes == 18'068'087'808LL);
}

TEST_CASE("Layer-wise gather takes the larger group, not dense + expert") {
  // Qwen3-30B-A3B at EP 8, DP 16 (world 128): dense group over DP 16, experts over EDP 2.
  const Model m = *find_preset("qwen3-30b-a3b");
  const ParallelLayout layout{.pipeline_parallel = 1, .expert_parallel = 8, .world_size = 16};
  const auto stages = stages_of(m, layout);
  const std::int64_t dense = stages[0].per_rank_split.dense();
  const std::int64_t expert = stages[0].per_rank_split.expert();
  REQUIRE(expert > dense);
  const OptimizerConfig muon{.kind = OptimizerKind::distributed_muon,
                             .param_gather = ParamGather::layer_wise};
  const auto terms = optimizer_step_transients(m, stages[0], layout, muon);
  const Term* gather = find_term(terms, "distributed-optimizer parameter all-gather");
  REQUIRE(gather != nullptr);
  CHECK(gather->bytes == 2 * std::max(dense, expert));
}

TEST_CASE("fp32 copy of bf16 main gradients at the optimizer step") {
  const Model m = *find_preset("llama-3.1-8b");
  const ParallelLayout layout{.pipeline_parallel = 1, .data_parallel = 8};
  const auto stages = stages_of(m, layout);
  const Precision bf16_grads{.grads = GradDtype::bf16};
  // fp32 grads: .float() is the buffer itself, no copy.
  CHECK(optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::distributed_adam})
            .empty());
  // bf16 grads, distributed: 4 B x ceil(8,030,261,248 / 8) = 4 x 1,003,782,656.
  auto terms = optimizer_step_transients(m, stages[0], layout,
                                         {.kind = OptimizerKind::distributed_adam}, bf16_grads);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].bytes == 4 * 1'003'782'656LL);
  CHECK(term_name(terms[0]) == "fp32 copy of the bf16 main gradients (optimizer step)");
  // Non-distributed (Float16OptimizerWithFloat16Params): every element.
  terms =
      optimizer_step_transients(m, stages[0], layout, {.kind = OptimizerKind::adam}, bf16_grads);
  REQUIRE(terms.size() == 1);
  CHECK(terms[0].bytes == 4 * 8'030'261'248LL);
  // The precision-aware optimizer (bf16 moments) uses decoupled_grad: no copy.
  CHECK(optimizer_step_transients(m, stages[0], layout,
                                  {.kind = OptimizerKind::adam, .moments = MomentDtype::bf16},
                                  bf16_grads)
            .empty());
}
