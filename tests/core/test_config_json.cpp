// Tests of config_json.h: export/import round trips, strict types, named errors, warnings.
#include "catch.h"
#include "config/config_json.h"
#include "config/version_rules.h"
#include "model/model_text.h"
#include "model/presets.h"

using namespace stagemem;

TEST_CASE("JSON export writes every field and imports back to the same configuration") {
  Config c;
  c.model = "deepseek-v3";
  c.parallel.tensor_parallel = 2;
  c.parallel.pipeline_parallel = 16;
  c.parallel.expert_parallel = 64;
  c.parallel.sequence_parallel = true;
  c.parallel.assignment = StageAssignment::explicit_list;
  c.parallel.layers_per_stage = {3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2};
  const std::string text = config_to_json(c);
  INFO(text);
  CHECK(text.find("\"format\": \"stagemem-config\"") != std::string::npos);
  CHECK(text.find("\"tensor_parallel\": 2") != std::string::npos);
  CHECK(text.find("\"assignment\": \"explicit\"") != std::string::npos);
  const DecodedConfig decoded = config_from_json(text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.warnings.empty());
  CHECK(decoded.config == c);
  CHECK(config_from_json(config_to_json(Config{})).config == Config{});
}

TEST_CASE("Issue 11's kernel options round-trip through JSON under training.kernels") {
  Config c;
  c.training.kernels.kda = KdaBackend::disable_recompute;
  c.training.kernels.fla_version = FlaVersion::v0_4_0;
  c.training.kernels.cross_entropy = CrossEntropyKernel::te_fused;
  c.training.kernels.moe_unpermute = MoeUnpermute::legacy_unpermute_with_probs;
  c.training.kernels.router_dtype = RouterDtype::fp32;
  c.training.kernels.cp_comm_type = CpCommType::a2a_p2p;
  // Set by the user (the field table's setters mark them), so they are written and read back
  // as explicit values, whatever the stack says.
  c.training.explicit_kernels =
      stack_kernel_bit(StackKernel::fla_version) | stack_kernel_bit(StackKernel::moe_unpermute);
  const std::string text = config_to_json(c);
  INFO(text);
  CHECK(text.find("\"cp_comm_type\": \"a2a+p2p\"") != std::string::npos);
  CHECK(text.find("\"fla_version\": \"0.4.0\"") != std::string::npos);
  CHECK(text.find("\"moe_unpermute\": \"legacy-unpermute-with-probs\"") != std::string::npos);
  CHECK(text.find("\"kda\": \"disable-recompute\"") != std::string::npos);
  const DecodedConfig decoded = config_from_json(text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == c);
}

TEST_CASE("Numbers and name sets keep their JSON types") {
  Config c;
  c.training.routing_imbalance = 1.5;
  c.training.recompute.modules =
      module_bit(RecomputeModule::core_attn) | module_bit(RecomputeModule::moe);
  const std::string text = config_to_json(c);
  CHECK(text.find("\"routing_imbalance\": 1.5") != std::string::npos);
  CHECK(text.find("\"core_attn\",") != std::string::npos);
  CHECK(config_from_json(text).config == c);
  CHECK(!config_from_json(R"({"training": {"routing_imbalance": 0.5}})").diagnostics.ok());
  CHECK(
      !config_from_json(R"({"training": {"recompute": {"modules": ["warp"]}}})").diagnostics.ok());
  CHECK(config_from_json(R"({"training": {"recompute": {"modules": []}}})")
            .config.training.recompute.modules == 0);
}

TEST_CASE("A partial document takes the defaults for the rest") {
  const DecodedConfig decoded = config_from_json(R"({"parallel": {"pipeline_parallel": 8}})");
  CHECK(decoded.diagnostics.ok());
  Config expected;
  expected.parallel.pipeline_parallel = 8;
  CHECK(decoded.config == expected);
}

