// Property sweep of estimate(): random configurations across the documented ranges of the field
// table (config_fields.cpp), each checked with the report oracles (report_oracles.h: no negative
// bytes, peak = sum of its co-live terms, totals agree) and, when valid, with monotonicity:
//   more seq, more mbs, one more layer on a stage  -> never less memory on that stage;
//   more TP, more CP                               -> never more memory per rank on any stage;
//   more PP (same layers per stage, evenly split)  -> never a larger largest peak.
// Native and wasm32 (node) alike. Reproducible: configuration k is drawn from seed S + k; a
// failure prints its seed, its link and the oracle. Environment:
//   STAGEMEM_PROPERTY_SEED     first seed S (default 14)
//   STAGEMEM_PROPERTY_CONFIGS  how many configurations (default: 100000 in an optimised native
//                              build, fewer under the sanitizers and in wasm, see below)
// Replay one: STAGEMEM_PROPERTY_SEED=<its seed> STAGEMEM_PROPERTY_CONFIGS=1.
// Estimates that return an error (an overflow, an invalid layout) are fine: they only must not
// carry stages.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "catch.h"
#include "config/config_fields.h"
#include "config/devices.h"
#include "config/sharding_rules.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "model/presets.h"
#include "render/term_text.h"
#include "report/report.h"
#include "report_oracles.h"

using namespace stagemem;

