// Tests of url_fragment.h: round trips of every field, only non-default fields, escaping, and a
// corpus of bad links that must each produce an error naming the field.
#include "catch.h"
#include "config/config_fields.h"
#include "config/config_json.h"
#include "config/scaling_points.h"
#include "config/url_fragment.h"
#include "config/version_rules.h"
#include "corpus.h"
#include "measured/snapshot_link.h"
#include "model/model_text.h"
#include "model/presets.h"

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
  c.training.recompute.modules =
      module_bit(RecomputeModule::moe_act) | module_bit(RecomputeModule::mla_up_proj);
  c.training.recompute.method = FullRecomputeMethod::block;
  c.training.recompute.layers = 3;
  c.training.kernels.attention = AttentionKernel::materialized;
  c.training.kernels.kda = KdaBackend::eager;
  c.training.kernels.kda_chunk = 128;
  c.training.kernels.cross_entropy = CrossEntropyKernel::fused_chunked;
  c.training.kernels.cross_entropy_chunk = 2048;
  c.training.kernels.attn_res_live_temporaries = 5;
  c.training.kernels.fla_version = FlaVersion::v0_4_0;
  c.training.kernels.moe_unpermute = MoeUnpermute::legacy_unpermute_with_probs;
  c.training.kernels.router_dtype = RouterDtype::fp32;
  c.training.kernels.cp_comm_type = CpCommType::a2a_p2p;
  c.precision.dense_weights = WeightDtype::fp8_block_scaled;
  c.precision.expert_weights = WeightDtype::mxfp4;
  c.precision.grads = GradDtype::bf16;
  c.optimizer.kind = OptimizerKind::distributed_muon;
  c.optimizer.master_weights = MasterDtype::fp16;
  c.optimizer.moments = MomentDtype::bf16;
  c.optimizer.cast_copy = CastCopy::all;
  c.device.preset = "h200";
  c.device.bytes = 150'000'000'000LL;
  c.optimizer.muon_routers = false;
  c.optimizer.muon_expert_matrices = false;
  c.optimizer.muon_embedding_and_head = true;
  c.optimizer.param_gather = ParamGather::layer_wise_2026_01;
  c.optimizer.muon_tp_mode = MuonTpMode::blockwise;
  c.precision.gradient_accumulation_fusion = false;
  c.training.kernels.gemm_workspaces = GemmWorkspaces::sm80;
  c.training.low_precision.recipe = Fp8Recipe::mxfp8;
  c.training.low_precision.amax_history_len = 1024;
  c.training.low_precision.bf16_layers_at_start = 1;
  c.training.low_precision.bf16_layers_at_end = 2;
  c.training.low_precision.fp8_attention = true;
  c.training.kernels.tp_comm_overlap = true;
  c.training.framework = Framework::torchtitan;
  c.training.sharding = {.implementation = DataParallelImpl::megatron_fsdp,
                         .strategy = ShardingStrategy::optim_grads,
                         .shard_group = 4,
                         .reshard_after_forward = ReshardAfterForward::never,
                         .reshard_ranks = 2,
                         .reduce_dtype = ReduceDtype::bf16,
                         .forward_prefetch = 3,
                         .overlap_grad_reduce = true,
                         .ddp_bucket_size = 50'000'000};
  c.parallel.schedule = PipelineSchedule::dualpipev;
  // Every allocator field changed (expandable segments with emptying is refused by validate(),
  // not by the encoding).
  c.training.allocator = {.expandable_segments = true,
                          .max_split_size_mb = 512,
                          .roundup_power2_divisions = 4,
                          .empty_unused_memory_level = 2,
                          .per_process_memory_fraction = 0.875,
                          .garbage_collection_threshold = 0.6};
  c.training.stack.transformer_engine = release(2, 11);
  c.training.stack.compile = CompileMode::on;
  // The kernel options set above are the user's (the field table's setters mark them so).
  c.training.explicit_kernels = stack_kernel_bit(StackKernel::fla_version) |
                                stack_kernel_bit(StackKernel::moe_unpermute) |
                                stack_kernel_bit(StackKernel::gemm_workspaces);
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
  // Megatron's spelling of the hierarchical CP value keeps its '+' (a fragment is not a query).
  CHECK(text.find("cp_comm_type=a2a+p2p") != std::string::npos);
  CHECK(text.find("schedule=dualpipev") != std::string::npos);
  const DecodedFragment decoded = decode_fragment(text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == c);
}

