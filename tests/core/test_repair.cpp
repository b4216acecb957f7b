// Tests of config/repair.h: each cross-field error's obvious repair (its label says exactly what
// changes), the nearest valid layout of an imported model, DP and the world size deriving each
// other, and -/+ steppers that only land on valid values.
#include <string>

#include "catch.h"
#include "config/config_fields.h"
#include "config/repair.h"
#include "config/url_fragment.h"
#include "model/presets.h"
#include "parallel/layout.h"

using namespace stagemem;

namespace {

Model preset(const std::string& name) {
  const auto model = find_preset(name);
  REQUIRE(model.has_value());
  return *model;
}

Config config_for(const std::string& model) {
  Config c = default_config();
  c.model = model;
  return c;
}

// The repair of the first error of `field`, which must exist.
Repair repair_of(const Config& c, const Model& m, const std::string& field) {
  const Diagnostics d = validate(c, m);
  for (const FieldMessage& e : d.errors) {
    if (e.field != field) continue;
    const auto r = repair_for(c, m, e);
    REQUIRE(r.has_value());
    CHECK(validate(r->config, m).errors.size() < d.errors.size());
    return *r;
  }
  FAIL("no error names " << field);
  return {};
}

const ConfigField& field(const char* key) {
  const ConfigField* f = find_field_by_key(key);
  REQUIRE(f != nullptr);
  return *f;
}

}  // namespace

TEST_CASE("One default configuration: links, JSON and the CLI start from Config{}") {
  CHECK(default_config() == Config{});
  // A link without keys is the defaults; encoding the defaults gives no key.
  CHECK(decode_fragment("v=1").config == default_config());
  CHECK(encode_fragment(default_config()) == "v=1");
  CHECK(default_config().model == "llama-3.1-8b");
  CHECK(default_config().parallel.pipeline_parallel == 4);
  CHECK(default_config().training.sequence_length == 4096);
  CHECK(default_config().optimizer.kind == OptimizerKind::adam);
}

TEST_CASE("TP: the nearest smaller TP that divides what failed, named in the label") {
  // Qwen3-30B-A3B has 32 attention heads and 4 KV heads: TP 8 divides 32 but not 4; TP 4 is the
  // nearest below that divides both (and seq 4096 under sequence parallelism).
  const Model qwen = preset("qwen3-30b-a3b");
  Config c = config_for("qwen3-30b-a3b");
  c.parallel.tensor_parallel = 8;
  c.parallel.sequence_parallel = true;
  const Repair r = repair_of(c, qwen, "parallel.tp");
  CHECK(r.label == "Set TP to 4 (divides 4 KV heads)");
  CHECK(r.change == "TP 8 -> 4 (divides 4 KV heads)");
  CHECK(r.config.parallel.tensor_parallel == 4);
  CHECK(validate(r.config, qwen).ok());

  // Llama 3.1 8B at TP 3: 32 heads, 8 KV heads and the MLP width 14,336 = 2^11 x 7 all fail;
  // TP 2 divides all three.
  Config l = default_config();
  l.parallel.tensor_parallel = 3;
  const Repair lr = repair_of(l, preset("llama-3.1-8b"), "parallel.tp");
  CHECK(lr.label ==
        "Set TP to 2 (divides 32 attention heads, 8 KV heads and the dense MLP width 14,336)");
}

TEST_CASE("World size: DP derived from it; otherwise the nearest multiple of TP x PP x CP") {
  const Model ds = preset("deepseek-v3");
  Config c = config_for("deepseek-v3");
  c.parallel.tensor_parallel = 2;
  c.parallel.sequence_parallel = true;
  c.parallel.pipeline_parallel = 16;
  c.parallel.expert_parallel = 64;
  c.parallel.data_parallel = 2;  // left over from another layout
  c.parallel.world_size = 1024;
  // 1024 = TP 2 x PP 16 x CP 1 x DP 32: the world size decides, DP is derived from it.
  const Repair r = repair_of(c, ds, "parallel.world_size");
  CHECK(r.label == "Set DP to 32 (1,024 GPUs / (TP 2 x PP 16 x CP 1))");
  CHECK(r.config.parallel.data_parallel == 0);
  CHECK(data_parallel_size(r.config.parallel) == 32);
  // Expert DP = TP x CP x DP / (EP x ETP) = 2 x 32 / 64 = 1.
  CHECK(expert_data_parallel_size(r.config.parallel) == 1);
  CHECK(validate(r.config, ds).ok());

  // 1000 GPUs are not a multiple of TP 2 x PP 16 = 32: 992 (DP 31) is nearest, but EP 64 does
  // not divide TP 2 x DP 31 = 62; 1024 (DP 32) holds it.
  Config w = r.config;
  w.parallel.world_size = 1000;
  const Repair wr = repair_of(w, ds, "parallel.world_size");
  CHECK(wr.label ==
        "Set world size to 1,024 (a multiple of TP 2 x PP 16 x CP 1 = 32 whose DP holds EP 64 x "
        "ETP 1)");
  CHECK(validate(wr.config, ds).ok());
  // A dense model takes the nearest multiple: 65 GPUs over TP 1 x PP 4 -> 64.
  Config dense = default_config();
  dense.parallel.world_size = 65;
  CHECK(repair_of(dense, preset("llama-3.1-8b"), "parallel.world_size").label ==
        "Set world size to 64 (a multiple of TP 1 x PP 4 x CP 1 = 4)");
}

