// Tests of parameter_tensors.h: Megatron's parameter list against the parameter oracle, the DDP
// buffer layout against a hand-worked example, and the resident tensors against their terms.
#include <map>
#include <string>

#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "memory/parameter_tensors.h"
#include "model/presets.h"

using namespace stagemem;

namespace {

struct Estimated {
  Config config;
  Model model;
  Report report;
};

Estimated estimated(std::string_view link) {
  const DecodedFragment d = decode_fragment(link);
  REQUIRE(d.diagnostics.ok());
  Diagnostics diagnostics;
  const std::optional<Model> model = resolve_model(d.config, diagnostics);
  REQUIRE(model.has_value());
  Estimated out{d.config, *model, {}};
  out.report = estimate(out.config, out.model);
  REQUIRE(out.report.diagnostics.ok());
  return out;
}

std::vector<StageParameters> parameters_of(const Estimated& e) {
  Diagnostics d;
  const std::optional<StagePlan> plan = plan_stages(e.model, e.config.parallel, d);
  REQUIRE(plan.has_value());
  return stage_parameters(e.model, e.config.parallel, *plan);
}

// The bytes each covered term's tensors hold once every list has run (frees subtracted).
std::map<std::int32_t, std::int64_t> bytes_per_term(const ResidentAllocations& a) {
  std::map<std::int32_t, std::int64_t> out;
  for (const auto* list : {&a.at_init, &a.first_step}) {
    for (const ResidentAllocation& e : *list) {
      if (e.frees >= 0) {
        out[e.term] -= (*list)[static_cast<std::size_t>(e.frees)].bytes;
      } else {
        out[e.term] += e.bytes;
      }
    }
  }
  return out;
}

}  // namespace

TEST_CASE("Megatron's parameter list holds every per-rank element of the stage") {
  for (const char* link :
       {"v=1&model=llama-3.1-8b&pp=4&tp=2", "v=1&model=qwen3-30b-a3b&pp=4&ep=8&dp=8",
        "v=1&model=deepseek-v3&pp=8&vpp=2&ep=32&tp=2&sp=1&dp=32",
        "v=1&model=kimi-linear-48b-a3b&pp=2&ep=8&dp=8",
        "v=1&model=kimi-k3&tp=8&sp=1&pp=4&vpp=2&ep=64&dp=8"}) {
    CAPTURE(link);
    const Estimated e = estimated(link);
    for (const StageParameters& stage : parameters_of(e)) {
      CAPTURE(stage.pipeline_rank);
      std::int64_t elements = 0;
      std::int64_t experts = 0;
      for (const ParameterTensor& p : megatron_parameters(e.model, stage, e.config.parallel)) {
        CHECK(p.elements > 0);
        elements += p.elements;
        if (p.role == TensorRole::expert_matrix) experts += p.elements;
      }
      CHECK(elements == stage.per_rank.total());
      CHECK(experts == stage.per_rank_roles[TensorRole::expert_matrix]);
    }
  }
}

TEST_CASE("Megatron fuses q, k, v into linear_qkv and gate, up into linear_fc1") {
  // Llama-3.1-8B, TP 2, one stage of layer 0 only: h 4096, 32 heads, 8 KV heads of 128, I 14336.
  const Estimated e = estimated("v=1&model=llama-3.1-8b&tp=2&pp=32");
  const StageParameters stage = parameters_of(e)[1];  // layer 1, no embedding or head
  const std::vector<ParameterTensor> p = megatron_parameters(e.model, stage, e.config.parallel);
  REQUIRE(p.size() == 6);
  CHECK(p[0].elements == 4096);                           // input_layernorm
  CHECK(p[1].elements == (32 + 2 * 8) * 128 / 2 * 4096);  // linear_qkv
  CHECK(p[2].elements == 4096 * 32 * 128 / 2);            // linear_proj
  CHECK(p[3].elements == 4096);                           // pre_mlp_layernorm
  CHECK(p[4].elements == 2 * 14336 / 2 * 4096);           // linear_fc1 = gate + up
  CHECK(p[5].elements == 14336 / 2 * 4096);               // linear_fc2
}

TEST_CASE("DDP buffer: reverse order, 64-element starts, buckets end at lcm(DP, 128)") {
  // Three dense parameters of 100, 1000 and 50 elements in one chunk, DP 4.
  const std::vector<ParameterTensor> params = {
      {.elements = 100}, {.elements = 1000}, {.elements = 50}};
  SECTION("one bucket (no overlap_grad_reduce)") {
    const DdpBufferLayout l = ddp_buffer_layout(params, 1, true, 4, 1, 0);
    // Buffer order 50, 1000, 100: starts 0, 64, 1088 (1064 padded to 64); end 1188 padded to
    // lcm(4, 128) = 128: 1280. Rank 0 owns [0, 320): 50 of the first, 256 of the second.
    CHECK(l.placement[2].start == 0);
    CHECK(l.placement[1].start == 64);
    CHECK(l.placement[0].start == 1088);
    CHECK(l.buffer_elements[0] == 1280);
    CHECK(l.buckets[0] == 1);
    CHECK(l.placement[2].rank0_elements == 50);
    CHECK(l.placement[1].rank0_elements == 320 - 64);
    CHECK(l.placement[0].rank0_elements == 0);
    CHECK(l.order == std::vector<std::size_t>{2, 1, 0});
  }
  SECTION("buckets of 1000 elements") {
    const DdpBufferLayout l = ddp_buffer_layout(params, 1, true, 4, 1, 1000);
    // 50 at 0, 1000 at 64: 1064 >= 1000 closes bucket 1 at 1152 (lcm 128); rank 0 owns [0, 288).
    // The 100 start a bucket at 1152, end 1252 -> 1280; rank 0 owns [1152, 1184): 32 of them.
    CHECK(l.buckets[0] == 2);
    CHECK(l.placement[0].start == 1152);
    CHECK(l.buffer_elements[0] == 1280);
    CHECK(l.placement[2].rank0_elements == 50);
    CHECK(l.placement[1].rank0_elements == 288 - 64);
    CHECK(l.placement[0].rank0_elements == 32);
  }
  SECTION("without the distributed optimizer: no padding, whole parameters") {
    const DdpBufferLayout l = ddp_buffer_layout(params, 1, false, 4, 1, 0);
    CHECK(l.buffer_elements[0] == 1150);
    CHECK(l.placement[0].start == 1050);
    CHECK(l.placement[0].rank0_elements == 100);
  }
}