TEST_CASE("Delimiters inside values are escaped and decoded") {
  Config c;
  c.parallel.layout_string = "a&b=c#d%e f";
  const std::string text = encode_fragment(c);
  // '=' stays readable: a pair splits at its first '='. Older links escaped it; they still decode.
  CHECK(text == "v=1&layout=a%26b=c%23d%25e%20f");
  CHECK(decode_fragment(text).config == c);
  CHECK(decode_fragment("v=1&layout=a%26b%3Dc%23d%25e%20f").config == c);
}

TEST_CASE("Bad links: each entry produces an error naming the field") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {"v=1&tp=0", "url.tp"},
      {"v=1&schedule=dualpipe", "url.schedule"},
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
  CHECK(decoded.diagnostics.errors[0].message ==
        "0 is out of range: expected an integer in [1, 1024]");
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

TEST_CASE("An over-long link keeps the base configuration and names its length and the limit") {
  Config base;
  base.parallel.pipeline_parallel = 4;
  // Good fields followed by padding: 16,385 characters after the '#', one over the limit.
  std::string link = "#v=1&tp=2&pp=8&";
  link += std::string(16385 - (link.size() - 1), 'x');
  const DecodedFragment decoded = decode_fragment(link, base);
  REQUIRE(decoded.diagnostics.errors.size() == 1);
  CHECK(decoded.diagnostics.errors[0].field == "url");
  CHECK(decoded.diagnostics.errors[0].message.find("16385 characters long; the limit is 16384") !=
        std::string::npos);
  CHECK(decoded.config == base);  // nothing of it applied, nothing of base lost
  // Exactly at the limit it is read (the padding is then an unknown-key-less bad pair).
  std::string at_limit = "v=1&tp=2&pp=8&";
  at_limit += std::string(16384 - at_limit.size() - 2, 'x') + "=1";
  CHECK(decode_fragment(at_limit).config.parallel.pipeline_parallel == 8);
}

TEST_CASE("A key given twice in a link is an error naming both values") {
  const DecodedFragment decoded = decode_fragment("#v=1&pp=4&pp=8");
  REQUIRE(decoded.diagnostics.errors.size() == 1);
  CHECK(decoded.diagnostics.errors[0].field == "url.pp");
  CHECK(decoded.diagnostics.errors[0].message.find("first '4', then '8'") != std::string::npos);
  CHECK(!decode_fragment("v=1&model=llama-3.1-8b&model=deepseek-v3").diagnostics.ok());
  CHECK(!decode_fragment("v=1&v=1").diagnostics.ok());
  // measured= and gap= repeat by design.
  CHECK(decode_fragment("v=1&gap=runtime-context=1MiB@a&gap=runtime-context/0=2MiB@b")
            .diagnostics.ok());
}

TEST_CASE("A bad custom model in a link is one error, not a follow-on chain") {
  // The repeat count is out of range; "at least one layer is missing" would be a second error
  // about the same item.
  const DecodedFragment decoded = decode_fragment("v=1&custom=h:4096;v:1000;layers:gd*1000000000");
  REQUIRE(decoded.diagnostics.errors.size() == 1);
  CHECK(decoded.diagnostics.errors[0].field == "url.custom.layers");
  CHECK(decoded.diagnostics.errors[0].message.find("1000000000") != std::string::npos);
}

TEST_CASE("Percent decoding rejects truncated escapes") {
  std::string out;
  CHECK(percent_decode("a%20b", out));
  CHECK(out == "a b");
  CHECK(!percent_decode("a%2", out));
  CHECK(!percent_decode("%", out));
  CHECK(!percent_decode("%g0", out));
}

