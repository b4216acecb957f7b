// Tests of memory/model_pieces.h: the users' worked AttnRes numbers, logits and loss, pipeline and
// context-parallel buffers.
#include "base/units.h"
#include "catch.h"
#include "memory/model_pieces.h"
#include "model/presets.h"
#include "render/term_text.h"

using namespace stagemem;

namespace {

TokenShape shape_of(std::int64_t sequence, std::int64_t micro_batch, ParallelLayout layout = {}) {
  TrainingConfig t;
  t.sequence_length = sequence;
  t.micro_batch = micro_batch;
  return token_shape(t, layout);
}

}  // namespace

TEST_CASE("AttnRes slots: a new slot every block_size layers") {
  CHECK(attn_res_slots_before(0, 12) == 0);
  CHECK(attn_res_slots_before(1, 12) == 1);
  CHECK(attn_res_slots_before(12, 12) == 1);
  CHECK(attn_res_slots_before(13, 12) == 2);
  CHECK(attn_res_slots_before(93, 12) == 8);  // 8 slots over 93 layers (0, 12, ..., 84)
  CHECK(attn_res_slots_before(50, 0) == 0);   // AttnRes off
}

TEST_CASE("AttnRes input/output at the first boundary: 224.0 MiB (seq 8192, h 7168, mbs 1)") {
  const Model m = *find_preset("kimi-k3");
  // (1 + 1) x 8192 x 7168 x 2 B = 234,881,024 B = 224.0 MiB.
  const Formula p = pipeline_buffer_formula(m, shape_of(8192, 1), attn_res_slots_before(12, 12));
  CHECK(p.value() == 234'881'024LL);
  CHECK(format_mib(p.value()) == "224.0 MiB");
  // Later boundaries carry more slots: after 84 layers, (1 + 7) slots.
  CHECK(pipeline_buffer_formula(m, shape_of(8192, 1), attn_res_slots_before(84, 12)).value() ==
        4 * 234'881'024LL);
}

