// Stored activations of the MLP half of a decoder layer: the MLP norm and a dense MLP (SwiGLU or
// GeLU) or an MoE block (router, permuted tokens, expert GEMMs, combine, latent projections,
// shared experts), with Megatron's alltoall token dispatcher and current (core >= 0.13)
// probability handling: the weighted SwiGLU applies the routing probabilities.
#include <cmath>

#include "memory/activation_pieces.h"
#include "memory/low_precision.h"

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
constexpr TermInfo term_router_scores_fp32{"router scores (fp32)",
                                           "S/CP, B (/TP with SP), experts"};
constexpr TermInfo term_latent_down_projection_output_latent_norm_input{
    "latent down-projection output (latent norm input)", "S/CP, B (/TP with SP), latent"};
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
    "expert outputs before probability weighting (combine input, legacy unpermute with probs)",
    "S/CP, B (/TP with SP), top-k, expert width"};
constexpr TermInfo term_routing_probabilities_legacy{
    "routing probabilities of the local token copies (legacy unpermute with probs)",
    "S/CP, B (/TP with SP), top-k"};
constexpr TermInfo term_routing_probabilities_received{
    "routing probabilities of the received tokens (saved by the weighted SwiGLU)",
    "S/CP, B (/TP with SP), top-k"};
constexpr TermInfo term_mlp_backward{
    "MLP backward working set of one layer (gradients of the fc1 and activation outputs)",
    "S/CP, B, intermediate/TP", TermText::generic, true};
constexpr TermInfo term_moe_backward{
    "MoE backward working set of one layer (gradients of the expert fc1 and activation outputs "
    "and of the dispatched tokens)",
    "S/CP, B (/TP with SP), top-k, expert intermediate", TermText::generic, true};
constexpr TermInfo term_mlp_backward_quantised{
    "MLP backward working set of one layer at fc1's backward (its output gradient in bf16 and "
    "quantised row- and column-wise)",
    "S/CP, B, intermediate/TP", TermText::generic, true};
constexpr TermInfo term_moe_backward_quantised{
    "MoE backward working set of one layer at the expert fc1's backward (its output gradient in "
    "bf16 and quantised row- and column-wise, and the dispatched tokens' gradient)",
    "S/CP, B (/TP with SP), top-k, expert intermediate", TermText::generic, true};
constexpr TermInfo term_quantised_forward_input{
    "row-wise quantised input of the widest linear layer (beside its saved column-wise copy, "
    "during the forward GEMM)",
    "S/CP, B, input width", TermText::generic, false};
constexpr TermInfo term_shared_experts_fc1_output_gate_and_up_halves{
    "shared experts fc1 output, gate and up halves", "S/CP, B, shared intermediate/TP"};
constexpr TermInfo term_shared_experts_activation_output_fc2_input{
    "shared experts activation output (fc2 input)", "S/CP, B, shared intermediate/TP"};
constexpr TermInfo term_shared_experts_quantised_input{
    "shared experts fc1's quantised copy of the MLP norm output (its saved input)",
    "S/CP, B, h (/TP with SP)"};
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

