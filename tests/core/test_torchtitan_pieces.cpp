// torchtitan's Llama-3 pieces (memory/torchtitan_pieces.cpp): the tensors eager PyTorch keeps per
// block under no AC, per-op selective AC and full AC, and the chunked loss, with worked numbers.
#include <string>

#include "catch.h"
#include "estimate/estimate.h"
#include "report/term_names.h"

using namespace stagemem;

namespace {

// Llama-3.1-8B, seq 8192, mbs 2: T = 16,384 tokens per micro-batch, PP 1 (one micro-batch in
// flight), FSDP over 8 GPUs.
Config llama_8b(RecomputePolicy policy) {
  Config c;
  c.model = "llama-3.1-8b";
  c.training.framework = Framework::torchtitan;
  c.parallel.pipeline_parallel = 1;
  c.parallel.data_parallel = 8;
  c.training.sequence_length = 8192;
  c.training.micro_batch = 2;
  c.training.global_batch = 16;
  c.training.recompute.policy = policy;
  return c;
}

std::int64_t bytes_of(const StageReport& s, std::string_view part) {
  std::int64_t sum = 0;
  for (const Term& t : s.terms) {
    if (term_name(t).find(part) != std::string::npos) sum += t.bytes;
  }
  return sum;
}

}  // namespace

TEST_CASE("torchtitan, no AC: 168,072 B per token per Llama-3.1-8B block") {
  const Report r = estimate(llama_8b(RecomputePolicy::none));
  REQUIRE(r.diagnostics.ok());
  const StageReport& s = r.stages.front();
  // Per block and token (h 4,096, 32 heads, 8 kv heads, head_dim 128, I 14,336):
  //   block input, norm output, attention output, ffn input, ffn norm output: 5 x 2h = 40,960
  //   two rstd: 2 x 4 = 8; wqkv output (32 + 16) x 128 x 2 = 12,288; lse 32 x 4 = 128
  //   w1, silu, w3 and w2 input: 4 x 2I = 114,688            -> 168,072 B
  // x 16,384 tokens x 32 blocks = 88,116,535,296 B of blocks.
  std::int64_t blocks = 0;
  for (const Term& t : s.terms) {
    if (t.family == Family::activation && !term_name(t).starts_with("output")) blocks += t.bytes;
  }
  CHECK(blocks == 168'072LL * 16'384 * 32);
  CHECK(bytes_of(s, "w3 output") == 2 * 14'336LL * 16'384 * 32);
  CHECK(bytes_of(s, "saved by per-op SAC") == 0);
  // The head keeps the final norm's input and rstd and the decoder output's bf16 gradient; the
  // chunked loss holds 1/8 of the logits (bf16, fp32 upcast, fp32 log-probs) with the fp32
  // gradient accumulator: 2,048 x 128,256 x 10 + 16,384 x 4,096 x 4 B.
  CHECK(bytes_of(s, "chunked loss loop") == 2'048LL * 128'256 * 10 + 16'384LL * 4'096 * 4);
  CHECK(bytes_of(s, "softmax over the vocabulary") == 0);
}

TEST_CASE("torchtitan per-op SAC: 65,664 B per token per block, the rest rebuilt in backward") {
  const Report r = estimate(llama_8b(RecomputePolicy::selective));
  REQUIRE(r.diagnostics.ok());
  const StageReport& s = r.stages.front();
  // Saved: block input 8,192, wqkv output 12,288, attention output 8,192 + lse 128, w1 output
  // 28,672, w2 output 8,192 (every other matmul recomputed: wo, w3) -> 65,664 B per token.
  std::int64_t blocks = 0;
  for (const Term& t : s.terms) {
    if (t.family == Family::activation && !term_name(t).starts_with("output")) blocks += t.bytes;
  }
  CHECK(blocks == 65'664LL * 16'384 * 32);
  CHECK(bytes_of(s, "w3 output") == 0);
  CHECK(bytes_of(s, "w2 output (saved by per-op SAC") == 2 * 4'096LL * 16'384 * 32);
  // One block's recomputed tensors come back in backward: two rstd, attention norm output, ffn
  // input and norm output, silu, w3 and w2 inputs: 8 + 3 x 8,192 + 3 x 28,672 = 110,600 B/token.
  CHECK(bytes_of(s, "selective recompute working set") == 110'600LL * 16'384);
}

TEST_CASE("torchtitan full AC keeps each block's input; every layer kind else is refused") {
  const Report r = estimate(llama_8b(RecomputePolicy::full));
  REQUIRE(r.diagnostics.ok());
  CHECK(bytes_of(r.stages.front(), "checkpointed group input") == 2 * 4'096LL * 16'384 * 32);
  Config c = llama_8b(RecomputePolicy::full);
  c.training.recompute.layers = 2;
  CHECK_FALSE(estimate(c).diagnostics.ok());
  c = llama_8b(RecomputePolicy::none);
  c.model = "deepseek-v3";
  const Report moe = estimate(c);
  REQUIRE_FALSE(moe.diagnostics.ok());
  CHECK(moe.diagnostics.errors.front().field == "framework");
  c = llama_8b(RecomputePolicy::none);
  c.training.dropout = true;
  CHECK_FALSE(estimate(c).diagnostics.ok());
  // No TransformerEngine workspace under PyTorch modules: only PyTorch's cuBLAS ones.
  const Report plain = estimate(llama_8b(RecomputePolicy::none));
  const StageReport& s = plain.stages.front();
  CHECK(bytes_of(s, "TransformerEngine") == 0);
  CHECK(bytes_of(s, "PyTorch cuBLAS workspaces") > 0);
}
