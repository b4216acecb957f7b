// Tests of activation_terms.h: stage sums over layers, chunks and micro-batches in flight, the
// recompute policies, and properties over many random valid configurations.
#include <cmath>
#include <random>

#include "catch.h"
#include "estimate/estimate.h"
#include "memory/activation_terms.h"
#include "model/model_text.h"
#include "model/presets.h"
#include "render/term_text.h"
#include "report/report.h"

using namespace stagemem;

namespace {

StageActivationTerms terms_for(const Model& m, const ParallelLayout& layout,
                               const TrainingConfig& t, std::int64_t rank,
                               std::int64_t micro_batches) {
  Diagnostics d;
  const auto plan = plan_stages(m, layout, d);
  REQUIRE(plan);
  return stage_activation_terms(m, layout, t, *plan, rank, micro_batches);
}

std::int64_t bytes_of(const std::vector<Term>& terms, std::string_view prefix) {
  std::int64_t sum = 0;
  for (const Term& t : terms) {
    if (term_name(t).starts_with(prefix)) sum += t.bytes;
  }
  return sum;
}

}  // namespace

TEST_CASE("Stored activations = per-layer pieces x layers x micro-batches in flight (1F1B)") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelLayout layout{.pipeline_parallel = 4};
  // Stage 1 holds layers 8-15 and 3 micro-batches; per layer and micro-batch 4096 x 139,392 B
  // (see test_activations.cpp).
  const auto stage1 = terms_for(m, layout, t, 1, 64);
  CHECK(stage1.in_flight_per_chunk == std::vector<std::int64_t>{3});
  CHECK(stage1.stored_bytes == 8 * 3 * 4096LL * 139'392);
  // Every stored term says how many layer-micro-batches it sums.
  for (const Term& term : stage1.stored) {
    CHECK(term_formula(term).find("[layer-micro-batches alive=24]") != std::string::npos);
  }
}

