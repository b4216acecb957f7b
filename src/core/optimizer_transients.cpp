#include "optimizer_transients.h"

#include <algorithm>

#include "resident_terms.h"
#include "term_info.h"

namespace stagemem {
namespace {

std::int64_t newton_schulz_bytes(const MatrixShape& m) {
  const std::int64_t small = std::min(m.rows, m.cols);
  const std::int64_t product = m.rows * m.cols;
  return product * 4 + (2 * product + 3 * small * small) * 2;
}

constexpr TermInfo term_parameter_all_gather{
    "distributed-optimizer parameter all-gather buffers (full un-sharded bf16 group)",
    "parameters on this rank; independent of sequence and micro-batch",
    TermText::parameter_all_gather};
constexpr TermInfo term_newton_schulz{"Muon Newton-Schulz buffers",
                                      "largest Muon matrix shard on this rank",
                                      TermText::newton_schulz};

void consider(MatrixShape& best, std::int64_t rows, std::int64_t cols, Label name) {
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
        consider(best, m.gqa.heads * m.gqa.head_dim / tp, h, label_id("q projection"));
        consider(best, h, m.gqa.heads * m.gqa.head_dim / tp,
                 label_id("attention output projection"));
        break;
      case AttentionKind::mla: {
        const MlaShape& a = m.mla;
        const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
        if (a.q_lora_rank > 0) {
          consider(best, a.q_lora_rank, h, label_id("MLA q down-projection"));
          consider(best, a.heads * q_head / tp, a.q_lora_rank, label_id("MLA q up-projection"));
        } else {
          consider(best, a.heads * q_head / tp, h, label_id("MLA q projection"));
        }
        consider(best, a.kv_lora_rank + a.qk_rope_head_dim, h, label_id("MLA kv down-projection"));
        consider(best, a.heads * (a.qk_nope_head_dim + a.v_head_dim) / tp, a.kv_lora_rank,
                 label_id("MLA kv up-projection"));
        consider(best, h, a.heads * a.v_head_dim / tp, label_id("MLA output projection"));
        break;
      }
      case AttentionKind::kda:
        consider(best, m.kda.heads * m.kda.head_dim / tp, h, label_id("KDA q/k/v projection"));
        consider(best, h, m.kda.heads * m.kda.head_dim / tp, label_id("KDA output projection"));
        break;
    }
    if (kind.mlp == MlpKind::dense) {
      consider(best, m.dense_mlp.intermediate / tp, h, label_id("MLP fc1 (gate or up)"));
      consider(best, h, m.dense_mlp.intermediate / tp, label_id("MLP fc2"));
    } else {
      const MoeShape& e = m.moe;
      const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : h;
      if (optimizer.muon_expert_matrices) {
        consider(best, e.expert_intermediate / etp, width, label_id("routed expert matrix"));
      }
      if (optimizer.muon_routers) consider(best, e.routed_experts, h, label_id("router"));
      if (e.shared_experts > 0) {
        consider(best, e.shared_experts * e.shared_intermediate / tp, h,
                 label_id("shared experts fc1"));
      }
      if (e.latent_hidden > 0) consider(best, e.latent_hidden, h, label_id("latent projection"));
    }
  }
  return best;
}

std::vector<Term> optimizer_step_transients(const Model& model, const StageParameters& stage,
                                            const ParallelLayout& layout,
                                            const OptimizerConfig& optimizer) {
  std::vector<Term> out;
  append_optimizer_step_transients(model, stage, layout, optimizer, out);
  return out;
}

void append_optimizer_step_transients(const Model& model, const StageParameters& stage,
                                      const ParallelLayout& layout,
                                      const OptimizerConfig& optimizer, std::vector<Term>& out) {
  const StateShards shards = state_shards(optimizer.kind, layout);
  // Only a group whose state is sharded over more than one rank needs gathering after the step.
  const std::int64_t dense = shards.dense > 1 ? stage.per_rank_split.dense() : 0;
  const std::int64_t expert = shards.expert > 1 ? stage.per_rank_split.expert() : 0;
  if (is_distributed(optimizer.kind) && dense + expert > 0) {
    out.push_back(Term{
        .info = &term_parameter_all_gather,
        .bytes = 2 * (dense + expert),
        .formula =
            Formula().number(dense).number(shards.dense).number(expert).number(shards.expert),
        .family = Family::transient,
        .tag = Tag::derived,
        .allocated_at = AllocationPoint::optimizer_step,
    });
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
          .bytes = newton_schulz_bytes(matrix),
          .formula = Formula().number(matrix.name).number(matrix.rows).number(matrix.cols),
          .family = Family::transient,
          .tag = Tag::derived,
          .allocated_at = AllocationPoint::optimizer_step,
      });
    }
  }
}

}  // namespace stagemem
