// Stored activations of the attention half of a decoder layer: the layer input, the attention
// norm and the attention kind's own tensors (GQA / MLA with flash attention, KDA with fla).
#include <algorithm>

#include "activation_pieces.h"
#include "units.h"

namespace stagemem {
namespace {

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

void add_attention_norm(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s) {
  out.push_back(make_piece("layer input (residual stream, saved by the attention norm)",
                           hidden_tokens(s, m.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)"));
  out.push_back(make_piece("attention norm output (input of the attention projections)",
                           hidden_tokens(s, m.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)", module_bits({RecomputeModule::layernorm})));
}

// Flash attention keeps its output and the per-row log-sum-exp; a materialised kernel keeps the
// softmax output (and, with dropout, its mask and the dropped-out probabilities) instead.
void add_attention_core(std::vector<ActivationPiece>& out, const TokenShape& s,
                        const TrainingConfig& t, std::int64_t heads, std::int64_t value_width) {
  const std::uint32_t core = module_bits({RecomputeModule::core_attn});
  if (t.kernels.attention == AttentionKernel::flash) {
    Formula lse;
    lse.times("B", s.micro_batch)
        .times("heads/TP", heads / s.tensor_parallel)
        .times("S/CP", s.sequence);
    out.push_back(make_piece("softmax log-sum-exp (flash-attention statistics)",
                             lse.bytes(fp32, "fp32"), "S/CP, B, heads/TP", core));
  } else {
    // Korthikanti et al.: scores over the whole key sequence, one per head and query.
    const auto scores = [&] {
      Formula f;
      f.times("B", s.micro_batch)
          .times("heads/TP", heads / s.tensor_parallel)
          .times("S/CP", s.sequence)
          .times("S", s.full_sequence);
      return f;
    };
    out.push_back(make_piece("attention softmax output [B, heads, S, S]",
                             scores().bytes(bf16, "bf16"), "S/CP x S, B, heads/TP", core));
    if (t.dropout) {
      out.push_back(make_piece("attention-probability dropout mask", scores().bytes(1, "uint8"),
                               "S/CP x S, B, heads/TP", core));
      out.push_back(make_piece("attention probabilities after dropout",
                               scores().bytes(bf16, "bf16"), "S/CP x S, B, heads/TP", core));
    }
  }
  out.push_back(make_piece("attention output (also the output projection's input)",
                           split_tokens(s, value_width, "heads x v_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP"));
}

void add_output_dropout(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
                        const TrainingConfig& t, std::string_view what) {
  if (!t.dropout) return;
  out.push_back(make_piece(std::string(what) + " dropout mask",
                           hidden_tokens(s, m.hidden, "h").bytes(1, "uint8"),
                           "S/CP, B, h (/TP with SP)"));
}

void add_gqa(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const GqaShape& a = m.gqa;
  const std::int64_t qkv_width = (a.heads + 2 * a.kv_heads) * a.head_dim;
  out.push_back(
      make_piece("q, k, v (attention inputs, after RoPE)",
                 split_tokens(s, qkv_width, "(heads + 2 kv_heads) x head_dim").bytes(bf16, "bf16"),
                 "S/CP, B, (heads + 2 kv_heads)/TP"));
  add_attention_core(out, s, t, a.heads, a.heads * a.head_dim);
}

void add_mla(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const MlaShape& a = m.mla;
  const std::uint32_t norm = module_bits({RecomputeModule::layernorm});
  const std::uint32_t up = module_bits({RecomputeModule::mla_up_proj});
  const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  // The down-projections are duplicated on every TP rank, so the latents are full width.
  if (a.q_lora_rank > 0) {
    out.push_back(make_piece("q latent (q down-projection output, its norm's input)",
                             full_tokens(s, a.q_lora_rank, "q_lora_rank").bytes(bf16, "bf16"),
                             "S/CP, B, q_lora_rank"));
    out.push_back(make_piece("q latent after its norm (q up-projection input)",
                             full_tokens(s, a.q_lora_rank, "q_lora_rank").bytes(bf16, "bf16"),
                             "S/CP, B, q_lora_rank", norm));
  }
  out.push_back(
      make_piece("kv latent and RoPE key (kv down-projection output)",
                 full_tokens(s, a.kv_lora_rank + a.qk_rope_head_dim, "kv_lora_rank + rope_dim")
                     .bytes(bf16, "bf16"),
                 "S/CP, B, kv_lora_rank + rope_dim"));
  out.push_back(make_piece("kv latent after its norm (kv up-projection input)",
                           full_tokens(s, a.kv_lora_rank, "kv_lora_rank").bytes(bf16, "bf16"),
                           "S/CP, B, kv_lora_rank", norm));
  out.push_back(make_piece(
      "up-projected q, k, v (attention inputs)",
      split_tokens(s, a.heads * (2 * q_head + a.v_head_dim), "heads x (2 (nope + rope) + v_dim)")
          .bytes(bf16, "bf16"),
      "S/CP, B, heads/TP", up));
  add_attention_core(out, s, t, a.heads, a.heads * a.v_head_dim);
  if (a.output_gate) {
    out.push_back(
        make_piece("output gate (sigmoid of the gate projection)",
                   split_tokens(s, a.heads * a.v_head_dim, "heads x v_dim").bytes(bf16, "bf16"),
                   "S/CP, B, heads/TP"));
    out.push_back(
        make_piece("gated attention output (output projection input)",
                   split_tokens(s, a.heads * a.v_head_dim, "heads x v_dim").bytes(bf16, "bf16"),
                   "S/CP, B, heads/TP"));
  }
}

// fla's KimiDeltaAttention with chunk_kda: the projections feed depthwise short convolutions,
// whose outputs (q, k l2-normalised in the kernel) go to chunk_kda. The fused backend keeps q, k,
// v, the fp32 gate and its chunk-local cumulative sum, beta, and the per-chunk Aqk / Akk matrices
// ([tokens, heads, chunk] each), and recomputes the chunk states in backward.
void add_kda(std::vector<ActivationPiece>& out, const Model& m, const TokenShape& s,
             const TrainingConfig& t) {
  const KdaShape& a = m.kda;
  const std::int64_t width = a.heads * a.head_dim;
  const std::int64_t chunk = t.kernels.kda_chunk;
  out.push_back(make_piece("q, k, v projection outputs (short-convolution inputs)",
                           split_tokens(s, 3 * width, "3 x heads x head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP"));
  out.push_back(make_piece("q, k, v after convolution and q/k l2-norm (chunk_kda inputs)",
                           split_tokens(s, 3 * width, "3 x heads x head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP"));
  out.push_back(make_piece("q, k l2-norm reciprocal std (fp32)",
                           split_tokens(s, 2 * a.heads, "2 x heads").bytes(fp32, "fp32"),
                           "S/CP, B, heads/TP"));
  if (!a.full_rank_gate) {
    out.push_back(make_piece("decay-gate latent (f_a output, duplicated)",
                             full_tokens(s, a.head_dim, "head_dim").bytes(bf16, "bf16"),
                             "S/CP, B, head_dim"));
  }
  out.push_back(make_piece("decay-gate projection output (gate activation input)",
                           split_tokens(s, width, "heads x head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP"));
  out.push_back(make_piece("decay gate and its chunk-local cumulative sum (fp32)",
                           split_tokens(s, 2 * width, "2 x heads x head_dim").bytes(fp32, "fp32"),
                           "S/CP, B, heads/TP"));
  out.push_back(make_piece("beta (sigmoid of the beta projection, fp32)",
                           split_tokens(s, a.heads, "heads").bytes(fp32, "fp32"),
                           "S/CP, B, heads/TP"));
  out.push_back(
      make_piece("intra-chunk Aqk and Akk matrices",
                 split_tokens(s, 2 * a.heads * chunk, "2 x heads x chunk").bytes(bf16, "bf16"),
                 "S/CP, B, heads/TP, KDA chunk size"));
  if (t.kernels.kda == KdaBackend::eager) {
    // An eager chunked implementation keeps what the fused kernel recomputes: the state at every
    // chunk boundary ([chunks, heads, head_dim, head_dim] fp32) and the WY-form intermediates
    // w, u, gated q, gated k and the corrected values, in fp32.
    Formula states;
    states.times("B", s.micro_batch)
        .times("chunks = ceil(S/CP / chunk)", (s.sequence + chunk - 1) / chunk)
        .times("heads/TP", a.heads / s.tensor_parallel)
        .times("head_dim^2", a.head_dim * a.head_dim);
    out.push_back(make_piece("per-chunk recurrent states (eager backend, fp32)",
                             states.bytes(fp32, "fp32"), "S/CP / chunk, B, heads/TP, head_dim^2"));
    out.push_back(make_piece("w, u, gated q, gated k, new v (eager backend, fp32)",
                             split_tokens(s, 5 * width, "5 x heads x head_dim").bytes(fp32, "fp32"),
                             "S/CP, B, heads/TP"));
  }
  out.push_back(make_piece("output-gate latent (g_a output, duplicated)",
                           full_tokens(s, a.head_dim, "head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, head_dim"));
  out.push_back(make_piece("chunk_kda output and output gate (gated RMSNorm inputs)",
                           split_tokens(s, 2 * width, "2 x heads x head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP"));
  out.push_back(make_piece("gated RMSNorm output (output projection input)",
                           split_tokens(s, width, "heads x head_dim").bytes(bf16, "bf16"),
                           "S/CP, B, heads/TP", module_bits({RecomputeModule::layernorm})));
}

}  // namespace

std::uint32_t module_bits(std::initializer_list<RecomputeModule> modules) {
  std::uint32_t out = 0;
  for (RecomputeModule m : modules) out |= module_bit(m);
  return out;
}

Formula hidden_tokens(const TokenShape& s, std::int64_t width, std::string_view width_label) {
  Formula f;
  f.times("S/CP", s.sequence).times("B", s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) {
    f.times(std::string(width_label) + "/TP (SP)", width / s.tensor_parallel);
  } else {
    f.times(width_label, width);
  }
  return f;
}

Formula split_tokens(const TokenShape& s, std::int64_t width, std::string_view width_label) {
  Formula f;
  f.times("S/CP", s.sequence)
      .times("B", s.micro_batch)
      .times(std::string(width_label) + "/TP", width / s.tensor_parallel);
  return f;
}

Formula full_tokens(const TokenShape& s, std::int64_t width, std::string_view width_label) {
  Formula f;
  f.times("S/CP", s.sequence).times("B", s.micro_batch).times(width_label, width);
  return f;
}

ActivationPiece make_piece(std::string name, const Formula& formula, std::string_view scaling,
                           std::uint32_t dropped_by) {
  return {.name = std::move(name),
          .formula = formula.text(),
          .scaling = scaling,
          .bytes = formula.value(),
          .dropped_by = dropped_by};
}

Formula& Formula::times(std::string_view label, std::int64_t value) {
  if (!text_.empty()) text_ += " x ";
  text_ += "[" + std::string(label) + "=" + group_digits(value) + "]";
  value_ *= value;
  return *this;
}

Formula& Formula::per(std::string_view label, std::int64_t divisor) {
  text_ += " / [" + std::string(label) + "=" + group_digits(divisor) + "]";
  value_ /= divisor;
  return *this;
}

Formula& Formula::bytes(std::int64_t bytes_per_element, std::string_view dtype) {
  if (!text_.empty()) text_ += " x ";
  text_ += std::to_string(bytes_per_element) + " B (" + std::string(dtype) + ")";
  value_ *= bytes_per_element;
  return *this;
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

std::vector<ActivationPiece> attention_pieces(const Model& model, AttentionKind kind,
                                              const TokenShape& shape,
                                              const TrainingConfig& training) {
  std::vector<ActivationPiece> out;
  add_attention_norm(out, model, shape);
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
  add_output_dropout(out, model, shape, training, "attention output");
  return out;
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
  std::int64_t sum = 0;
  for (const ActivationPiece& p : pieces) {
    if ((p.dropped_by & dropped_modules) == 0) sum += p.bytes;
  }
  return sum;
}

}  // namespace stagemem