TEST_CASE("Measured values and gaps travel in the link as readable repeated keys") {
  Config c;
  c.model = "kimi-k3";
  c.parallel.pipeline_parallel = 8;
  c.measurements = {{.point = MeasurementPoint::after_first_step,
                     .stage = 0,
                     .bytes = 151'504'971'366,
                     .source = "torch.cuda.memory_allocated run 17"},
                    {.point = MeasurementPoint::term,
                     .stage = 3,
                     .bytes = 7'100'000'000,
                     .source = "their run",
                     .term = "AttnRes internal"}};
  c.gaps = {
      {.kind = GapKind::runtime_context, .stage = -1, .bytes = 512LL << 20, .source = "nvidia-smi"},
      {.kind = GapKind::allocator_fragmentation,
       .stage = 2,
       .bytes = 3LL << 30,
       .source = "a=b@c"}};
  const std::string text = encode_fragment(c);
  CHECK(text ==
        "v=1&model=kimi-k3&pp=8"
        "&measured=after-first-step/0=141.1GiB@torch.cuda.memory_allocated%20run%2017"
        "&measured=term:AttnRes%20internal/3=7.1GB@their%20run"
        "&gap=runtime-context=512MiB@nvidia-smi&gap=allocator-fragmentation/2=3GiB@a=b@c");
  const DecodedFragment decoded = decode_fragment(text);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == c);
}

TEST_CASE("A link's measured values replace the base's - its fields override the base's") {
  Config base;
  base.parallel.tensor_parallel = 2;
  base.measurements = {{.bytes = 1, .source = "old"}};
  const DecodedFragment decoded =
      decode_fragment("v=1&pp=2&measured=after-model-init/1=2GiB@new", base);
  REQUIRE(decoded.diagnostics.ok());
  CHECK(decoded.config.parallel.tensor_parallel == 2);
  CHECK(decoded.config.parallel.pipeline_parallel == 2);
  REQUIRE(decoded.config.measurements.size() == 1);
  CHECK(decoded.config.measurements[0].source == "new");
  CHECK(decoded.config.measurements[0].stage == 1);
  CHECK(decode_fragment("v=1&tp=4", base).config.measurements == base.measurements);
}

TEST_CASE("Links name unknown presets, devices and bad custom models") {
  CHECK(decode_fragment("v=1&model=gpt-9").diagnostics.errors.at(0).field == "url.model");
  CHECK(decode_fragment("v=1&device=tpu").diagnostics.errors.at(0).field == "url.device");
  const DecodedFragment bad_custom = decode_fragment("v=1&custom=h:0");
  REQUIRE(!bad_custom.diagnostics.ok());
  CHECK(bad_custom.diagnostics.errors[0].field.starts_with("url.custom"));
  // With a custom model, the preset name is not used and not checked.
  CHECK(decode_fragment("v=1&model=gpt-9&custom=" + model_to_text(*find_preset("llama-3.1-8b")))
            .diagnostics.ok());
}

TEST_CASE("Link size budget: presets within 200 characters, custom kimi-k3 within 2,000") {
  for (std::string_view name : preset_names()) {
    INFO(name);
    Config c;
    c.model = std::string(name);
    c.parallel.pipeline_parallel = 8;
    c.parallel.tensor_parallel = 2;
    c.parallel.expert_parallel = 8;
    c.parallel.sequence_parallel = true;
    c.training.sequence_length = 8192;
    c.training.global_batch = 2048;
    c.training.recompute.policy = RecomputePolicy::selective;
    c.optimizer.kind = OptimizerKind::distributed_muon;
    c.device.preset = "h200";
    const std::string link = "https://wiki.example/stagemem/#" + encode_fragment(c);
    CHECK(encode_fragment(c).size() <= 200);
    CHECK(decode_fragment(link).config == c);
  }
  Config custom;
  custom.custom_model = model_to_text(*find_preset("kimi-k3"));
  custom.parallel.pipeline_parallel = 8;
  custom.parallel.expert_parallel = 28;
  custom.parallel.world_size = 224;
  custom.training.sequence_length = 8192;
  custom.training.global_batch = 896;
  custom.device.preset = "h200";
  custom.measurements = {{.point = MeasurementPoint::after_first_step,
                          .bytes = 141LL << 30,
                          .source = "torch.cuda.memory_allocated run 17"}};
  const std::string fragment = encode_fragment(custom);
  INFO(fragment);
  CHECK(fragment.size() <= 2000);
  const DecodedFragment decoded = decode_fragment(fragment);
  CHECK(decoded.diagnostics.ok());
  CHECK(decoded.config == custom);
}

