// Activations and transients outside the decoder layers' own tensors: embedding, final norm,
// logits and loss, MTP, Block Attention Residuals, pipeline send/receive and context-parallel
// exchange buffers.
#include "memory/model_pieces.h"

#include <algorithm>
#include <limits>

#include "config/version_rules.h"

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
constexpr TermInfo term_cross_entropy_softmax_native_fused{
    "cross-entropy softmax over the vocabulary (fp32, Megatron's native fused kernel)",
    "S/CP, B, V/TP"};
constexpr TermInfo term_cross_entropy_gradient_te_fused{
    "cross-entropy logits gradient computed in forward (fp32, TE's fused kernel)", "S/CP, B, V/TP"};
constexpr TermInfo term_logits_with_gradient_in_place_te_fused{
    "logits with the cross-entropy gradient written in place (bf16, TE's fused kernel before "
    "2.18)",
    "S/CP, B, V/TP"};
constexpr TermInfo term_per_token_logit_statistics_of_the_fused_cross_en{
    "per-token logit statistics of an external fused linear + cross-entropy kernel (fp32)",
    "S/CP, B"};
constexpr TermInfo term_per_token_loss_fp32{"per-token loss (fp32)", "S/CP, B"};
constexpr TermInfo term_logits_bf16_output_layer_output_before_the_fp32{
    "logits (bf16 output-layer output, before the fp32 upcast)", "S/CP, B, V/TP"};
constexpr TermInfo term_logits_bf16_and_compiled_fp32_copy{
    "logits (bf16) and their fp32 copy held by the compiled native cross-entropy beside "
    "exp_logits",
    "S/CP, B, V/TP"};
constexpr TermInfo term_logits_gradient_bf16_output_layer_backward_input{
    "logits gradient (bf16, output-layer backward input)", "S/CP, B, V/TP", TermText::generic,
    true};
constexpr TermInfo term_logits_of_one_cross_entropy_chunk_bf16_fp32{
    "logits of one chunk of an external fused linear + cross-entropy kernel (bf16 + fp32)",
    "cross-entropy chunk, V/TP"};
constexpr TermInfo term_mtp_embedding_norm_input_embedding_of_the_shifte{
    "MTP embedding norm input (embedding of the shifted tokens)", "S/CP, B, h (/TP with SP)"};
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
    "context-parallel KDA state exchange (fp32, own and all-gathered [K, K + V] states)",
    "CP, heads/TP, head_dim^2"};
constexpr TermInfo term_cp_p2p_forward{
    "context-parallel ring attention forward buffers (KV ring, per-step outputs, fp32 output)",
    "S/CP, B, kv and output width/TP, CP"};
constexpr TermInfo term_cp_p2p_backward{
    "context-parallel ring attention backward buffers (kv + dkv double-buffered, dq, one step's "
    "dq, dk, dv)",
    "S/CP, B, kv and q width/TP", TermText::generic, true};
constexpr TermInfo term_cp_a2a_forward{
    "context-parallel all-to-all buffers of q, k, v (send + receive)", "S/CP, B, q, k, v width/TP"};
constexpr TermInfo term_cp_a2a_backward{
    "context-parallel all-to-all backward buffers (dout and its re-laid-out copy; dq, dk, dv with "
    "their send, receive and final copies)",
    "S/CP, B, q, k, v and output width/TP", TermText::generic, true};
constexpr TermInfo term_moe_dispatch_all_to_all_send_buffer_permuted_cop{
    "MoE dispatch buffers (permuted copies of the local tokens and the all-to-all output)",
    "S/CP, B (/TP with SP), top-k, expert width"};
constexpr TermInfo term_moe_dispatch_and_combine_buffers_held_by_the_layer{
    "MoE dispatch and combine buffers held by the MoE layer's forward (permuted tokens, "
    "all-to-all output, un-sorted expert output, combine all-to-all output, shared experts' "
    "output)",
    "S/CP, B (/TP with SP), top-k, expert width"};
constexpr TermInfo term_mtp_checkpoint_inputs{
    "checkpoint inputs (hidden states and decoder input, full recompute)",
    "S/CP, B, 2h (/TP with SP)"};

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

bool te_cross_entropy_in_place(const TrainingConfig& training) {
  return training.kernels.cross_entropy == CrossEntropyKernel::te_fused &&
         !rule_holds(training.stack, VersionRule::te_cross_entropy_fp32_gradient);
}