TEST_CASE("AttnRes internal fp32 temporaries: 2.58 GB with K = 8 and two live temporaries") {
  const Model m = *find_preset("kimi-k3");
  TrainingConfig t;
  t.sequence_length = 8192;
  // ((1 + 8) + 2) x 8192 x 1 x 7168 x 4 B = 2,583,691,264 B.
  const ActivationPiece p = attn_res_internal_piece(m, shape_of(8192, 1), t, 8);
  CHECK(p.bytes == 2'583'691'264LL);
  CHECK(format_gb(p.bytes) == "2.58 GB");
  CHECK(term_name(*p.info, TermGroup::none, p.name_value).find("2 live temporaries") !=
        std::string::npos);
  // The kernel assumption is visible and changes the number: a measured 7.1 GB would need
  // about 27 live temporaries; the model does not absorb that, it reports the gap.
  t.kernels.attn_res_live_temporaries = 0;
  CHECK(attn_res_internal_piece(m, shape_of(8192, 1), t, 8).bytes == 9LL * 8192 * 7168 * 4);
}

TEST_CASE("Vocab-parallel cross-entropy keeps the fp32 softmax - the fused kernel a chunk") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  const TokenShape s = shape_of(4096, 1, {.tensor_parallel = 2});
  const std::int64_t padded = 128'256;  // already a multiple of 128 x 2
  std::int64_t softmax = 0;
  for (const auto& p : head_pieces(m, s, t, padded)) {
    if (p.info->name.starts_with("cross-entropy softmax")) softmax = p.bytes;
  }
  CHECK(softmax == 4096LL * 128'256 / 2 * 4);
  const auto transients = head_transients(s, t, padded);
  REQUIRE(transients.size() == 2);
  CHECK(transients[0].bytes == 4096LL * 128'256 / 2 * 2);
  t.kernels.cross_entropy = CrossEntropyKernel::fused_chunked;
  t.kernels.cross_entropy_chunk = 1024;
  const auto fused = head_transients(s, t, padded);
  REQUIRE(fused.size() == 1);
  CHECK(fused[0].bytes == 1024LL * 128'256 / 2 * 6);
}

TEST_CASE("Context-parallel attention per --cp-comm-type: p2p ring, a2a - KDA state exchange") {
  const Model m = *find_preset("llama-3.1-8b");
  const TokenShape s = shape_of(8192, 1, {.context_parallel = 2});
  TrainingConfig t;
  // TE's P2P ring forward, per local token (S/CP = 4096; kv = 2 x 8 x 128 = 2048, out = 32 x 128 =
  // 4096): (CP - 1) x 2048 x 2 B + CP x 4096 x 2 B + 4096 x 4 B = 4,096 + 16,384 + 16,384 = 36,864.
  const ActivationPiece ring = context_parallel_exchange_piece(m, s, AttentionKind::gqa, t);
  CHECK(ring.bytes == 4096LL * 36'864);
  CHECK(ring.bytes == 150'994'944LL);
  // Backward: kv + dkv double-buffered (4 kv), dq_buffer and one step's dq, dk, dv:
  // (5 x 2048 + 2 x 4096) x 2 B = 36,864 B per token.
  const auto back = context_parallel_backward_piece(m, s, AttentionKind::gqa, t);
  REQUIRE(back);
  CHECK(back->info->in_backward);
  CHECK(back->bytes == 4096LL * (5 * 2048 + 2 * 4096) * 2);
  // a2a: send + receive buffers of q, k, v: 2 x (4096 + 2048) x 2 B = 24,576 B per token.
  t.kernels.cp_comm_type = CpCommType::a2a;
  CHECK(context_parallel_exchange_piece(m, s, AttentionKind::gqa, t).bytes == 4096LL * 24'576);
  {
    // a2a backward (TE >= 2.9): dout + its copy (2 x out 4096), dq, dk, dv and their send copies
    // (2 x (q 4096 + kv 2048)), and the window recv dq + recv dk + final dq (2 x 4096 + 1024):
    // 8,192 + 12,288 + 9,216 = 29,696 per token x 2 B = 59,392 B.
    const auto a2a = context_parallel_backward_piece(m, s, AttentionKind::gqa, t);
    REQUIRE(a2a);
    CHECK(a2a->info->in_backward);
    CHECK(a2a->bytes == 4096LL * 29'696 * 2);
    // r3's worked shape: seq 131,072, CP 4, TP 2: 32,768 tokens x 14,848 x 2 B = 973,078,528 B
    // (928 MiB) per layer.
    const TokenShape long_cp = shape_of(131072, 1, {.tensor_parallel = 2, .context_parallel = 4});
    CHECK(context_parallel_backward_piece(m, long_cp, AttentionKind::gqa, t)->bytes ==
          973'078'528LL);
    // TE 2.8: out and dout re-laid out together (7 x out = 28,672) and the dq loop also holds
    // the re-laid-out out (3 x 4096 + 12,288 + 9,216 = 33,792): 33,792 x 2 B per token.
    TrainingConfig old = t;
    old.stack.transformer_engine = release(2, 8);
    CHECK(context_parallel_backward_piece(m, s, AttentionKind::gqa, old)->bytes ==
          4096LL * 33'792 * 2);
  }
  // fla's KDA CP: own hm [96, 128, 128 + 128] fp32 plus its all-gather over CP 2:
  // (2 + 1) x 96 x 128 x 256 x 4 B = 37,748,736 B.
  const Model k3 = *find_preset("kimi-k3");
  CHECK(context_parallel_exchange_piece(k3, s, AttentionKind::kda, t).bytes == 37'748'736LL);
}

TEST_CASE("Megatron's three cross-entropy paths keep one fp32 [S/CP, B, V/TP] tensor") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  const TokenShape s = shape_of(4096, 1, {.tensor_parallel = 2});
  const std::int64_t padded = 128'256;
  for (const CrossEntropyKernel ce :
       {CrossEntropyKernel::vocab_parallel, CrossEntropyKernel::te_fused,
        CrossEntropyKernel::native_fused}) {
    t.kernels.cross_entropy = ce;
    const auto pieces = head_pieces(m, s, t, padded);
    // final norm input + output, the fp32 tensor, the per-token loss.
    REQUIRE(pieces.size() == 4);
    // 4096 x 64,128 x 4 B = 1,050,673,152 B.
    CHECK(pieces[2].bytes == 1'050'673'152LL);
    const auto transients = head_transients(s, t, padded);
    REQUIRE(transients.size() == 2);
    CHECK(transients[1].info->in_backward);
  }
  t.kernels.cross_entropy = CrossEntropyKernel::te_fused;
  CHECK(head_pieces(m, s, t, padded)[2].info->name.find("TE's fused kernel") != std::string::npos);
  {
    // TE 2.17 (before PR #3193): the gradient is written in place into the bf16 logits, which are
    // saved: 4096 x 64,128 x 2 B = 525,336,576 B stored, no logits-sized transient either way.
    TrainingConfig old = t;
    old.stack.transformer_engine = release(2, 17, 1);
    const auto pieces = head_pieces(m, s, old, padded);
    REQUIRE(pieces.size() == 4);
    CHECK(pieces[2].bytes == 525'336'576LL);
    CHECK(pieces[2].info->name.find("written in place") != std::string::npos);
    CHECK(head_transients(s, old, padded).empty());
    // TE 2.18: the fp32 gradient (1,050,673,152 B) and the two bf16 transients, as without a
    // stack.
    old.stack.transformer_engine = release(2, 18);
    CHECK(head_pieces(m, s, old, padded)[2].bytes == 1'050'673'152LL);
    CHECK(head_transients(s, old, padded).size() == 2);
  }
  t.kernels.cross_entropy = CrossEntropyKernel::fused_chunked;
  CHECK(head_pieces(m, s, t, padded)[2].info->name.find("external fused linear") !=
        std::string::npos);
}

TEST_CASE("MoE dispatch: the buffers MoELayer.forward holds, by Megatron-core release") {
  const Model k3 = *find_preset("kimi-k3");
  const TokenShape s = shape_of(8192, 1);
  TrainingConfig t;
  // Megatron-core >= 0.13 (the current release): at the combine all-to-all the permuted tokens,
  // the all-to-all output, the un-sorted expert output and the combine receive (4 buffers of
  // 8192 tokens x top-16 x latent 3584) and the shared experts' output (8192 x h 7168), bf16:
  // 8192 x (4 x 16 x 3584 + 7168) x 2 B = 3,875,536,896 B.
  CHECK(moe_dispatch_piece(k3, s, {}, t).bytes == 3'875'536'896LL);
  // ETP 2: the gathered copy is a fifth buffer.
  CHECK(moe_dispatch_piece(k3, s, {.expert_tensor_parallel = 2}, t).bytes ==
        8192LL * (5 * 16 * 3584 + 7168) * 2);
  // DeepSeek-V3, seq 4096, TP 1 (r3's worked shape): U = 4096 x 8 x 7168 x 2 B = 448 MiB;
  // 4 U + 4096 x 7168 x 2 B = 1,937,768,448 B (1,848 MiB).
  CHECK(moe_dispatch_piece(*find_preset("deepseek-v3"), shape_of(4096, 1), {}, t).bytes ==
        1'937'768'448LL);
  // Megatron-core 0.12: the permuted copy and the all-to-all output die with
  // token_permutation; both alive during the collective: 2 x 8192 x 16 x 3584 x 2 B =
  // 1,879,048,192 B (1.75 GiB), and a third buffer with ETP's gather.
  t.stack.megatron_core = release(0, 12);
  CHECK(moe_dispatch_piece(k3, s, {}, t).bytes == 1'879'048'192LL);
  CHECK(moe_dispatch_piece(k3, s, {.expert_tensor_parallel = 2}, t).bytes ==
        3LL * 8192 * 16 * 3584 * 2);
  // The rule's boundary is the release itself: 0.13.0 holds them.
  t.stack.megatron_core = release(0, 13);
  CHECK(moe_dispatch_piece(k3, s, {}, t).bytes == 3'875'536'896LL);
}

TEST_CASE("MTP: the hidden norm's input is the final-norm output, not a second tensor") {
  const Model k3 = *find_preset("kimi-k3");
  const TokenShape s = shape_of(8192, 1);
  const auto pieces = mtp_extra_pieces(k3, s);
  // The embedding norm input (h) and the eh_proj input (2h): 3 x 8192 x 7168 x 2 B.
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].bytes + pieces[1].bytes == 3LL * 8192 * 7168 * 2);
  // Under uniform full recompute an MTP layer keeps its two checkpoint inputs.
  CHECK(mtp_checkpoint_inputs_piece(k3, s).bytes == 2LL * 8192 * 7168 * 2);
}
