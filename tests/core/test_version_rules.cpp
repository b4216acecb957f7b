// Tests of version_rules.h: each rule's boundary, the kernel options that follow the stack, the
// user's explicit values, and what the encodings keep of both.
#include "catch.h"
#include "config/config_fields.h"
#include "config/config_json.h"
#include "config/url_fragment.h"
#include "config/version_rules.h"
#include "estimate/estimate.h"
#include "memory/model_pieces.h"
#include "render/report_json.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

using namespace stagemem;

namespace {

SoftwareStack stack_of(std::string_view text) {
  std::string error;
  const auto s = parse_stack(text, error);
  INFO(error);
  REQUIRE(s);
  return *s;
}

Config link(std::string_view fragment) {
  const DecodedFragment d = decode_fragment(fragment);
  INFO(fragment);
  REQUIRE(d.diagnostics.ok());
  return d.config;
}

}  // namespace

TEST_CASE("Every rule holds at its release and after, not before; a missing component is current",
          "[stack]") {
  for (const VersionRuleInfo& r : version_rules()) {
    INFO(enum_name(r.rule));
    CHECK(version_rule(r.rule).rule == r.rule);
    CHECK(!r.behaviour.empty());
    CHECK(!r.before.empty());
    CHECK(!r.change.empty());
    CHECK(rule_holds(SoftwareStack{}, r.rule));  // no stack: what stagemem modelled before
    REQUIRE(r.from.given());
    const std::string name(enum_name(r.component));
    const std::string at = release_text(r.from);
    CHECK(rule_holds(stack_of(name + "=" + at), r.rule));
    CHECK(rule_holds(stack_of(name + "=" + at + ".1"), r.rule));
    // The last patch before: the minor below, patch 99.
    Release before = r.from;
    if (before.number[2] > 0) {
      before.number[2] -= 1;
    } else if (before.number[1] > 0) {
      before.number[1] -= 1;
      before.number[2] = 99;
    } else {  // x.0: the last release of the major before
      before.number[0] -= 1;
      before.number[1] = 99;
      before.number[2] = 99;
    }
    before.parts = 3;
    CHECK_FALSE(rule_holds(stack_of(name + "=" + release_text(before)), r.rule));
  }
}