TEST_CASE("Bad measured values and gaps name the item and the part") {
  struct Case {
    const char* text;
    const char* field;
  };
  const Case corpus[] = {
      {"v=1&measured=after-first-step/0=NaNGiB@x", "url.measured[0].bytes"},
      {"v=1&measured=after-first-step/0=-5GiB@x", "url.measured[0].bytes"},
      {"v=1&measured=after-first-step/0=inf@x", "url.measured[0].bytes"},
      {"v=1&measured=after-first-step/0=2000TiB@x", "url.measured[0].bytes"},
      {"v=1&measured=after-first-step/0=1e9@x", "url.measured[0].bytes"},
      {"v=1&measured=after-first-step/0=5GiB@", "url.measured[0].source"},
      {"v=1&measured=after-first-step/0=5GiB", "url.measured[0]"},
      {"v=1&measured=lunchtime/0=5GiB@x", "url.measured[0].point"},
      {"v=1&measured=term/0=5GiB@x", "url.measured[0].point"},
      {"v=1&measured=term:/0=5GiB@x", "url.measured[0].term"},
      {"v=1&measured=after-first-step/99999=5GiB@x", "url.measured[0].stage"},
      {"v=1&gap=leaks=5GiB@x", "url.gap[0].kind"},
      {"v=1&gap=runtime-context=5 XB@x", "url.gap[0].bytes"},
  };
  for (const Case& c : corpus) {
    INFO(c.text);
    const DecodedFragment decoded = decode_fragment(c.text);
    REQUIRE(!decoded.diagnostics.ok());
    CHECK(decoded.diagnostics.errors[0].field == c.field);
  }
}

// The corpus of published version-1 links. A future format version must keep decoding every line
// of tests/links/v1.txt to the same configuration (add tests/links/v2.txt beside it).
TEST_CASE("Every version-1 link of the corpus decodes to its configuration") {
  const auto entries = stagemem_tests::read_corpus("links/v1.txt", "//");
  REQUIRE(entries.size() >= 15);
  for (const auto& entry : entries) {
    INFO("tests/links/v1.txt line " << entry.line << ": " << entry.first);
    const DecodedFragment decoded = decode_fragment(entry.first);
    for (const auto& e : decoded.diagnostics.errors) UNSCOPED_INFO(e.field << ": " << e.message);
    REQUIRE(decoded.diagnostics.ok());
    const DecodedConfig expected = config_from_json(entry.second);
    REQUIRE(expected.diagnostics.ok());
    CHECK(decoded.config == expected.config);
    // Re-encoding (today's spelling) decodes to the same configuration.
    CHECK(decode_fragment(encode_fragment(decoded.config)).config == decoded.config);
  }
}

TEST_CASE("The app's view.* and plan_* keys in a pasted link are skipped without warnings") {
  // A link copied from the app's Sweep or Plan tab carries its view state; the CLI and the core
  // read the configuration only, and say nothing about keys that are the app's own.
  const DecodedFragment d = decode_fragment(
      "#v=1&pp=2&view.tab=sweep&view.x=seq%3A1024%2C2048&plan_tp=1,2&plan_max=64"
      "&plan_sharding=optim,optim_grads_params");
  REQUIRE(d.diagnostics.ok());
  CHECK(d.diagnostics.warnings.empty());
  CHECK(d.config.parallel.pipeline_parallel == 2);
  // Any other unknown key still warns.
  const DecodedFragment other = decode_fragment("#v=1&pp=2&viewtab=sweep");
  REQUIRE(other.diagnostics.warnings.size() == 1);
  CHECK(other.diagnostics.warnings[0].field == "url.viewtab");
}

