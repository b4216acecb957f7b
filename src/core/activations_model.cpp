// Activations and transients outside the decoder layers' own tensors: embedding, final norm,
// logits and loss, MTP, Block Attention Residuals, pipeline send/receive and context-parallel
// exchange buffers.
#include "activation_model.h"

#include <algorithm>

namespace stagemem {
namespace {

constexpr std::int64_t bf16 = 2;
constexpr std::int64_t fp32 = 4;

// The output layer gathers the sequence under SP: logits cover every token of the rank's
// sequence shard, over the rank's slice of the padded vocabulary.
Formula vocabulary_tokens(const TokenShape& s, std::int64_t padded_vocab) {
  Formula f;
  f.times("S/CP", s.sequence)
      .times("B", s.micro_batch)
      .times("padded V/TP", padded_vocab / s.tensor_parallel);
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
    out.push_back(make_piece("final norm input",
                             hidden_tokens(shape, model.hidden, "h").bytes(bf16, "bf16"),
                             "S/CP, B, h (/TP with SP)"));
  }
  out.push_back(make_piece("final norm output (LM head input)",
                           hidden_tokens(shape, model.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)"));
  if (training.kernels.cross_entropy == CrossEntropyKernel::vocab_parallel) {
    // Megatron's vocab-parallel cross-entropy upcasts the logits and keeps the fp32 softmax.
    out.push_back(make_piece("cross-entropy softmax over the vocabulary (fp32)",
                             vocabulary_tokens(shape, padded_vocab).bytes(fp32, "fp32"),
                             "S/CP, B, V/TP"));
  } else {
    Formula stats;
    stats.times("S/CP", shape.sequence)
        .times("B", shape.micro_batch)
        .times("max and log-sum-exp", 2);
    out.push_back(make_piece("per-token logit statistics of the fused cross-entropy (fp32)",
                             stats.bytes(fp32, "fp32"), "S/CP, B"));
  }
  Formula loss;
  loss.times("S/CP", shape.sequence).times("B", shape.micro_batch);
  out.push_back(make_piece("per-token loss (fp32)", loss.bytes(fp32, "fp32"), "S/CP, B"));
  return out;
}

std::vector<ActivationPiece> head_transients(const TokenShape& shape,
                                             const TrainingConfig& training,
                                             std::int64_t padded_vocab) {
  std::vector<ActivationPiece> out;
  if (training.kernels.cross_entropy == CrossEntropyKernel::vocab_parallel) {
    out.push_back(make_piece("logits (bf16 output-layer output, before the fp32 upcast)",
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, "bf16"),
                             "S/CP, B, V/TP"));
    out.push_back(make_piece("logits gradient (bf16, output-layer backward input)",
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, "bf16"),
                             "S/CP, B, V/TP"));
  } else {
    Formula chunk;
    chunk.times("chunk tokens", std::min(shape.tokens, training.kernels.cross_entropy_chunk))
        .times("padded V/TP", padded_vocab / shape.tensor_parallel);
    out.push_back(make_piece("logits of one cross-entropy chunk (bf16 + fp32)",
                             chunk.bytes(bf16 + fp32, "bf16 + fp32"), "cross-entropy chunk, V/TP"));
  }
  return out;
}

std::vector<ActivationPiece> mtp_extra_pieces(const Model& model, const TokenShape& shape) {
  std::vector<ActivationPiece> out;
  out.push_back(make_piece("MTP embedding norm input (embedding of the shifted tokens)",
                           hidden_tokens(shape, model.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)"));
  out.push_back(make_piece("MTP hidden norm input",
                           hidden_tokens(shape, model.hidden, "h").bytes(bf16, "bf16"),
                           "S/CP, B, h (/TP with SP)"));
  out.push_back(make_piece("MTP concatenated norms (eh_proj input)",
                           hidden_tokens(shape, 2 * model.hidden, "2h").bytes(bf16, "bf16"),
                           "S/CP, B, 2h (/TP with SP)"));
  return out;
}

ActivationPiece embedding_dropout_piece(const Model& model, const TokenShape& shape) {
  return make_piece("embedding dropout mask",
                    hidden_tokens(shape, model.hidden, "h").bytes(1, "uint8"),
                    "S/CP, B, h (/TP with SP)");
}

ActivationPiece attn_res_slots_piece(const Model& model, const TokenShape& shape,
                                     std::int64_t slots) {
  return make_piece(
      "AttnRes block slots referenced by the mixes (bf16)",
      hidden_tokens(shape, model.hidden, "h").times("slots", slots).bytes(bf16, "bf16"),
      "S/CP, B, h, AttnRes blocks started before the stage's end");
}

ActivationPiece attn_res_weights_piece(const TokenShape& shape, std::int64_t slot_sites) {
  Formula f;
  f.times("S/CP", shape.sequence).times("B", shape.micro_batch);
  if (shape.sequence_parallel && shape.tensor_parallel > 1) f.per("TP (SP)", shape.tensor_parallel);
  f.times("sum over mixing sites of (1 + K)", slot_sites);
  return make_piece("AttnRes mixing weights (fp32 softmax over the slots)", f.bytes(fp32, "fp32"),
                    "S/CP, B, sites x slots");
}

ActivationPiece attn_res_internal_piece(const Model& model, const TokenShape& shape,
                                        const TrainingConfig& training,
                                        std::int64_t completed_blocks) {
  Formula f = hidden_tokens(shape, model.hidden, "h");
  f.times("(1 + K) slots + live temporaries",
          1 + completed_blocks + training.kernels.attn_res_live_temporaries);
  return make_piece("AttnRes mix internal fp32 temporaries (kernel assumption: " +
                        std::to_string(training.kernels.attn_res_live_temporaries) +
                        " live temporaries besides the upcast slots)",
                    f.bytes(fp32, "fp32"), "S/CP, B, h, completed AttnRes blocks K");
}

ActivationPiece pipeline_buffer_piece(const Model& model, const TokenShape& shape, std::string name,
                                      std::int64_t slots) {
  return make_piece(std::move(name),
                    hidden_tokens(shape, model.hidden, "h")
                        .times("1 + AttnRes slots", 1 + slots)
                        .bytes(bf16, "bf16"),
                    "S/CP, B, h (/TP with SP), AttnRes slots at the boundary");
}

ActivationPiece context_parallel_exchange_piece(const Model& model, const TokenShape& shape,
                                                AttentionKind kind) {
  Formula f;
  if (kind == AttentionKind::kda) {
    // fla's context parallelism passes one recurrent state per sequence between ranks.
    f.times("send + receive", 2)
        .times("B", shape.micro_batch)
        .times("heads/TP", model.kda.heads / shape.tensor_parallel)
        .times("head_dim^2", model.kda.head_dim * model.kda.head_dim);
    return make_piece("context-parallel KDA state exchange (fp32)", f.bytes(fp32, "fp32"),
                      "B, heads/TP, head_dim^2");
  }
  // Ring attention: one step's keys and values being sent while the next step's arrive.
  const std::int64_t kv_width =
      kind == AttentionKind::gqa
          ? 2 * model.gqa.kv_heads * model.gqa.head_dim
          : model.mla.heads *
                (model.mla.qk_nope_head_dim + model.mla.qk_rope_head_dim + model.mla.v_head_dim);
  f.times("send + receive", 2)
      .times("S/CP", shape.sequence)
      .times("B", shape.micro_batch)
      .times("k + v width/TP", kv_width / shape.tensor_parallel);
  return make_piece("context-parallel KV exchange buffers (ring attention)", f.bytes(bf16, "bf16"),
                    "S/CP, B, kv width/TP");
}

ActivationPiece moe_dispatch_piece(const Model& model, const TokenShape& shape) {
  const std::int64_t width = model.moe.latent_hidden > 0 ? model.moe.latent_hidden : model.hidden;
  Formula f;
  f.times("S/CP", shape.sequence).times("B", shape.micro_batch);
  if (shape.sequence_parallel && shape.tensor_parallel > 1) f.per("TP (SP)", shape.tensor_parallel);
  f.times("top-k", model.moe.top_k).times("expert width", width);
  return make_piece("MoE dispatch all-to-all send buffer (permuted copies of the local tokens)",
                    f.bytes(bf16, "bf16"), "S/CP, B (/TP with SP), top-k, expert width");
}

}  // namespace stagemem