TEST_CASE("EP: a typed DP grows to hold the expert groups; else EP divides what it must") {
  const Model ds = preset("deepseek-v3");
  Config c = config_for("deepseek-v3");
  c.parallel.tensor_parallel = 2;
  c.parallel.sequence_parallel = true;
  c.parallel.pipeline_parallel = 16;
  c.parallel.expert_parallel = 64;
  c.parallel.data_parallel = 2;
  // EP 64 x ETP 1 must divide TP 2 x CP 1 x DP: DP 32 is the smallest from 2 up.
  const Repair r = repair_of(c, ds, "parallel.ep");
  CHECK(r.label == "Set DP to 32 (TP x CP x DP = 64 ranks hold EP 64 x ETP 1)");
  CHECK(validate(r.config, ds).ok());

  // EP 48 does not divide 256 routed experts: EP 32 is the largest below that does (DP derived).
  Config e = config_for("deepseek-v3");
  e.parallel.expert_parallel = 48;
  const Repair er = repair_of(e, ds, "parallel.ep");
  CHECK(er.label == "Set EP to 32 (divides 256 routed experts)");

  // With the world size given, DP is fixed (4096 / (TP 2 x PP 16) = 128): EP 512 does not fit
  // TP x CP x DP = 256 and does not divide 256 experts; EP 256 does both.
  Config f = config_for("deepseek-v3");
  f.parallel.tensor_parallel = 2;
  f.parallel.sequence_parallel = true;
  f.parallel.pipeline_parallel = 16;
  f.parallel.world_size = 4096;
  f.parallel.expert_parallel = 512;
  const Repair fr = repair_of(f, ds, "parallel.ep");
  CHECK(fr.label == "Set EP to 256 (divides 256 routed experts and TP x CP x DP / ETP = 256)");
}

TEST_CASE("ETP, PP, VPP and recompute layers: the nearest value the model allows") {
  // Mixtral's expert intermediate size is 14,336 = 2^11 x 7: ETP 3 -> 2.
  Config m = config_for("mixtral-8x7b");
  m.parallel.expert_tensor_parallel = 3;
  CHECK(repair_of(m, preset("mixtral-8x7b"), "parallel.etp").label ==
        "Set ETP to 2 (divides the expert intermediate size 14,336)");
  const Model llama = preset("llama-3.1-8b");
  Config p = default_config();
  p.parallel.pipeline_parallel = 40;  // 32 layers
  CHECK(repair_of(p, llama, "parallel.pp").label == "Set PP to 32 (at most the model's 32 layers)");
  Config v = default_config();
  v.parallel.virtual_stages = 16;  // PP 4 x VPP 16 = 64 > 32 layers: VPP 8
  v.training.global_batch = 1024;
  CHECK(repair_of(v, llama, "parallel.vpp").label ==
        "Set VPP to 8 (PP x VPP within the model's 32 layers)");
  Config r = default_config();
  r.training.recompute.policy = RecomputePolicy::full;
  r.training.recompute.layers = 40;
  CHECK(repair_of(r, llama, "recompute.layers").label ==
        "Set recompute layers to 32 (the model's 32 layers)");
}

TEST_CASE("Batch and sequence: rounded up to what the layout splits them by") {
  const Model llama = preset("llama-3.1-8b");
  Config g = default_config();
  g.parallel.data_parallel = 3;  // 1024 is not a multiple of mbs 1 x DP 3; 1026 = 342 x 3 is
  CHECK(repair_of(g, llama, "training.global_batch").label ==
        "Set gbs to 1,026 (a multiple of mbs 1 x DP 3 = 3)");
  // Interleaved (VPP 2) with PP 4: M = 6 micro-batches is not a multiple of 4; 8 is.
  Config i = default_config();
  i.parallel.virtual_stages = 2;
  i.training.global_batch = 6;
  CHECK(repair_of(i, llama, "training.global_batch").label ==
        "Set gbs to 8 (M = 8 micro-batches, a multiple of PP 4 for the interleaved schedule)");
  // A dense model: sequence parallelism can simply go.
  Config s = default_config();
  s.parallel.tensor_parallel = 8;
  s.parallel.sequence_parallel = true;
  s.training.sequence_length = 4100;
  CHECK(repair_of(s, llama, "training.sequence_length").label == "Turn sequence parallelism off");
  // MoE with TP needs it: the sequence is rounded up to a multiple of TP 4 instead.
  const Model qwen = preset("qwen3-30b-a3b");
  Config q = config_for("qwen3-30b-a3b");
  q.parallel.tensor_parallel = 4;
  q.parallel.sequence_parallel = true;
  q.training.sequence_length = 4098;
  CHECK(repair_of(q, qwen, "training.sequence_length").label ==
        "Set seq to 4,100 (a multiple of TP = 4)");
  q.training.sequence_length = 4096;
  q.parallel.sequence_parallel = false;
  CHECK(repair_of(q, qwen, "parallel.sequence_parallel").label == "Enable sequence parallelism");
}

