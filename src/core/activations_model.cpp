// Activations and transients outside the decoder layers' own tensors: embedding, final norm,
// logits and loss, MTP, Block Attention Residuals, pipeline send/receive and context-parallel
// exchange buffers.
#include "activation_model.h"

#include <algorithm>

namespace stagemem {
namespace {

constexpr TermInfo term_attn_res_mix_internal{
    "AttnRes mix internal fp32 temporaries (kernel assumption: {} live temporaries besides the "
    "upcast slots)",
    "S/CP, B, h, completed AttnRes blocks K"};
constexpr TermInfo term_final_norm_input{"final norm input", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_final_norm_output_lm_head_input{"final norm output (LM head input)",
                                                        "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_cross_entropy_softmax_over_the_vocabulary_fp32{
    "cross-entropy softmax over the vocabulary (fp32)", "S/CP, B, V/TP"};
constexpr TermInfo term_per_token_logit_statistics_of_the_fused_cross_en{
    "per-token logit statistics of the fused cross-entropy (fp32)", "S/CP, B"};
constexpr TermInfo term_per_token_loss_fp32{"per-token loss (fp32)", "S/CP, B"};
constexpr TermInfo term_logits_bf16_output_layer_output_before_the_fp32{
    "logits (bf16 output-layer output, before the fp32 upcast)", "S/CP, B, V/TP"};
constexpr TermInfo term_logits_gradient_bf16_output_layer_backward_input{
    "logits gradient (bf16, output-layer backward input)", "S/CP, B, V/TP", TermText::generic,
    true};
constexpr TermInfo term_logits_of_one_cross_entropy_chunk_bf16_fp32{
    "logits of one cross-entropy chunk (bf16 + fp32)", "cross-entropy chunk, V/TP"};
constexpr TermInfo term_mtp_embedding_norm_input_embedding_of_the_shifte{
    "MTP embedding norm input (embedding of the shifted tokens)", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_mtp_hidden_norm_input{"MTP hidden norm input", "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_mtp_concatenated_norms_eh_proj_input{
    "MTP concatenated norms (eh_proj input)", "S/CP, B, 2h (/TP with SP)"};
constexpr TermInfo term_embedding_dropout_mask{"embedding dropout mask",
                                               "S/CP, B, h (/TP with SP)"};
constexpr TermInfo term_attnres_block_slots_referenced_by_the_mixes_bf16{
    "AttnRes block slots referenced by the mixes (bf16)",
    "S/CP, B, h, AttnRes blocks started before the stage's end"};
constexpr TermInfo term_attnres_mixing_weights_fp32_softmax_over_the_slo{
    "AttnRes mixing weights (fp32 softmax over the slots)", "S/CP, B, sites x slots"};
constexpr TermInfo term_context_parallel_kda_state_exchange_fp32{
    "context-parallel KDA state exchange (fp32)", "B, heads/TP, head_dim^2"};
constexpr TermInfo term_context_parallel_kv_exchange_buffers_ring_attent{
    "context-parallel KV exchange buffers (ring attention)", "S/CP, B, kv width/TP"};
constexpr TermInfo term_moe_dispatch_all_to_all_send_buffer_permuted_cop{
    "MoE dispatch all-to-all send buffer (permuted copies of the local tokens)",
    "S/CP, B (/TP with SP), top-k, expert width"};

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

// The output layer gathers the sequence under SP: logits cover every token of the rank's
// sequence shard, over the rank's slice of the padded vocabulary.
Formula vocabulary_tokens(const TokenShape& s, std::int64_t padded_vocab) {
  Formula f;
  f.times(label_id("S/CP"), s.sequence)
      .times(label_id("B"), s.micro_batch)
      .times(label_id("padded V/TP"), padded_vocab / s.tensor_parallel);
  return f;
}

}  // namespace

std::int64_t attn_res_slots_before(std::int64_t layers_before, std::int64_t block_size) {
  if (block_size <= 0 || layers_before <= 0) return 0;
  return (layers_before + block_size - 1) / block_size;
}

std::vector<ActivationPiece> head_pieces(const Model& model, const TokenShape& shape,
                                         const TrainingConfig& training,
                                         std::int64_t padded_vocab) {
  std::vector<ActivationPiece> out;
  if (model.final_norm) {
    out.push_back(make_piece(
        term_final_norm_input,
        hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  }
  out.push_back(
      make_piece(term_final_norm_output_lm_head_input,
                 hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  if (training.kernels.cross_entropy == CrossEntropyKernel::vocab_parallel) {
    // Megatron's vocab-parallel cross-entropy upcasts the logits and keeps the fp32 softmax.
    out.push_back(make_piece(term_cross_entropy_softmax_over_the_vocabulary_fp32,
                             vocabulary_tokens(shape, padded_vocab).bytes(fp32, label_id("fp32"))));
  } else {
    Formula stats;
    stats.times(label_id("S/CP"), shape.sequence)
        .times(label_id("B"), shape.micro_batch)
        .times(label_id("max and log-sum-exp"), 2);
    out.push_back(make_piece(term_per_token_logit_statistics_of_the_fused_cross_en,
                             stats.bytes(fp32, label_id("fp32"))));
  }
  Formula loss;
  loss.times(label_id("S/CP"), shape.sequence).times(label_id("B"), shape.micro_batch);
  out.push_back(make_piece(term_per_token_loss_fp32, loss.bytes(fp32, label_id("fp32"))));
  return out;
}

std::vector<ActivationPiece> head_transients(const TokenShape& shape,
                                             const TrainingConfig& training,
                                             std::int64_t padded_vocab) {
  std::vector<ActivationPiece> out;
  if (training.kernels.cross_entropy == CrossEntropyKernel::vocab_parallel) {
    out.push_back(make_piece(term_logits_bf16_output_layer_output_before_the_fp32,
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, label_id("bf16"))));
    out.push_back(make_piece(term_logits_gradient_bf16_output_layer_backward_input,
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, label_id("bf16"))));
  } else {
    Formula chunk;
    chunk
        .times(label_id("chunk tokens"),
               std::min(shape.tokens, training.kernels.cross_entropy_chunk))
        .times(label_id("padded V/TP"), padded_vocab / shape.tensor_parallel);
    out.push_back(make_piece(term_logits_of_one_cross_entropy_chunk_bf16_fp32,
                             chunk.bytes(bf16 + fp32, label_id("bf16 + fp32"))));
  }
  return out;
}

std::vector<ActivationPiece> mtp_extra_pieces(const Model& model, const TokenShape& shape) {
  std::vector<ActivationPiece> out;
  out.push_back(
      make_piece(term_mtp_embedding_norm_input_embedding_of_the_shifte,
                 hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  out.push_back(
      make_piece(term_mtp_hidden_norm_input,
                 hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  out.push_back(make_piece(
      term_mtp_concatenated_norms_eh_proj_input,
      hidden_tokens(shape, 2 * model.hidden, label_id("2h")).bytes(bf16, label_id("bf16"))));
  return out;
}

ActivationPiece embedding_dropout_piece(const Model& model, const TokenShape& shape) {
  return make_piece(term_embedding_dropout_mask,
                    hidden_tokens(shape, model.hidden, label_id("h")).bytes(1, label_id("uint8")));
}

ActivationPiece attn_res_slots_piece(const Model& model, const TokenShape& shape,
                                     std::int64_t slots) {
  return make_piece(term_attnres_block_slots_referenced_by_the_mixes_bf16,
                    hidden_tokens(shape, model.hidden, label_id("h"))
                        .times(label_id("slots"), slots)
                        .bytes(bf16, label_id("bf16")));
}

ActivationPiece attn_res_weights_piece(const TokenShape& shape, std::int64_t slot_sites) {
  Formula f;
  f.times(label_id("S/CP"), shape.sequence).times(label_id("B"), shape.micro_batch);
  if (shape.sequence_parallel && shape.tensor_parallel > 1)
    f.per(label_id("TP (SP)"), shape.tensor_parallel);
  f.times(label_id("sum over mixing sites of (1 + K)"), slot_sites);
  return make_piece(term_attnres_mixing_weights_fp32_softmax_over_the_slo,
                    f.bytes(fp32, label_id("fp32")));
}

ActivationPiece attn_res_internal_piece(const Model& model, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        std::int64_t completed_blocks) {
  Formula f = hidden_tokens(shape, model.hidden, label_id("h"));
  f.times(label_id("(1 + K) slots + live temporaries"),
          1 + completed_blocks + training.kernels.attn_res_live_temporaries);
  ActivationPiece p = make_piece(term_attn_res_mix_internal, f.bytes(fp32, label_id("fp32")));
  p.name_value = training.kernels.attn_res_live_temporaries;
  return p;
}

Formula pipeline_buffer_formula(const Model& model, const TokenShape& shape, std::int64_t slots) {
  return hidden_tokens(shape, model.hidden, label_id("h"))
      .times(label_id("1 + AttnRes slots"), 1 + slots)
      .bytes(bf16, label_id("bf16"));
}

ActivationPiece context_parallel_exchange_piece(const Model& model, const TokenShape& shape,
                                                AttentionKind kind) {
  Formula f;
  if (kind == AttentionKind::kda) {
    // fla's context parallelism passes one recurrent state per sequence between ranks.
    f.times(label_id("send + receive"), 2)
        .times(label_id("B"), shape.micro_batch)
        .times(label_id("heads/TP"), model.kda.heads / shape.tensor_parallel)
        .times(label_id("head_dim^2"), model.kda.head_dim * model.kda.head_dim);
    return make_piece(term_context_parallel_kda_state_exchange_fp32,
                      f.bytes(fp32, label_id("fp32")));
  }
  // Ring attention: one step's keys and values being sent while the next step's arrive.
  const std::int64_t kv_width =
      kind == AttentionKind::gqa
          ? 2 * model.gqa.kv_heads * model.gqa.head_dim
          : model.mla.heads *
                (model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim + model.mla.v_head_dim);
  f.times(label_id("send + receive"), 2)
      .times(label_id("S/CP"), shape.sequence)
      .times(label_id("B"), shape.micro_batch)
      .times(label_id("k + v width/TP"), kv_width / shape.tensor_parallel);
  return make_piece(term_context_parallel_kv_exchange_buffers_ring_attent,
                    f.bytes(bf16, label_id("bf16")));
}

ActivationPiece moe_dispatch_piece(const Model& model, const TokenShape& shape) {
  const std::int64_t width = model.moe.latent_hidden > 0 ? model.moe.latent_hidden : model.hidden;
  Formula f;
  f.times(label_id("S/CP"), shape.sequence).times(label_id("B"), shape.micro_batch);
  if (shape.sequence_parallel && shape.tensor_parallel > 1)
    f.per(label_id("TP (SP)"), shape.tensor_parallel);
  f.times(label_id("top-k"), model.moe.top_k).times(label_id("expert width"), width);
  return make_piece(term_moe_dispatch_all_to_all_send_buffer_permuted_cop,
                    f.bytes(bf16, label_id("bf16")));
}

}  // namespace stagemem