TEST_CASE(
    "A link with a snapshot's summary: the configuration decodes unchanged, the summary exactly") {
  // The app writes the configuration's fragment, then the snapshot's entries (snapshot_link.h).
  Config config;
  config.model = "llama-3.1-8b";
  config.parallel.pipeline_parallel = 4;
  config.measurements.push_back({.point = MeasurementPoint::after_first_step,
                                 .stage = 1,
                                 .bytes = 40 * (1LL << 30),
                                 .source = "run 3"});
  SnapshotSummary s;
  s.buckets[static_cast<std::size_t>(SnapshotBucket::optimizer_state)].bytes = 6 << 20;
  s.buckets[static_cast<std::size_t>(SnapshotBucket::activations)].bytes = 3 << 19;
  s.buckets[static_cast<std::size_t>(SnapshotBucket::activations)].by_module["mlp"] = 1 << 20;
  s.active_bytes = 15 << 19;
  s.reserved_bytes = 24 << 20;
  s.optimizer_state_seen = true;
  // Field by field: GCC 12 warns (maybe-uninitialized, a false positive) on the aggregate's
  // temporary string members.
  s.peak.found = true;
  s.peak.device = 0;
  s.peak.event = 21;
  s.peak.live_bytes = 15'205'376;
  s.peak.action = "alloc";
  s.peak.size = 4 << 20;
  s.peak.where = "c10d.py:3500 all_gather_into_tensor";
  s.peak_trace_events = 24;
  const std::string link =
      encode_fragment(config) + snapshot_fragment(snapshot_link_entries(s, "run 3.pickle", 1));
  // Readable: the entries are measurement text, escaped only where a fragment needs it.
  CHECK(link.find("&snapshot=after-first-step/1=6MiB@optimizer-state|run%203.pickle") !=
        std::string::npos);
  const DecodedFragment decoded = decode_fragment(link);
  REQUIRE(decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.warnings.empty());  // snapshot= keys are not configuration
  CHECK(decoded.config == config);
  CHECK(encode_fragment(decoded.config) +
            snapshot_fragment(snapshot_link_entries(s, "run 3.pickle", 1)) ==
        link);
  const DecodedSnapshotLink back = decode_snapshot_link("https://x.example/#" + link);
  REQUIRE(back.snapshot);
  CHECK(back.snapshot->file == "run 3.pickle");
  CHECK(back.snapshot->stage == 1);
  CHECK(back.snapshot->summary.buckets[1].bytes == 6 << 20);
  CHECK(back.snapshot->summary.buckets[2].by_module.at("mlp") == 1 << 20);
  CHECK(back.snapshot->summary.peak.live_bytes == 15'205'376);
  CHECK(back.snapshot->summary.peak.where == "c10d.py:3500 all_gather_into_tensor");
  CHECK(back.snapshot->summary.peak_trace_events == 24);
  // Repeated snapshot= keys are not "given twice" errors.
  CHECK(decode_fragment("v=1&snapshot=a&snapshot=b").diagnostics.ok());
}

// ---- A comparison's baseline (base=) ------------------------------------------------------

TEST_CASE("A baseline rides in the link as base= and round-trips") {
  Config baseline;
  baseline.model = "llama-3.1-70b";
  baseline.parallel.tensor_parallel = 8;
  baseline.parallel.pipeline_parallel = 8;
  Config shown = baseline;
  shown.parallel.tensor_parallel = 4;
  // The baseline's own fragment, with '&' as %26 ('=' stays: a pair splits at its first '=').
  CHECK(encode_fragment(baseline) == "v=1&model=llama-3.1-70b&tp=8&pp=8");
  CHECK(encode_baseline(baseline) == "base=v=1%26model=llama-3.1-70b%26tp=8%26pp=8");
  const std::string link = "https://wiki.example/stagemem/#" + encode_fragment(shown) + "&" +
                           encode_baseline(baseline) + "&view.tab=stages";
  // The link's own configuration is B, untouched by the baseline, and base= is no unknown key.
  const DecodedFragment b = decode_fragment(link);
  CHECK(b.diagnostics.ok());
  CHECK(b.diagnostics.warnings.empty());
  CHECK(b.config == shown);
  const DecodedBaseline a = decode_baseline(link);
  CHECK(a.present);
  CHECK(a.diagnostics.ok());
  CHECK(a.diagnostics.warnings.empty());
  REQUIRE(a.config);
  CHECK(*a.config == baseline);
  // A link without one has none, and says nothing.
  const DecodedBaseline none = decode_baseline("#" + encode_fragment(shown));
  CHECK_FALSE(none.present);
  CHECK_FALSE(none.config);
  CHECK(none.diagnostics.ok());
}