namespace {

// The default is the full 10^5 sweep where an estimate is fast (an optimised native build: about
// 11 s) and a share of it where the build is slow, so each suite stays within about a minute:
// ASan + UBSan (about 10x slower) and wasm32 (about 6x). STAGEMEM_PROPERTY_CONFIGS=100000 runs
// the full sweep there too.
#if defined(__SANITIZE_ADDRESS__)
#define STAGEMEM_SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define STAGEMEM_SLOW_BUILD 1
#endif
#endif
#if defined(__EMSCRIPTEN__)
constexpr std::uint64_t default_configs = 25000;
#elif defined(STAGEMEM_SLOW_BUILD) || !defined(NDEBUG)
constexpr std::uint64_t default_configs = 5000;
#else
constexpr std::uint64_t default_configs = 100000;
#endif
constexpr std::uint64_t default_seed = 14;

std::uint64_t env_number(const char* name, std::uint64_t fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  return std::strtoull(text, nullptr, 10);
}

// The engine is standard (mt19937_64 gives the same numbers everywhere); the standard
// distributions are not (libstdc++ and Emscripten's libc++ map them differently), so the draws
// below are integer arithmetic on the engine's output: seed S is the same configuration natively
// and under wasm32.
using Random = std::mt19937_64;

std::int64_t uniform(Random& r, std::int64_t low, std::int64_t high) {
  const auto span = static_cast<std::uint64_t>(high - low) + 1;  // ranges here are < 2^62
  return low + static_cast<std::int64_t>(r() % span);
}
// In [0, 1): the top 53 bits of one draw.
double unit(Random& r) {
  return static_cast<double>(r() >> 11) * 0x1.0p-53;
}
bool chance(Random& r, double p) {
  return unit(r) < p;
}
// Log-uniform over [low, high] (low >= 1): a power of two, then a value inside it, so every
// order of magnitude of the range is drawn as often as any other.
std::int64_t log_uniform(Random& r, std::int64_t low, std::int64_t high) {
  int low_bit = 0, high_bit = 0;
  while ((std::int64_t{2} << low_bit) <= low) ++low_bit;
  while (high_bit < 62 && (std::int64_t{2} << high_bit) <= high) ++high_bit;
  const auto bit = static_cast<int>(uniform(r, low_bit, high_bit));
  const std::int64_t first = std::max(low, std::int64_t{1} << bit);
  const std::int64_t last = bit >= 62 ? high : std::min(high, (std::int64_t{2} << bit) - 1);
  return uniform(r, first, last);
}

bool is_parallel_size(std::string_view key) {
  return key == "tp" || key == "pp" || key == "vpp" || key == "cp" || key == "ep" || key == "etp";
}

// One value in the field's documented range, as text (the decoders' path), or "" to leave it.
std::string random_value(const ConfigField& f, Random& r) {
  switch (f.kind) {
    case FieldKind::integer: {
      // Parallel sizes: mostly small powers of two (most random sizes cannot divide a model's
      // heads or layers), sometimes anywhere in the range.
      if (is_parallel_size(f.key) && chance(r, 0.85)) return std::to_string(1 << uniform(r, 0, 4));
      if ((f.key == "dp" || f.key == "world") && chance(r, 0.7)) return "";
      if (f.key == "mbs" && chance(r, 0.7)) return std::to_string(uniform(r, 1, 8));
      // PyTorch's allocator options: almost always values it accepts (validate() and the bad-
      // input corpus test the others), so the sweep's share of valid configurations holds.
      if (f.key == "roundup_power2_divisions" && chance(r, 0.97))
        return std::to_string(std::int64_t{1} << uniform(r, 0, 6));
      if (f.key == "max_split_size_mb" && chance(r, 0.97))
        return chance(r, 0.5) ? "0" : std::to_string(log_uniform(r, 21, f.max));
      if (f.key == "empty_unused_memory_level" && chance(r, 0.95)) return "0";
      if (f.min < 1) {
        if (chance(r, 0.2)) return std::to_string(f.min);
        return std::to_string(log_uniform(r, 1, f.max));
      }
      return std::to_string(log_uniform(r, f.min, f.max));
    }
    case FieldKind::boolean:
      return chance(r, 0.5) ? "1" : "0";
    case FieldKind::choice:
      return std::string(f.choices[static_cast<std::size_t>(
          uniform(r, 0, static_cast<std::int64_t>(f.choices.size()) - 1))]);
    case FieldKind::number: {
      // Biased toward the low end, where real imbalance factors are; the whole range is reached.
      const double u = unit(r);
      const double x = static_cast<double>(f.min) +
                       (static_cast<double>(f.max) - static_cast<double>(f.min)) * u * u * u * u;
      char text[32];
      std::snprintf(text, sizeof text, "%.4f", x);
      return text;
    }
    case FieldKind::name_set: {
      std::string names;
      for (std::string_view c : f.choices)
        if (chance(r, 0.3)) names += (names.empty() ? "" : ",") + std::string(c);
      return names.empty() ? "none" : names;
    }
    case FieldKind::text:
      if (f.key == "model") {
        const auto presets = preset_names();
        return std::string(
            presets[static_cast<std::size_t>(uniform(r, 0, std::ssize(presets) - 1))]);
      }
      if (f.key == "device") {
        const auto devices = device_presets();
        return std::string(
            devices[static_cast<std::size_t>(uniform(r, 0, std::ssize(devices) - 1))].name);
      }
      return "";  // custom model and layout strings: the fuzzer's business
    case FieldKind::integer_list:
      return "";  // explicit stages: made below from a valid report (the layers property)
    case FieldKind::stack: {
      // Releases around every rule's boundary, compile and the architectures.
      static constexpr std::array<std::string_view, 9> pairs = {
          "te=2.17",    "te=2.18.1", "megatron-core=0.12.2", "megatron-core=0.14",
          "fla=0.4.0",  "fla=0.4.2", "compile=on",           "arch=sm80",
          "arch=gfx942"};
      std::string out;
      for (std::size_t i = 0; i < pairs.size(); i += 2) {
        const std::size_t pick = i + static_cast<std::size_t>(uniform(r, 0, 1));
        if (pick < pairs.size() && chance(r, 0.5))
          out += (out.empty() ? "" : ",") + std::string(pairs[pick]);
      }
      return out;
    }
  }
  return "";
}

Config random_config(Random& r) {
  Config config;
  for (const ConfigField& f : config_fields()) {
    // The model always; every other field a third of the time (the rest stay default).
    if (f.key != "model" && !chance(r, 0.33)) continue;
    const std::string value = random_value(f, r);
    if (value.empty()) continue;
    Diagnostics ignored;  // a value inside the documented range always parses
    parse_field_text(f, value, config, ignored, f.key);
  }
  // The sharding fields drawn one by one mostly contradict each other (torchtitan runs FSDP2,
  // Megatron's DDP shards at most the optimizer state): make most of them a runnable pair.
  DataParallelSharding& sharding = config.training.sharding;
  if (chance(r, 0.9)) {
    if (config.training.framework == Framework::torchtitan) {
      sharding.implementation = DataParallelImpl::fsdp2;
    } else if (sharding.implementation == DataParallelImpl::fsdp2) {
      config.training.framework = Framework::torchtitan;
    }
    if (sharding.implementation == DataParallelImpl::fsdp2 ||
        config.training.framework == Framework::torchtitan) {
      sharding.strategy = ShardingStrategy::automatic;
    } else if (sharding.strategy > ShardingStrategy::optim) {
      sharding.implementation = DataParallelImpl::megatron_fsdp;
    }
    sharding.reshard_ranks = 0;
    sharding.shard_group = 0;
    // What the sharded implementations refuse: TE recipes under torchtitan, quantised primary
    // weights and Muon under sharded parameters.
    if (config.training.framework == Framework::torchtitan) {
      config.training.low_precision.recipe = Fp8Recipe::none;
    }
    if (resolve_sharding(config.training, config.optimizer, config.parallel).fsdp()) {
      config.precision.dense_weights = WeightDtype::bf16;
      config.precision.expert_weights = WeightDtype::bf16;
      if (config.optimizer.kind == OptimizerKind::muon ||
          config.optimizer.kind == OptimizerKind::distributed_muon) {
        config.optimizer.kind = OptimizerKind::distributed_adam;
      }
    }
  }
  const std::int64_t gaps = uniform(r, 0, 2);
  for (std::int64_t i = 0; i < gaps; ++i) {
    config.gaps.push_back({.kind = static_cast<GapKind>(uniform(r, 0, 3)),
                           .stage = -1,
                           .bytes = log_uniform(r, 1, max_config_bytes),
                           .source = "property sweep"});
  }
  return config;
}

struct Sweep {
  std::uint64_t configs = 0, valid = 0, estimates = 0, compared = 0;
  // Reports showing a known issue (report_oracles.h), counted and printed, not failures.
  std::uint64_t known_in_flight = 0, known_all_gather = 0;
  std::vector<std::string> violations;

