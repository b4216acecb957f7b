// Tests of url_fragment.h: round trips of every field, only non-default fields, escaping, and a
// corpus of bad links that must each produce an error naming the field.
#include "catch.h"
#include "config_fields.h"
#include "url_fragment.h"

using namespace stagemem;

TEST_CASE("Default configuration encodes to the version only") {
  CHECK(encode_fragment(Config{}) == "v=1");
}

TEST_CASE("Fragments round-trip and keep only non-default fields") {
  Config c;
  c.parallel.pipeline_parallel = 8;
  c.parallel.tensor_parallel = 2;
  const std::string text = encode_fragment(c);
  CHECK(text == "v=1&tp=2&pp=8");
  const DecodedFragment decoded = decode_fragment("#" + text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.warnings.empty());
  CHECK(decoded.config == c);
  CHECK(decode_fragment("https://wiki.example/stagemem/#" + text).config == c);
}

namespace {

// A configuration in which every field of the table differs from its default.
Config every_field_changed() {
  Config c;
  c.model = "kimi-k3";
  c.custom_model = "h:64;v:128;gqa:4,2,16;mlp:128,swiglu;layers:gd*2";
  c.parallel.tensor_parallel = 2;
  c.parallel.pipeline_parallel = 8;
  c.parallel.virtual_stages = 2;
  c.parallel.context_parallel = 4;
  c.parallel.expert_parallel = 28;
  c.parallel.expert_tensor_parallel = 2;
  c.parallel.data_parallel = 7;
  c.parallel.world_size = 896;
  c.parallel.sequence_parallel = true;
  c.parallel.vocab_multiple = 64;
  c.parallel.assignment = StageAssignment::layout_string;
  c.parallel.layers_per_stage = {12, 12, 0, 9};
  c.parallel.first_stage_layers = 3;
  c.parallel.last_stage_layers = 5;
  c.parallel.layout_string = "Et*3|(tt|)*29,m|L";
  c.training.sequence_length = 8192;
  c.training.micro_batch = 2;
  c.training.global_batch = 896;
  c.training.dropout = true;
  c.training.routing_imbalance = 1.25;
  c.training.flat_headroom_bytes = 82LL << 30;
  c.training.recompute.policy = RecomputePolicy::full;
  c.training.recompute.modules = module_bit(RecomputeModule::moe_act) | module_bit(RecomputeModule::mla_up_proj);
  c.training.recompute.method = FullRecomputeMethod::block;
  c.training.recompute.layers = 3;
  c.training.kernels.attention = AttentionKernel::materialized;
  c.training.kernels.kda = KdaBackend::eager;
  c.training.kernels.kda_chunk = 128;
  c.training.kernels.cross_entropy = CrossEntropyKernel::fused_chunked;
  c.training.kernels.cross_entropy_chunk = 2048;
  c.training.kernels.attn_res_live_temporaries = 5;
  c.precision.dense_weights = WeightDtype::fp8_block_scaled;
  c.precision.expert_weights = WeightDtype::mxfp4;
  c.precision.grads = GradDtype::bf16;
  c.optimizer.kind = OptimizerKind::distributed_muon;
  c.optimizer.master_weights = MasterDtype::fp16;
  c.optimizer.moments = MomentDtype::bf16;
  c.optimizer.cast_copy = CastCopy::all;
  c.device.preset = "h200";
  c.device.bytes = 150'000'000'000LL;
  return c;
}

}  // namespace

TEST_CASE("Every field of the table round-trips through a fragment") {
  const Config c = every_field_changed();
  const std::string text = encode_fragment(c);
  INFO(text);
  for (const ConfigField& f : config_fields()) {
    INFO(f.key);
    CHECK(!field_equals(f, c, Config{}));  // the helper really changes every field
    CHECK(text.find("&" + std::string(f.key) + "=") != std::string::npos);
  }
  // The layout string stays readable: '|', '*', '(', ')' and ',' need no escaping in a fragment.
  CHECK(text.find("layout=Et*3|(tt|)*29,m|L") != std::string::npos);
  CHECK(text.find("recompute_modules=moe_act,mla_up_proj") != std::string::npos);
  CHECK(text.find("imbalance=1.25") != std::string::npos);
  const DecodedFragment decoded = decode_fragment(text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == c);
}

TEST_CASE("Delimiters inside values are escaped and decoded") {
  Config c;
  c.parallel.layout_string = "a&b=c#d%e f";
  const std::string text = encode_fragment(c);
  CHECK(text == "v=1&layout=a%26b%3Dc%23d%25e%20f");
  CHECK(decode_fragment(text).config == c);
}

TEST_CASE("Bad links: each entry produces an error naming the field") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {"v=1&tp=0", "url.tp"},
      {"v=1&tp=-4", "url.tp"},
      {"v=1&tp=1025", "url.tp"},
      {"v=1&pp=abc", "url.pp"},
      {"v=1&pp=1.5", "url.pp"},
      {"v=1&pp=1e3", "url.pp"},
      {"v=1&pp=NaN", "url.pp"},
      {"v=1&pp=99999999999999999999", "url.pp"},
      {"v=1&pp= 4", "url.pp"},
      {"v=1&ep=", "url.ep"},
      {"v=1&sp=yes", "url.sp"},
      {"v=1&split=random", "url.split"},
      {"v=1&stages=12,,12", "url.stages"},
      {"v=1&stages=12,", "url.stages"},
      {"v=1&stages=12,-1", "url.stages"},
      {"v=1&layout=%zz", "url.layout"},
      {"v=1&layout=%4", "url.layout"},
      {"v=1&model=%0A", "url.model"},
      {"v=2&pp=2", "url.v"},
      {"v=one", "url.v"},
      {"v=1&garbage", "url"},
  };
  for (const Case& c : corpus) {
    INFO(c.text);
    const DecodedFragment decoded = decode_fragment(c.text);
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors[0].field == c.field);
    const std::string field = c.field;
    const bool names_allowed_values =
        decoded.diagnostics.errors[0].message.find("expected") != std::string::npos;
    CHECK((names_allowed_values || field == "url" || field == "url.v" || field == "url.layout"));
  }
}

TEST_CASE("Range errors state the allowed range") {
  const DecodedFragment decoded = decode_fragment("v=1&tp=0");
  REQUIRE(!decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.errors[0].message == "0 is out of range: expected an integer in [1, 1024]");
}

TEST_CASE("Unknown keys are warnings, not errors") {
  const DecodedFragment decoded = decode_fragment("v=1&pp=2&future_knob=7");
  CHECK(decoded.diagnostics.ok());
  REQUIRE(decoded.diagnostics.warnings.size() == 1);
  CHECK(decoded.diagnostics.warnings[0].field == "url.future_knob");
  CHECK(decoded.config.parallel.pipeline_parallel == 2);
}

TEST_CASE("An empty or oversized fragment") {
  CHECK(decode_fragment("").diagnostics.ok());
  CHECK(decode_fragment("#").config == Config{});
  const std::string huge(20000, 'a');
  CHECK(!decode_fragment(huge).diagnostics.ok());
}

TEST_CASE("Percent decoding rejects truncated escapes") {
  std::string out;
  CHECK(percent_decode("a%20b", out));
  CHECK(out == "a b");
  CHECK(!percent_decode("a%2", out));
  CHECK(!percent_decode("%", out));
  CHECK(!percent_decode("%g0", out));
}
