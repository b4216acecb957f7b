// Tests of memory/activation_pieces.h (memory/attention_pieces.cpp, memory/mlp_pieces.cpp): the
// per-layer tensors against the closed forms of Korthikanti et al. 2022 (arXiv 2205.05198) and
// hand-worked KDA, MLA and MoE pieces.
#include "catch.h"
#include "memory/activation_pieces.h"
#include "model/presets.h"

#include <tuple>

using namespace stagemem;

namespace {

// The paper's GPT-3 175B layer: h 12288, a 96 heads, s 2048, b 1, GeLU 4h, LayerNorm, dropout.
struct PaperSetup {
  Model model = *find_preset("gpt3-175b");
  TrainingConfig training;
  ParallelLayout layout;
  PaperSetup() {
    training.sequence_length = 2048;
    training.micro_batch = 1;
    training.dropout = true;
    training.kernels.attention = AttentionKernel::materialized;
  }
  std::int64_t layer_bytes(std::uint32_t dropped = 0) const {
    const TokenShape shape = token_shape(training, layout);
    return stored_bytes(layer_activation_pieces(model, model.layers[0], shape, training, layout),
                        dropped);
  }
};

constexpr std::int64_t sbh = 2048LL * 1 * 12288;  // s x b x h = 25,165,824

}  // namespace

TEST_CASE("Korthikanti et al.: sbh(34 + 5as/h) per layer without parallelism") {
  PaperSetup p;
  // 34 sbh + 5 a s^2 b = 34 x 25,165,824 + 5 x 96 x 2048^2 = 855,638,016 + 2,013,265,920.
  CHECK(p.layer_bytes() == 34 * sbh + 5LL * 96 * 2048 * 2048);
  CHECK(p.layer_bytes() == 2'868'903'936LL);
}

TEST_CASE("Korthikanti et al.: sbh(10 + 24/t + 5as/(ht)) with tensor parallelism") {
  PaperSetup p;
  p.layout.tensor_parallel = 8;
  // 10 sbh stay whole (norm inputs and outputs, two dropout masks); 24 sbh and the scores split.
  CHECK(p.layer_bytes() == 10 * sbh + 24 * sbh / 8 + 5LL * 96 * 2048 * 2048 / 8);
}

TEST_CASE("Korthikanti et al.: 34 sbh / t with sequence parallelism and selective recompute") {
  PaperSetup p;
  p.layout.tensor_parallel = 8;
  p.layout.sequence_parallel = true;
  CHECK(p.layer_bytes(module_bit(RecomputeModule::core_attn)) == 34 * sbh / 8);
}

TEST_CASE("With flash attention the 5as/h term disappears - the fp32 log-sum-exp remains") {
  PaperSetup p;
  p.training.kernels.attention = AttentionKernel::flash;
  // 34 sbh + the statistics: b x a x s x 4 B = 96 x 2048 x 4 = 786,432 B.
  CHECK(p.layer_bytes() == 34 * sbh + 96LL * 2048 * 4);
  CHECK(p.layer_bytes(module_bit(RecomputeModule::core_attn)) == 34 * sbh);
}

TEST_CASE("Llama-3.1-8B GQA + SwiGLU layer at seq 4096, TP 1") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelLayout layout;
  const TokenShape s = token_shape(t, layout);
  // Per token: norms 4 x 4096; q,k,v (32 + 16) x 128 = 6144; O 4096; fc1 2 x 14336; act 14336
  // = 16,384 + 6,144 + 4,096 + 43,008 = 69,632 bf16 values = 139,264 B, plus the log-sum-exp
  // 32 heads x 4 B = 128 B.
  const auto pieces = layer_activation_pieces(m, m.layers[0], s, t, layout);
  CHECK(stored_bytes(pieces, 0) == 4096LL * (139'264 + 128));
  // mlp recompute checkpoints the whole TE MLP from its input: it drops the fused fc1 norm's
  // output (4096 values), fc1 output and the SwiGLU output (43,008 values): 94,208 B per token.
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::mlp)) ==
        4096LL * (139'264 + 128 - 86'016 - 8'192));
  // GQA's input norm is fused into linear_qkv and the dense MLP's into fc1: `layernorm`
  // recompute reaches neither norm output.
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::layernorm)) == stored_bytes(pieces, 0));
}

