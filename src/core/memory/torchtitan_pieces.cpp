// Stored activations of torchtitan's Llama-3 decoder layer and head: PyTorch modules run eagerly
// (torchtitan b5bcd76c: nn.RMSNorm through the fused rms_norm kernel, a fused wqkv projection,
// FlexAttention, FeedForward w2(silu(w1 x) * w3 x), the chunked cross-entropy), under no AC,
// per-op selective AC (torchtitan/distributed/activation_checkpoint.py: every other matmul
// recomputed, attention and reduce-scatter outputs saved) and full AC (each block keeps its
// input). docs/research/issue25-torchtitan-activations.md has each tensor and its source.
#include "memory/activation_pieces.h"

namespace stagemem {
namespace {

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

constexpr TermInfo term_block_input{
    "block input (attention norm input: saved by the fused RMSNorm, per-op SAC's input)",
    "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_attention_norm_rstd{"attention norm reciprocal std (fp32)",
                                            "S/CP, B (/TP with SP)"};
constexpr TermInfo term_attention_norm_output{
    "attention norm output (wqkv input; all-gathered under SP)", "S/CP, B, h"};
constexpr TermInfo term_qkv{"q, k, v (wqkv output; q, k after RoPE and a contiguous v in eager)",
                            "S/CP, B, (heads + 2 kv_heads)/TP"};
constexpr TermInfo term_attention_lse{"attention log-sum-exp (fp32)", "S/CP, B, heads/TP"};
constexpr TermInfo term_attention_output{"attention output (wo input)", "S/CP, B, heads/TP"};
constexpr TermInfo term_wo_reduce_scattered{
    "wo output after its reduce-scatter (saved by per-op SAC under SP)", "S/CP, B, h/TP"};
constexpr TermInfo term_ffn_norm_input{"ffn norm input (residual stream, fused RMSNorm)",
                                       "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_ffn_norm_rstd{"ffn norm reciprocal std (fp32)", "S/CP, B (/TP with SP)"};
constexpr TermInfo term_ffn_norm_output{"ffn norm output (w1 and w3 input; all-gathered under SP)",
                                        "S/CP, B, h"};
constexpr TermInfo term_w1_output{"w1 output (silu input)", "S/CP, B, intermediate/TP"};
constexpr TermInfo term_silu_output{"silu output", "S/CP, B, intermediate/TP"};
constexpr TermInfo term_w3_output{"w3 output", "S/CP, B, intermediate/TP"};
constexpr TermInfo term_w2_input{"silu(w1 x) * w3 x (w2 input)", "S/CP, B, intermediate/TP"};
constexpr TermInfo term_w2_output{
    "w2 output (saved by per-op SAC; after its reduce-scatter under SP)",
    "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_final_norm_input{"final norm input (fused RMSNorm)",
                                         "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_final_norm_rstd{"final norm reciprocal std (fp32)",
                                        "S/CP, B (/TP with SP)"};
constexpr TermInfo term_decoder_output_gradient{
    "decoder output gradient (bf16, from the chunked loss, held until the decoder's backward)",
    "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_loss_loop{
    "chunked loss loop: one chunk's logits (bf16), fp32 upcast and log-probabilities, and the "
    "fp32 accumulator of the decoder output's gradient",
    "S/CP x B / 8 chunks x padded V/TP; S/CP x B x h"};

// Per-token scalars of a norm (its rstd): 1/TP under sequence parallelism.
Formula token_scalars(const TokenShape& s) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence).times(label_id("B"), s.micro_batch);
  if (s.sequence_parallel && s.tensor_parallel > 1) f.per(label_id("TP (SP)"), s.tensor_parallel);
  return f;
}

const std::uint32_t eager_only = torchtitan_recomputed_by_sac;
const std::uint32_t sac_only = torchtitan_saved_only_by_sac;

}  // namespace

void torchtitan_attention_pieces_into(std::vector<ActivationPiece>& out, const Model& m,
                                      const TokenShape& s) {
  out.clear();
  const GqaShape& a = m.gqa;
  out.push_back(make_piece(
      term_block_input, hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(term_attention_norm_rstd, token_scalars(s).bytes(fp32, label_id("fp32")),
                           eager_only));
  out.push_back(make_piece(term_attention_norm_output,
                           full_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           eager_only));
  out.push_back(make_piece(term_qkv, split_tokens(s, (a.heads + 2 * a.kv_heads) * a.head_dim,
                                                  label_id("(heads + 2 kv_heads) x head_dim"))
                                         .bytes(bf16, label_id("bf16"))));
  Formula lse;
  lse.times(label_id("B"), s.micro_batch)
      .times(label_id("heads/TP"), a.heads / s.tensor_parallel)
      .times(label_id("S/CP"), s.sequence);
  out.push_back(make_piece(term_attention_lse, lse.bytes(fp32, label_id("fp32"))));
  out.push_back(make_piece(term_attention_output,
                           split_tokens(s, a.heads * a.head_dim, label_id("heads x v_dim"))
                               .bytes(bf16, label_id("bf16"))));
  if (s.sequence_parallel && s.tensor_parallel > 1) {
    out.push_back(make_piece(
        term_wo_reduce_scattered,
        hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")), sac_only));
  }
}

void torchtitan_mlp_pieces_into(std::vector<ActivationPiece>& out, const Model& m,
                                const TokenShape& s) {
  out.clear();
  const std::int64_t i = m.dense_mlp.intermediate;
  out.push_back(make_piece(term_ffn_norm_input,
                           hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           eager_only));
  out.push_back(
      make_piece(term_ffn_norm_rstd, token_scalars(s).bytes(fp32, label_id("fp32")), eager_only));
  out.push_back(make_piece(term_ffn_norm_output,
                           full_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           eager_only));
  const auto intermediate = [&] {
    return split_tokens(s, i, label_id("intermediate")).bytes(bf16, label_id("bf16"));
  };
  out.push_back(make_piece(term_w1_output, intermediate()));
  out.push_back(make_piece(term_silu_output, intermediate(), eager_only));
  out.push_back(make_piece(term_w3_output, intermediate(), eager_only));
  out.push_back(make_piece(term_w2_input, intermediate(), eager_only));
  out.push_back(make_piece(term_w2_output,
                           hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16")),
                           sac_only));
}

std::vector<ActivationPiece> torchtitan_head_pieces(const Model& m, const TokenShape& s) {
  std::vector<ActivationPiece> out;
  out.push_back(
      make_piece(term_final_norm_input,
                 hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(term_final_norm_rstd, token_scalars(s).bytes(fp32, label_id("fp32"))));
  out.push_back(
      make_piece(term_decoder_output_gradient,
                 hidden_tokens(s, m.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  return out;
}

std::vector<ActivationPiece> torchtitan_head_transients(const Model& m, const TokenShape& s,
                                                        std::int64_t padded_vocab) {
  // The loss loop (forward then, per chunk, backward at once) holds one chunk's logits with its
  // fp32 upcast and log-probabilities beside the fp32 accumulator of the decoder output's
  // gradient.
  Formula loop;
  loop.times(label_id("chunk tokens"),
             (s.tokens + torchtitan_loss_chunks - 1) / torchtitan_loss_chunks)
      .times(label_id("padded V/TP"), padded_vocab / s.tensor_parallel)
      .bytes(bf16 + 2 * fp32, label_id("bf16 + 2 x fp32"))
      .plus(label_id("fp32 gradient accumulator"),
            hidden_tokens(s, m.hidden, label_id("h")).bytes(fp32, label_id("fp32")).value());
  return {make_piece(term_loss_loop, loop)};
}

}  // namespace stagemem