TEST_CASE("Bad JSON documents: each names the field by its JSON path") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {"", "json"},
      {"{", "json"},
      {"[1, 2]", "json"},
      {"null", "json"},
      {R"({"format": "other"})", "json.format"},
      {R"({"version": 2})", "json.version"},
      {R"({"parallel": {"tensor_parallel": 0}})", "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": 2.5}})", "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": 4.0}})", "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": "4"}})", "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": 1e300}})", "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": -9223372036854775808}})",
       "json.parallel.tensor_parallel"},
      {R"({"parallel": {"tensor_parallel": 18446744073709551615}})",
       "json.parallel.tensor_parallel"},
      {R"({"parallel": {"sequence_parallel": 1}})", "json.parallel.sequence_parallel"},
      {R"({"parallel": {"assignment": "diagonal"}})", "json.parallel.assignment"},
      {R"({"parallel": {"layers_per_stage": [1, "2"]}})", "json.parallel.layers_per_stage"},
      {R"({"parallel": {"layers_per_stage": 12}})", "json.parallel.layers_per_stage"},
      {R"({"model": 7})", "json.model"},
      {R"({"model": "a\nb"})", "json.model"},
  };
  for (const Case& c : corpus) {
    INFO(c.text);
    const DecodedConfig decoded = config_from_json(c.text);
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors[0].field == c.field);
  }
}

TEST_CASE("Unknown JSON keys are warnings naming their path") {
  const DecodedConfig decoded =
      config_from_json(R"({"parallel": {"pipeline_parallel": 2, "warp_drive": true}, "extra": 1})");
  CHECK(decoded.diagnostics.ok());
  REQUIRE(decoded.diagnostics.warnings.size() == 2);
  CHECK(decoded.diagnostics.warnings[0].field == "json.extra");
  CHECK(decoded.diagnostics.warnings[1].field == "json.parallel.warp_drive");
}

TEST_CASE("Measured values and gaps round-trip through JSON - amounts may be text") {
  Config c;
  c.measurements = {{.point = MeasurementPoint::term,
                     .stage = 1,
                     .bytes = 7'100'000'000,
                     .source = "run 17",
                     .term = "weights (bf16)"}};
  c.gaps = {
      {.kind = GapKind::communication_buffers, .stage = -1, .bytes = 1 << 30, .source = "NCCL"}};
  const DecodedConfig decoded = config_from_json(config_to_json(c));
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == c);
  const DecodedConfig text_amount = config_from_json(
      R"({"measurements": [{"point": "after-first-step", "bytes": "141.1GiB", "source": "x"}]})");
  REQUIRE(text_amount.diagnostics.ok());
  CHECK(text_amount.config.measurements.at(0).bytes == 151'504'971'366);
  CHECK(text_amount.config.measurements.at(0).stage == 0);
}

TEST_CASE("Bad measured values in JSON name the item and key") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {R"({"measurements": {}})", "json.measurements"},
      {R"({"measurements": [7]})", "json.measurements[0]"},
      {R"({"measurements": [{"point": "lunch", "bytes": 1, "source": "x"}]})",
       "json.measurements[0].point"},
      {R"({"measurements": [{"point": "term", "bytes": 1, "source": "x"}]})",
       "json.measurements[0].term"},
      {R"({"measurements": [{"point": "term", "term": "a=b", "bytes": 1, "source": "x"}]})",
       "json.measurements[0].term"},
      {R"({"measurements": [{"point": "after-model-init", "bytes": -1, "source": "x"}]})",
       "json.measurements[0].bytes"},
      {R"({"measurements": [{"point": "after-model-init", "bytes": 1.5, "source": "x"}]})",
       "json.measurements[0].bytes"},
      {R"({"measurements": [{"point": "after-model-init", "bytes": "NaN", "source": "x"}]})",
       "json.measurements[0].bytes"},
      {R"({"measurements": [{"point": "after-model-init", "bytes": 1}]})",
       "json.measurements[0].source"},
      {R"({"measurements": [{"point": "after-model-init", "stage": -1, "bytes": 1, "source": "x"}]})",
       "json.measurements[0].stage"},
      {R"({"gaps": [{"kind": "leaks", "bytes": 1, "source": "x"}]})", "json.gaps[0].kind"},
      {R"({"gaps": [{"kind": "runtime-context", "stage": -2, "bytes": 1, "source": "x"}]})",
       "json.gaps[0].stage"},
      {R"({"model": "gpt-9"})", "json.model"},
      {R"({"device": {"preset": "tpu"}})", "json.device.preset"},
      {R"({"custom_model": "h:0"})", "json.custom_model.h"},
      {R"({"hf_config": "llama"})", "json.hf_config"},
      {R"({"hf_config": {"model_type": "llama"}})", "json.hf_config"},
  };
  for (const Case& c : corpus) {
    INFO(c.text);
    const DecodedConfig decoded = config_from_json(c.text);
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors[0].field.starts_with(c.field));
  }
}