// The dense MLP's norm is fused into fc1 (TE LayerNormColumnParallelLinear): `mlp` recompute,
// which checkpoints the whole MLP from its input, drops it; `layernorm` cannot reach it. The MoE
// layer's pre-MLP norm is a stand-alone module: `layernorm` drops its output, while `moe` keeps it
// (it is the checkpointed block's input).
// Under a quantised recipe the dense MLP's fused fc1 (LayerNormLinear) saves the quantised norm
// output in its place; the MoE norm output stays bf16 (the router saves it) and the shared
// experts' fc1 (a TE Linear) saves a quantised copy beside it.
void add_mlp_norm(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
                  MlpKind kind, const LinearQuantisation& q) {
  out.push_back(
      make_piece(term_mlp_norm_input_residual_stream_after_attention,
                 hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  if (mlp_norm_fused(kind)) {
    out.push_back(saved_linear_input(term_mlp_norm_output_mlp_input,
                                     hidden_tokens(s, m.hidden, label_id("h")), m.hidden,
                                     module_bits({RecomputeModule::mlp}), q));
    return;
  }
  out.push_back(make_piece(term_mlp_norm_output_mlp_input,
                           hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           module_bits({RecomputeModule::layernorm})));
  if (q.quantised() && m.moe.shared_experts > 0) {
    out.push_back(saved_linear_input(term_shared_experts_quantised_input,
                                     hidden_tokens(s, m.hidden, label_id("h")), m.hidden,
                                     module_bits({RecomputeModule::layernorm, RecomputeModule::moe,
                                                  RecomputeModule::shared_experts}),
                                     q));
  }
}

void add_dense(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
               const LinearQuantisation& q) {
  const DenseMlpShape& d = m.dense_mlp;
  const std::uint32_t whole = module_bits({RecomputeModule::mlp});
  if (d.activation == MlpActivation::swiglu) {
    out.push_back(make_piece(term_fc1_output_gate_and_up_halves_swiglu_input,
                             split_tokens(s, 2 * d.intermediate, label_id("2 x intermediate"))
                                 .bytes(bf16, label_id("bf16")),
                             whole));
    out.push_back(saved_linear_input(term_swiglu_output_fc2_input,
                                     split_tokens(s, d.intermediate, label_id("intermediate")),
                                     d.intermediate / s.tensor_parallel, whole, q));
  } else {
    out.push_back(make_piece(
        term_fc1_output_gelu_input,
        split_tokens(s, d.intermediate, label_id("intermediate")).bytes(bf16, label_id("bf16")),
        whole));
    out.push_back(saved_linear_input(term_gelu_output_fc2_input,
                                     split_tokens(s, d.intermediate, label_id("intermediate")),
                                     d.intermediate / s.tensor_parallel, whole, q));
  }
}

// The router's scores and, with a latent MoE, the latent projections' saved inputs.
void add_moe_router_and_latent(std::vector<ActivationPiece>& out, const MoeShape& e,
                               const TokenShape& s, std::uint32_t whole,
                               const LinearQuantisation& q) {
  // Router: RouterGatingLinearFunction saves its input and weight, not the logits; the sigmoid
  // (or an aux-loss softmax) over logits.float() saves its fp32 [n_l, experts] output.
  out.push_back(make_piece(term_router_scores_fp32,
                           Formula(local_tokens(s))
                               .times(label_id("experts"), e.routed_experts)
                               .bytes(fp32, label_id("fp32")),
                           whole));
  if (e.latent_hidden <= 0) return;
  // The down-projection output goes straight to the dispatcher's permute, whose backward needs
  // only indices: nobody saves it, unless the users' latent norm sits in between (it saves its
  // input; its own output is the unsaved dispatch input).
  if (e.latent_norm) {
    out.push_back(make_piece(term_latent_down_projection_output_latent_norm_input,
                             Formula(local_tokens(s))
                                 .times(label_id("latent"), e.latent_hidden)
                                 .bytes(bf16, label_id("bf16")),
                             whole));
  }
  out.push_back(
      saved_linear_input(term_combined_latent_latent_up_projection_input,
                         Formula(local_tokens(s)).times(label_id("latent"), e.latent_hidden),
                         e.latent_hidden, whole, q));
}

// The tokens an expert rank processes: every local token goes to top-k experts; with balanced
// routing each EP rank receives as many copies as it sends; ETP gathers them over ETP. The
// imbalance scenario multiplies the busiest rank's tokens, rounded up to whole tokens.
struct RoutedTokens {
  const TokenShape& shape;
  std::int64_t top_k;
  std::int64_t etp;
  double imbalance;

  Formula formula() const {
    Formula f = local_tokens(shape);
    f.times(label_id("top-k"), top_k);
    if (etp > 1) f.times(label_id("ETP (token gather)"), etp);
    return f;
  }
  ActivationPiece with_imbalance(ActivationPiece p, std::int64_t per_token_bytes) const {
    if (imbalance > 1.0) {
      p.formula.imbalance(imbalance, per_token_bytes);
      p.bytes = p.formula.value();
    }
    return p;
  }
};

// The routed experts' saved tensors: their fc1 input, fc1 output and activation output.
void add_routed_expert_pieces(std::vector<ActivationPiece>& out, const MoeShape& e,
                              const RoutedTokens& routed, std::int64_t width, std::uint32_t whole,
                              const LinearQuantisation& q) {
  const std::int64_t etp = routed.etp;
  out.push_back(saved_linear_input(term_dispatched_tokens_expert_fc1_input,
                                   routed.formula().times(label_id("expert width"), width), width,
                                   whole, q, routed.imbalance));
  out.push_back(routed.with_imbalance(make_piece(term_expert_fc1_output_gate_and_up_halves,
                                                 routed.formula()
                                                     .times(label_id("2 x expert intermediate/ETP"),
                                                            2 * e.expert_intermediate / etp)
                                                     .bytes(bf16, label_id("bf16")),
                                                 whole),
                                      2 * e.expert_intermediate / etp * bf16));
  out.push_back(saved_linear_input(
      term_expert_activation_output_expert_fc2_input,
      routed.formula().times(label_id("expert intermediate/ETP"), e.expert_intermediate / etp),
      e.expert_intermediate / etp, whole | module_bits({RecomputeModule::moe_act}), q,
      routed.imbalance));
}

// The routing probabilities the combine step saves, in the router's dtype.
void add_routing_probabilities(std::vector<ActivationPiece>& out, const MoeShape& e,
                               const TokenShape& s, const TrainingConfig& t,
                               const RoutedTokens& routed, std::int64_t width,
                               std::uint32_t whole) {
  const bool fp32_probs = t.kernels.router_dtype == RouterDtype::fp32;
  const std::int64_t prob_bytes = fp32_probs ? fp32 : bf16;
  const Label prob_dtype = fp32_probs ? label_id("fp32") : label_id("bf16");
  if (t.kernels.moe_unpermute == MoeUnpermute::legacy_unpermute_with_probs) {
    // Megatron core <= 0.12: unpermute multiplies the all-to-all output by the probabilities and
    // autograd saves both operands, each in its own dtype: the bf16 expert outputs and the
    // probabilities (the fp32 product of an fp32 router dtype lives only in forward).
    out.push_back(routed.with_imbalance(
        make_piece(
            term_expert_outputs_before_probability_weighting_comb,
            routed.formula().times(label_id("expert width"), width).bytes(bf16, label_id("bf16")),
            whole),
        width * bf16));
    out.push_back(make_piece(
        term_routing_probabilities_legacy,
        Formula(local_tokens(s)).times(label_id("top-k"), e.top_k).bytes(prob_bytes, prob_dtype),
        whole));
    return;
  }
  // Current Megatron: WeightedSwiGLUFunction saves the received permuted_probs [T_recv, 1].
  out.push_back(routed.with_imbalance(
      make_piece(
          term_routing_probabilities_received,
          routed.formula().times(label_id("1 (probability)"), 1).bytes(prob_bytes, prob_dtype),
          whole),
      prob_bytes));
}

// The shared experts' fc1 output and activation output (a dense MLP over every local token).
void add_shared_expert_pieces(std::vector<ActivationPiece>& out, const MoeShape& e,
                              const TokenShape& s, std::uint32_t whole,
                              const LinearQuantisation& q) {
  if (e.shared_experts <= 0) return;
  const std::uint32_t shared = whole | module_bits({RecomputeModule::shared_experts});
  const std::int64_t inter = e.shared_experts * e.shared_intermediate;
  out.push_back(make_piece(
      term_shared_experts_fc1_output_gate_and_up_halves,
      split_tokens(s, 2 * inter, label_id("2 x shared intermediate")).bytes(bf16, label_id("bf16")),
      shared));
  out.push_back(saved_linear_input(term_shared_experts_activation_output_fc2_input,
                                   split_tokens(s, inter, label_id("shared intermediate")),
                                   inter / s.tensor_parallel, shared, q));
}

void add_moe(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t, const ParallelLayout& layout) {
  const MoeShape& e = m.moe;
  const std::uint32_t whole = module_bits({RecomputeModule::moe});
  const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m.hidden;
  const RoutedTokens routed{.shape = s,
                            .top_k = e.top_k,
                            .etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel),
                            .imbalance = t.routing_imbalance};
  const LinearQuantisation q = linear_quantisation(t);
  add_moe_router_and_latent(out, e, s, whole, q);
  add_routed_expert_pieces(out, e, routed, width, whole, q);
  add_routing_probabilities(out, e, s, t, routed, width, whole);
  add_shared_expert_pieces(out, e, s, whole, q);
}

}  // namespace

