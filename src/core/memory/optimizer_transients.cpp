#include "memory/optimizer_transients.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string_view>

#include "memory/resident_terms.h"
#include "report/term_info.h"

namespace stagemem {
namespace {

constexpr TermInfo term_parameter_all_gather{
    "distributed-optimizer parameter all-gather buffers (layer-wise: the larger un-sharded bf16 "
    "group)",
    "parameters on this rank; independent of sequence and micro-batch",
    TermText::parameter_all_gather};
constexpr TermInfo term_newton_schulz{"Muon Newton-Schulz buffers",
                                      "largest Muon matrix on this rank (the full matrix under "
                                      "duplicated TP mode)",
                                      TermText::newton_schulz};
constexpr TermInfo term_fp32_grad_copy{
    "fp32 copy of the bf16 main gradients (optimizer step)",
    "parameters in this rank's optimizer shard; independent of sequence and micro-batch",
    TermText::generic};

// Ranks' shards are compared by the bytes they would cost, so ties keep the first candidate.
void consider(MatrixShape& best, MuonTpMode mode, const MatrixShape& candidate) {
  if (candidate.rows > 0 && candidate.cols > 0 &&
      newton_schulz_bytes(candidate, mode) > newton_schulz_bytes(best, mode)) {
    best = candidate;
  }
}

}  // namespace

std::int64_t newton_schulz_bytes(const MatrixShape& m, MuonTpMode mode) {
  if (m.rows <= 0 || m.cols <= 0) return 0;
  const std::int64_t shard = saturating_product({m.rows, m.cols});
  const bool split = m.split_dim >= 0 && m.ways > 1;
  if (split && mode == MuonTpMode::duplicated) {
    // TP fp32 gathered shards + their concatenation (TP s each) + the local fp32 update (s), then
    // the bf16 iteration on the full matrix.
    const std::int64_t rows = m.split_dim == 0 ? saturating_product({m.rows, m.ways}) : m.rows;
    const std::int64_t cols = m.split_dim == 1 ? saturating_product({m.cols, m.ways}) : m.cols;
    const std::int64_t small = std::min(rows, cols);
    const std::int64_t full = saturating_product({rows, cols});
    return saturating_sum({saturating_product({2 * m.ways + 1, shard, 4}),
                           saturating_product({full, 4}), saturating_product({small, small, 4})});
  }
  // The non-partitioned dimension is whitened under the distributed mode.
  const std::int64_t small = split && mode == MuonTpMode::distributed
                                 ? (m.split_dim == 0 ? m.cols : m.rows)
                                 : std::min(m.rows, m.cols);
  return saturating_sum({saturating_product({shard, 4}), saturating_product({shard, 4}),
                         saturating_product({small, small, 4})});
}

MatrixShape largest_muon_matrix(const Model& m, const std::vector<LayerKind>& kinds,
                                const ParallelLayout& layout, const OptimizerConfig& optimizer) {
  MatrixShape best;
  const MuonTpMode mode = optimizer.muon_tp_mode;
  const std::int64_t tp = std::max<std::int64_t>(1, layout.tensor_parallel);
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  const std::int64_t h = m.hidden;
  // Column-parallel [out/TP, in] (split_dim 0) and row-parallel [out, in/TP] (split_dim 1).
  const auto column = [&](std::int64_t out, std::int64_t in, Label name, std::int64_t ways) {
    consider(best, mode,
             MatrixShape{.rows = out / ways,
                         .cols = in,
                         .name = name,
                         .split_dim = ways > 1 ? 0 : -1,
                         .ways = ways});
  };
  const auto row = [&](std::int64_t out, std::int64_t in, Label name, std::int64_t ways) {
    consider(best, mode,
             MatrixShape{.rows = out,
                         .cols = in / ways,
                         .name = name,
                         .split_dim = ways > 1 ? 1 : -1,
                         .ways = ways});
  };
  const auto replicated = [&](std::int64_t out, std::int64_t in, Label name) {
    consider(best, mode, MatrixShape{.rows = out, .cols = in, .name = name});
  };
  for (const LayerKind& kind : kinds) {
    switch (kind.attention) {
      case AttentionKind::gqa:
        // muon_split_qkv: q, k and v are orthogonalised apart; q is the largest.
        column(m.gqa.heads * m.gqa.head_dim, h, label_id("q projection"), tp);
        row(h, m.gqa.heads * m.gqa.head_dim, label_id("attention output projection"), tp);
        break;
      case AttentionKind::mla: {
        const MlaShape& a = m.mla;
        const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
        // The down-projections are not split under TP (TE `duplicated` parallel mode).
        if (a.q_lora_rank > 0) {
          replicated(a.q_lora_rank, h, label_id("MLA q down-projection"));
          column(a.heads * q_head, a.q_lora_rank, label_id("MLA q up-projection"), tp);
        } else {
          column(a.heads * q_head, h, label_id("MLA q projection"), tp);
        }
        replicated(a.kv_lora_rank + a.qk_rope_head_dim, h, label_id("MLA kv down-projection"));
        column(a.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank,
               label_id("MLA kv up-projection"), tp);
        row(h, a.heads * a.v_head_dim, label_id("MLA output projection"), tp);
        break;
      }
      case AttentionKind::kda:
        column(m.kda.heads * m.kda.head_dim, h, label_id("KDA q/k/v projection"), tp);
        row(h, m.kda.heads * m.kda.head_dim, label_id("KDA output projection"), tp);
        break;
    }
    if (kind.mlp == MlpKind::dense) {
      const bool gated = m.dense_mlp.activation == MlpActivation::swiglu;
      // A gated fc1 is one fused [2I, h] weight; Muon does not split it.
      column((gated ? 2 : 1) * m.dense_mlp.intermediate, h,
             gated ? label_id("MLP fc1 (gate and up, fused)") : label_id("MLP fc1"), tp);
      row(h, m.dense_mlp.intermediate, label_id("MLP fc2"), tp);
    } else {
      const MoeShape& e = m.moe;
      const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : h;
      if (optimizer.muon_expert_matrices) {
        // Routed experts are gated (SwiGLU): TE's grouped linear keeps fc1 as [2I/ETP, w].
        column(2 * e.expert_intermediate, width, label_id("routed expert fc1 (gate and up, fused)"),
               etp);
        row(width, e.expert_intermediate, label_id("routed expert fc2"), etp);
      }
      if (optimizer.muon_routers) replicated(e.routed_experts, h, label_id("router"));
      if (e.shared_experts > 0) {
        column(2 * e.shared_experts * e.shared_intermediate, h,
               label_id("shared experts fc1 (gate and up, fused)"), tp);
      }
      if (e.latent_hidden > 0) replicated(e.latent_hidden, h, label_id("latent projection"));
    }
  }
  return best;
}

std::vector<Term> optimizer_step_transients(const Model& model, const StageParameters& stage,
                                            const ParallelLayout& layout,
                                            const OptimizerConfig& optimizer,
                                            const Precision& precision) {
  std::vector<Term> out;
  append_optimizer_step_transients(model, stage, layout, optimizer, out, precision);
  return out;
}

void append_optimizer_step_transients(const Model& model, const StageParameters& stage,
                                      const ParallelLayout& layout,
                                      const OptimizerConfig& optimizer, std::vector<Term>& out,
                                      const Precision& precision,
                                      const StateShards* resolved_shards) {
  const StateShards shards =
      resolved_shards != nullptr ? *resolved_shards : state_shards(optimizer.kind, layout);
  // Only distributed Muon's layer-wise gather allocates: one group at a time, and only a group
  // whose state is sharded over more than one rank.
  if (optimizer.kind == OptimizerKind::distributed_muon &&
      optimizer.param_gather != ParamGather::buffer) {
    const std::int64_t dense = shards.dense > 1 ? stage.per_rank_split.dense() : 0;
    const std::int64_t expert = shards.expert > 1 ? stage.per_rank_split.expert() : 0;
    const bool own_slot = optimizer.param_gather == ParamGather::layer_wise_2026_01;
    const auto group_bytes = [&](std::int64_t elements, std::int64_t group_shards) {
      if (elements == 0) return std::int64_t{0};
      return saturating_product(
          {2, own_slot ? saturating_sum({elements, ceil_div(elements, group_shards)}) : elements});
    };
    const std::int64_t bytes =
        std::max(group_bytes(dense, shards.dense), group_bytes(expert, shards.expert));
    if (bytes > 0) {
      out.push_back(Term{
          .info = &term_parameter_all_gather,
          .bytes = bytes,
          .formula = Formula()
                         .number(dense)
                         .number(shards.dense)
                         .number(expert)
                         .number(shards.expert)
                         .number(static_cast<std::int64_t>(optimizer.param_gather)),
          .family = Family::transient,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_step,
      });
    }
  }
  const bool precision_aware =
      optimizer.master_weights != MasterDtype::fp32 || optimizer.moments != MomentDtype::fp32;
  if (precision.grads == GradDtype::bf16 && !precision_aware) {
    // 4 B x the shard of every group: ceil(dense / shards) + ceil(expert / shards).
    const std::int64_t dense = ceil_div(stage.per_rank_split.dense(), shards.dense);
    const std::int64_t expert = ceil_div(stage.per_rank_split.expert(), shards.expert);
    const std::int64_t elements = dense + expert;
    if (elements > 0) {
      out.push_back(Term{
          .info = &term_fp32_grad_copy,
          .bytes = saturating_product({elements, 4}),
          .formula = Formula()
                         .times(label_id("elements in this rank's optimizer shard"), elements)
                         .bytes(4, label_id("fp32")),
          .family = Family::transient,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_step,
      });
    }
  }
  if (is_muon(optimizer.kind)) {
    // The distinct kinds in order of first appearance: repeats only re-offer the same matrices.
    std::vector<LayerKind> kinds;
    const auto offer = [&](LayerKind kind) {
      for (const LayerKind& k : kinds) {
        if (k.attention == kind.attention && k.mlp == kind.mlp) return;
      }
      kinds.push_back(kind);
    };
    for (const VirtualStage& chunk : stage.chunks) {
      for (std::int64_t i = chunk.first_layer; i < chunk.first_layer + chunk.layer_count; ++i) {
        offer(model.layers[static_cast<std::size_t>(i)]);
      }
      if (chunk.mtp_layers > 0) offer(model.mtp_layer);
    }
    const MatrixShape matrix = largest_muon_matrix(model, kinds, layout, optimizer);
    if (matrix.rows > 0) {
      out.push_back(Term{
          .info = &term_newton_schulz,
          .bytes = newton_schulz_bytes(matrix, optimizer.muon_tp_mode),
          .formula = Formula()
                         .number(matrix.name)
                         .number(matrix.rows)
                         .number(matrix.cols)
                         .number(matrix.split_dim)
                         .number(matrix.ways)
                         .number(static_cast<std::int64_t>(optimizer.muon_tp_mode)),
          .family = Family::transient,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_step,
      });
    }
  }
}

}  // namespace stagemem
