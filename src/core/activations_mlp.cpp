// Stored activations of the MLP half of a decoder layer: the MLP norm and a dense MLP (SwiGLU or
// GeLU) or an MoE block (router, permuted tokens, expert GEMMs, combine, latent projections,
// shared experts), with Megatron's alltoall token dispatcher.
#include <cmath>

#include "activation_pieces.h"

namespace stagemem {
namespace {

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

// Tokens of one rank before dispatch: its sequence-parallel shard (Megatron requires sequence
// parallelism for MoE with TP > 1), or all n without TP.
Formula local_tokens(const TokenShape& s) {
  Formula f;
  f.times("S/CP", s.sequence).times("B", s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) f.per("TP (SP)", s.tensor_parallel);
  return f;
}

void add_mlp_norm(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s) {
  out.push_back(make_piece("MLP norm input (residual stream after attention)",
                           hidden_tokens(s, m.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)"));
  out.push_back(make_piece("MLP norm output (MLP input)",
                           hidden_tokens(s, m.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)", module_bits({RecomputeModule::layernorm})));
}

void add_dense(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s) {
  const DenseMlpShape& d = m.dense_mlp;
  const std::uint32_t whole = module_bits({RecomputeModule::mlp});
  if (d.activation == MlpActivation::swiglu) {
    out.push_back(
        make_piece("fc1 output, gate and up halves (SwiGLU input)",
                   split_tokens(s, 2 * d.intermediate, "2 x intermediate").bytes(bf16, "bf16"),
                   "S/CP, B, intermediate/TP", whole));
    out.push_back(make_piece("SwiGLU output (fc2 input)",
                             split_tokens(s, d.intermediate, "intermediate").bytes(bf16, "bf16"),
                             "S/CP, B, intermediate/TP", whole));
  } else {
    out.push_back(make_piece("fc1 output (GeLU input)",
                             split_tokens(s, d.intermediate, "intermediate").bytes(bf16, "bf16"),
                             "S/CP, B, intermediate/TP", whole));
    out.push_back(make_piece("GeLU output (fc2 input)",
                             split_tokens(s, d.intermediate, "intermediate").bytes(bf16, "bf16"),
                             "S/CP, B, intermediate/TP", whole));
  }
}

void add_moe(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t, const ParallelLayout& layout) {
  const MoeShape& e = m.moe;
  const std::uint32_t whole = module_bits({RecomputeModule::moe});
  const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m.hidden;
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  // Router: logits in the activation dtype, scores (sigmoid / softmax) in fp32 for the top-k.
  out.push_back(
      make_piece("router logits",
                 Formula(local_tokens(s)).times("experts", e.routed_experts).bytes(bf16, "bf16"),
                 "S/CP, B (/TP with SP), experts", whole));
  out.push_back(
      make_piece("router scores (fp32)",
                 Formula(local_tokens(s)).times("experts", e.routed_experts).bytes(fp32, "fp32"),
                 "S/CP, B (/TP with SP), experts", whole));
  if (e.latent_hidden > 0) {
    out.push_back(
        make_piece("latent down-projection output (latent norm input)",
                   Formula(local_tokens(s)).times("latent", e.latent_hidden).bytes(bf16, "bf16"),
                   "S/CP, B (/TP with SP), latent", whole));
    if (e.latent_norm) {
      out.push_back(make_piece(
          "latent norm output (dispatch input)",
          Formula(local_tokens(s)).times("latent", e.latent_hidden).bytes(bf16, "bf16"),
          "S/CP, B (/TP with SP), latent", whole | module_bits({RecomputeModule::layernorm})));
    }
    out.push_back(
        make_piece("combined latent (latent up-projection input)",
                   Formula(local_tokens(s)).times("latent", e.latent_hidden).bytes(bf16, "bf16"),
                   "S/CP, B (/TP with SP), latent", whole));
  }
  // Tokens an expert rank processes: every local token goes to top-k experts; with balanced
  // routing each EP rank receives as many copies as it sends; ETP gathers them over ETP.
  const auto routed = [&] {
    Formula f = local_tokens(s);
    f.times("top-k", e.top_k);
    if (etp > 1) f.times("ETP (token gather)", etp);
    return f;
  };
  // The imbalance scenario multiplies the busiest rank's tokens, rounded up to whole tokens.
  const double imbalance = t.routing_imbalance;
  const auto with_imbalance = [&](ActivationPiece p, std::int64_t per_token_bytes) {
    if (imbalance > 1.0) {
      const std::int64_t tokens = p.bytes / per_token_bytes;
      const auto busiest =
          static_cast<std::int64_t>(std::ceil(static_cast<double>(tokens) * imbalance));
      p.bytes = busiest * per_token_bytes;
      p.formula += " x imbalance scenario " + std::to_string(imbalance).substr(0, 6) +
                   " (rounded up to whole tokens)";
    }
    return p;
  };
  out.push_back(with_imbalance(make_piece("dispatched tokens (expert fc1 input)",
                                          routed().times("expert width", width).bytes(bf16, "bf16"),
                                          "S/CP, B (/TP with SP), top-k, expert width", whole),
                               width * bf16));
  out.push_back(with_imbalance(
      make_piece("expert fc1 output, gate and up halves",
                 routed()
                     .times("2 x expert intermediate/ETP", 2 * e.expert_intermediate / etp)
                     .bytes(bf16, "bf16"),
                 "S/CP, B (/TP with SP), top-k, expert intermediate", whole),
      2 * e.expert_intermediate / etp * bf16));
  out.push_back(
      with_imbalance(make_piece("expert activation output (expert fc2 input)",
                                routed()
                                    .times("expert intermediate/ETP", e.expert_intermediate / etp)
                                    .bytes(bf16, "bf16"),
                                "S/CP, B (/TP with SP), top-k, expert intermediate",
                                whole | module_bits({RecomputeModule::moe_act})),
                     e.expert_intermediate / etp * bf16));
  out.push_back(
      with_imbalance(make_piece("expert outputs before probability weighting (combine input)",
                                routed().times("expert width", width).bytes(bf16, "bf16"),
                                "S/CP, B (/TP with SP), top-k, expert width", whole),
                     width * bf16));
  out.push_back(make_piece("routing probabilities of the dispatched tokens (fp32)",
                           Formula(local_tokens(s)).times("top-k", e.top_k).bytes(fp32, "fp32"),
                           "S/CP, B (/TP with SP), top-k", whole));
  if (e.shared_experts > 0) {
    const std::uint32_t shared = whole | module_bits({RecomputeModule::shared_experts});
    const std::int64_t inter = e.shared_experts * e.shared_intermediate;
    out.push_back(
        make_piece("shared experts fc1 output, gate and up halves",
                   split_tokens(s, 2 * inter, "2 x shared intermediate").bytes(bf16, "bf16"),
                   "S/CP, B, shared intermediate/TP", shared));
    out.push_back(make_piece("shared experts activation output (fc2 input)",
                             split_tokens(s, inter, "shared intermediate").bytes(bf16, "bf16"),
                             "S/CP, B, shared intermediate/TP", shared));
  }
}

}  // namespace

std::vector<ActivationPiece> mlp_pieces(const Model& model, MlpKind kind, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        const ParallelLayout& layout) {
  std::vector<ActivationPiece> out;
  add_mlp_norm(out, model, shape);
  if (kind == MlpKind::dense) {
    add_dense(out, model, shape);
  } else {
    add_moe(out, model, shape, training, layout);
  }
  if (training.dropout) {
    out.push_back(make_piece("MLP output dropout mask",
                             hidden_tokens(shape, model.hidden, "h").bytes(1, "uint8"),
                             "S/CP, B, h (/TP with SP)"));
  }
  return out;
}

}  // namespace stagemem