TEST_CASE("Kernel options that are version questions follow the stack unless set", "[stack]") {
  // No stack: today's defaults.
  const Config plain = link("v=1");
  CHECK(plain.training.kernels.moe_unpermute == MoeUnpermute::probs_in_activation);
  CHECK(plain.training.kernels.fla_version == FlaVersion::since_0_4_1);
  CHECK(plain.training.kernels.gemm_workspaces == GemmWorkspaces::sm90);
  // Megatron-core 0.12, fla 0.4.0, an A100: each option follows its component.
  const Config old = link("v=1&stack=megatron-core=0.12.1,fla=0.4.0,arch=sm80");
  CHECK(old.training.kernels.moe_unpermute == MoeUnpermute::legacy_unpermute_with_probs);
  CHECK(old.training.kernels.fla_version == FlaVersion::v0_4_0);
  CHECK(old.training.kernels.gemm_workspaces == GemmWorkspaces::sm80);
  CHECK(link("v=1&stack=arch=gfx942").training.kernels.gemm_workspaces == GemmWorkspaces::none);
  CHECK(link("v=1&stack=arch=sm100").training.kernels.gemm_workspaces == GemmWorkspaces::sm90);
  // Explicit wins, whichever comes first in the link.
  for (std::string_view fragment :
       {"v=1&moe_unpermute=probs-in-activation&stack=megatron-core=0.12",
        "v=1&stack=megatron-core=0.12&moe_unpermute=probs-in-activation"}) {
    const Config c = link(fragment);
    CHECK(c.training.kernels.moe_unpermute == MoeUnpermute::probs_in_activation);
    const auto origins = kernel_origins(c.training);
    CHECK(origins[0].kernel == StackKernel::moe_unpermute);
    CHECK(origins[0].origin == KernelOrigin::explicit_value);
    CHECK(origins[1].origin == KernelOrigin::stack);
    // The link keeps the explicit value and the stack; the derived options stay out of it.
    const std::string text = encode_fragment(c);
    CHECK(text.find("moe_unpermute=probs-in-activation") != std::string::npos);
    CHECK(text.find("stack=megatron-core=0.12") != std::string::npos);
    CHECK(text.find("fla_version") == std::string::npos);
    CHECK(decode_fragment(text).config == c);
  }
  // A derived option is not written: changing the stack later moves it (the app's edit).
  Config c = old;
  const std::string text = encode_fragment(c);
  CHECK(text.find("moe_unpermute") == std::string::npos);
  CHECK(text.find("gemm_workspaces") == std::string::npos);
  Diagnostics d;
  REQUIRE(parse_field_text(*find_field_by_key("stack"), "megatron-core=0.14", c, d, "stack"));
  CHECK(c.training.kernels.moe_unpermute == MoeUnpermute::probs_in_activation);
  CHECK(c.training.kernels.gemm_workspaces == GemmWorkspaces::sm90);
  // JSON leaves derived options out too, and reads them back from the stack.
  const std::string json = config_to_json(old);
  CHECK(json.find("\"stack\": \"megatron-core=0.12.1,fla=0.4.0,arch=sm80\"") != std::string::npos);
  CHECK(json.find("moe_unpermute") == std::string::npos);
  const DecodedConfig back = config_from_json(json);
  REQUIRE(back.diagnostics.ok());
  CHECK(back.config == old);
  // Old links keep their meaning: an option in the link is the user's, as it always was.
  const Config legacy = link("v=1&gemm_workspaces=sm80");
  CHECK(legacy.training.kernels.gemm_workspaces == GemmWorkspaces::sm80);
  CHECK(kernel_origins(legacy.training)[2].origin == KernelOrigin::explicit_value);
}