TEST_CASE(
    "Full recompute keeps one input per checkpointed group - the group comes back as a transient") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  t.recompute.policy = RecomputePolicy::full;
  t.recompute.layers = 2;
  const ParallelLayout layout{.pipeline_parallel = 4};
  const auto stage1 = terms_for(m, layout, t, 1, 64);
  // 8 layers in groups of 2 -> 4 inputs of 4096 x 4096 x 2 B, x 3 micro-batches.
  CHECK(stage1.stored_bytes == 4 * 3 * 4096LL * 4096 * 2);
  // Backward rebuilds one group of 2 layers for one micro-batch, and inside it the MLP backward
  // working set of one layer is alive (n 4096 x 3 x I 14336 x 2 B = 352,321,536 B): the two
  // together are the co-live transient (the step timeline nests them).
  CHECK(stage1.largest_transient_bytes == 2 * 4096LL * 139'392 + 352'321'536);
  REQUIRE(stage1.largest_transient >= 0);
  CHECK(term_name(stage1.transients[static_cast<std::size_t>(stage1.largest_transient)])
            .starts_with("MLP backward working set"));
  REQUIRE(stage1.moment.enclosing >= 0);
  CHECK(term_name(stage1.transients[static_cast<std::size_t>(stage1.moment.enclosing)])
            .starts_with("recompute working set"));
  // Block method: the first 2 layers of the chunk are checkpointed, the other 6 keep everything.
  t.recompute.method = FullRecomputeMethod::block;
  const auto block = terms_for(m, layout, t, 1, 64);
  CHECK(block.stored_bytes == 3 * (2 * 4096LL * 4096 * 2 + 6 * 4096LL * 139'392));
}

TEST_CASE("The last stage keeps the logits' fp32 softmax - the first stage none") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  const ParallelLayout layout{.pipeline_parallel = 4};
  const auto last = terms_for(m, layout, t, 3, 64);
  CHECK(bytes_of(last.stored, "output: cross-entropy softmax") == 4096LL * 128'256 * 4);
  const auto first = terms_for(m, layout, t, 0, 64);
  CHECK(bytes_of(first.stored, "output:") == 0);
}

TEST_CASE("kimi-k3 at PP 8 (AttnRes-aligned): AttnRes terms on every stage, the largest K last") {
  const Model m = *find_preset("kimi-k3");
  TrainingConfig t;
  t.sequence_length = 8192;
  ParallelLayout layout{.pipeline_parallel = 8, .expert_parallel = 28};
  layout.assignment = StageAssignment::attn_res_aligned;
  const auto last = terms_for(m, layout, t, 7, 32);
  // The output mix sees K = 8 slots: ((1 + 8) + 2) x 8192 x 7168 x 4 B.
  bool found = false;
  for (const Term& term : last.transients) {
    if (term_name(term).starts_with("AttnRes mix internal")) {
      CHECK(term.bytes == 2'583'691'264LL);
      found = true;
    }
  }
  CHECK(found);
  // Stage 0 receives nothing; it sends the hidden state + 1 slot: 224 MiB.
  const auto first = terms_for(m, layout, t, 0, 32);
  CHECK(bytes_of(first.transients, "pipeline send/receive") == 234'881'024LL);
}

TEST_CASE("Backward-phase transients: one layer's working set and the pipeline gradient buffers") {
  const Model m = *find_preset("kimi-k3");
  TrainingConfig t;
  t.sequence_length = 8192;
  ParallelLayout layout{.pipeline_parallel = 8, .expert_parallel = 28};
  layout.assignment = StageAssignment::attn_res_aligned;
  const auto first = terms_for(m, layout, t, 0, 32);
  const auto find = [&](std::string_view prefix) -> const Term* {
    for (const Term& term : first.transients) {
      if (term_name(term).starts_with(prefix)) return &term;
    }
    return nullptr;
  };
  // The MLP half: T_recv = 8192 x 16 = 131,072 tokens x (3 x 3072 + 3584) x 2 B = 3,355,443,200 B,
  // larger than the dense layers' half on this stage; allocated in backward.
  const Term* moe = find("MoE backward working set");
  REQUIRE(moe != nullptr);
  CHECK(moe->bytes == 3'355'443'200LL);
  CHECK(moe->allocated_at == AllocationPoint::backward);
  CHECK(find("MLP backward working set") == nullptr);
  // The attention half is the largest over the stage's attention kinds (KDA here: 128 chunks x 96
  // heads x 212,992 B, see test_activations.cpp).
  const Term* attention = find("KDA backward working set");
  REQUIRE(attention != nullptr);
  CHECK(attention->bytes == 128LL * 96 * 212'992);
  // The stage's largest transient is the MoE layer's dispatch and combine buffers (Megatron-core
  // >= 0.13 holds four routed-token buffers and the shared experts' output: 8192 x (4 x 16 x
  // 3584 + 7168) x 2 B = 3,875,536,896 B, test_model_pieces.cpp), above the MoE half.
  CHECK(first.largest_transient_bytes == 3'875'536'896LL);
  // Stage 0 sends the hidden state + 1 slot; in backward that boundary's gradient arrives: the
  // same 224 MiB, a backward transient.
  const Term* gradients = find("pipeline gradient send/receive buffers");
  REQUIRE(gradients != nullptr);
  CHECK(gradients->bytes == 234'881'024LL);
  CHECK(gradients->allocated_at == AllocationPoint::backward);
}

TEST_CASE("MTP under uniform full recompute keeps its two checkpoint inputs") {
  const auto decoded = model_from_text(
      "name:mtp;h:1024;v:32000;gqa:8,4,128;mlp:4096,swiglu;mtp:1,gd;layers:gd*4", "model");
  REQUIRE(decoded.model);
  const Model& m = *decoded.model;
  TrainingConfig t;
  t.sequence_length = 4096;
  const ParallelLayout layout{.pipeline_parallel = 2};
  const auto kept = terms_for(m, layout, t, 1, 8);
  CHECK(bytes_of(kept.stored, "MTP: checkpoint inputs") == 0);
  CHECK(bytes_of(kept.stored, "MTP GQA:") > 0);
  t.recompute.policy = RecomputePolicy::full;
  const auto full = terms_for(m, layout, t, 1, 8);
  // The last stage holds 1 micro-batch: 2 x 4096 x 1024 x 2 B = 16,777,216 B, and no MTP layer
  // pieces.
  CHECK(bytes_of(full.stored, "MTP: checkpoint inputs") == 16'777'216LL);
  CHECK(bytes_of(full.stored, "MTP GQA:") == 0);
  CHECK(bytes_of(full.stored, "MTP dense MLP:") == 0);
}

TEST_CASE(
    "Property: activations are never negative, grow with seq, mbs and layers, shrink with CP and "
    "TP") {
  std::mt19937_64 random(20261130);
  const std::vector<std::string_view> models = {
      "llama-3.1-8b",        "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3",
      "kimi-linear-48b-a3b", "kimi-k3",      "gpt3-175b"};
  const auto pick = [&](std::initializer_list<std::int64_t> values) {
    return *(values.begin() + static_cast<std::ptrdiff_t>(random() % values.size()));
  };
  int checked = 0;
  for (int iteration = 0; iteration < 200; ++iteration) {
    Config c;
    c.model = std::string(models[random() % models.size()]);
    const Model m = *find_preset(c.model);
    c.parallel.pipeline_parallel = pick({1, 2, 4});
    c.parallel.tensor_parallel = pick({1, 2});
    c.parallel.sequence_parallel = true;
    c.parallel.context_parallel = pick({1, 2});
    c.training.sequence_length = pick({1024, 2048, 4096});
    c.training.micro_batch = pick({1, 2});
    c.training.global_batch = 4096;
    c.parallel.data_parallel = 8;
    c.training.recompute.policy = static_cast<RecomputePolicy>(random() % 3);
    c.training.recompute.modules = static_cast<std::uint32_t>(random() % 128);
    c.training.dropout = random() % 2 == 0;
    c.training.kernels.kda = static_cast<KdaBackend>(random() % 3);
    c.training.kernels.fla_version = static_cast<FlaVersion>(random() % 2);
    c.training.kernels.moe_unpermute = static_cast<MoeUnpermute>(random() % 2);
    c.training.kernels.router_dtype = static_cast<RouterDtype>(random() % 2);
    c.training.kernels.cp_comm_type = static_cast<CpCommType>(random() % 3);
    const Report base = estimate(c, m);
    if (!base.diagnostics.ok()) continue;
    ++checked;
    const auto grown = [&](auto change) {
      Config g = c;
      change(g);
      return estimate(g, m);
    };
    const Report longer = grown([](Config& g) { g.training.sequence_length *= 2; });
    const Report wider = grown([](Config& g) { g.training.micro_batch *= 2; });
    const Report more_cp = grown([](Config& g) { g.parallel.context_parallel *= 2; });
    for (std::size_t s = 0; s < base.stages.size(); ++s) {
      INFO(c.model << " stage " << s << " pp " << c.parallel.pipeline_parallel << " tp "
                   << c.parallel.tensor_parallel << " cp " << c.parallel.context_parallel);
      const StageReport& b = base.stages[s];
      CHECK(b.activation_bytes >= 0);
      CHECK(b.largest_transient_bytes >= 0);
      CHECK(b.peak_bytes >= b.resident_bytes);
      for (const Term& t : b.terms) CHECK(t.bytes >= 0);
      if (longer.diagnostics.ok()) {
        CHECK(longer.stages[s].activation_bytes >= b.activation_bytes);
        CHECK(longer.stages[s].peak_bytes >= b.peak_bytes);
      }
      if (wider.diagnostics.ok()) {
        CHECK(wider.stages[s].activation_bytes >= b.activation_bytes);
        CHECK(wider.stages[s].peak_bytes >= b.peak_bytes);
      }
      if (more_cp.diagnostics.ok()) CHECK(more_cp.stages[s].activation_bytes <= b.activation_bytes);
    }
    // TP (with sequence parallelism) never increases what a rank stores.
    if (c.parallel.tensor_parallel == 1) {
      const Report more_tp = grown([](Config& g) { g.parallel.tensor_parallel = 2; });
      if (more_tp.diagnostics.ok()) {
        for (std::size_t s = 0; s < base.stages.size(); ++s) {
          CHECK(more_tp.stages[s].activation_bytes <= base.stages[s].activation_bytes);
        }
      }
    }
  }
  CHECK(checked > 50);
}

TEST_CASE("Property: more layers on a stage never means fewer stored bytes") {
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  ParallelLayout layout{.pipeline_parallel = 2};
  layout.assignment = StageAssignment::explicit_list;
  std::int64_t previous = -1;
  for (std::int64_t first = 1; first < 32; ++first) {
    layout.layers_per_stage = {first, 32 - first};
    const auto stage0 = terms_for(m, layout, t, 0, 16);
    CHECK(stage0.stored_bytes >= previous);
    previous = stage0.stored_bytes;
  }
}

TEST_CASE("The pipeline input each fed chunk keeps after the step, with its gradient") {
  // llama-3.1-8b (h 4,096, 32 layers), seq 4,096, mbs 1: one [S, B, h] bf16 hidden state is
  // 4,096 x 1 x 4,096 x 2 B = 33,554,432 B; each chunk not fed by the embedding keeps its last
  // input and that input's gradient: 2 x 33,554,432 = 67,108,864 B per chunk.
  const Model m = *find_preset("llama-3.1-8b");
  TrainingConfig t;
  t.sequence_length = 4096;
  t.micro_batch = 1;
  const auto kept = [&](const ParallelLayout& layout, std::int64_t rank) {
    Diagnostics d;
    const auto plan = plan_stages(m, layout, d);
    REQUIRE(plan);
    std::vector<Term> out;
    append_kept_pipeline_input_terms(m, layout, t, *plan, rank, out);
    REQUIRE(out.size() <= 1);
    if (!out.empty()) {
      CHECK(out[0].family == Family::transient);
      CHECK(out[0].place == TransientPlace::between_steps);
      CHECK(out[0].bytes == out[0].formula.value());
      CHECK(term_formula(out[0]) ==
            "[S/CP=4,096] x [B=1] x [" +
                std::string(layout.sequence_parallel ? "h/TP (SP)=2,048" : "h=4,096") +
                "] x [input + its gradient=2] x [chunks fed by the previous stage=" +
                std::to_string(out[0].formula.value() /
                               (layout.sequence_parallel ? 33'554'432 : 67'108'864)) +
                "] x 2 B (bf16)");
    }
    return out.empty() ? std::int64_t{0} : out[0].bytes;
  };
  // PP 1: the only chunk holds the embedding, nothing is received.
  CHECK(kept(ParallelLayout{}, 0) == 0);
  // 1F1B at PP 4: the first rank none, every other rank one chunk.
  const ParallelLayout pp4{.pipeline_parallel = 4};
  CHECK(kept(pp4, 0) == 0);
  CHECK(kept(pp4, 1) == 67'108'864);
  CHECK(kept(pp4, 3) == 67'108'864);
  // Interleaved, 4 chunks per rank: rank 0's chunks 1-3 are fed by rank 3, the last rank's four
  // chunks all by rank 2.
  const ParallelLayout vpp{.pipeline_parallel = 4, .virtual_stages = 4};
  CHECK(kept(vpp, 0) == 3 * 67'108'864);
  CHECK(kept(vpp, 3) == 4 * 67'108'864);
  // Sequence parallelism sends [S/TP, B, h]: h/TP = 2,048 per rank at TP 2.
  const ParallelLayout sp{.tensor_parallel = 2, .pipeline_parallel = 4, .sequence_parallel = true};
  CHECK(kept(sp, 3) == 33'554'432);
}