std::int64_t attn_res_slots_before(std::int64_t layers_before, std::int64_t block_size) {
  if (block_size <= 0 || layers_before <= 0) return 0;
  return (layers_before + block_size - 1) / block_size;
}

std::vector<ActivationPiece> head_pieces(const Model& model, const TokenShape& shape,
                                         const TrainingConfig& training,
                                         std::int64_t padded_vocab) {
  if (training.framework == Framework::torchtitan) return torchtitan_head_pieces(model, shape);
  std::vector<ActivationPiece> out;
  if (model.final_norm) {
    out.push_back(make_piece(
        term_final_norm_input,
        hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  }
  out.push_back(
      make_piece(term_final_norm_output_lm_head_input,
                 hidden_tokens(shape, model.hidden, label_id("h")).bytes(bf16, label_id("bf16"))));
  const CrossEntropyKernel ce = training.kernels.cross_entropy;
  if (te_cross_entropy_in_place(training)) {
    // TE 2.2-2.17 (version rule te-cross-entropy-fp32-gradient): the Triton kernel overwrites
    // the bf16 logits with their gradient and saves them; nothing fp32 of the logits' size.
    out.push_back(make_piece(term_logits_with_gradient_in_place_te_fused,
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, label_id("bf16"))));
  } else if (ce != CrossEntropyKernel::fused_chunked) {
    // Every Megatron loss path keeps one fp32 [S/CP, B, V/TP] tensor: _VocabParallelCrossEntropy
    // and the native fused one (torch.compile) save exp_logits (the softmax); TE's Triton
    // cross-entropy computes the fp32 gradient in forward and saves it.
    const TermInfo& info = ce == CrossEntropyKernel::te_fused ? term_cross_entropy_gradient_te_fused
                           : ce == CrossEntropyKernel::native_fused
                               ? term_cross_entropy_softmax_native_fused
                               : term_cross_entropy_softmax_over_the_vocabulary_fp32;
    out.push_back(
        make_piece(info, vocabulary_tokens(shape, padded_vocab).bytes(fp32, label_id("fp32"))));
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
  if (te_cross_entropy_in_place(training)) {
    // The logits are the stored tensor and backward multiplies into them in place, returning
    // the same bf16 storage: no logits-sized transient in forward or backward.
  } else if (training.kernels.cross_entropy == CrossEntropyKernel::native_fused &&
             rule_holds(training.stack, VersionRule::native_cross_entropy_compiled_fp32_copy)) {
    // Megatron's jit_fuser is torch.compile from torch 2.2 (version rule
    // native-cross-entropy-compiled-fp32-copy): the compiled calculate_predicted_logits returns
    // exp_logits as a new fp32 buffer while the .float() copy of the logits it mutates stays
    // referenced by the loss's forward until it returns: bf16 logits + fp32 copy + exp_logits
    // (stored) at the loss. Backward as vocab-parallel.
    out.push_back(make_piece(
        term_logits_bf16_and_compiled_fp32_copy,
        vocabulary_tokens(shape, padded_vocab).bytes(bf16 + fp32, label_id("bf16 + fp32"))));
    out.push_back(make_piece(term_logits_gradient_bf16_output_layer_backward_input,
                             vocabulary_tokens(shape, padded_vocab).bytes(bf16, label_id("bf16"))));
  } else if (training.kernels.cross_entropy != CrossEntropyKernel::fused_chunked) {
    // The bf16 logits live until the loss has its fp32 tensor; in backward autograd casts the
    // fp32 gradient to the logits' bf16 for the output layer's dgrad.
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
  // The hidden-state norm's input is the decoder's final-norm output (or the previous depth's
  // head input), already counted with the head pieces.
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

ActivationPiece mtp_checkpoint_inputs_piece(const Model& model, const TokenShape& shape) {
  return make_piece(
      term_mtp_checkpoint_inputs,
      hidden_tokens(shape, 2 * model.hidden, label_id("2h")).bytes(bf16, label_id("bf16")));
}

namespace {
struct AttentionWidths {
  std::int64_t q = 0;    // heads x qk head dim
  std::int64_t kv = 0;   // k + v width
  std::int64_t out = 0;  // heads x v head dim
};
AttentionWidths attention_widths(const Model& model, AttentionKind kind) {
  if (kind == AttentionKind::gqa) {
    const GqaShape& a = model.gqa;
    return {a.heads * a.head_dim, 2 * a.kv_heads * a.head_dim, a.heads * a.head_dim};
  }
  const MlaShape& a = model.mla;
  const std::int64_t q_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  return {a.heads * q_head, a.heads * (q_head + a.v_head_dim), a.heads * a.v_head_dim};
}
}  // namespace

ActivationPiece context_parallel_exchange_piece(const Model& model, const TokenShape& shape,
                                                AttentionKind kind,
                                                const TrainingConfig& training) {
  const std::int64_t cp = shape.context_parallel;
  if (kind == AttentionKind::kda) {
    // fla's chunk_gated_delta_rule_fwd_h_pre_process: hm = [heads, K, V + K] fp32 and its
    // all-gather over the CP group (fla's CP runs with B == 1; the backward pre-process matches).
    Formula f;
    f.times(label_id("CP + 1 (own and gathered states)"), cp + 1)
        .times(label_id("heads/TP"), model.kda.heads / shape.tensor_parallel)
        .times(label_id("head_dim x (head_dim + v_dim)"),
               model.kda.head_dim * (model.kda.head_dim + model.kda.head_dim));
    return make_piece(term_context_parallel_kda_state_exchange_fp32,
                      f.bytes(fp32, label_id("fp32")));
  }
  const AttentionWidths w = attention_widths(model, kind);
  if (training.kernels.cp_comm_type != CpCommType::p2p) {
    // TE's AttnFuncWithCPAndQKVOA2A: q, k, v are re-laid out from sequence shards to head
    // shards through a send and a receive buffer each.
    Formula f;
    f.times(label_id("S/CP"), shape.sequence)
        .times(label_id("B"), shape.micro_batch)
        .times_tp(label_id("2 (send + receive) x q, k, v width"),
                  2 * (w.q + w.kv) / shape.tensor_parallel)
        .bytes(bf16, label_id("bf16"));
    return make_piece(term_cp_a2a_forward, f);
  }
  // TE's AttnFuncWithCPAndKVP2P forward: the ring keeps every step's KV buffer (the first is the
  // local k, v, already counted), every step's output (at most CP outputs of the local size, on
  // the last CP rank under causal load balancing) and the fp32 corrected output.
  const std::int64_t per_token = (cp - 1) * w.kv * bf16 + cp * w.out * bf16 + w.out * fp32;
  Formula f;
  f.times(label_id("S/CP"), shape.sequence)
      .times(label_id("B"), shape.micro_batch)
      .times_tp(label_id("((CP - 1) x kv x 2 B + CP x out x 2 B + out x 4 B)"),
                per_token / shape.tensor_parallel)
      .bytes(1, label_id("bf16 / fp32 bytes"));
  return make_piece(term_cp_p2p_forward, f);
}

// AttnFuncWithCPAndQKVOA2A.backward (TE >= 2.9): the engine's dout and its re-laid-out copy stay
// alive while dq, dk, dv go through the output-side all-to-all one after another; each keeps its
// send copy to the end, and the pipelined loop holds two receive buffers and one final copy at a
// time: 2 x out + 2 x (q + k + v) + the largest window (recv_i + recv_i+1 + final_i). Before TE
// 2.9 backward re-laid out out and dout together (send, receive and copy of each beside the
// engine's dout: 7 x out), and the dq loop also holds the re-laid-out out.
std::optional<ActivationPiece> context_parallel_a2a_backward_piece(const Model& model,
                                                                   const TokenShape& shape,
                                                                   AttentionKind kind,
                                                                   const TrainingConfig& training) {
  const AttentionWidths w = attention_widths(model, kind);
  const std::int64_t k = kind == AttentionKind::gqa ? w.kv / 2 : w.q;
  const std::int64_t v = w.kv - k;
  const std::int64_t window = std::max({2 * w.q + k, 2 * k + v, 2 * v});
  const bool saves_out_part =
      rule_holds(training.stack, VersionRule::te_cp_a2a_saves_output_before_all_to_all);
  const std::int64_t loop = (saves_out_part ? 2 : 3) * w.out + 2 * (w.q + w.kv) + window;
  const std::int64_t width = saves_out_part ? loop : std::max(loop, 7 * w.out);
  Formula f;
  f.times(label_id("S/CP"), shape.sequence)
      .times(label_id("B"), shape.micro_batch)
      .times_tp(label_id("a2a backward width (dout and its copy, dq dk dv with their send, "
                         "receive and final copies)"),
                width / shape.tensor_parallel)
      .bytes(bf16, label_id("bf16"));
  return make_piece(term_cp_a2a_backward, f);
}

std::optional<ActivationPiece> context_parallel_backward_piece(const Model& model,
                                                               const TokenShape& shape,
                                                               AttentionKind kind,
                                                               const TrainingConfig& training) {
  if (kind == AttentionKind::kda) return std::nullopt;
  if (training.kernels.cp_comm_type != CpCommType::p2p) {
    return context_parallel_a2a_backward_piece(model, shape, kind, training);
  }
  // AttnFuncWithCPAndKVP2P backward: p2p_comm_buffers = two [2, kv] buffers (kv and dkv, double
  // buffered), dq_buffer = empty_like(q), and one step's dq, dk, dv.
  const AttentionWidths w = attention_widths(model, kind);
  Formula f;
  f.times(label_id("S/CP"), shape.sequence)
      .times(label_id("B"), shape.micro_batch)
      .times_tp(label_id("(5 x kv + 2 x q width)"), (5 * w.kv + 2 * w.q) / shape.tensor_parallel)
      .bytes(bf16, label_id("bf16"));
  return make_piece(term_cp_p2p_backward, f);
}

ActivationPiece moe_dispatch_piece(const Model& model, const TokenShape& shape,
                                   const ParallelLayout& layout, const TrainingConfig& training) {
  const std::int64_t width = model.moe.latent_hidden > 0 ? model.moe.latent_hidden : model.hidden;
  const bool etp_gather = layout.expert_tensor_parallel > 1;
  Formula f;
  f.times(label_id("S/CP"), shape.sequence).times(label_id("B"), shape.micro_batch);
  if (shape.sequence_parallel && shape.tensor_parallel > 1)
    f.per(label_id("TP (SP)"), shape.tensor_parallel);
  if (rule_holds(training.stack, VersionRule::moe_layer_holds_dispatch_buffers)) {
    // Megatron-core >= 0.13 (version rule moe-layer-holds-dispatch-buffers): MoELayer.forward
    // keeps the permuted tokens (the all-to-all send) and the all-to-all output referenced until
    // it returns, so at the combine all-to-all four routed-token buffers are alive: those two,
    // the un-sorted expert output (combine send) and the combine receive; with ETP the gathered
    // copy too. The shared experts' output [n, h] is alive from before the router (0.15) or the
    // experts' compute (0.13) until the combine.
    const std::int64_t buffers = etp_gather ? 5 : 4;
    const std::int64_t shared = model.moe.shared_experts > 0 ? model.hidden : 0;
    std::int64_t routed = 0;
    std::int64_t per_token = 0;
    const bool fits = checked_mul(model.moe.top_k, buffers, &routed) &&
                      checked_mul(routed, width, &routed) &&
                      checked_add(routed, shared, &per_token);
    f.times(shared > 0 ? label_id("top-k x buffers (permuted, received, un-sorted, combine "
                                  "received) x expert width + h (shared experts' output)")
                       : label_id("top-k x buffers (permuted, received, un-sorted, combine "
                                  "received) x expert width"),
            fits ? per_token : std::numeric_limits<std::int64_t>::max());
    return make_piece(term_moe_dispatch_and_combine_buffers_held_by_the_layer,
                      f.bytes(bf16, label_id("bf16")));
  }
  // permute() output and all_to_all() output are alive together during the collective; with ETP
  // the gather over ETP adds a third buffer of the received size.
  f.times(label_id("top-k"), model.moe.top_k)
      .times(etp_gather ? label_id("buffers (permuted, received, ETP-gathered)")
                        : label_id("buffers (permuted copy, received copy)"),
             etp_gather ? 3 : 2)
      .times(label_id("expert width"), width);
  return make_piece(term_moe_dispatch_all_to_all_send_buffer_permuted_cop,
                    f.bytes(bf16, label_id("bf16")));
}

}  // namespace stagemem
