// Stored activations of the MLP half of a decoder layer: the MLP norm and a dense MLP (SwiGLU or
// GeLU) or an MoE block (router, permuted tokens, expert GEMMs, combine, latent projections,
// shared experts), with Megatron's alltoall token dispatcher.
#include <cmath>

#include "activation_pieces.h"

namespace stagemem {
namespace {

constexpr TermInfo term_mlp_norm_input_residual_stream_after_attention{
    "MLP norm input (residual stream after attention)", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_mlp_norm_output_mlp_input{"MLP norm output (MLP input)",
                                                  "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_fc1_output_gate_and_up_halves_swiglu_input{
    "fc1 output, gate and up halves (SwiGLU input)", "S/CP, B, intermediate/TP"};
constexpr TermInfo term_swiglu_output_fc2_input{"SwiGLU output (fc2 input)",
                                                "S/CP, B, intermediate/TP"};
constexpr TermInfo term_fc1_output_gelu_input{"fc1 output (GeLU input)",
                                              "S/CP, B, intermediate/TP"};
constexpr TermInfo term_gelu_output_fc2_input{"GeLU output (fc2 input)",
                                              "S/CP, B, intermediate/TP"};
constexpr TermInfo term_router_logits{"router logits", "S/CP, B (/TP with SP), experts"};
constexpr TermInfo term_router_scores_fp32{"router scores (fp32)",
                                           "S/CP, B (/TP with SP), experts"};
constexpr TermInfo term_latent_down_projection_output_latent_norm_input{
    "latent down-projection output (latent norm input)", "S/CP, B (/TP with SP), latent"};
constexpr TermInfo term_latent_norm_output_dispatch_input{"latent norm output (dispatch input)",
                                                          "S/CP, B (/TP with SP), latent"};
constexpr TermInfo term_combined_latent_latent_up_projection_input{
    "combined latent (latent up-projection input)", "S/CP, B (/TP with SP), latent"};
constexpr TermInfo term_dispatched_tokens_expert_fc1_input{
    "dispatched tokens (expert fc1 input)", "S/CP, B (/TP with SP), top-k, expert width"};
constexpr TermInfo term_expert_fc1_output_gate_and_up_halves{
    "expert fc1 output, gate and up halves", "S/CP, B (/TP with SP), top-k, expert intermediate"};
constexpr TermInfo term_expert_activation_output_expert_fc2_input{
    "expert activation output (expert fc2 input)",
    "S/CP, B (/TP with SP), top-k, expert intermediate"};
constexpr TermInfo term_expert_outputs_before_probability_weighting_comb{
    "expert outputs before probability weighting (combine input)",
    "S/CP, B (/TP with SP), top-k, expert width"};
constexpr TermInfo term_routing_probabilities_of_the_dispatched_tokens_f{
    "routing probabilities of the dispatched tokens (fp32)", "S/CP, B (/TP with SP), top-k"};
constexpr TermInfo term_shared_experts_fc1_output_gate_and_up_halves{
    "shared experts fc1 output, gate and up halves", "S/CP, B, shared intermediate/TP"};
constexpr TermInfo term_shared_experts_activation_output_fc2_input{
    "shared experts activation output (fc2 input)", "S/CP, B, shared intermediate/TP"};
constexpr TermInfo term_mlp_output_dropout_mask{"MLP output dropout mask",
                                                "S/CP, B, h (/TP with SP)"};

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

// Tokens of one rank before dispatch: its sequence-parallel shard (Megatron requires sequence
// parallelism for MoE with TP > 1), or all n without TP.
Formula local_tokens(const TokenShape& s) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence).times(label_id("B"), s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) f.per(label_id("TP (SP)"), s.tensor_parallel);
  return f;
}

void add_mlp_norm(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s) {
  out.push_back(
      make_piece(term_mlp_norm_input_residual_stream_after_attention,
                 hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(term_mlp_norm_output_mlp_input,
                           hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           module_bits({RecomputeModule::layernorm})));
}

void add_dense(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s) {
  const DenseMlpShape& d = m.dense_mlp;
  const std::uint32_t whole = module_bits({RecomputeModule::mlp});
  if (d.activation == MlpActivation::swiglu) {
    out.push_back(make_piece(term_fc1_output_gate_and_up_halves_swiglu_input,
                             split_tokens(s, 2 * d.intermediate, label_id("2 x intermediate"))
                                 .bytes(bf16, label_id("bf16")),
                             whole));
    out.push_back(make_piece(
        term_swiglu_output_fc2_input,
        split_tokens(s, d.intermediate, label_id("intermediate")).bytes(bf16, label_id("bf16")),
        whole));
  } else {
    out.push_back(make_piece(
        term_fc1_output_gelu_input,
        split_tokens(s, d.intermediate, label_id("intermediate")).bytes(bf16, label_id("bf16")),
        whole));
    out.push_back(make_piece(
        term_gelu_output_fc2_input,
        split_tokens(s, d.intermediate, label_id("intermediate")).bytes(bf16, label_id("bf16")),
        whole));
  }
}

void add_moe(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t, const ParallelLayout& layout) {
  const MoeShape& e = m.moe;
  const std::uint32_t whole = module_bits({RecomputeModule::moe});
  const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m.hidden;
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  // Router: logits in the activation dtype, scores (sigmoid / softmax) in fp32 for the top-k.
  out.push_back(make_piece(term_router_logits,
                           Formula(local_tokens(s))
                               .times(label_id("experts"), e.routed_experts)
                               .bytes(bf16, label_id("bf16")),
                           whole));
  out.push_back(make_piece(term_router_scores_fp32,
                           Formula(local_tokens(s))
                               .times(label_id("experts"), e.routed_experts)
                               .bytes(fp32, label_id("fp32")),
                           whole));
  if (e.latent_hidden > 0) {
    out.push_back(make_piece(term_latent_down_projection_output_latent_norm_input,
                             Formula(local_tokens(s))
                                 .times(label_id("latent"), e.latent_hidden)
                                 .bytes(bf16, label_id("bf16")),
                             whole));
    if (e.latent_norm) {
      out.push_back(make_piece(term_latent_norm_output_dispatch_input,
                               Formula(local_tokens(s))
                                   .times(label_id("latent"), e.latent_hidden)
                                   .bytes(bf16, label_id("bf16")),
                               whole | module_bits({RecomputeModule::layernorm})));
    }
    out.push_back(make_piece(term_combined_latent_latent_up_projection_input,
                             Formula(local_tokens(s))
                                 .times(label_id("latent"), e.latent_hidden)
                                 .bytes(bf16, label_id("bf16")),
                             whole));
  }
  // Tokens an expert rank processes: every local token goes to top-k experts; with balanced
  // routing each EP rank receives as many copies as it sends; ETP gathers them over ETP.
  const auto routed = [&] {
    Formula f = local_tokens(s);
    f.times(label_id("top-k"), e.top_k);
    if (etp > 1) f.times(label_id("ETP (token gather)"), etp);
    return f;
  };
  // The imbalance scenario multiplies the busiest rank's tokens, rounded up to whole tokens.
  const double imbalance = t.routing_imbalance;
  const auto with_imbalance = [&](ActivationPiece p, std::int64_t per_token_bytes) {
    if (imbalance > 1.0) {
      p.formula.imbalance(imbalance, per_token_bytes);
      p.bytes = p.formula.value();
    }
    return p;
  };
  out.push_back(with_imbalance(
      make_piece(term_dispatched_tokens_expert_fc1_input,
                 routed().times(label_id("expert width"), width).bytes(bf16, label_id("bf16")),
                 whole),
      width * bf16));
  out.push_back(with_imbalance(make_piece(term_expert_fc1_output_gate_and_up_halves,
                                          routed()
                                              .times(label_id("2 x expert intermediate/ETP"),
                                                     2 * e.expert_intermediate / etp)
                                              .bytes(bf16, label_id("bf16")),
                                          whole),
                               2 * e.expert_intermediate / etp * bf16));
  out.push_back(with_imbalance(
      make_piece(term_expert_activation_output_expert_fc2_input,
                 routed()
                     .times(label_id("expert intermediate/ETP"), e.expert_intermediate / etp)
                     .bytes(bf16, label_id("bf16")),
                 whole | module_bits({RecomputeModule::moe_act})),
      e.expert_intermediate / etp * bf16));
  out.push_back(with_imbalance(
      make_piece(term_expert_outputs_before_probability_weighting_comb,
                 routed().times(label_id("expert width"), width).bytes(bf16, label_id("bf16")),
                 whole),
      width * bf16));
  out.push_back(make_piece(
      term_routing_probabilities_of_the_dispatched_tokens_f,
      Formula(local_tokens(s)).times(label_id("top-k"), e.top_k).bytes(fp32, label_id("fp32")),
      whole));
  if (e.shared_experts > 0) {
    const std::uint32_t shared = whole | module_bits({RecomputeModule::shared_experts});
    const std::int64_t inter = e.shared_experts * e.shared_intermediate;
    out.push_back(make_piece(term_shared_experts_fc1_output_gate_and_up_halves,
                             split_tokens(s, 2 * inter, label_id("2 x shared intermediate"))
                                 .bytes(bf16, label_id("bf16")),
                             shared));
    out.push_back(make_piece(
        term_shared_experts_activation_output_fc2_input,
        split_tokens(s, inter, label_id("shared intermediate")).bytes(bf16, label_id("bf16")),
        shared));
  }
}

}  // namespace

std::vector<ActivationPiece> mlp_pieces(const Model& model, MlpKind kind, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        const ParallelLayout& layout) {
  std::vector<ActivationPiece> out;
  out.reserve(20);
  add_mlp_norm(out, model, shape);
  if (kind == MlpKind::dense) {
    add_dense(out, model, shape);
  } else {
    add_moe(out, model, shape, training, layout);
  }
  if (training.dropout) {
    out.push_back(
        make_piece(term_mlp_output_dropout_mask,
                   hidden_tokens(shape, model.hidden, label_id("h")).bytes(1, label_id("uint8"))));
  }
  return out;
}

}  // namespace stagemem
