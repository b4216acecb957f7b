#include "optimizer_transients.h"

#include <algorithm>

#include "resident_terms.h"
#include "units.h"

namespace stagemem {
namespace {

std::int64_t newton_schulz_bytes(const MatrixShape& m) {
  const std::int64_t small = std::min(m.rows, m.cols);
  const std::int64_t product = m.rows * m.cols;
  return product * 4 + (2 * product + 3 * small * small) * 2;
}

void consider(MatrixShape& best, std::int64_t rows, std::int64_t cols, std::string_view name) {
  const MatrixShape candidate{rows, cols, name};
  if (rows > 0 && cols > 0 && newton_schulz_bytes(candidate) > newton_schulz_bytes(best))
    best = candidate;
}

}  // namespace

MatrixShape largest_muon_matrix(const Model& m, const std::vector<LayerKind>& kinds,
                                const ParallelLayout& layout, const OptimizerConfig& optimizer) {
  MatrixShape best;
  const std::int64_t tp = std::max<std::int64_t>(1, layout.tensor_parallel);
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  const std::int64_t h = m.hidden;
  for (const LayerKind& kind : kinds) {
    switch (kind.attention) {
      case AttentionKind::gqa:
        consider(best, m.gqa.heads * m.gqa.head_dim / tp, h, "q projection");
        consider(best, h, m.gqa.heads * m.gqa.head_dim / tp, "attention output projection");
        break;
      case AttentionKind::mla: {
        const MlaShape& a = m.mla;
        const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
        if (a.q_lora_rank > 0) {
          consider(best, a.q_lora_rank, h, "MLA q down-projection");
          consider(best, a.heads * q_head / tp, a.q_lora_rank, "MLA q up-projection");
        } else {
          consider(best, a.heads * q_head / tp, h, "MLA q projection");
        }
        consider(best, a.kv_lora_rank + a.qk_rope_head_dim, h, "MLA kv down-projection");
        consider(best, a.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank,
                 "MLA kv up-projection");
        consider(best, h, a.heads * a.v_head_dim / tp, "MLA output projection");
        break;
      }
      case AttentionKind::kda:
        consider(best, m.kda.heads * m.kda.head_dim / tp, h, "KDA q/k/v projection");
        consider(best, h, m.kda.heads * m.kda.head_dim / tp, "KDA output projection");
        break;
    }
    if (kind.mlp == MlpKind::dense) {
      consider(best, m.dense_mlp.intermediate / tp, h, "MLP fc1 (gate or up)");
      consider(best, h, m.dense_mlp.intermediate / tp, "MLP fc2");
    } else {
      const MoeShape& e = m.moe;
      const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : h;
      if (optimizer.muon_expert_matrices) {
        consider(best, e.expert_intermediate / etp, width, "routed expert matrix");
      }
      if (optimizer.muon_routers) consider(best, e.routed_experts, h, "router");
      if (e.shared_experts > 0) {
        consider(best, e.shared_experts * e.shared_intermediate / tp, h, "shared experts fc1");
      }
      if (e.latent_hidden > 0) consider(best, e.latent_hidden, h, "latent projection");
    }
  }
  return best;
}

std::vector<Term> optimizer_step_transients(const Model& model, const StageParameters& stage,
                                            const ParallelLayout& layout,
                                            const OptimizerConfig& optimizer) {
  std::vector<Term> out;
  const StateShards shards = state_shards(optimizer.kind, layout);
  // Only a group whose state is sharded over more than one rank needs gathering after the step.
  const std::int64_t dense = shards.dense > 1 ? stage.per_rank_split.dense() : 0;
  const std::int64_t expert = shards.expert > 1 ? stage.per_rank_split.expert() : 0;
  if (is_distributed(optimizer.kind) && dense + expert > 0) {
    const std::int64_t parameters = dense + expert;
    out.push_back(Term{
        .name = "distributed-optimizer parameter all-gather buffers (full un-sharded bf16 group)",
        .formula = "2 B (bf16) x (" + group_digits(dense) + " dense parameters sharded over " +
                   group_digits(shards.dense) + " ranks + " + group_digits(expert) +
                   " routed-expert parameters sharded over " + group_digits(shards.expert) +
                   " ranks): every other rank's shard received plus the local flattened shard",
        .scaling = "parameters on this rank; independent of sequence and micro-batch",
        .family = Family::transient,
        .tag = Tag::derived,
        .allocated_at = AllocationPoint::optimizer_step,
        .bytes = 2 * parameters,
    });
  }
  if (is_muon(optimizer.kind)) {
    std::vector<LayerKind> kinds;
    for (const VirtualStage& chunk : stage.chunks) {
      for (std::int64_t i = chunk.first_layer; i < chunk.first_layer + chunk.layer_count; ++i) {
        kinds.push_back(model.layers[static_cast<std::size_t>(i)]);
      }
      if (chunk.mtp_layers > 0) kinds.push_back(model.mtp_layer);
    }
    const MatrixShape matrix = largest_muon_matrix(model, kinds, layout, optimizer);
    if (matrix.rows > 0) {
      const std::int64_t small = std::min(matrix.rows, matrix.cols);
      out.push_back(Term{
          .name = "Muon Newton-Schulz buffers (largest matrix: " + std::string(matrix.name) + ")",
          .formula = "[m x n=" + group_digits(matrix.rows) + " x " + group_digits(matrix.cols) +
                     "] x 4 B (fp32 update) + (2 m n + 3 min(m,n)^2 [=" + group_digits(small) +
                     "^2]) x 2 B (bf16 iteration: X, XX^T, its square, B, BX)",
          .scaling = "largest Muon matrix shard on this rank",
          .family = Family::transient,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_step,
          .bytes = newton_schulz_bytes(matrix),
      });
    }
  }
  return out;
}

}  // namespace stagemem