TEST_CASE("An inline Hugging Face config becomes the custom model") {
  const auto hf = preset_hf_config("llama-3.1-8b");
  REQUIRE(hf);
  const DecodedConfig decoded = config_from_json(R"({"hf_config": )" + std::string(*hf) + "}");
  INFO((decoded.diagnostics.ok()
            ? ""
            : decoded.diagnostics.errors[0].field + ": " + decoded.diagnostics.errors[0].message));
  REQUIRE(decoded.diagnostics.ok());
  // The same shape as the preset (the name comes from the config's model_type).
  const std::string preset_text = model_to_text(*find_preset("llama-3.1-8b"));
  CHECK(decoded.config.custom_model.substr(decoded.config.custom_model.find(';')) ==
        preset_text.substr(preset_text.find(';')));
  CHECK(!config_from_json(R"({"custom_model": "x", "hf_config": {}})").diagnostics.ok());
}

TEST_CASE("A document over a base configuration changes only what it holds") {
  Config base;
  base.parallel.tensor_parallel = 2;
  const DecodedConfig decoded = config_from_json(R"({"parallel": {"pipeline_parallel": 8}})", base);
  REQUIRE(decoded.diagnostics.ok());
  CHECK(decoded.config.parallel.tensor_parallel == 2);
  CHECK(decoded.config.parallel.pipeline_parallel == 8);
}

TEST_CASE("Bounded JSON: deep nesting, wrong-typed sections and duplicate keys are errors") {
  // The issue's crash: 10,000 levels under an unknown key. One error naming the path and limit.
  std::string deep = "1";
  for (int i = 0; i < 10000; ++i) deep = "{\"a\":" + deep + "}";
  const DecodedConfig nested = config_from_json("{\"x\":" + deep + "}");
  REQUIRE(nested.diagnostics.errors.size() == 1);
  CHECK(nested.diagnostics.errors[0].field.starts_with("json.x.a.a"));
  CHECK(nested.diagnostics.errors[0].message.find("limit of 32 levels") != std::string::npos);

  // A known section that is not an object: an error listing what it holds, not a warning.
  const DecodedConfig wrong = config_from_json(R"({"parallel": []})");
  REQUIRE(wrong.diagnostics.errors.size() == 1);
  CHECK(wrong.diagnostics.errors[0].field == "json.parallel");
  CHECK(wrong.diagnostics.errors[0].message.find("found array: expected an object with keys "
                                                 "tensor_parallel, pipeline_parallel") !=
        std::string::npos);
  CHECK(wrong.diagnostics.warnings.empty());
  CHECK(config_from_json(R"({"training": {"recompute": 3}})").diagnostics.errors.at(0).field ==
        "json.training.recompute");

  // Two model keys: both values named, nothing applied.
  const DecodedConfig twice =
      config_from_json(R"({"model": "llama-3.1-8b", "model": "deepseek-v3"})");
  REQUIRE(twice.diagnostics.errors.size() == 1);
  CHECK(twice.diagnostics.errors[0].field == "json.model");
  CHECK(twice.diagnostics.errors[0].message.find(R"(first "llama-3.1-8b", then "deepseek-v3")") !=
        std::string::npos);
}

TEST_CASE("An unknown key holding an object is one warning - its contents are not read") {
  const DecodedConfig decoded = config_from_json(R"({"future": {"a": {"b": 1}, "c": 2}})");
  CHECK(decoded.diagnostics.ok());
  REQUIRE(decoded.diagnostics.warnings.size() == 1);
  CHECK(decoded.diagnostics.warnings[0].field == "json.future");
}
