// Tests of activation_pieces.h (activations_attention.cpp, activations_mlp.cpp): the per-layer
// tensors against the closed forms of Korthikanti et al. 2022 (arXiv 2205.05198) and hand-worked
// KDA, MLA and MoE pieces.
#include "activation_pieces.h"
#include "catch.h"
#include "presets.h"

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

TEST_CASE("With flash attention the 5as/h term disappears; the fp32 log-sum-exp remains") {
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
  // mlp recompute drops fc1 output and the SwiGLU output: 43,008 values.
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::mlp)) ==
        4096LL * (139'264 + 128 - 86'016));
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
  // gate projection output 24,576; gate + cumsum fp32 2 x 12,288 x 4 = 98,304; beta 96 x 4 = 384;
  // Aqk + Akk 2 x 96 x 64 x 2 = 24,576; g_a latent 128 x 2 = 256; o and gate 2 x 12,288 x 2 =
  // 49,152; gated norm output 24,576 (full-rank gate: no f_a latent).
  const std::int64_t per_token =
      28'672 + 73'728 + 73'728 + 768 + 24'576 + 98'304 + 384 + 24'576 + 256 + 49'152 + 24'576;
  CHECK(stored_bytes(pieces, 0) == 8192 * per_token);
  // The eager backend adds per-chunk fp32 states: 128 chunks x 96 x 128^2 x 4 B, and five fp32
  // intermediates of 12,288 per token.
  t.kernels.kda = KdaBackend::eager;
  const auto eager = attention_pieces(m, AttentionKind::kda, s, t);
  CHECK(stored_bytes(eager, 0) ==
        8192 * per_token + 128LL * 96 * 128 * 128 * 4 + 8192LL * 5 * 12'288 * 4);
}

TEST_CASE("MLA pieces of DeepSeek-V3: latents whole, up-projections split by TP") {
  const Model m = *find_preset("deepseek-v3");
  TrainingConfig t;
  t.sequence_length = 4096;
  ParallelLayout layout{.tensor_parallel = 2};
  const TokenShape s = token_shape(t, layout);
  const auto pieces = attention_pieces(m, AttentionKind::mla, s, t);
  std::int64_t up = 0, latents = 0;
  for (const auto& p : pieces) {
    if (p.info->name.starts_with("up-projected")) up = p.bytes;
    if (p.info->name.starts_with("q latent (")) latents += p.bytes;
  }
  // Up-projected q, k, v: 128 heads x (2 x 192 + 128) = 65,536 values / TP 2, per token.
  CHECK(up == 4096LL * 65'536 / 2 * 2);
  // The q latent is full width on every TP rank: 1536 values per token.
  CHECK(latents == 4096LL * 1536 * 2);
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::mla_up_proj)) ==
        stored_bytes(pieces, 0) - up);
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
  t.routing_imbalance = 1.5;
  pieces = mlp_pieces(m, MlpKind::moe, s, t, layout);
  CHECK(find(pieces, "dispatched tokens") == 8192LL * 16 * 3 / 2 * 3584 * 2);
  // moe recompute keeps only the block's input (the MLP norm's input and output).
  CHECK(stored_bytes(pieces, module_bit(RecomputeModule::moe)) == 2 * 8192LL * 7168 * 2);
}