bool mlp_norm_fused(MlpKind kind) {
  return kind == MlpKind::dense;
}

ActivationPiece mlp_backward_piece(const Model& m, MlpKind kind, const TokenShape& s,
                                   const TrainingConfig& t, const ParallelLayout& layout) {
  const LinearQuantisation q = linear_quantisation(t);
  if (kind == MlpKind::dense) {
    // fc2's dgrad gives grad(activation output) [n, I/TP]; the activation's backward then gives
    // grad(fc1 output) [n, 2I/TP] (SwiGLU) or [n, I/TP] (GeLU) while both saved tensors are alive.
    // Weight gradients accumulate into main_grad (gradient-accumulation fusion).
    const DenseMlpShape& d = m.dense_mlp;
    const bool swiglu = d.activation == MlpActivation::swiglu;
    const ActivationPiece bf16_moment = make_piece(
        term_mlp_backward,
        split_tokens(s, (swiglu ? 3 : 2) * d.intermediate,
                     swiglu ? label_id("3 x intermediate") : label_id("2 x intermediate"))
            .bytes(bf16, label_id("bf16")));
    if (!q.quantised()) return bf16_moment;
    // fc1's backward: its output gradient in bf16 and quantised row- and column-wise (the
    // activation's input gradient is freed once the activation's backward has run).
    const std::int64_t fc1 = (swiglu ? 2 : 1) * d.intermediate;
    const QuantisedBytes dy =
        quantised_output_gradient(q, s.sequence * s.micro_batch, fc1 / s.tensor_parallel);
    Formula f =
        split_tokens(s, fc1, swiglu ? label_id("2 x intermediate") : label_id("intermediate"));
    f.bytes(bf16, label_id("bf16"))
        .plus(label_id("quantised output gradient (row- and column-wise)"), dy.total());
    ActivationPiece quantised = make_piece(term_mlp_backward_quantised, f);
    return quantised.bytes > bf16_moment.bytes ? quantised : bf16_moment;
  }
  // TEGroupedMLP: grad(activation output) [T_recv, I/ETP] and grad(fc1 output) [T_recv, 2I/ETP],
  // then fc1's dgrad [T_recv, w] (the dispatched-token gradient sent back through the combine).
  const MoeShape& e = m.moe;
  const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m.hidden;
  const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
  Formula f = local_tokens(s);
  f.times(label_id("top-k"), e.top_k);
  if (etp > 1) f.times(label_id("ETP (token gather)"), etp);
  const std::int64_t per_token = 3 * e.expert_intermediate / etp + width;
  f.times(label_id("3 x expert intermediate/ETP + expert width"), per_token)
      .bytes(bf16, label_id("bf16"));
  ActivationPiece p = make_piece(term_moe_backward, f);
  if (t.routing_imbalance > 1.0) {
    p.formula.imbalance(t.routing_imbalance, per_token * bf16);
    p.bytes = p.formula.value();
  }
  if (!q.quantised()) return p;
  // The expert fc1's backward: its output gradient in bf16 and quantised row- and column-wise,
  // and its data gradient (the dispatched tokens' gradient, bf16).
  Formula g = local_tokens(s);
  g.times(label_id("top-k"), e.top_k);
  if (etp > 1) g.times(label_id("ETP (token gather)"), etp);
  const std::int64_t per_token_bf16 = 2 * e.expert_intermediate / etp + width;
  g.times(label_id("2 x expert intermediate/ETP + expert width"), per_token_bf16);
  if (t.routing_imbalance > 1.0) g.imbalance(t.routing_imbalance, per_token_bf16);
  const std::int64_t rows = g.value() / std::max<std::int64_t>(1, per_token_bf16);
  const QuantisedBytes dy = quantised_output_gradient(q, rows, 2 * e.expert_intermediate / etp);
  g.bytes(bf16, label_id("bf16"))
      .plus(label_id("quantised output gradient (row- and column-wise)"), dy.total());
  ActivationPiece quantised = make_piece(term_moe_backward_quantised, g);
  return quantised.bytes > p.bytes ? quantised : p;
}