TEST_CASE("Resident tensors hold their terms' bytes") {
  for (const char* link :
       {"v=1&model=llama-3.1-8b&pp=4", "v=1&model=llama-3.1-8b&pp=4&dp=8&optimizer=adam",
        "v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16",
        "v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16&overlap_grad_reduce=1&ddp_bucket_size=1000000",
        "v=1&model=qwen3-30b-a3b&pp=8&cp=2&dp=4&ep=8&optimizer=distributed-muon",
        "v=1&model=deepseek-v3&pp=8&vpp=2&ep=32&tp=2&sp=1&dp=32"}) {
    CAPTURE(link);
    const Estimated e = estimated(link);
    for (const StageReport& stage : e.report.stages) {
      CAPTURE(stage.index);
      REQUIRE(stage.resident_allocations);
      const ResidentAllocations& a = *stage.resident_allocations;
      REQUIRE_FALSE(a.empty());
      for (const auto& [term, bytes] : bytes_per_term(a)) {
        const Term& t = stage.terms[static_cast<std::size_t>(term)];
        CAPTURE(term, t.bytes, bytes);
        // Whole parameters: exactly the term. Rank 0's shards: at most the term's ceil(elements /
        // shards) plus the padding Megatron adds (64-element starts, bucket ends).
        const bool sharded = t.info->text == TermText::master_weights
                                 ? t.formula.factor(4) != 0
                                 : t.info->text != TermText::main_gradient &&
                                       t.info->text != TermText::weights &&
                                       t.formula.factor(5) != 0;
        if (!sharded && t.info->text != TermText::main_gradient) CHECK(bytes == t.bytes);
        CHECK(bytes >= t.bytes * 99 / 100);
        CHECK(bytes <= t.bytes * 101 / 100 + 4096 * 128);
      }
    }
  }
}

TEST_CASE("Gradient buckets move rank 0's shards on the first chunk of pipeline rank 0 only") {
  // Qwen3-30B-A3B, PP 4, EP 16, DP 16, distributed Adam (dense state over DP 16; expert DP
  // 16 / 16 = 1): with one bucket rank 0 owns the first sixteenth of the dense buffer, whole
  // parameters but one; with buckets of 1,000,000 elements each larger parameter is a bucket cut
  // into sixteenths, so rank 0 holds a piece of many more. Without the distributed optimizer buckets
  // change no tensor (whole parameters either way).
  const char* base = "v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16&optimizer=distributed-adam";
  const Estimated one = estimated(base);
  const Estimated bucketed =
      estimated(std::string(base) + "&overlap_grad_reduce=1&ddp_bucket_size=1000000");
  for (const Estimated* e : {&one, &bucketed}) {
    for (const StageReport& s : e->report.stages) REQUIRE(s.resident_allocations);
  }
  const auto tensors = [](const StageReport& s) { return s.resident_allocations->at_init.size(); };
  CHECK(tensors(bucketed.report.stages[0]) > tensors(one.report.stages[0]));
  CHECK(bucketed.report.stages[0].resident_allocations->hash !=
        one.report.stages[0].resident_allocations->hash);
  for (std::size_t i = 1; i < one.report.stages.size(); ++i) {
    CHECK(bucketed.report.stages[i].resident_allocations->hash ==
          one.report.stages[i].resident_allocations->hash);
  }
  const Estimated plain = estimated("v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16");
  const Estimated plain_bucketed = estimated(
      "v=1&model=qwen3-30b-a3b&pp=4&ep=16&dp=16&overlap_grad_reduce=1&ddp_bucket_size=1000000");
  CHECK(plain_bucketed.report.stages[0].resident_allocations->hash ==
        plain.report.stages[0].resident_allocations->hash);
}

TEST_CASE("Past the resident-tensor bound each resident term is one tensor, with a warning") {
  // DeepSeek-V3 at PP 16, EP 1: 256 local experts x 2 GroupedLinear weights x 4 layers, each a
  // weight, a main-parameter and two moment tensors, on 16 stages: past 2^13 tensors.
  const Estimated over = estimated("v=1&model=deepseek-v3&pp=16&ep=1&dp=8");
  bool warned = false;
  for (const FieldMessage& w : over.report.diagnostics.warnings) {
    warned = warned || (w.field == "parallel.ep" && w.message.find("tensor by tensor up to 8192 "
                                                                   "tensors per estimate") !=
                                                        std::string::npos);
  }
  CHECK(warned);
  for (const StageReport& s : over.report.stages) {
    CHECK_FALSE(s.resident_allocations);
    CHECK(s.reserved_replayed);
  }
  // At EP 64 (4 local experts) the same model stays under it: replayed tensor by tensor.
  const Estimated under = estimated("v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64");
  for (const StageReport& s : under.report.stages) CHECK(s.resident_allocations);
}