TEST_CASE("A baseline with measured values and a custom model round-trips") {
  Config baseline = every_field_changed();
  const std::string link = "#v=1&tp=2&" + encode_baseline(baseline);
  const DecodedBaseline a = decode_baseline(link);
  REQUIRE(a.config);
  CHECK(*a.config == baseline);
  CHECK(decode_fragment(link).config.parallel.tensor_parallel == 2);
}

TEST_CASE("Every old link decodes the same with the baseline key known") {
  // tests/links/v1.txt holds no base=: each has no baseline and decodes as before.
  // (The corpus's one line with base= is the baseline's own test case: it decodes to B.)
  for (const auto& entry : stagemem_tests::read_corpus("links/v1.txt", "//")) {
    INFO("tests/links/v1.txt line " << entry.line << ": " << entry.first);
    const DecodedBaseline a = decode_baseline(entry.first);
    CHECK(a.present == (entry.first.find("&base=") != std::string::npos));
    CHECK(a.diagnostics.ok());
  }
}

TEST_CASE("A bad baseline is an error naming the field inside it") {
  auto first_error = [](std::string_view link) {
    const DecodedBaseline a = decode_baseline(link);
    CHECK(a.present);
    CHECK_FALSE(a.config);  // a half-read baseline is never compared with
    REQUIRE_FALSE(a.diagnostics.errors.empty());
    return a.diagnostics.errors.front();
  };
  const FieldMessage tp = first_error("#v=1&tp=4&base=v=1%26tp=0");
  CHECK(tp.field == "url.base.tp");
  CHECK(tp.message.find("[1, ") != std::string::npos);  // the allowed range
  CHECK(first_error("#v=1&base=v=1%26model=no-such-model").field == "url.base.model");
  CHECK(first_error("#v=1&base=").field == "url.base");
  CHECK(first_error("#v=1&base=").message.find("baseline's own fragment") != std::string::npos);
  CHECK(first_error("#v=1&base=v=1%2").field == "url.base");
  CHECK(first_error("#v=1&base=v=1%26base=v=1").field == "url.base.base");
  CHECK(first_error("#v=1&base=https://x/%23v=1").message.find("'#'") != std::string::npos);
  CHECK(first_error("#v=1&base=v=2").field == "url.base.v");
  // The link's own decoder refuses a second base= like any key given twice.
  const DecodedFragment twice = decode_fragment("#v=1&base=v=1&base=v=1%26tp=2");
  REQUIRE_FALSE(twice.diagnostics.errors.empty());
  CHECK(twice.diagnostics.errors.front().field == "url.base");
}

TEST_CASE("A scaling cross-check's points ride along as scaling= keys and round-trip") {
  // Two points and a stage (config/scaling_points.h) after a configuration with a baseline: the
  // configuration and the baseline decode as without them, the points as they were written.
  ScalingPoints scaling;
  scaling.points = {
      {.axis = ScalingAxis::sequence_length,
       .value = 4096,
       .measured_bytes = 53'687'091'200,
       .source = "max_memory_allocated & run #17 = 50%"},
      {.axis = ScalingAxis::sequence_length, .value = 8192, .measured_bytes = 64'424'509'440}};
  scaling.stage = 1;
  Config config = default_config();
  config.parallel.pipeline_parallel = 2;
  Config baseline = default_config();
  const std::string link =
      "#" + encode_fragment(config) + "&" + encode_baseline(baseline) + scaling_fragment(scaling);
  const DecodedFragment decoded = decode_fragment(link);
  REQUIRE(decoded.diagnostics.ok());
  CHECK(decoded.diagnostics.warnings.empty());
  CHECK(decoded.config == config);
  const DecodedBaseline base = decode_baseline(link);
  REQUIRE(base.config);
  CHECK(*base.config == baseline);
  const DecodedScalingLink points = decode_scaling_link(link);
  REQUIRE(points.diagnostics.ok());
  REQUIRE(points.scaling);
  CHECK(*points.scaling == scaling);
  // Any order of the keys: the points keep theirs.
  const DecodedScalingLink reordered =
      decode_scaling_link("#scaling_stage=1&v=1&" + scaling_fragment(scaling).substr(1) + "&pp=2");
  REQUIRE(reordered.scaling);
  CHECK(*reordered.scaling == scaling);
}
