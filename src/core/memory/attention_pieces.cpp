// Stored activations of the attention half of a decoder layer: the layer input, the attention
// norm and the attention kind's own tensors (GQA / MLA with flash attention, KDA with fla).
#include <algorithm>
#include <limits>

#include "base/units.h"
#include "config/version_rules.h"
#include "memory/activation_pieces.h"
#include "memory/low_precision.h"

namespace stagemem {
namespace {

constexpr TermInfo term_attention_output_dropout_mask{"attention output dropout mask",
                                                      "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_layer_input_residual_stream_saved_by_the_attenti{
    "layer input (residual stream, saved by the attention norm)", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_attention_norm_output_input_of_the_attention_pro{
    "attention norm output (input of the attention projections)", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_softmax_log_sum_exp_flash_attention_statistics{
    "softmax log-sum-exp (flash-attention statistics)", "S/CP, B, heads/TP"};
constexpr TermInfo term_attention_softmax_output_b_heads_s_s{
    "attention softmax output [B, heads, S, S]", "S/CP x S, B, heads/TP"};
constexpr TermInfo term_attention_probability_dropout_mask{"attention-probability dropout mask",
                                                           "S/CP x S, B, heads/TP"};
constexpr TermInfo term_attention_probabilities_after_dropout{
    "attention probabilities after dropout", "S/CP x S, B, heads/TP"};
constexpr TermInfo term_attention_output_also_the_output_projection_s_in{
    "attention output (also the output projection's input)", "S/CP, B, heads/TP"};
constexpr TermInfo term_q_k_v_attention_inputs_after_rope{"q, k, v (attention inputs, after RoPE)",
                                                          "S/CP, B, (heads + 2 kv_heads)/TP"};
constexpr TermInfo term_q_latent_q_down_projection_output_its_norm_s_inp{
    "q latent (q down-projection output, its norm's input)", "S/CP, B (/TP with SP), q_lora_rank"};
constexpr TermInfo term_q_latent_after_its_norm_q_up_projection_input{
    "q latent after its norm (q up-projection input)", "S/CP, B (/TP with SP), q_lora_rank"};
constexpr TermInfo term_kv_latent_and_rope_key_kv_down_projection_output{
    "kv latent and RoPE key (kv down-projection output)",
    "S/CP, B (/TP with SP), kv_lora_rank + rope_dim"};
constexpr TermInfo term_kv_latent_after_its_norm_kv_up_projection_input{
    "kv latent after its norm (kv up-projection input)", "S/CP, B (/TP with SP), kv_lora_rank"};
constexpr TermInfo term_up_projected_q_k_v_attention_inputs{
    "up-projected q, k, v (attention inputs)", "S/CP, B, heads/TP"};
constexpr TermInfo term_output_gate_sigmoid_of_the_gate_projection{
    "output gate (sigmoid of the gate projection)", "S/CP, B, heads/TP"};
constexpr TermInfo term_gated_attention_output_output_projection_input{
    "gated attention output (output projection input)", "S/CP, B, heads/TP"};
constexpr TermInfo term_q_k_v_projection_outputs_short_convolution_input{
    "q, k, v projection outputs (short-convolution inputs)", "S/CP, B, heads/TP"};
constexpr TermInfo term_q_k_v_after_convolution_and_q_k_l2_norm_chunk_kd{
    "q, k, v after convolution and q/k l2-norm (chunk_kda inputs)", "S/CP, B, heads/TP"};
constexpr TermInfo term_q_k_l2_norm_reciprocal_std_fp32{"q, k l2-norm reciprocal std (fp32)",
                                                        "S/CP, B, heads/TP"};
constexpr TermInfo term_decay_gate_latent_f_a_output_duplicated{
    "decay-gate latent (f_a output, duplicated)", "S/CP, B, head_dim"};
constexpr TermInfo term_decay_gate_projection_output_gate_activation_inp{
    "decay-gate projection output (gate activation input)", "S/CP, B, heads/TP"};
constexpr TermInfo term_decay_gate_chunk_local_cumsum_fla_0_4_0{
    "decay gate's chunk-local cumulative sum (fp32, fla 0.4.0)", "S/CP, B, heads/TP"};
constexpr TermInfo term_q_k_before_the_per_head_norm{
    "q, k before the per-head norm (q/k RMSNorm inputs)", "S/CP, B, (heads + kv_heads)/TP"};
constexpr TermInfo term_q_k_norm_reciprocal_std_fp32{"q, k RMSNorm reciprocal std (fp32)",
                                                     "S/CP, B, (heads + kv_heads)/TP"};
constexpr TermInfo term_intra_chunk_aqk_and_akk_matrices_fp32{
    "intra-chunk Aqk (fp32) and Akk (bf16) matrices (fla 0.4.0)",
    "S/CP, B, heads/TP, KDA chunk size"};
constexpr TermInfo term_naive_kda_intra_chunk_products{
    "intra-chunk decay products exp(g - g_i) and k x exp(g - g_i) (eager naive_chunk_kda, fp32)",
    "S/CP, B, heads/TP, KDA chunk size"};
constexpr TermInfo term_kda_kept_intermediates{
    "w, u, gated q, gated k, new v (chunk_kda disable_recompute, bf16)", "S/CP, B, heads/TP"};
constexpr TermInfo term_kda_kept_states{
    "per-chunk recurrent states (chunk_kda disable_recompute, bf16)",
    "S/CP / chunk, B, heads/TP, head_dim^2"};
constexpr TermInfo term_kda_kept_gate_cumsum{
    "decay gate's chunk-local cumulative sum (chunk_kda disable_recompute, fp32)",
    "S/CP, B, heads/TP"};
constexpr TermInfo term_kda_forward_intermediates{
    "chunk_kda forward intermediates (w, kg, u, v_new and chunk states bf16, gate cumsum fp32)",
    "S/CP, B, heads/TP"};
constexpr TermInfo term_attention_output_before_the_output_all_to_all{
    "attention output before the output all-to-all (a2a context parallelism, head-sharded)",
    "S/CP, B, heads/TP"};
constexpr TermInfo term_attention_backward_flash{
    "attention backward working set of one layer (dq, dk, dv and flash-attention's fp32 dq_accum)",
    "S/CP, B, heads/TP", TermText::generic, true};
constexpr TermInfo term_attention_projection_backward_quantised{
    "attention backward working set of one layer at its widest projection's backward (the "
    "output gradient in bf16 and quantised row- and column-wise)",
    "S/CP, B, projection width/TP", TermText::generic, true};
constexpr TermInfo term_attention_backward_materialized{
    "attention backward working set of one layer (score gradient of the unfused attention)",
    "S/CP x S, B, heads/TP", TermText::generic, true};
constexpr TermInfo term_kda_backward{
    "KDA backward working set of one layer (recomputed chunk_kda intermediates, state gradients, "
    "dq, dk, dv)",
    "S/CP, B, heads/TP", TermText::generic, true};
constexpr TermInfo term_beta_sigmoid_of_the_beta_projection_fp32{
    "beta (sigmoid of the beta projection, fp32)", "S/CP, B, heads/TP"};
constexpr TermInfo term_intra_chunk_aqk_and_akk_matrices{"intra-chunk Aqk and Akk matrices",
                                                         "S/CP, B, heads/TP, KDA chunk size"};
constexpr TermInfo term_per_chunk_recurrent_states_eager_backend_fp32{
    "per-chunk recurrent states (eager naive_chunk_kda, fp32)",
    "S/CP / chunk, B, heads/TP, head_dim^2"};
constexpr TermInfo term_w_u_gated_q_gated_k_new_v_eager_backend_fp32{
    "w, u, gated q, gated k, new v (eager naive_chunk_kda, fp32)", "S/CP, B, heads/TP"};
constexpr TermInfo term_output_gate_latent_g_a_output_duplicated{
    "output-gate latent (g_a output, duplicated)", "S/CP, B, head_dim"};
constexpr TermInfo term_chunk_kda_output_and_output_gate_gated_rmsnorm_i{
    "chunk_kda output and output gate (gated RMSNorm inputs)", "S/CP, B, heads/TP"};
constexpr TermInfo term_gated_rmsnorm_output_output_projection_input{
    "gated RMSNorm output (output projection input)", "S/CP, B, heads/TP"};

constexpr TermInfo term_output_projection_quantised_input{
    "output projection's quantised copy of the attention output (its saved input)",
    "S/CP, B, heads x v_dim/TP"};

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

// Megatron's `layernorm` recompute reaches only a stand-alone norm module; a norm fused into
// TE's LayerNormColumnParallelLinear saves its output inside that module.
void add_attention_norm(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
                        AttentionKind kind, const LinearQuantisation& quantisation) {
  out.push_back(
      make_piece(term_layer_input_residual_stream_saved_by_the_attenti,
                 hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  // Under a quantised recipe GQA's fused LayerNormLinear saves the quantised norm output in
  // place of the bf16 one; MLA's stand-alone norm feeds two down-projections (q and kv), each a
  // TE Linear saving its own quantised copy. The users' KDA port's projections are not known to
  // be TE linears: its norm output stays one bf16 tensor.
  const std::uint32_t dropped =
      attention_norm_fused(kind) ? 0u : module_bits({RecomputeModule::layernorm});
  const LinearQuantisation q = kind == AttentionKind::kda ? LinearQuantisation{} : quantisation;
  out.push_back(saved_linear_input(term_attention_norm_output_input_of_the_attention_pro,
                                   hidden_tokens(s, m.hidden, label_id("h")), m.hidden, dropped, q,
                                   1.0, kind == AttentionKind::mla && q.quantised() ? 2 : 1));
}

// The attention kernel's saved inputs: bf16, or fp8 with fp8 attention (TE FusedAttnFunc
// quantises q, k and v; per-tensor scales, or MXFP8's row-wise blocks).
ActivationPiece attention_inputs(const TermInfo& info, Formula elements, std::int64_t cols,
                                 const LinearQuantisation& q, std::uint32_t dropped) {
  if (!q.fp8_attention || !q.quantised()) {
    return make_piece(info, elements.bytes(bf16, label_id("bf16")), dropped);
  }
  const std::int64_t rows = cols > 0 ? elements.value() / cols : 0;
  const QuantisedBytes b =
      quantised_bytes(q, QuantisedKind::activation, QuantisedUse::rowwise, rows, cols);
  // q, k and v are quantised separately: three per-tensor scales.
  const std::int64_t scales = q.recipe == Fp8Recipe::mxfp8 ? b.scales : 3 * b.scales;
  elements.bytes(1, label_id("fp8 e4m3")).plus(label_id("fp8 attention scales"), scales);
  return make_piece(info, elements, dropped);
}

// Token-wise tensors whose token dimension is the sequence-parallel shard (outputs of duplicated
// projections applied to the SP-sharded input).
Formula sp_tokens(const TokenShape& s, std::int64_t width, Label width_label) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence).times(label_id("B"), s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) f.per(label_id("TP (SP)"), s.tensor_parallel);
  f.times(width_label, width);
  return f;
}

// Flash attention keeps its output and the per-row log-sum-exp; a materialised kernel keeps the
// softmax output (and, with dropout, its mask and the dropped-out probabilities) instead.
void add_attention_core(std::vector<ActivationPiece>& out, const TokenShape& s,
                        const TrainingConfig& t, std::int64_t heads, std::int64_t value_width,
                        bool output_gate = false) {
  const std::uint32_t core = module_bits({RecomputeModule::core_attn});
  if (t.kernels.attention == AttentionKernel::flash) {
    Formula lse;
    lse.times(label_id("B"), s.micro_batch)
        .times(label_id("heads/TP"), heads / s.tensor_parallel)
        .times(label_id("S/CP"), s.sequence);
    out.push_back(make_piece(term_softmax_log_sum_exp_flash_attention_statistics,
                             lse.bytes(fp32, label_id("fp32")), core));
  } else {
    // Korthikanti et al.: scores over the whole key sequence, one per head and query.
    const auto scores = [&] {
      Formula f;
      f.times(label_id("B"), s.micro_batch)
          .times(label_id("heads/TP"), heads / s.tensor_parallel)
          .times(label_id("S/CP"), s.sequence)
          .times(label_id("S"), s.full_sequence);
      return f;
    };
    out.push_back(make_piece(term_attention_softmax_output_b_heads_s_s,
                             scores().bytes(bf16, label_id("bf16")), core));
    if (t.dropout) {
      out.push_back(make_piece(term_attention_probability_dropout_mask,
                               scores().bytes(1, label_id("uint8")), core));
      out.push_back(make_piece(term_attention_probabilities_after_dropout,
                               scores().bytes(bf16, label_id("bf16")), core));
    }
  }
  // fp8 attention under delayed scaling saves its fp8 output instead of the bf16 one (TE
  // FusedAttnFunc: out_fp8; current scaling and MXFP8 keep the bf16 output by default).
  const LinearQuantisation q = linear_quantisation(t);
  const bool fp8_output = q.fp8_attention && q.recipe == Fp8Recipe::delayed;
  out.push_back(make_piece(
      term_attention_output_also_the_output_projection_s_in,
      split_tokens(s, value_width, label_id("heads x v_dim"))
          .bytes(fp8_output ? 1 : bf16, fp8_output ? label_id("fp8 e4m3") : label_id("bf16"))));
  if (q.quantised() && !q.projection_saves_original && !output_gate) {
    // The output projection (a TE Linear) saves its own quantised copy of that output: delayed
    // scaling, or releases before Megatron set save_original_input on it.
    out.push_back(saved_linear_input(term_output_projection_quantised_input,
                                     split_tokens(s, value_width, label_id("heads x v_dim")),
                                     value_width / s.tensor_parallel, 0, q));
  }
  if (s.context_parallel > 1 && t.kernels.cp_comm_type != CpCommType::p2p &&
      rule_holds(t.stack, VersionRule::te_cp_a2a_saves_output_before_all_to_all)) {
    // AttnFuncWithCPAndQKVOA2A saves out_part (full sequence, heads/CP: the same bytes as the
    // local output), and the all-to-all result is the output projection's saved input. Before TE
    // 2.9 it saved the returned output itself (the projection's input): nothing more.
    out.push_back(make_piece(
        term_attention_output_before_the_output_all_to_all,
        split_tokens(s, value_width, label_id("heads x v_dim")).bytes(bf16, label_id("bf16")),
        module_bits({RecomputeModule::core_attn})));
  }
}

void add_output_dropout(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
                        const TrainingConfig& t) {
  if (!t.dropout) return;
  out.push_back(make_piece(term_attention_output_dropout_mask,
                           hidden_tokens(s, m.hidden, label_id("h")).bytes(1, label_id("uint8"))));
}

void add_gqa(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const GqaShape& a = m.gqa;
  const std::int64_t qkv_width = (a.heads + 2 * a.kv_heads) * a.head_dim;
  out.push_back(
      attention_inputs(term_q_k_v_attention_inputs_after_rope,
                       split_tokens(s, qkv_width, label_id("(heads + 2 kv_heads) x head_dim")),
                       qkv_width / s.tensor_parallel, linear_quantisation(t), 0));
  if (a.qk_norm) {
    // TE's RMSNorm on q and on k saves a contiguous copy of its input and the per-row rstd; RoPE
    // then makes the new q, k the attention keeps.
    out.push_back(make_piece(term_q_k_before_the_per_head_norm,
                             split_tokens(s, (a.heads + a.kv_heads) * a.head_dim,
                                          label_id("(heads + kv_heads) x head_dim"))
                                 .bytes(bf16, label_id("bf16"))));
    out.push_back(make_piece(term_q_k_norm_reciprocal_std_fp32,
                             split_tokens(s, a.heads + a.kv_heads, label_id("heads + kv_heads"))
                                 .bytes(fp32, label_id("fp32"))));
  }
  add_attention_core(out, s, t, a.heads, a.heads * a.head_dim);
}

void add_mla(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const MlaShape& a = m.mla;
  const std::uint32_t up = module_bits({RecomputeModule::mla_up_proj});
  const LinearQuantisation q = linear_quantisation(t);
  const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  // The down-projections are duplicated TELinear layers on the SP-sharded input, so the latents
  // are [S/(CP TP), B, r] under SP. The latent norms are fused into the up-projections
  // (LayerNormColumnParallelLinear): `layernorm` does not reach their outputs; `mla_up_proj`
  // checkpoints the up-projections, keeping only the latents (its inputs).
  if (a.q_lora_rank > 0) {
    out.push_back(make_piece(
        term_q_latent_q_down_projection_output_its_norm_s_inp,
        sp_tokens(s, a.q_lora_rank, label_id("q_lora_rank")).bytes(bf16, label_id("bf16"))));
    out.push_back(saved_linear_input(term_q_latent_after_its_norm_q_up_projection_input,
                                     sp_tokens(s, a.q_lora_rank, label_id("q_lora_rank")),
                                     a.q_lora_rank, up, q));
  }
  out.push_back(make_piece(
      term_kv_latent_and_rope_key_kv_down_projection_output,
      sp_tokens(s, a.kv_lora_rank + a.qk_rope_head_dim, label_id("kv_lora_rank + rope_dim"))
          .bytes(bf16, label_id("bf16"))));
  out.push_back(saved_linear_input(term_kv_latent_after_its_norm_kv_up_projection_input,
                                   sp_tokens(s, a.kv_lora_rank, label_id("kv_lora_rank")),
                                   a.kv_lora_rank, up, q));
  out.push_back(attention_inputs(term_up_projected_q_k_v_attention_inputs,
                                 split_tokens(s, a.heads * (2 * q_head + a.v_head_dim),
                                              label_id("heads x (2 (nope + rope) + v_dim)")),
                                 a.heads * (2 * q_head + a.v_head_dim) / s.tensor_parallel, q, up));
  add_attention_core(out, s, t, a.heads, a.heads * a.v_head_dim, a.output_gate);
  if (a.output_gate) {
    out.push_back(make_piece(term_output_gate_sigmoid_of_the_gate_projection,
                             split_tokens(s, a.heads * a.v_head_dim, label_id("heads x v_dim"))
                                 .bytes(bf16, label_id("bf16"))));
    out.push_back(
        saved_linear_input(term_gated_attention_output_output_projection_input,
                           split_tokens(s, a.heads * a.v_head_dim, label_id("heads x v_dim")),
                           a.heads * a.v_head_dim / s.tensor_parallel, 0, q));
  }
}

// fla's KimiDeltaAttention with chunk_kda: the projections feed depthwise short convolutions,
// whose outputs (q, k l2-normalised in the kernel) go to chunk_kda. ChunkKDAFunction saves q, k,
// v, their rstd, the raw gate projection output, beta and the per-chunk Aqk / Akk matrices. Since
// fla 0.4.1 the gate activation runs inside the kernel (use_gate_in_kernel) and no fp32 gate is
// kept; the first release (0.4.0) kept the fp32 chunk-local cumsum and fp32 Aqk / Akk.
void add_kda(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const KdaShape& a = m.kda;
  const std::int64_t width = a.heads * a.head_dim;
  const std::int64_t chunk = t.kernels.kda_chunk;
  const bool first_release = t.kernels.fla_version == FlaVersion::v0_4_0;
  out.push_back(make_piece(
      term_q_k_v_projection_outputs_short_convolution_input,
      split_tokens(s, 3 * width, label_id("3 x heads x head_dim")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(
      term_q_k_v_after_convolution_and_q_k_l2_norm_chunk_kd,
      split_tokens(s, 3 * width, label_id("3 x heads x head_dim")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(
      term_q_k_l2_norm_reciprocal_std_fp32,
      split_tokens(s, 2 * a.heads, label_id("2 x heads")).bytes(fp32, label_id("fp32"))));
  if (!a.full_rank_gate) {
    out.push_back(
        make_piece(term_decay_gate_latent_f_a_output_duplicated,
                   full_tokens(s, a.head_dim, label_id("head_dim")).bytes(bf16, label_id("bf16"))));
  }
  out.push_back(make_piece(
      term_decay_gate_projection_output_gate_activation_inp,
      split_tokens(s, width, label_id("heads x head_dim")).bytes(bf16, label_id("bf16"))));
  if (first_release) {
    out.push_back(make_piece(
        term_decay_gate_chunk_local_cumsum_fla_0_4_0,
        split_tokens(s, width, label_id("heads x head_dim")).bytes(fp32, label_id("fp32"))));
  }
  out.push_back(
      make_piece(term_beta_sigmoid_of_the_beta_projection_fp32,
                 split_tokens(s, a.heads, label_id("heads")).bytes(fp32, label_id("fp32"))));
  if (first_release) {
    // fla 0.4.0 saves Aqk in fp32 and Akk in k's dtype (its fp32 pre-inverse form is a forward
    // temporary): one of each per head and chunk position.
    out.push_back(make_piece(term_intra_chunk_aqk_and_akk_matrices_fp32,
                             split_tokens(s, a.heads * chunk, label_id("heads x chunk"))
                                 .bytes(fp32 + bf16, label_id("bf16 + fp32"))));
  } else {
    out.push_back(make_piece(term_intra_chunk_aqk_and_akk_matrices,
                             split_tokens(s, 2 * a.heads * chunk, label_id("2 x heads x chunk"))
                                 .bytes(bf16, label_id("bf16"))));
  }
  const auto chunk_states = [&] {
    Formula states;
    states.times(label_id("B"), s.micro_batch)
        .times(label_id("chunks = ceil(S/CP / chunk)"), (s.sequence + chunk - 1) / chunk)
        .times(label_id("heads/TP"), a.heads / s.tensor_parallel)
        .times(label_id("head_dim^2"), a.head_dim * a.head_dim);
    return states;
  };
  if (t.kernels.kda == KdaBackend::eager) {
    // fla's naive_chunk_kda under autograd (fp32 throughout): the recurrent loop keeps the state
    // at every chunk boundary and the WY-form w, u with the gated q, k and corrected values; the
    // intra-chunk loop over the BT positions keeps exp(g - g_i) and k x exp(g - g_i), each
    // [.., BT, K], for every position i.
    out.push_back(make_piece(term_per_chunk_recurrent_states_eager_backend_fp32,
                             chunk_states().bytes(fp32, label_id("fp32"))));
    out.push_back(make_piece(term_w_u_gated_q_gated_k_new_v_eager_backend_fp32,
                             split_tokens(s, 5 * width, label_id("5 x heads x head_dim"))
                                 .bytes(fp32, label_id("fp32"))));
    out.push_back(
        make_piece(term_naive_kda_intra_chunk_products,
                   split_tokens(s, 2 * chunk * width, label_id("2 x chunk x heads x head_dim"))
                       .bytes(fp32, label_id("fp32"))));
  } else if (t.kernels.kda == KdaBackend::disable_recompute) {
    // chunk_kda(disable_recompute=True) saves w, u, qg, kg, v_new and h (all k.dtype) and the
    // fp32 gate cumsum it would otherwise free.
    out.push_back(make_piece(term_kda_kept_intermediates,
                             split_tokens(s, 5 * width, label_id("5 x heads x head_dim"))
                                 .bytes(bf16, label_id("bf16"))));
    out.push_back(make_piece(term_kda_kept_states, chunk_states().bytes(bf16, label_id("bf16"))));
    if (!first_release) {
      out.push_back(make_piece(
          term_kda_kept_gate_cumsum,
          split_tokens(s, width, label_id("heads x head_dim")).bytes(fp32, label_id("fp32"))));
    }
  }
  out.push_back(
      make_piece(term_output_gate_latent_g_a_output_duplicated,
                 full_tokens(s, a.head_dim, label_id("head_dim")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(
      term_chunk_kda_output_and_output_gate_gated_rmsnorm_i,
      split_tokens(s, 2 * width, label_id("2 x heads x head_dim")).bytes(bf16, label_id("bf16"))));
  out.push_back(
      make_piece(term_gated_rmsnorm_output_output_projection_input,
                 split_tokens(s, width, label_id("heads x head_dim")).bytes(bf16, label_id("bf16")),
                 module_bits({RecomputeModule::layernorm})));
}

// Bytes of chunk_kda's forward intermediates per chunk and head: w, kg (K wide) and u, v_new
// (V = K wide) in bf16 for the chunk's tokens, the chunk's state h (K x V, bf16), and, since
// fla 0.4.1, the fp32 gate cumsum (freed at the end of forward; 0.4.0 stores it).
std::int64_t kda_intermediate_bytes_per_chunk(const KdaShape& a, std::int64_t chunk,
                                              bool gate_cumsum) {
  return chunk * a.head_dim * (4 * bf16 + (gate_cumsum ? fp32 : 0)) +
         a.head_dim * a.head_dim * bf16;
}

Formula kda_chunk_heads(const TokenShape& s, const KdaShape& a, std::int64_t chunk) {
  Formula f;
  f.times(label_id("B"), s.micro_batch)
      .times(label_id("chunks = ceil(S/CP / chunk)"), (s.sequence + chunk - 1) / chunk)
      .times(label_id("heads/TP"), a.heads / s.tensor_parallel);
  return f;
}

}  // namespace

std::uint32_t module_bits(std::initializer_list<RecomputeModule> modules) {
  std::uint32_t out = 0;
  for (RecomputeModule m : modules) out |= module_bit(m);
  return out;
}

TokenShape token_shape(const TrainingConfig& training, const ParallelLayout& layout) {
  TokenShape s;
  s.context_parallel = std::max<std::int64_t>(1, layout.context_parallel);
  s.full_sequence = training.sequence_length;
  s.sequence = training.sequence_length / s.context_parallel;
  s.micro_batch = training.micro_batch;
  s.tokens = s.sequence * s.micro_batch;
  s.tensor_parallel = std::max<std::int64_t>(1, layout.tensor_parallel);
  s.sequence_parallel = layout.sequence_parallel;
  return s;
}

bool attention_norm_fused(AttentionKind kind) {
  return kind == AttentionKind::gqa;
}

std::optional<ActivationPiece> kda_forward_transient(const Model& model, const TokenShape& shape,
                                                     const TrainingConfig& training) {
  if (training.kernels.kda != KdaBackend::fused) return std::nullopt;
  const std::int64_t chunk = training.kernels.kda_chunk;
  const bool gate = training.kernels.fla_version != FlaVersion::v0_4_0;
  return make_piece(
      term_kda_forward_intermediates,
      kda_chunk_heads(shape, model.kda, chunk)
          .times(gate ? label_id("chunk x head_dim x (4 x 2 B + 4 B) + head_dim^2 x 2 B")
                      : label_id("chunk x head_dim x 4 x 2 B + head_dim^2 x 2 B"),
                 kda_intermediate_bytes_per_chunk(model.kda, chunk, gate))
          .bytes(1, label_id("bf16 / fp32 bytes")));
}

namespace {

ActivationPiece larger(const ActivationPiece& a, const ActivationPiece& b) {
  return b.bytes > a.bytes ? b : a;
}

// Under a quantised recipe, the backward of the widest attention projection (GQA's linear_qkv,
// MLA's q or kv up-projection): its output gradient in bf16 and quantised row- and column-wise,
// alive across its two GEMMs after the attention kernel's working set is freed. Empty without a
// recipe (and for KDA, whose projections stay bf16 here).
ActivationPiece quantised_projection_backward(const Model& model, AttentionKind kind,
                                              const TokenShape& s, const TrainingConfig& t) {
  const LinearQuantisation q = linear_quantisation(t);
  if (!q.quantised() || kind == AttentionKind::kda) return {};
  std::int64_t width = 0;
  Label label = label_id("(heads + 2 kv_heads) x head_dim");
  if (kind == AttentionKind::gqa) {
    width = (model.gqa.heads + 2 * model.gqa.kv_heads) * model.gqa.head_dim;
  } else {
    const MlaShape& a = model.mla;
    width = std::max(a.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim),
                     a.heads * (a.qk_nope_head_dim + a.v_head_dim));
    label = label_id("widest up-projection output");
  }
  Formula f = split_tokens(s, width, label);
  const std::int64_t rows = s.sequence * s.micro_batch;
  const QuantisedBytes dy = quantised_output_gradient(q, rows, width / s.tensor_parallel);
  f.bytes(bf16, label_id("bf16"))
      .plus(label_id("quantised output gradient (row- and column-wise)"), dy.total());
  return make_piece(term_attention_projection_backward_quantised, f);
}

}  // namespace

ActivationPiece attention_backward_piece(const Model& model, AttentionKind kind,
                                         const TokenShape& s, const TrainingConfig& t) {
  if (kind == AttentionKind::kda) {
    // chunk_kda_bwd: the forward intermediates again (recomputed unless they were kept), the
    // state gradients dh (one K x V per chunk, bf16), and dq, dk, dv (bf16, q/k/v sized).
    const KdaShape& a = model.kda;
    const std::int64_t chunk = t.kernels.kda_chunk;
    const bool gate = t.kernels.fla_version != FlaVersion::v0_4_0;
    const std::int64_t recomputed =
        t.kernels.kda == KdaBackend::fused ? kda_intermediate_bytes_per_chunk(a, chunk, gate) : 0;
    const std::int64_t per_chunk =
        recomputed + a.head_dim * a.head_dim * bf16 + chunk * 3 * a.head_dim * bf16;
    return make_piece(term_kda_backward, kda_chunk_heads(s, a, chunk)
                                             .times(label_id("bytes per chunk and head"), per_chunk)
                                             .bytes(1, label_id("bf16 / fp32 bytes")));
  }
  std::int64_t qkv_width = 0;
  std::int64_t heads = 0;
  std::int64_t qk_dim = 0;
  if (kind == AttentionKind::gqa) {
    qkv_width = (model.gqa.heads + 2 * model.gqa.kv_heads) * model.gqa.head_dim;
    heads = model.gqa.heads;
    qk_dim = model.gqa.head_dim;
  } else {
    qk_dim = model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim;
    heads = model.mla.heads;
    qkv_width = heads * (2 * qk_dim + model.mla.v_head_dim);
  }
  ActivationPiece kernel;
  if (t.kernels.attention == AttentionKernel::flash) {
    // flash-attention's mha_bwd: dq, dk, dv (bf16) and dq_accum [b, s, h, d] fp32.
    kernel = make_piece(term_attention_backward_flash,
                        split_tokens(s, qkv_width * bf16 + heads * qk_dim * fp32,
                                     label_id("(q, k, v width x 2 B + heads x qk head_dim x 4 B)"))
                            .bytes(1, label_id("bf16 / fp32 bytes")));
    return larger(kernel, quantised_projection_backward(model, kind, s, t));
  }
  // Unfused attention: the gradient of the [B, heads, S/CP, S] scores (bf16) dominates dq, dk, dv.
  Formula f;
  f.times(label_id("B"), s.micro_batch)
      .times(label_id("heads/TP"), heads / s.tensor_parallel)
      .times(label_id("S/CP"), s.sequence)
      .times(label_id("S"), s.full_sequence)
      .bytes(bf16, label_id("bf16"));
  return larger(make_piece(term_attention_backward_materialized, f),
                quantised_projection_backward(model, kind, s, t));
}

std::vector<ActivationPiece> attention_pieces(const Model& model, AttentionKind kind,
                                              const TokenShape& shape,
                                              const TrainingConfig& training) {
  std::vector<ActivationPiece> out;
  attention_pieces_into(out, model, kind, shape, training);
  return out;
}

void attention_pieces_into(std::vector<ActivationPiece>& out, const Model& model,
                           AttentionKind kind, const TokenShape& shape,
                           const TrainingConfig& training) {
  if (training.framework == Framework::torchtitan && kind == AttentionKind::gqa) {
    torchtitan_attention_pieces_into(out, model, shape);
    return;
  }
  out.clear();
  out.reserve(20);
  add_attention_norm(out, model, shape, kind, linear_quantisation(training));
  switch (kind) {
    case AttentionKind::gqa:
      add_gqa(out, model, shape, training);
      break;
    case AttentionKind::mla:
      add_mla(out, model, shape, training);
      break;
    case AttentionKind::kda:
      add_kda(out, model, shape, training);
      break;
  }
  add_output_dropout(out, model, shape, training);
}

std::vector<ActivationPiece> layer_activation_pieces(const Model& model, LayerKind kind,
                                                     const TokenShape& shape,
                                                     const TrainingConfig& training,
                                                     const ParallelLayout& layout) {
  std::vector<ActivationPiece> out = attention_pieces(model, kind.attention, shape, training);
  for (ActivationPiece& p : mlp_pieces(model, kind.mlp, shape, training, layout)) {
    out.push_back(std::move(p));
  }
  return out;
}

std::int64_t stored_bytes(const std::vector<ActivationPiece>& pieces,
                          std::uint32_t dropped_modules) {
  // Saturates like the pieces do (a saturated piece's term reports that it does not fit).
  std::int64_t sum = 0;
  for (const ActivationPiece& p : pieces) {
    if ((p.dropped_by & dropped_modules) == 0 && !checked_add(sum, p.bytes, &sum)) {
      return std::numeric_limits<std::int64_t>::max();
    }
  }
  return sum;
}

}  // namespace stagemem