TEST_CASE("The stack's rules change the terms they name, with worked numbers", "[stack]") {
  // Llama-3.1-8B, seq 4096, TP 2, the LM head's stage: padded V/TP = 64,128, n = 4096.
  const std::string base = "v=1&model=llama-3.1-8b&tp=2&pp=1&dp=4&gbs=4&";  // 1 micro-batch
  const auto head_term = [](const Report& r, std::string_view prefix) -> std::int64_t {
    for (const Term& t : r.stages.back().terms)
      if (term_name(t).find(prefix) != std::string::npos) return t.bytes;
    return -1;
  };
  // TE's fused cross-entropy: TE 2.17 keeps the bf16 logits with the gradient written in place
  // (4096 x 64,128 x 2 B = 525,336,576 B); TE 2.18 the fp32 gradient (1,050,673,152 B).
  const Report te17 = estimate(link(base + "cross_entropy=te-fused&stack=te=2.17"));
  const Report te18 = estimate(link(base + "cross_entropy=te-fused&stack=te=2.18"));
  REQUIRE(te17.diagnostics.ok());
  CHECK(head_term(te17, "logits with the cross-entropy gradient written in place") ==
        525'336'576LL);
  CHECK(head_term(te17, "cross-entropy logits gradient computed in forward") == -1);
  CHECK(head_term(te18, "cross-entropy logits gradient computed in forward") == 1'050'673'152LL);
  CHECK(head_term(te18, "logits (bf16 output-layer output") == 525'336'576LL);
  // Megatron's native fused cross-entropy: compiled (torch >= 2.2) the fp32 copy of the logits
  // is alive beside exp_logits at the loss: 4096 x 64,128 x (2 + 4) B = 1,576,009,728 B with the
  // bf16 logits; TorchScript (torch 2.1) as vocab-parallel.
  const Report compiled = estimate(link(base + "cross_entropy=native-fused&stack=torch=2.7"));
  const Report scripted = estimate(link(base + "cross_entropy=native-fused&stack=torch=2.1"));
  CHECK(head_term(compiled, "logits (bf16) and their fp32 copy") == 1'576'009'728LL);
  CHECK(head_term(scripted, "logits (bf16) and their fp32 copy") == -1);
  CHECK(head_term(scripted, "logits (bf16 output-layer output") == 525'336'576LL);
  // a2a context parallelism, Llama-3.1-8B CP 2, stage 0: TE >= 2.9 saves the head-sharded output
  // before the output all-to-all, [S/CP=2048] x [32 x 128] x 2 B per layer and micro-batch, 8
  // layers x 4 micro-batches in flight: 536,870,912 B; TE 2.8 saved the returned output only.
  const auto stage0_term = [](const Report& r, std::string_view part) -> std::int64_t {
    for (const Term& t : r.stages.front().terms)
      if (term_name(t).find(part) != std::string::npos) return t.bytes;
    return -1;
  };
  const std::string cp = "v=1&model=llama-3.1-8b&cp=2&cp_comm_type=a2a&stack=te=";
  CHECK(stage0_term(estimate(link(cp + "2.9")), "before the output all-to-all") == 536'870'912LL);
  CHECK(stage0_term(estimate(link(cp + "2.8.1")), "before the output all-to-all") == -1);
}

TEST_CASE("What a stack cannot run is an error naming the stack", "[stack]") {
  struct Case {
    std::string_view fragment;
    std::string_view says;
    bool error;
  };
  const Case cases[] = {
      {"v=1&cross_entropy=te-fused&stack=te=2.1", "first exists in TE 2.2", true},
      {"v=1&cross_entropy=te-fused&stack=megatron-core=0.11", "from 0.12.0 on", true},
      {"v=1&cross_entropy=te-fused&stack=megatron-core=0.19", "refuse TE's cross-entropy", false},
      {"v=1&cross_entropy=native-fused&stack=megatron-core=0.7", "first exists in core 0.8.0",
       true},
      {"v=1&model=kimi-linear-48b-a3b&stack=fla=0.3.2", "first exist in fla 0.4.0", true},
  };
  for (const Case& c : cases) {
    INFO(c.fragment);
    const Diagnostics d = validate(link(c.fragment));
    const auto& list = c.error ? d.errors : d.warnings;
    REQUIRE(list.size() == 1);
    CHECK(list[0].field == "stack");
    CHECK(list[0].message.find(c.says) != std::string::npos);
  }
  // The same kernels with a stack that has them: nothing to say.
  CHECK(validate(link("v=1&cross_entropy=te-fused&stack=te=2.11,megatron-core=0.13")).ok());
  CHECK(validate(link("v=1&model=kimi-linear-48b-a3b&stack=fla=0.4.0")).ok());
  // A bad stack in a link is the link's error, naming the key and the known names.
  const DecodedFragment bad = decode_fragment("v=1&stack=jax=0.4");
  REQUIRE_FALSE(bad.diagnostics.ok());
  CHECK(bad.diagnostics.errors[0].message.find("megatron-core, te, torch") != std::string::npos);
}

TEST_CASE("The report says the stack, each rule and where each kernel option came from",
          "[stack]") {
  const Config c = link("v=1&stack=te=2.17,megatron-core=0.12&gemm_workspaces=sm80");
  const std::string summary = stack_summary_text(c.training);
  CHECK(summary.find("megatron-core=0.12,te=2.17 (the rest: current releases)") == 0);
  CHECK(summary.find("te-cross-entropy-fp32-gradient (te 2.18)") != std::string::npos);
  CHECK(summary.find("moe_unpermute legacy-unpermute-with-probs (stack)") != std::string::npos);
  CHECK(summary.find("gemm_workspaces sm80 (explicit)") != std::string::npos);
  CHECK(stack_summary_text(TrainingConfig{}).empty());
  const std::string json = report_json(estimate(c), c, "", Diagnostics{});
  CHECK(json.find("\"releases\": \"megatron-core=0.12,te=2.17\"") != std::string::npos);
  CHECK(json.find("\"origin\": \"explicit\"") != std::string::npos);
  CHECK(json.find("\"rule\": \"te-cross-entropy-fp32-gradient\"") != std::string::npos);
}