  // Every 64th estimate replays the allocator (its own properties are in
  // test_step_replay.cpp): the sweep's 100,000 configurations would take hours with all.
  const Report& run(const Config& c, Report& into) {
    Diagnostics model_errors;
    const auto model = resolve_model(c, model_errors);
    if (model) {
      EstimateCache cache;
      cache.keep_activations = false;
      cache.replay_allocator = estimates % 64 == 0;
      estimate_into(c, *model, cache, into);
    } else {
      into = estimate(c);
    }
    ++estimates;
    known_in_flight += stagemem_tests::in_flight_exceeds_micro_batches(into);
    return into;
  }
  void violation(std::uint64_t seed, const Config& c, const std::string& what) {
    violations.push_back("seed " + std::to_string(seed) + ": " + what + "\n    link: #" +
                         encode_fragment(c));
  }
};

// Bytes of a stage's co-live terms whose name starts with `prefix` ("" : none).
std::int64_t named_bytes(const StageReport& s, std::string_view prefix) {
  std::int64_t out = 0;
  if (prefix.empty()) return out;
  for (const Term& t : s.terms)
    if (t.counts_in_peak && term_name(t).starts_with(prefix)) out += t.bytes;
  return out;
}

constexpr std::string_view all_gather = "distributed-optimizer parameter all-gather";

// `variant` differs from `base` in one field; `more` says the variant should need at least as
// much on each stage (false: at most as much). Invalid variants are skipped. Terms named
// `discounted` are left out of both sides (a buffer the variant adds by design).
void compare_stages(Sweep& sweep, std::uint64_t seed, const Config& variant, const Report& base,
                    bool more, const std::string& what, std::int64_t only_stage = -1,
                    std::string_view discounted = {}) {
  Report report;
  sweep.run(variant, report);
  if (const std::string broken = stagemem_tests::check_report(report); !broken.empty()) {
    sweep.violation(seed, variant, "oracle (" + what + " variant): " + broken);
    return;
  }
  if (!report.diagnostics.ok() || report.stages.size() != base.stages.size()) return;
  if (stagemem_tests::in_flight_exceeds_micro_batches(base) ||
      stagemem_tests::in_flight_exceeds_micro_batches(report))
    return;  // a known schedule issue (report_oracles.h): its numbers are not comparable
  for (std::size_t s = 0; s < base.stages.size(); ++s) {
    // Known issue (reported): the optimizer's all-gather buffer of the whole un-sharded bf16
    // group appears (or grows by a whole group) as soon as a shard group grows from 1 to 2
    // (DP x CP, or the expert DP that TP and CP raise), and outweighs what the sharding saves.
    // Not compared until that is settled.
    if (!more &&
        named_bytes(report.stages[s], all_gather) > named_bytes(base.stages[s], all_gather)) {
      ++sweep.known_all_gather;
      return;
    }
  }
  ++sweep.compared;
  for (std::size_t s = 0; s < base.stages.size(); ++s) {
    if (only_stage >= 0 && static_cast<std::int64_t>(s) != only_stage) continue;
    const std::int64_t before = base.stages[s].peak_bytes - named_bytes(base.stages[s], discounted);
    const std::int64_t after =
        report.stages[s].peak_bytes - named_bytes(report.stages[s], discounted);
    // With a discount, the variant must also have grown undiscounted: when the binding term
    // changes (base binds on a CP buffer, the variant on the optimizer step), subtracting the
    // base's CP buffer alone would compare unlike peaks.
    const bool grew = after > before && (discounted.empty() ||
                                         report.stages[s].peak_bytes > base.stages[s].peak_bytes);
    if (more ? after < before : grew) {
      sweep.violation(seed, variant,
                      "monotonicity (" + what + "): stage " + std::to_string(s) + " peak " +
                          std::to_string(before) + " -> " + std::to_string(after));
      return;
    }
  }
}

// The largest stage peak without the embedding's stored activations (see the PP property).
std::int64_t max_peak(const Report& r) {
  std::int64_t out = 0;
  for (const auto& s : r.stages) {
    std::int64_t embedding = 0;
    for (const Term& t : s.terms) {
      if (t.family == Family::activation && t.counts_in_peak &&
          term_name(t).starts_with("embedding"))
        embedding += t.bytes;
    }
    out = std::max(out, s.peak_bytes - embedding);
  }
  return out;
}

void check_one(Sweep& sweep, std::uint64_t seed) {
  Random r(seed);
  const Config config = random_config(r);
  ++sweep.configs;
  Report base;
  sweep.run(config, base);
  if (const std::string broken = stagemem_tests::check_report(base); !broken.empty()) {
    sweep.violation(seed, config, "oracle: " + broken);
    return;
  }
  if (!base.diagnostics.ok()) return;
  ++sweep.valid;
  const ConfigField& seq = *find_field_by_key("seq");

  Config more_seq = config;
  more_seq.training.sequence_length =
      std::min(*seq.integer(more_seq) + uniform(r, 1, *seq.integer(more_seq)), seq.max);
  if (more_seq.training.sequence_length > config.training.sequence_length)
    compare_stages(sweep, seed, more_seq, base, true, "more seq");

  Config more_mbs = config;
  more_mbs.training.micro_batch *= 2;
  // Quantised tensors pad their scales per tensor, i.e. per micro-batch: at tiny sequences, twice
  // the mbs with half the micro-batches in flight can pad less. Keep M for them.
  if (config.training.low_precision.quantised()) more_mbs.training.global_batch *= 2;
  compare_stages(sweep, seed, more_mbs, base, true, "more mbs");

  // More TP or CP with the same DP (more GPUs): a derived DP would shrink with them and change
  // the micro-batch count, which is another experiment.
  Config more_tp = config;
  more_tp.parallel.tensor_parallel *= 2;
  more_tp.parallel.data_parallel = base.data_parallel;
  more_tp.parallel.world_size = 0;
  compare_stages(sweep, seed, more_tp, base, false, "more TP");

  Config more_cp = config;
  more_cp.parallel.context_parallel *= 2;
  more_cp.parallel.data_parallel = base.data_parallel;
  more_cp.parallel.world_size = 0;
  // CP adds its own buffers (TE's ring keeps CP - 1 KV buffers and CP per-step outputs, fla's
  // state all-gather grows with CP), by design: what CP must never grow is everything else.
  compare_stages(sweep, seed, more_cp, base, false, "more CP", -1, "context-parallel");

  // One more layer on stage k, taken from the front of stage k + 1 (VPP 1: one chunk a stage).
  if (base.stages.size() >= 2 && config.parallel.virtual_stages == 1) {
    std::vector<std::int64_t> counts;
    for (const auto& s : base.stages) counts.push_back(s.layer_count);
    const auto k = static_cast<std::size_t>(uniform(r, 0, std::ssize(counts) - 2));
    if (counts[k + 1] >= 1) {
      Config same = config;
      same.parallel.assignment = StageAssignment::explicit_list;
      same.parallel.layers_per_stage = counts;
      Report explicit_base;
      sweep.run(same, explicit_base);
      if (explicit_base.diagnostics.ok() && explicit_base.stages.size() == counts.size()) {
        Config moved = same;
        ++moved.parallel.layers_per_stage[k];
        --moved.parallel.layers_per_stage[k + 1];
        compare_stages(sweep, seed, moved, explicit_base, true,
                       "one more layer on stage " + std::to_string(k),
                       static_cast<std::int64_t>(k));
      }
    }
  }

  // More PP: only where both splits are exact (an uneven split can put more layers x micro-
  // batches in flight on the first stage, which is physics, not a bug), with the same DP. What
  // is compared leaves out the embedding's own activations: the first stage keeps one set per
  // micro-batch in flight, and 1F1B keeps PP of them, so they do grow with PP (physics again;
  // the layers' activations, PP in flight x layers / PP, do not).
  Config more_pp = config;
  more_pp.parallel.pipeline_parallel *= 2;
  more_pp.parallel.data_parallel = base.data_parallel;
  more_pp.parallel.world_size = 0;
  std::int64_t layers = 0;
  for (const auto& s : base.stages) layers += s.layer_count;
  // DualPipeV cuts the model into 2 x PP virtual stages: its split is exact when those divide.
  const std::int64_t more_stages =
      more_pp.parallel.pipeline_parallel *
      (config.parallel.schedule == PipelineSchedule::dualpipev ? dualpipev_chunks : 1);
  // Megatron's bf16 first/last layers under a quantised recipe keep more per layer than the
  // others: more PP concentrates them on fewer stages (physics, as the embedding's activations).
  const LowPrecisionCompute& lp = config.training.low_precision;
  const bool bf16_layers = lp.quantised() && lp.bf16_layers_at_start + lp.bf16_layers_at_end > 0;
  // torchtitan's default FSDP policy keeps every unit gathered from forward to backward under
  // PP, not without it, and every unit accumulates unsharded gradients: going from PP 1 to 2
  // changes what the run keeps (its physics).
  // Under PP torch.distributed.pipelining also defers FSDP2's reduce-scatter to the step's end.
  const bool pp_changes_resharding =
      config.training.framework == Framework::torchtitan && config.parallel.pipeline_parallel == 1;
  if (config.parallel.assignment == StageAssignment::even && config.parallel.virtual_stages == 1 &&
      layers % more_stages == 0 && !bf16_layers && !pp_changes_resharding) {
    Report report;
    sweep.run(more_pp, report);
    if (const std::string broken = stagemem_tests::check_report(report); !broken.empty()) {
      sweep.violation(seed, more_pp, "oracle (more PP variant): " + broken);
    } else if (report.diagnostics.ok() && !stagemem_tests::in_flight_exceeds_micro_batches(base) &&
               !stagemem_tests::in_flight_exceeds_micro_batches(report)) {
      ++sweep.compared;
      if (max_peak(report) > max_peak(base)) {
        sweep.violation(seed, more_pp,
                        "monotonicity (more PP): largest peak " + std::to_string(max_peak(base)) +
                            " -> " + std::to_string(max_peak(report)));
      }
    }
  }
}

}  // namespace