std::optional<ActivationPiece> quantised_forward_transient(const Model& m, const TokenShape& s,
                                                           const TrainingConfig& t,
                                                           const ParallelLayout& layout, bool dense,
                                                           bool moe) {
  const LinearQuantisation q = linear_quantisation(t);
  if (!q.quantised()) return std::nullopt;
  // Each candidate: a linear layer's input [rows, cols] as its forward GEMM sees it.
  struct Candidate {
    Formula elements;
    std::int64_t cols;
  };
  std::vector<Candidate> candidates;
  candidates.push_back({full_tokens(s, m.hidden, label_id("h")), m.hidden});
  if (dense) {
    const std::int64_t i = m.dense_mlp.intermediate;
    candidates.push_back({split_tokens(s, i, label_id("intermediate")), i / s.tensor_parallel});
  }
  if (moe) {
    const MoeShape& e = m.moe;
    const std::int64_t etp = std::max<std::int64_t>(1, layout.expert_tensor_parallel);
    const std::int64_t width = e.latent_hidden > 0 ? e.latent_hidden : m.hidden;
    const RoutedTokens routed{
        .shape = s, .top_k = e.top_k, .etp = etp, .imbalance = t.routing_imbalance};
    Formula fc1 = routed.formula().times(label_id("expert width"), width);
    Formula fc2 =
        routed.formula().times(label_id("expert intermediate/ETP"), e.expert_intermediate / etp);
    if (t.routing_imbalance > 1.0) {
      fc1.imbalance(t.routing_imbalance, width);
      fc2.imbalance(t.routing_imbalance, e.expert_intermediate / etp);
    }
    candidates.push_back({fc1, width});
    candidates.push_back({fc2, e.expert_intermediate / etp});
  }
  std::optional<ActivationPiece> largest;
  for (Candidate& c : candidates) {
    const std::int64_t rows = c.cols > 0 ? c.elements.value() / c.cols : 0;
    const QuantisedBytes b = forward_rowwise_input(q, rows, c.cols);
    if (b.total() == 0) continue;
    if (q.recipe == Fp8Recipe::nvfp4) {
      c.elements.per(label_id("2 (e2m1 values per byte)"), 2).bytes(1, label_id("e2m1 pair"));
    } else {
      c.elements.bytes(1, label_id("fp8 e4m3"));
    }
    c.elements.plus(label_id("row-wise scales"), b.scales);
    ActivationPiece p = make_piece(term_quantised_forward_input, c.elements);
    if (!largest || p.bytes > largest->bytes) largest = p;
  }
  return largest;
}

std::vector<ActivationPiece> mlp_pieces(const Model& model, MlpKind kind, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        const ParallelLayout& layout) {
  std::vector<ActivationPiece> out;
  mlp_pieces_into(out, model, kind, shape, training, layout);
  return out;
}

void mlp_pieces_into(std::vector<ActivationPiece>& out, const Model& model, MlpKind kind,
                     const TokenShape& shape, const TrainingConfig& training,
                     const ParallelLayout& layout) {
  if (training.framework == Framework::torchtitan && kind == MlpKind::dense) {
    torchtitan_mlp_pieces_into(out, model, shape);
    return;
  }
  out.clear();
  out.reserve(20);
  const LinearQuantisation q = linear_quantisation(training);
  add_mlp_norm(out, model, shape, kind, q);
  if (kind == MlpKind::dense) {
    add_dense(out, model, shape, q);
  } else {
    add_moe(out, model, shape, training, layout);
  }
  if (training.dropout) {
    out.push_back(
        make_piece(term_mlp_output_dropout_mask,
                   hidden_tokens(shape, model.hidden, label_id("h")).bytes(1, label_id("uint8"))));
  }
}

}  // namespace stagemem