TEST_CASE("A measured rank on another stage: the stage it is on") {
  // PP 4 over 4 ranks (TP 1, DP 1): rank 3 is on stage 3.
  Config c = default_config();
  c.measurements = {{.point = MeasurementPoint::steady_state_peak,
                     .stage = 0,
                     .bytes = 1 << 30,
                     .source = "log",
                     .rank = 3}};
  CHECK(repair_of(c, preset("llama-3.1-8b"), "measurements[0].stage").label ==
        "Set measurements[0] stage to 3 (rank 3 is on stage 3)");
}

TEST_CASE("The nearest valid layout of a model imported onto another's layout") {
  const Model qwen = preset("qwen3-30b-a3b");
  // A Llama 70B page: TP 8, PP 4, DP 2, sequence parallel.
  Config c = decode_fragment("v=1&model=llama-3.1-70b&tp=8&pp=4&dp=2&sp=1").config;
  c.model = "qwen3-30b-a3b";
  const NearestLayout n = nearest_valid_layout(c, qwen);
  REQUIRE(n.changes.size() == 1);
  CHECK(n.changes[0] == "TP 8 -> 4 (divides 4 KV heads)");
  CHECK(validate(n.config, qwen).ok());
  // Already valid: nothing changes.
  CHECK(nearest_valid_layout(n.config, qwen).changes.empty());
}

TEST_CASE("DP and the world size: the one set last wins") {
  Config c = default_config();
  c.parallel.data_parallel = 2;
  set_integer_field(c, field("world"), 64);
  CHECK(c.parallel.data_parallel == 0);
  CHECK(data_parallel_size(c.parallel) == 16);  // 64 / (TP 1 x PP 4)
  set_integer_field(c, field("dp"), 4);
  CHECK(c.parallel.world_size == 0);
  CHECK(world_size(c.parallel) == 16);
}

TEST_CASE("Steppers land on valid values only") {
  // Llama 3.1 70B: 64 heads, 8 KV heads, MLP width 28,672 = 2^12 x 7: TP 8 -> 4 -> 2 -> 1.
  const Model llama = preset("llama-3.1-70b");
  Config c = config_for("llama-3.1-70b");
  c.parallel.tensor_parallel = 8;
  const ConfigField& tp = field("tp");
  CHECK(step_value(c, llama, tp, -1) == 4);
  c.parallel.tensor_parallel = 4;
  CHECK(step_value(c, llama, tp, -1) == 2);
  CHECK(step_value(c, llama, tp, +1) == 8);
  c.parallel.tensor_parallel = 1;
  CHECK(step_value(c, llama, tp, -1) == 1);  // the end of the range
  // Nothing above TP 8 divides 8 KV heads: "+" stays.
  c.parallel.tensor_parallel = 8;
  CHECK(step_value(c, llama, tp, +1) == 8);
  // The world size steps through multiples of TP x PP x CP = 8 x 4 (DP derived from it): 64 ->
  // 96 (DP 3; gbs 1024 then needs its repair, "Set gbs to 1,026") and 64 -> 32.
  c.parallel.world_size = 64;
  CHECK(step_value(c, llama, field("world"), +1) == 96);
  CHECK(step_value(c, llama, field("world"), -1) == 32);
  // TP 1 -> 2 on an MoE model without sequence parallelism: allowed, its error has a repair.
  const Model qwen = preset("qwen3-30b-a3b");
  Config q = config_for("qwen3-30b-a3b");
  CHECK(step_value(q, qwen, field("tp"), +1) == 2);
  // And Qwen3-30B-A3B's 4 KV heads stop TP at 4: from 4, "+" stays.
  q.parallel.tensor_parallel = 4;
  q.parallel.sequence_parallel = true;
  CHECK(step_value(q, qwen, field("tp"), +1) == 4);
  // EP of DeepSeek-V3 steps through divisors of its 256 experts: 64 -> 128, 64 -> 32.
  const Model ds = preset("deepseek-v3");
  Config d = config_for("deepseek-v3");
  d.parallel.expert_parallel = 64;
  CHECK(step_value(d, ds, field("ep"), +1) == 128);
  CHECK(step_value(d, ds, field("ep"), -1) == 32);
  // A field without cross-field rules steps by one.
  CHECK(step_value(d, ds, field("mbs"), +1) == 2);
}
