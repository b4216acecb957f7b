// Tests of config.h: names round-trip and validation names the field with the allowed range.
#include "catch.h"
#include "config/config.h"

using namespace stagemem;

TEST_CASE("Option names round-trip") {
  for (int i = 0; i < weight_dtype_count; ++i) {
    const auto d = static_cast<WeightDtype>(i);
    CHECK(parse_weight_dtype(weight_dtype_name(d)) == d);
  }
  CHECK(parse_optimizer_kind("distributed-muon") == OptimizerKind::distributed_muon);
  CHECK(parse_measurement_point("after-optimizer-init") == MeasurementPoint::after_optimizer_init);
  CHECK(parse_gap_kind("runtime-context") == GapKind::runtime_context);
  CHECK(!parse_optimizer_kind("sgd").has_value());
}

TEST_CASE("Validation names device, measurement and gap fields") {
  Config c;
  c.device.preset = "tpu";
  CHECK(validate(c).errors.at(0).field == "device.preset");
  c = Config{};
  c.device.bytes = -5;
  CHECK(validate(c).errors.at(0).field == "device.bytes");
  c = Config{};
  c.measurements = {{.bytes = 10, .source = ""}};
  CHECK(validate(c).errors.at(0).field == "measurements[0].source");
  c = Config{};
  c.gaps = {{.stage = 9, .bytes = 1, .source = "x"}};
  const Diagnostics d = validate(c);
  CHECK(d.errors.at(0).field == "gaps[0].stage");
  CHECK(d.errors.at(0).message.find("[0, 3]") != std::string::npos);
  CHECK(validate(Config{}).ok());
}

TEST_CASE("A gap of one kind and stage given twice is an error naming both readings") {
  // Found by the property sweep (issue 14): the report shows one reading per kind and stage, so
  // the second of two every-stage runtime-context readings used to vanish without a word.
  Config c;
  c.gaps = {{.kind = GapKind::runtime_context, .stage = -1, .bytes = 512, .source = "a"},
            {.kind = GapKind::runtime_context, .stage = 0, .bytes = 256, .source = "b"},
            {.kind = GapKind::runtime_context, .stage = -1, .bytes = 1024, .source = "c"}};
  const Diagnostics d = validate(c);
  REQUIRE(d.errors.size() == 1);
  CHECK(d.errors[0].field == "gaps[2]");
  CHECK(d.errors[0].message.find("first 512 B (gaps[0]), then 1024 B") != std::string::npos);
  // A stage's own reading next to an every-stage one is the documented override, not a repeat.
  c.gaps.pop_back();
  CHECK(validate(c).ok());
}

TEST_CASE("Interleaved schedule: M must be a positive multiple of PP, as Megatron requires") {
  // forward_backward_pipelining_with_interleaving raises for M < P and for 0 < M % P < P
  // (microbatch_group_size_per_vp_stage defaults to P).
  Config c;
  c.parallel.pipeline_parallel = 4;
  c.parallel.virtual_stages = 2;
  c.training.global_batch = 2;  // M = 2 < PP 4
  Diagnostics d = validate(c);
  REQUIRE(!d.ok());
  CHECK(d.errors[0].field == "training.global_batch");
  CHECK(d.errors[0].message.find("M = gbs / (mbs x DP) = 2 / (1 x 1) = 2") != std::string::npos);
  c.training.global_batch = 6;  // 6 % 4 = 2
  CHECK(!validate(c).ok());
  c.training.global_batch = 8;  // 8 = 2 x PP
  CHECK(validate(c).ok());
  c.parallel.virtual_stages = 1;  // 1F1B takes any M
  c.training.global_batch = 2;
  CHECK(validate(c).ok());
}

TEST_CASE("DualPipeV: M >= 2 x PP (DualPipeV.step asserts it), any M above, fields named") {
  Config c;  // llama-3.1-8b, micro-batch 1, DP 1
  c.parallel.pipeline_parallel = 4;
  c.parallel.schedule = PipelineSchedule::dualpipev;
  c.training.global_batch = 7;  // M = 7 < 2 x PP = 8
  Diagnostics d = validate(c);
  REQUIRE(!d.ok());
  CHECK(d.errors[0].field == "training.global_batch");
  CHECK(d.errors[0].message.find("training.global_batch / (training.micro_batch x "
                                 "parallel.data_parallel) = 7 / (1 x 1) = 7") != std::string::npos);
  CHECK(d.errors[0].message.find("at least 2 x PP = 8") != std::string::npos);
  c.training.global_batch = 8;
  d = validate(c);
  CHECK(d.ok());
  // The zero-bubble weight-gradient retention is a named gap, said on every DualPipeV report.
  REQUIRE(d.warnings.size() == 1);
  CHECK(d.warnings[0].field == "parallel.schedule");
  CHECK(d.warnings[0].message.find("not counted") != std::string::npos);
  c.training.global_batch = 9;  // not a multiple of PP: DualPipeV does not need one
  CHECK(validate(c).ok());
  c.parallel.virtual_stages = 2;  // the same 2 chunks; the interleaved rule does not apply
  CHECK(validate(c).ok());
  c.parallel.virtual_stages = 4;
  d = validate(c);
  REQUIRE(!d.ok());
  CHECK(d.errors[0].field == "parallel.vpp");
  CHECK(d.errors[0].message.find("exactly 2 chunks") != std::string::npos);
}