TEST_CASE("Property sweep: random configurations keep every oracle and monotonicity") {
  const std::uint64_t first = env_number("STAGEMEM_PROPERTY_SEED", default_seed);
  const std::uint64_t count = env_number("STAGEMEM_PROPERTY_CONFIGS", default_configs);
  Sweep sweep;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t k = 0; k < count; ++k) check_one(sweep, first + k);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "property sweep: %llu configurations (seeds %llu..%llu), %llu valid, %llu estimates, "
      "%llu monotonicity comparisons, %zu violations, %.1f s\n"
      "  known issues (reported, report_oracles.h): %llu reports with more micro-batches in "
      "flight than M, %llu TP/CP "
      "comparisons where the optimizer's all-gather buffer grows\n",
      static_cast<unsigned long long>(sweep.configs), static_cast<unsigned long long>(first),
      static_cast<unsigned long long>(first + count - 1),
      static_cast<unsigned long long>(sweep.valid),
      static_cast<unsigned long long>(sweep.estimates),
      static_cast<unsigned long long>(sweep.compared), sweep.violations.size(), seconds,
      static_cast<unsigned long long>(sweep.known_in_flight),
      static_cast<unsigned long long>(sweep.known_all_gather));
  for (std::size_t i = 0; i < std::min<std::size_t>(sweep.violations.size(), 50); ++i)
    std::printf("  %s\n", sweep.violations[i].c_str());
  CHECK(sweep.configs == count);
  // A sweep where nothing is valid would check nothing: at least a tenth must estimate.
  CHECK(sweep.valid * 10 >= sweep.configs);
  CHECK(sweep.violations.empty());
  // Fixed on main: the interleaved schedule's M rule (config.cpp) refuses those configurations.
  CHECK(sweep.known_in_flight == 0);
}