TEST_CASE("Qwen3 qk_layernorm: TE's RMSNorm saves the pre-norm q and k and their rstd") {
  const Model m = *find_preset("qwen3-235b-a22b");
  REQUIRE(m.gqa.qk_norm);
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelLayout layout{.tensor_parallel = 4};
  const TokenShape s = token_shape(t, layout);
  std::int64_t pre_norm = 0, rstd = 0;
  for (const auto& p : attention_pieces(m, AttentionKind::gqa, s, t)) {
    if (p.info->name.starts_with("q, k before the per-head norm")) pre_norm = p.bytes;
    if (p.info->name.starts_with("q, k RMSNorm reciprocal std")) rstd = p.bytes;
  }
  // (64 + 4) heads x 128 / TP 4 x 2 B = 4,352 B per token; rstd (64 + 4) / 4 x 4 B = 68 B.
  CHECK(pre_norm == 4096LL * 4'352);
  CHECK(rstd == 4096LL * 68);
}

TEST_CASE("Backward working set of one layer: attention and MLP halves") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelLayout layout{.tensor_parallel = 2};
  const TokenShape s = token_shape(t, layout);
  // Flash: dq, dk, dv (32 + 16) x 128 / 2 x 2 B = 6,144 B plus dq_accum 32 x 128 / 2 x 4 B = 8,192
  // B per token.
  const ActivationPiece attention = attention_backward_piece(m, AttentionKind::gqa, s, t);
  CHECK(attention.info->in_backward);
  CHECK(attention.bytes == 4096LL * (6'144 + 8'192));
  // Dense SwiGLU: grad(act out) + grad(fc1 out) = 3 x 14336 / 2 x 2 B = 43,008 B per token.
  const ActivationPiece mlp = mlp_backward_piece(m, MlpKind::dense, s, t, layout);
  CHECK(mlp.info->in_backward);
  CHECK(mlp.bytes == 4096LL * 43'008);
  // Kimi K3 MoE: T_recv = 8192 x 16 = 131,072 tokens x (3 x 3072 + 3584) x 2 B = 3.125 GiB.
  const Model k3 = *find_preset("kimi-k3");
  t.sequence_length = 8192;
  const TokenShape s3 = token_shape(t, {});
  CHECK(mlp_backward_piece(k3, MlpKind::moe, s3, t, {}).bytes == 3'355'443'200LL);
  // KDA: per chunk and head, the recomputed w, kg, u, v_new (64 x 128 x 4 x 2 B), the fp32 gate
  // cumsum (64 x 128 x 4 B), the chunk state h and its gradient dh (2 x 128^2 x 2 B) and dq, dk,
  // dv (64 x 3 x 128 x 2 B): 65,536 + 32,768 + 65,536 + 49,152 = 212,992 B; x 128 chunks x 96.
  CHECK(attention_backward_piece(k3, AttentionKind::kda, s3, t).bytes == 128LL * 96 * 212'992);
  // MLA: dq, dk, dv 96 x 512 x 2 B + dq_accum 96 x 192 x 4 B = 172,032 B per token.
  CHECK(attention_backward_piece(k3, AttentionKind::mla, s3, t).bytes == 8192LL * 172'032);
}

TEST_CASE("KDA fused pieces (kimi-k3: 96 heads x 128, chunk 64) at seq 8192") {
  const Model m = *find_preset("kimi-k3");
  TrainingConfig t;
  t.sequence_length = 8192;
  const ParallelLayout layout;
  const TokenShape s = token_shape(t, layout);
  const auto pieces = attention_pieces(m, AttentionKind::kda, s, t);
  // Per token (H d = 12,288): layer input + norm output 2 x 7168 x 2 = 28,672 B;
  // projections 3 x 12,288 x 2 = 73,728; chunk_kda q,k,v 73,728; rstd 2 x 96 x 4 = 768;
  // gate projection output 24,576 (fla >= 0.4.1 keeps no fp32 gate); beta 96 x 4 = 384;
  // Aqk + Akk 2 x 96 x 64 x 2 = 24,576; g_a latent 128 x 2 = 256; o and gate 2 x 12,288 x 2 =
  // 49,152; gated norm output 24,576 (full-rank gate: no f_a latent).
  const std::int64_t per_token =
      28'672 + 73'728 + 73'728 + 768 + 24'576 + 384 + 24'576 + 256 + 49'152 + 24'576;
  CHECK(stored_bytes(pieces, 0) == 8192 * per_token);
  // The fused kernel's forward intermediates are a transient: 128 chunks x 96 heads x
  // (64 x 128 x (4 x 2 B + 4 B) + 128^2 x 2 B) = 1,610,612,736 B (1.5 GiB).
  const auto intermediates = kda_forward_transient(m, s, t);
  REQUIRE(intermediates);
  CHECK(intermediates->bytes == 1'610'612'736LL);
  // fla 0.4.0 kept the fp32 chunk-local cumsum (12,288 x 4 B) and Aqk in fp32 (Akk stays in k's
  // dtype): 96 x 64 x (4 + 2) B = 36,864 B instead of 24,576 B (+12,288 B).
  t.kernels.fla_version = FlaVersion::v0_4_0;
  CHECK(stored_bytes(attention_pieces(m, AttentionKind::kda, s, t), 0) ==
        8192 * (per_token + 49'152 + 12'288));
  CHECK(kda_forward_transient(m, s, t)->bytes == 128LL * 96 * (64 * 128 * 8 + 128 * 128 * 2));
  t.kernels.fla_version = FlaVersion::since_0_4_1;
  // disable_recompute=True keeps w, u, qg, kg, v_new (5 x 12,288 x 2 B), the chunk states
  // (128 x 96 x 128^2 x 2 B) and the fp32 gate cumsum (12,288 x 4 B); no forward transient.
  t.kernels.kda = KdaBackend::disable_recompute;
  CHECK(stored_bytes(attention_pieces(m, AttentionKind::kda, s, t), 0) ==
        8192 * per_token + 8192LL * 5 * 12'288 * 2 + 128LL * 96 * 128 * 128 * 2 +
            8192LL * 12'288 * 4);
  CHECK_FALSE(kda_forward_transient(m, s, t));
  // fla's eager naive_chunk_kda (fp32): per-chunk states 128 x 96 x 128^2 x 4 B, five fp32
  // intermediates of 12,288 per token, and the intra-chunk loop's exp(g - g_i) and
  // k x exp(g - g_i): 2 x 64 x 12,288 x 4 B = 6,291,456 B per token.
  t.kernels.kda = KdaBackend::eager;
  const auto eager = attention_pieces(m, AttentionKind::kda, s, t);
  CHECK(stored_bytes(eager, 0) == 8192 * per_token + 128LL * 96 * 128 * 128 * 4 +
                                      8192LL * 5 * 12'288 * 4 + 8192LL * 6'291'456);
}

TEST_CASE("MLA pieces of DeepSeek-V3: latents SP-sharded, up-projections split by TP") {
  const Model m = *find_preset("deepseek-v3");
  TrainingConfig t;
  t.sequence_length = 4096;
  ParallelLayout layout{.tensor_parallel = 2};
  const auto measure = [&](const ParallelLayout& l) {
    const TokenShape s = token_shape(t, l);
    const auto pieces = attention_pieces(m, AttentionKind::mla, s, t);
    std::int64_t up = 0, latents = 0, norms = 0;
    for (const auto& p : pieces) {
      if (p.info->name.starts_with("up-projected")) up = p.bytes;
      if (p.info->name.starts_with("q latent (")) latents += p.bytes;
      if (p.info->name.find("after its norm") != std::string_view::npos) norms += p.bytes;
    }
    return std::tuple{pieces, up, latents, norms};
  };
  const auto [pieces, up, latents, norms] = measure(layout);
  // Up-projected q, k, v: 128 heads x (2 x 192 + 128) = 65,536 values / TP 2, per token.
  CHECK(up == 4096LL * 65'536 / 2 * 2);
  // Without SP the duplicated down-projection's output is whole: 1536 values per token.
  CHECK(latents == 4096LL * 1536 * 2);
  // mla_up_proj checkpoints the up-projections: drops q, k, v and both latent-norm outputs
  // ((1536 + 512) x 2 B per token); `layernorm` reaches only the stand-alone input norm.
  CHECK(norms == 4096LL * (1536 + 512) * 2);
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::mla_up_proj)) ==
        stored_bytes(pieces, 0) - up - norms);
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::layernorm)) ==
        stored_bytes(pieces, 0) - 4096LL * 7168 * 2);
  // Under SP the latents are [S/(CP TP), B, r]: half of it at TP 2.
  layout.sequence_parallel = true;
  CHECK(std::get<2>(measure(layout)) == 4096LL / 2 * 1536 * 2);
}

TEST_CASE("MoE pieces: top-k copies of the local tokens, latent width, imbalance scenario") {
  const Model m = *find_preset("kimi-k3");
  TrainingConfig t;
  t.sequence_length = 8192;
  const ParallelLayout layout;
  const TokenShape s = token_shape(t, layout);
  const auto find = [](const std::vector<ActivationPiece>& pieces, std::string_view prefix) {
    for (const auto& p : pieces) {
      if (p.info->name.starts_with(prefix)) return p.bytes;
    }
    return std::int64_t{-1};
  };
  auto pieces = mlp_pieces(m, MlpKind::moe, s, t, layout);
  // 8192 tokens x top-16 x latent 3584 x 2 B = 939,524,096 B.
  CHECK(find(pieces, "dispatched tokens") == 8192LL * 16 * 3584 * 2);
  CHECK(find(pieces, "expert fc1 output") == 8192LL * 16 * 2 * 3072 * 2);
  // Current Megatron saves no combine input and no bf16 router logits; the weighted SwiGLU keeps
  // the received probabilities [T_recv, 1] in the router dtype: 131,072 x 2 B.
  CHECK(find(pieces, "expert outputs before probability weighting") == -1);
  CHECK(find(pieces, "router logits") == -1);
  CHECK(find(pieces, "routing probabilities of the received tokens") == 8192LL * 16 * 2);
  CHECK(find(pieces, "router scores (fp32)") == 8192LL * 896 * 4);
  // The latent down-projection output is saved only as the users' latent norm's input.
  CHECK(find(pieces, "latent down-projection output") == 8192LL * 3584 * 2);
  CHECK(find(pieces, "latent norm output") == -1);
  // Legacy (core <= 0.12) unpermute with probs saves the combine input: 0.875 GiB per layer.
  t.kernels.moe_unpermute = MoeUnpermute::legacy_unpermute_with_probs;
  CHECK(find(mlp_pieces(m, MlpKind::moe, s, t, layout),
             "expert outputs before probability weighting") == 939'524'096LL);
  // An fp32 router dtype does not change it: the multiply saves its bf16 operand as it is (the
  // fp32 product lives only in forward); the probabilities it saves are fp32 (8192 x 16 x 4 B).
  t.kernels.router_dtype = RouterDtype::fp32;
  CHECK(find(mlp_pieces(m, MlpKind::moe, s, t, layout),
             "expert outputs before probability weighting") == 939'524'096LL);
  t.kernels = {};
  t.routing_imbalance = 1.5;
  pieces = mlp_pieces(m, MlpKind::moe, s, t, layout);
  CHECK(find(pieces, "dispatched tokens") == 8192LL * 16 * 3 / 2 * 3584 * 2);
  // moe recompute keeps only the block's input (the MLP norm's input and output).
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::moe)) == 2 * 8192LL * 7168 * 2);
}