namespace {

struct Reproducer {
  std::size_t line;
  std::vector<std::string> fields;  // kind, link[, link]
};

std::vector<Reproducer> estimate_reproducers() {
  std::vector<Reproducer> out;
  std::istringstream in(
      stagemem_tests::read_whole_file(stagemem_tests::corpus_path("bad-inputs/estimate.txt")));
  std::string line;
  for (std::size_t n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    Reproducer r{.line = n, .fields = {}};
    for (std::size_t start = 0;;) {
      const auto tab = line.find('\t', start);
      r.fields.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    out.push_back(std::move(r));
  }
  return out;
}

Report estimate_link(const std::string& link) {
  const DecodedFragment decoded = decode_fragment(link);
  REQUIRE(decoded.diagnostics.ok());
  return estimate(decoded.config);
}

}  // namespace

TEST_CASE("Estimate reproducers: fixed findings stay fixed") {
  int checked = 0;
  for (const Reproducer& r : estimate_reproducers()) {
    INFO("tests/bad-inputs/estimate.txt line " << r.line);
    REQUIRE(r.fields.size() >= 2);
    const std::string& kind = r.fields[0];
    if (kind == "no-wrap") {
      const Report report = estimate_link(r.fields[1]);
      CHECK(stagemem_tests::check_report(report) == "");
      ++checked;
    } else if (kind == "in-flight") {
      // Megatron refuses M < PP (and M not a multiple of PP) under VPP: so does validate().
      const Report report = estimate_link(r.fields[1]);
      REQUIRE(!report.diagnostics.ok());
      CHECK(report.diagnostics.errors[0].field == "training.global_batch");
      CHECK_FALSE(stagemem_tests::in_flight_exceeds_micro_batches(report));
      ++checked;
    } else if (kind == "gap-twice") {
      const Report report = estimate_link(r.fields[1]);
      REQUIRE(!report.diagnostics.ok());
      CHECK(report.diagnostics.errors[0].field.starts_with("gaps["));
      CHECK(report.diagnostics.errors[0].message.find("given twice") != std::string::npos);
      ++checked;
    }
  }
  CHECK(checked >= 10);
}

// The known issues of the file, written as the behaviour they should have. [!mayfail]: they are
// reported to the lead and not fixed in this branch; Catch2 shows them failing without failing
// the run, and once they pass the tag (and the exclusions in report_oracles.h and the sweep
// above) can go.
TEST_CASE("Estimate reproducers: known issues (reported, not fixed here)", "[!mayfail]") {
  for (const Reproducer& r : estimate_reproducers()) {
    INFO("tests/bad-inputs/estimate.txt line " << r.line);
    const std::string& kind = r.fields[0];
    if (kind == "all-gather") {
      REQUIRE(r.fields.size() == 3);
      const Report base = estimate_link(r.fields[1]);
      const Report more_cp = estimate_link(r.fields[2]);
      REQUIRE(base.stages.size() == more_cp.stages.size());
      for (std::size_t s = 0; s < base.stages.size(); ++s)
        CHECK(more_cp.stages[s].peak_bytes <= base.stages[s].peak_bytes);
    }
  }
}
