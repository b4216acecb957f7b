// Tests of plan.h: the cost factors against hand-worked numbers, the search against a brute force
// over the same space, and every reported configuration against the estimate `check` runs.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "catch.h"
#include "config/config.h"
#include "config/devices.h"
#include "estimate/estimate.h"
#include "model/presets.h"
#include "parallel/pipeline_layout_string.h"
#include "plan/layout_advisor.h"
#include "plan/plan.h"
#include "report/report.h"

using namespace stagemem;

namespace {

Model preset(const char* name) {
  return *find_preset(name);
}

Config base_config(const char* model, const char* device, std::int64_t seq, std::int64_t gbs) {
  Config c;
  c.model = model;
  c.device.preset = device;
  c.training.sequence_length = seq;
  c.training.global_batch = gbs;
  return c;
}

std::vector<std::int64_t> divisors_of(std::int64_t n) {
  std::vector<std::int64_t> out;
  for (std::int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// The same space as PlanSearch, enumerated without any pruning: every point of the cartesian
// product is estimated; the plan's own rules (GPU bounds, whole nodes, TP within a node,
// Megatron's interleaved M % PP, VPP > 1 needs PP > 1) are applied as the filter they are.
std::vector<PlanEntry> brute_force(const Config& base, const Model& model, const PlanBounds& b) {
  std::vector<PlanEntry> out;
  std::int64_t ordinal = 0;
  const std::int64_t device = find_device(base.device.preset)->bytes;
  const std::vector<bool> sp_auto = {false};
  for (std::int64_t tp : b.tp)
    for (std::int64_t pp : b.pp)
      for (std::int64_t vpp : b.vpp)
        for (std::int64_t cp : b.cp)
          for (std::int64_t ep : b.ep)
            for (std::int64_t etp : b.etp)
              for (bool sp_value : b.sp.empty() ? sp_auto : b.sp)
                for (OptimizerKind opt : b.optimizer)
                  for (Fp8Recipe recipe :
                       b.recipe.empty() ? std::vector<Fp8Recipe>{base.training.low_precision.recipe}
                                        : b.recipe)
                    for (std::int64_t dp : divisors_of(base.training.global_batch))
                      for (std::int64_t mbs : b.mbs)
                        for (RecomputePolicy rc : b.recompute) {
                          ++ordinal;
                          const bool sp = b.sp.empty() ? tp > 1 : sp_value;
                          PlanCandidate c{tp, pp, vpp, cp, ep, etp, dp, mbs, rc, sp, opt, recipe};
                          const std::int64_t gpus = tp * pp * cp * dp;
                          if (base.training.global_batch % (mbs * dp) != 0) continue;
                          const std::int64_t m = base.training.global_batch / (mbs * dp);
                          if (gpus < b.min_gpus || (b.max_gpus > 0 && gpus > b.max_gpus)) continue;
                          if (gpus % b.gpus_per_node != 0 && b.gpus_per_node % gpus != 0) continue;
                          if (b.gpus_per_node % tp != 0) continue;
                          if (vpp > 1 && (pp == 1 || m % pp != 0)) continue;
                          const Config config = candidate_config(base, c);
                          const Report r = estimate(config, model);
                          if (!r.diagnostics.ok()) continue;
                          PlanEntry e;
                          e.candidate = c;
                          e.ordinal = ordinal;
                          e.gpus = gpus;
                          e.micro_batches = r.micro_batches;
                          // The figure the check fits (reserved when replayed).
                          std::int64_t fit = 0;
                          for (const StageReport& s : r.stages) {
                            if (s.fit_bytes > fit) {
                              fit = s.fit_bytes;
                              e.binding_stage = s.index;
                              e.peak_bytes = s.peak_bytes;
                            }
                          }
                          e.headroom_bytes = device - fit;
                          e.bubble_fraction = bubble_fraction(pp, vpp, r.micro_batches);
                          e.recompute_overhead = step_flops(config, model).overhead();
                          out.push_back(e);
                        }
  return out;
}

using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t, int, bool, int, int>;
Key key(const PlanCandidate& c) {
  return {c.tp,
          c.pp,
          c.vpp,
          c.cp,
          c.ep,
          c.etp,
          c.dp,
          c.mbs,
          static_cast<int>(c.recompute),
          c.sp,
          static_cast<int>(c.optimizer),
          static_cast<int>(c.recipe)};
}

// The frontier by its definition, written out plainly: per GPU count, the `top` best fitting
// configurations by each factor, ties broken by the other factors, then enumeration order.
std::map<std::int64_t, std::set<std::pair<Key, int>>> brute_frontier(std::vector<PlanEntry> all,
                                                                     std::size_t top) {
  std::map<std::int64_t, std::vector<PlanEntry>> groups;
  for (const PlanEntry& e : all) {
    if (e.headroom_bytes >= 0) groups[e.gpus].push_back(e);
  }
  std::map<std::int64_t, std::set<std::pair<Key, int>>> out;
  for (auto& item : groups) {
    const std::int64_t gpus = item.first;
    std::vector<PlanEntry>& g =
        item.second;  // a plain reference: clang 14 lambdas cannot capture bindings
    std::map<Key, int> ranks;
    const auto pick = [&](auto score, int bit) {
      std::sort(g.begin(), g.end(), [&](const PlanEntry& a, const PlanEntry& b) {
        return std::make_pair(score(a), a.ordinal) < std::make_pair(score(b), b.ordinal);
      });
      for (std::size_t i = 0; i < std::min(top, g.size()); ++i) ranks[key(g[i].candidate)] |= bit;
    };
    pick(
        [](const PlanEntry& e) {
          return std::make_tuple(e.bubble_fraction, e.recompute_overhead, -e.headroom_bytes);
        },
        rank_bubble);
    pick(
        [](const PlanEntry& e) {
          return std::make_tuple(e.recompute_overhead, e.bubble_fraction, -e.headroom_bytes);
        },
        rank_recompute);
    pick(
        [](const PlanEntry& e) {
          return std::make_tuple(-static_cast<double>(e.headroom_bytes), e.bubble_fraction,
                                 e.recompute_overhead);
        },
        rank_headroom);
    for (const auto& [k, bits] : ranks) out[gpus].insert({k, bits});
  }
  return out;
}

std::map<std::int64_t, std::set<std::pair<Key, int>>> frontier_of(const PlanResult& r) {
  std::map<std::int64_t, std::set<std::pair<Key, int>>> out;
  for (const PlanEntry& e : r.frontier) out[e.gpus].insert({key(e.candidate), e.ranks});
  return out;
}

}  // namespace

TEST_CASE("plan: bubble fraction (P-1)/(v M), (P-1)/M for 1F1B") {
  // kimi-k3 production: PP 8, M = 896 / (1 x 28) = 32: 7/32 = 0.21875.
  CHECK(bubble_fraction(8, 1, 32) == Approx(0.21875));
  // Interleaved with v = 2: 7 / (2 x 32) = 0.109375.
  CHECK(bubble_fraction(8, 2, 32) == Approx(0.109375));
  CHECK(bubble_fraction(1, 1, 32) == 0.0);
}

TEST_CASE("plan: recompute overhead from Llama-3.1-8B's shapes") {
  // Per layer, 2-D weights: q, o 4096 x 4096 = 16,777,216 each; k, v 4096 x 1024 = 4,194,304
  // each; gate, up, down 3 x 4096 x 14336 = 176,160,768; sum 218,103,808 -> 436,207,616 FLOPs.
  // Attention core at S 4096: 2 x 32 heads x 128 x 4096 = 33,554,432. Layer: 469,762,048.
  // 32 layers: 15,032,385,536. LM head: 2 x 4096 x 128,256 = 1,050,673,152.
  // F = 16,083,058,688 FLOPs per token.
  const Model model = preset("llama-3.1-8b");
  Config c = base_config("llama-3.1-8b", "h100-80gb", 4096, 64);
  StepFlops f = step_flops(c, model);
  CHECK(f.forward_per_token == Approx(16'083'058'688.0));
  CHECK(f.recomputed_per_token == 0.0);
  CHECK(f.overhead() == 0.0);
  // Full (uniform): every layer again: 15,032,385,536 / (3 x 16,083,058,688) = 0.311556.
  c.training.recompute.policy = RecomputePolicy::full;
  f = step_flops(c, model);
  CHECK(f.recomputed_per_token == Approx(15'032'385'536.0));
  CHECK(f.overhead() == Approx(15'032'385'536.0 / (3.0 * 16'083'058'688.0)));
  // Selective core_attn: only the attention core, 32 x 33,554,432 = 1,073,741,824: 0.022254.
  c.training.recompute.policy = RecomputePolicy::selective;
  f = step_flops(c, model);
  CHECK(f.recomputed_per_token == Approx(1'073'741'824.0));
  CHECK(f.overhead() == Approx(0.0222541).epsilon(1e-4));
  // Full, block method with 2 layers per chunk at PP 4: 4 chunks x 2 layers of 32.
  c.training.recompute.policy = RecomputePolicy::full;
  c.training.recompute.method = FullRecomputeMethod::block;
  c.training.recompute.layers = 2;
  c.parallel.pipeline_parallel = 4;
  f = step_flops(c, model);
  CHECK(f.recomputed_per_token == Approx(8 * 469'762'048.0));
}

TEST_CASE("plan: the minimum and the frontier equal a brute force (Llama-3.1-8B)") {
  const Model model = preset("llama-3.1-8b");
  const Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.tp = {1, 2, 4, 8};
  b.pp = {1, 2, 4, 8};
  b.vpp = {1, 2};
  b.cp = {1};
  b.ep = {1};
  b.etp = {1};
  b.mbs = {1, 2};
  b.recompute = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
  b.optimizer = {OptimizerKind::adam, OptimizerKind::distributed_adam};
  b.max_gpus = 64;
  b.top = 2;
  const PlanResult r = plan(base, model, b);
  REQUIRE(r.diagnostics.ok());
  const std::vector<PlanEntry> all = brute_force(base, model, b);
  // Exhaustive: every valid point estimated; pruned (the default): the same frontier with fewer
  // estimates, the skipped points all ruled out by their resident set.
  b.exhaustive = true;
  const PlanResult every = plan(base, model, b);
  CHECK(every.configurations_valid == static_cast<std::int64_t>(all.size()));
  CHECK(every.configurations_pruned == 0);
  CHECK(frontier_of(every) == frontier_of(r));
  CHECK(r.configurations_pruned > 0);
  CHECK(r.configurations_estimated + r.configurations_pruned == every.configurations_estimated);
  std::int64_t fitting = 0;
  for (const PlanEntry& e : all) fitting += e.headroom_bytes >= 0;
  CHECK(r.configurations_fitting == fitting);
  CHECK(every.configurations_fitting == fitting);
  REQUIRE(fitting > 0);
  REQUIRE(fitting < static_cast<std::int64_t>(all.size()));  // the space has both kinds
  CHECK(frontier_of(r) == brute_frontier(all, 2));
  // The minimum: the smallest fitting GPU count, least bubble first.
  std::int64_t fewest = 1 << 30;
  for (const PlanEntry& e : all) {
    if (e.headroom_bytes >= 0) fewest = std::min(fewest, e.gpus);
  }
  REQUIRE(r.has_minimum);
  CHECK(r.minimum.gpus == fewest);
  const auto at_minimum = brute_frontier(all, 1).at(fewest);
  bool found = false;
  for (const auto& [k, bits] : at_minimum)
    found |= k == key(r.minimum.candidate) && (bits & rank_bubble);
  CHECK(found);
}

TEST_CASE("plan: a MoE space with EP, SP and interleaving equals a brute force") {
  // Qwen3-30B-A3B: 48 layers, 128 experts; SP is required with TP > 1 (auto on).
  const Model model = preset("qwen3-30b-a3b");
  const Config base = base_config("qwen3-30b-a3b", "h100-80gb", 4096, 16);
  PlanBounds b;
  b.tp = {1, 2, 4};
  b.pp = {1, 2, 4};
  b.vpp = {1, 2};
  b.cp = {1};
  b.ep = {1, 2, 4, 8};
  b.etp = {1};
  b.mbs = {1, 2};
  b.recompute = {RecomputePolicy::none, RecomputePolicy::full};
  b.optimizer = {OptimizerKind::distributed_adam};
  b.max_gpus = 64;
  b.top = 1;
  const PlanResult r = plan(base, model, b);
  REQUIRE(r.diagnostics.ok());
  const std::vector<PlanEntry> all = brute_force(base, model, b);
  CHECK(frontier_of(r) == brute_frontier(all, 1));
  b.exhaustive = true;
  const PlanResult every = plan(base, model, b);
  CHECK(every.configurations_valid == static_cast<std::int64_t>(all.size()));
  CHECK(frontier_of(every) == brute_frontier(all, 1));
}

TEST_CASE("plan: the quantised-recipe axis equals a brute force; none is the bf16 twin") {
  // Llama-3.1-8B with fp8 primary weights: the recipe axis searches bf16 (the twin: bf16
  // weights), per-tensor and block scaling, each with the recipe's primary-weight format.
  const Model model = preset("llama-3.1-8b");
  Config base = base_config("llama-3.1-8b", "h100-80gb", 8192, 32);
  base.precision.dense_weights = WeightDtype::fp8_tensor_scaled;
  base.training.low_precision.recipe = Fp8Recipe::tensor;
  PlanBounds b;
  b.tp = {1, 2};
  b.pp = {1, 2, 4};
  b.vpp = {1};
  b.cp = {1};
  b.ep = {1};
  b.etp = {1};
  b.mbs = {1, 2};
  b.recompute = {RecomputePolicy::none, RecomputePolicy::full};
  b.recipe = {Fp8Recipe::none, Fp8Recipe::tensor, Fp8Recipe::block};
  b.optimizer = {OptimizerKind::adam};
  b.max_gpus = 32;
  b.top = 2;
  const PlanResult r = plan(base, model, b);
  REQUIRE(r.diagnostics.ok());
  const std::vector<PlanEntry> all = brute_force(base, model, b);
  PlanBounds every = b;
  every.exhaustive = true;
  CHECK(plan(base, model, every).configurations_valid == static_cast<std::int64_t>(all.size()));
  CHECK(frontier_of(r) == brute_frontier(all, 2));
  // The candidates' configurations: none stores bf16 weights; block its own primary format.
  PlanCandidate c;
  c.recipe = Fp8Recipe::none;
  CHECK(candidate_config(base, c).precision.dense_weights == WeightDtype::bf16);
  c.recipe = Fp8Recipe::block;
  CHECK(candidate_config(base, c).precision.dense_weights == WeightDtype::fp8_block_scaled);
  CHECK(megatron_arguments(candidate_config(base, c), model).find("--fp8-recipe blockwise") !=
        std::string::npos);
}

TEST_CASE("plan: a search split over shards merges into the same result") {
  const Model model = preset("llama-3.1-8b");
  const Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.pp = {1, 2, 4};
  b.mbs = {1, 2};
  b.max_gpus = 64;
  const PlanResult whole = plan(base, model, b);
  std::vector<PlanEntry> merged;
  std::int64_t searched = 0;
  for (std::int64_t shard = 0; shard < 3; ++shard) {
    PlanSearch s(base, model, b, shard, 3);
    while (s.step(7)) {  // small slices, as the browser runs it
      CHECK(s.progress() <= 1.0);
    }
    merged.insert(merged.end(), s.entries().begin(), s.entries().end());
    searched += s.searched();
  }
  // plan() confirms the entries it shows with the allocator replay: so does the merged one.
  const PlanResult split = select_confirmed_plan(merged, b.top, base, model);
  CHECK(searched == whole.configurations_searched);
  CHECK(frontier_of(split) == frontier_of(whole));
  CHECK(split.minimum.ordinal == whole.minimum.ordinal);
}

TEST_CASE("plan: confirming one entry per step (as the browser does) equals the one-call result") {
  const Model model = preset("llama-3.1-8b");
  const Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.pp = {1, 2, 4};
  b.mbs = {1, 2};
  b.max_gpus = 32;
  PlanSearch search(base, model, b);
  while (search.step(1 << 20)) {
  }
  const PlanResult whole = select_confirmed_plan(search.entries(), b.top, base, model);
  PlanConfirmation stepwise(search.entries(), b.top, base, model);
  std::int64_t steps = 0;
  while (stepwise.step(1)) ++steps;
  CHECK(stepwise.done());
  const PlanResult split = stepwise.result();
  // One estimate per step: every step but the last confirmed exactly one entry.
  CHECK(stepwise.confirmed() >= steps);
  CHECK(stepwise.confirmed() <= steps + 1);
  CHECK(frontier_of(split) == frontier_of(whole));
  REQUIRE(split.has_minimum);
  CHECK(split.minimum.ordinal == whole.minimum.ordinal);
  // Every entry shown was replayed: its headroom is against the reserved figure (no device rows
  // are measured here), never the search's allocated peak.
  CHECK(split.minimum.fit_basis == FitBasis::reserved);
  for (const PlanEntry& e : split.frontier) {
    CHECK(e.fit_basis == FitBasis::reserved);
    CHECK(e.fit_bytes >= e.peak_bytes);
  }
  // In pieces of a confirmation (as the Plan tab runs them between frames): the same selection,
  // each entry's figures the same; one tensor per piece spreads each confirmation over several
  // calls (these small layouts replay fewer than 4096 tensors each: one call per confirmation).
  for (const std::int64_t piece : {1, 4096}) {
    PlanConfirmation pieces(search.entries(), b.top, base, model);
    std::int64_t calls = 0;
    while (pieces.advance(piece)) ++calls;
    CHECK(pieces.done());
    CHECK(pieces.confirmed() == stepwise.confirmed());
    if (piece == 1) CHECK(calls > 2 * pieces.confirmed());
    if (piece == 4096) CHECK(calls >= pieces.confirmed());
    const PlanResult r = pieces.result();
    CHECK(frontier_of(r) == frontier_of(whole));
    REQUIRE(r.has_minimum);
    CHECK(r.minimum.ordinal == whole.minimum.ordinal);
    CHECK(r.minimum.fit_bytes == whole.minimum.fit_bytes);
    CHECK(r.minimum.headroom_bytes == whole.minimum.headroom_bytes);
    REQUIRE(r.frontier.size() == whole.frontier.size());
    for (std::size_t i = 0; i < r.frontier.size(); ++i) {
      CHECK(r.frontier[i].fit_bytes == whole.frontier[i].fit_bytes);
      CHECK(r.frontier[i].fit_basis == whole.frontier[i].fit_basis);
    }
  }
  // A budget of no confirmation leaves the search's selection, on allocated.
  PlanConfirmation none(search.entries(), b.top, base, model, 0);
  CHECK_FALSE(none.step(1));
  CHECK(none.confirmed() == 0);
  CHECK(none.result().minimum.fit_basis == FitBasis::allocated);
}

TEST_CASE(
    "plan: every reported configuration fits by the estimate `check` runs, every rejected "
    "one does not") {
  const Model model = preset("qwen3-30b-a3b");
  const Config base = base_config("qwen3-30b-a3b", "h100-80gb", 4096, 16);
  PlanBounds b;
  b.tp = {1, 2};
  b.pp = {1, 2, 4};
  b.ep = {1, 8};
  b.mbs = {1};
  b.max_gpus = 32;
  PlanSearch search(base, model, b);
  while (search.step(1000)) {
  }
  const std::int64_t device = find_device("h100-80gb")->bytes;
  std::int64_t fits = 0, not_fits = 0;
  for (const PlanEntry& e : search.entries()) {
    const Report r = estimate(candidate_config(base, e.candidate), model);
    REQUIRE(r.diagnostics.ok());
    bool all_fit = true;
    for (const StageReport& s : r.stages) all_fit &= s.peak_bytes <= device;
    CHECK(all_fit == e.fits());
    (e.fits() ? fits : not_fits) += 1;
  }
  CHECK(fits > 0);
  CHECK(not_fits > 0);
}

TEST_CASE("plan: bad bounds name the field and the allowed range") {
  const Model model = preset("llama-3.1-8b");
  Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.gpus_per_node = 0;
  PlanResult r = plan(base, model, b);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "plan.gpus_per_node");
  CHECK(r.diagnostics.errors[0].message.find("[1, 1024]") != std::string::npos);
  b = {};
  b.pp = {0};
  r = plan(base, model, b);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "parallel.pp");
  b = {};
  base.device.preset.clear();
  r = plan(base, model, b);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "device");
}

TEST_CASE("plan: nothing fits on a tiny device") {
  const Model model = preset("llama-3.1-8b");
  Config base = base_config("llama-3.1-8b", "", 4096, 32);
  base.device.bytes = 1 << 30;  // 1 GiB
  PlanBounds b;
  b.max_gpus = 16;
  const PlanResult r = plan(base, model, b);
  REQUIRE(r.diagnostics.ok());
  CHECK(!r.has_minimum);
  CHECK(r.frontier.empty());
  CHECK(r.configurations_valid > 0);
}

TEST_CASE("plan: Megatron arguments") {
  const Model model = preset("kimi-k3");
  Config c = base_config("kimi-k3", "mi355x", 8192, 896);
  c = candidate_config(c, {.tp = 1,
                           .pp = 8,
                           .vpp = 1,
                           .ep = 28,
                           .dp = 28,
                           .mbs = 1,
                           .recompute = RecomputePolicy::full,
                           .optimizer = OptimizerKind::distributed_muon});
  // 93 layers over 8 stages do not divide: the even split is written as a layout string.
  const std::string args = megatron_arguments(c, model);
  CHECK(args.find("--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8 "
                  "--pipeline-model-parallel-layout \"Et*12|(t*12|)*4(t*11|)*2t*11L\"") == 0);
  CHECK(args.find("--expert-model-parallel-size 28") != std::string::npos);
  CHECK(args.find("--recompute-granularity full --recompute-method uniform "
                  "--recompute-num-layers 1") != std::string::npos);
  CHECK(args.find("--use-distributed-optimizer") != std::string::npos);
  // Llama-3.1-8B, 32 layers at PP 4 x VPP 2: 4 layers per virtual stage.
  Config l = candidate_config(base_config("llama-3.1-8b", "h100-80gb", 4096, 32),
                              {.tp = 2, .pp = 4, .vpp = 2, .dp = 1, .sp = true});
  const std::string la = megatron_arguments(l, preset("llama-3.1-8b"));
  CHECK(la.find("--num-layers-per-virtual-pipeline-stage 4") != std::string::npos);
  CHECK(la.find("--sequence-parallel") != std::string::npos);
}

TEST_CASE("layout text: compact and read back unchanged by the layout parser") {
  // DeepSeek-V3-like: 61 layers as "Et*3|(tt|)*29,m|L" reads back to the same entries.
  std::vector<LayoutStageEntry> stages(32);
  stages[0] = {.embedding = 1, .decoder = 3};
  for (int i = 1; i < 30; ++i) stages[static_cast<std::size_t>(i)].decoder = 2;
  stages[30].mtp = 1;
  stages[31].loss = 1;
  const std::string text = pipeline_layout_text(stages);
  CHECK(text == "Et*3|(t*2|)*29m|L");
  Diagnostics d;
  const auto parsed = parse_pipeline_layout_string(text, d);
  REQUIRE(parsed);
  CHECK(parsed->stages == stages);
  // Property: random counts round-trip.
  std::uint64_t state = 12345;
  for (int round = 0; round < 200; ++round) {
    std::vector<LayoutStageEntry> random(1 + (round % 17));
    for (auto& e : random) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      e.decoder = 1 + static_cast<std::int64_t>((state >> 33) % 3);
    }
    random.front().embedding = 1;
    random.back().loss = 1;
    Diagnostics rd;
    const auto back = parse_pipeline_layout_string(pipeline_layout_text(random), rd);
    REQUIRE(back);
    CHECK(back->stages == random);
  }
}

TEST_CASE("layout advisor: never worse than the even split, and Megatron accepts it") {
  // DeepSeek-V3 at PP 16: 3 dense layers first, 1F1B holds 16 - p micro-batches on stage p, so
  // the even split overloads the early stages; the advice moves layers towards the end.
  const Model model = preset("deepseek-v3");
  Config c = base_config("deepseek-v3", "h100-80gb", 4096, 15360);
  c.parallel.pipeline_parallel = 16;
  c.parallel.expert_parallel = 64;
  c.parallel.data_parallel = 128;
  c.training.recompute.policy = RecomputePolicy::selective;
  c.optimizer.kind = OptimizerKind::distributed_adam;
  const LayoutAdvice a = advise_layout(c, model);
  REQUIRE(a.diagnostics.ok());
  CHECK(a.worst_peak <= a.even_worst_peak);
  CHECK(a.gain_bytes == a.even_worst_peak - a.worst_peak);
  CHECK(a.gain_bytes > 0);
  // The advised string is a valid layout for the same configuration, with the same peaks.
  Config advised = c;
  advised.parallel.assignment = StageAssignment::layout_string;
  advised.parallel.layout_string = a.layout;
  const Report r = estimate(advised, model);
  REQUIRE(r.diagnostics.ok());
  std::int64_t worst = 0;
  for (const StageReport& s : r.stages) worst = std::max(worst, s.peak_bytes);
  CHECK(worst == a.worst_peak);
  // Whole AttnRes blocks only: every boundary at a block multiple (kimi-k3, blocks of 12).
  const Model kimi = preset("kimi-k3");
  Config k = base_config("kimi-k3", "mi355x", 8192, 896);
  k.parallel.pipeline_parallel = 4;
  k.parallel.expert_parallel = 28;
  k.parallel.data_parallel = 28;
  k.training.recompute.policy = RecomputePolicy::full;
  k.optimizer.kind = OptimizerKind::distributed_muon;
  AdvisorOptions aligned;
  aligned.align_attn_res = true;
  const LayoutAdvice ka = advise_layout(k, kimi, aligned);
  REQUIRE(ka.diagnostics.ok());
  CHECK(ka.attn_res_blocks_split == 0);
}

TEST_CASE(
    "plan: with M >= 2 x PP no stage's peak falls as the micro-batch grows (the pruning "
    "rule)") {
  for (const char* name : {"llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k3"}) {
    const Model model = preset(name);
    for (RecomputePolicy rc :
         {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
      for (std::int64_t vpp : {1, 2}) {
        // gbs 1024, DP 8: M = 128 / mbs >= 2 x PP for every mbs below.
        const Config base = base_config(name, "h200", 4096, 1024);
        std::vector<std::int64_t> previous;
        for (std::int64_t mbs : {1, 2, 4, 8}) {
          const Config c = candidate_config(
              base, {.tp = 1, .pp = 8, .vpp = vpp, .ep = 8, .dp = 8, .mbs = mbs, .recompute = rc});
          const Report r = estimate(c, model);
          REQUIRE(r.diagnostics.ok());
          std::vector<std::int64_t> peaks;
          for (const StageReport& s : r.stages) peaks.push_back(s.peak_bytes);
          for (std::size_t i = 0; i < previous.size(); ++i) {
            INFO(name << " recompute " << static_cast<int>(rc) << " vpp " << vpp << " mbs " << mbs
                      << " stage " << i);
            CHECK(peaks[i] >= previous[i]);
          }
          previous = peaks;
        }
      }
    }
  }
}

TEST_CASE("plan: the resident set never grows with DP (the pruning rule)") {
  for (const char* name : {"llama-3.1-8b", "qwen3-30b-a3b", "deepseek-v3", "kimi-k3"}) {
    const Model model = preset(name);
    for (OptimizerKind opt : {OptimizerKind::adam, OptimizerKind::distributed_adam,
                              OptimizerKind::muon, OptimizerKind::distributed_muon}) {
      Config base = base_config(name, "h200", 4096, 1024);
      std::vector<std::int64_t> previous;
      for (std::int64_t dp : {8, 16, 32, 64, 128}) {
        const Config c = candidate_config(
            base, {.tp = 1, .pp = 4, .ep = 8, .dp = dp, .mbs = 1, .optimizer = opt});
        const Report r = estimate(c, model);
        REQUIRE(r.diagnostics.ok());
        std::vector<std::int64_t> resident;
        for (const StageReport& s : r.stages) resident.push_back(s.resident_bytes + s.gap_bytes);
        for (std::size_t i = 0; i < previous.size(); ++i) {
          INFO(name << " optimizer " << static_cast<int>(opt) << " dp " << dp << " stage " << i);
          CHECK(resident[i] <= previous[i]);
        }
        previous = resident;
      }
    }
  }
}

TEST_CASE("plan: the resident set does not depend on micro-batch or recompute (the pruning rule)") {
  // The exact pruning of PlanBounds::exhaustive rests on this; if the physics ever changes, this
  // test names the configuration that breaks it.
  for (const char* name : {"llama-3.1-8b", "qwen3-30b-a3b", "kimi-k3"}) {
    const Model model = preset(name);
    Config base = base_config(name, "h200", 4096, 64);
    base.optimizer.kind = OptimizerKind::distributed_muon;
    for (std::int64_t pp : {2, 4}) {
      std::vector<std::int64_t> first;
      for (std::int64_t mbs : {1, 2}) {
        for (RecomputePolicy rc :
             {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full}) {
          const Config c = candidate_config(base, {.tp = 1,
                                                   .pp = pp,
                                                   .ep = 8,
                                                   .dp = 8,
                                                   .mbs = mbs,
                                                   .recompute = rc,
                                                   .optimizer = OptimizerKind::distributed_muon});
          const Report r = estimate(c, model);
          if (!r.diagnostics.ok()) continue;
          std::vector<std::int64_t> resident;
          for (const StageReport& s : r.stages) resident.push_back(s.resident_bytes + s.gap_bytes);
          if (first.empty()) first = resident;
          INFO(name << " pp " << pp << " mbs " << mbs << " recompute " << static_cast<int>(rc));
          CHECK(resident == first);
        }
      }
    }
  }
}

TEST_CASE("plan and the layout advisor say they do not search DualPipeV (parallel.schedule)") {
  // Both search Megatron-core's placement (stage i on rank i % PP); DualPipeV's V is estimated
  // by `report` only.
  const Model model = preset("llama-3.1-8b");
  Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  base.parallel.schedule = PipelineSchedule::dualpipev;
  const PlanResult r = plan(base, model, PlanBounds{});
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "parallel.schedule");
  CHECK(r.diagnostics.errors[0].message.find("1f1b only") != std::string::npos);
  base.parallel.pipeline_parallel = 2;
  const LayoutAdvice a = advise_layout(base, model);
  REQUIRE(!a.diagnostics.ok());
  CHECK(a.diagnostics.errors[0].field == "parallel.schedule");
}

TEST_CASE("plan: a safety margin's text - an amount or a share of the capacity") {
  Diagnostics d;
  // The published 80 % rule: keep 20 % free.
  CHECK(*parse_plan_margin("20%", "m", d) == PlanMargin{.bytes = 0, .percent_hundredths = 2000});
  CHECK(*parse_plan_margin(" 12.5 % ", "m", d) ==
        PlanMargin{.bytes = 0, .percent_hundredths = 1250});
  CHECK(*parse_plan_margin("8GiB", "m", d) ==
        PlanMargin{.bytes = 8LL << 30, .percent_hundredths = 0});
  CHECK(*parse_plan_margin("8 GiB", "m", d) ==
        PlanMargin{.bytes = 8LL << 30, .percent_hundredths = 0});
  CHECK(*parse_plan_margin("", "m", d) == PlanMargin{});
  REQUIRE(d.ok());
  CHECK(plan_margin_text({.bytes = 0, .percent_hundredths = 2000}) == "20%");
  CHECK(plan_margin_text({.bytes = 0, .percent_hundredths = 1250}) == "12.5%");
  CHECK(plan_margin_text({.bytes = 0, .percent_hundredths = 1205}) == "12.05%");
  CHECK(plan_margin_text({.bytes = 8LL << 30, .percent_hundredths = 0}) == "8GiB");
  CHECK(plan_margin_text({}) == "0");
  for (const char* bad : {"100%", "20.125%", "-5%", "8 parsecs", "%", "1e3%", "twenty%"}) {
    Diagnostics e;
    CHECK_FALSE(parse_plan_margin(bad, "--margin", e).has_value());
    REQUIRE(e.errors.size() == 1);
    CHECK(e.errors[0].field == "--margin");
    CHECK(e.errors[0].message.find("percentage of the capacity in [0, 99.99]") !=
          std::string::npos);
  }
  // H100 80GB: 81,089 MiB = 85,027,979,264 B. 20 % of it is 17,005,595,852.8 B, rounded up to
  // 17,005,595,853 B so that peak <= capacity - margin exactly when peak <= 0.8 x capacity
  // (0.8 x 85,027,979,264 = 68,022,383,411.2; the largest whole peak is 68,022,383,411).
  const std::int64_t h100 = find_device("h100-80gb")->bytes;
  REQUIRE(h100 == 85'027'979'264);
  CHECK(plan_margin_bytes({.bytes = 0, .percent_hundredths = 2000}, h100) == 17'005'595'853);
  CHECK(h100 - plan_margin_bytes({.bytes = 0, .percent_hundredths = 2000}, h100) == 68'022'383'411);
  CHECK(plan_margin_bytes({.bytes = 8LL << 30, .percent_hundredths = 0}, h100) == 8LL << 30);
  // No overflow at the largest capacity a configuration allows (2^50 B) and 99.99 %.
  CHECK(plan_margin_bytes({.bytes = 0, .percent_hundredths = 9999}, max_config_bytes) ==
        (max_config_bytes / 10000) * 9999 + ((max_config_bytes % 10000) * 9999 + 9999) / 10000);
}

TEST_CASE("plan: with a margin, fits means peak <= capacity - margin (equals a brute force)") {
  const Model model = preset("llama-3.1-8b");
  const Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.tp = {1, 2, 4, 8};
  b.pp = {1, 2, 4};
  b.vpp = {1};
  b.cp = {1};
  b.ep = {1};
  b.etp = {1};
  b.mbs = {1, 2};
  b.recompute = {RecomputePolicy::none, RecomputePolicy::selective, RecomputePolicy::full};
  b.optimizer = {OptimizerKind::adam};
  b.max_gpus = 32;
  b.top = 2;
  const std::vector<PlanEntry> all = brute_force(base, model, b);
  const std::int64_t device = find_device("h100-80gb")->bytes;
  for (const PlanMargin margin :
       {PlanMargin{.bytes = 0, .percent_hundredths = 2000}, PlanMargin{.bytes = 8LL << 30}}) {
    b.margin = margin;
    const PlanResult r = plan(base, model, b);
    REQUIRE(r.diagnostics.ok());
    const std::int64_t kept = plan_margin_bytes(margin, device);
    CHECK(r.margin_bytes == kept);
    // The brute force with the margin taken off every headroom: same fitting count, same
    // frontier (the headroom ranking is unchanged by a constant).
    std::vector<PlanEntry> shifted = all;
    std::int64_t fitting = 0, fitting_without = 0;
    for (PlanEntry& e : shifted) {
      fitting += e.peak_bytes <= device - kept;
      fitting_without += e.headroom_bytes >= 0;
      e.headroom_bytes -= kept;
    }
    CHECK(r.configurations_fitting == fitting);
    REQUIRE(fitting > 0);
    CHECK(fitting < fitting_without);  // the margin rules some configurations out
    // plan() then replays the allocator for the entries it shows (fit against reserved) and
    // drops those that no longer fit: the same confirmation over the brute force's entries.
    std::vector<PlanEntry> with_margin = all;
    for (PlanEntry& e : with_margin) e.margin_bytes = kept;
    CHECK(frontier_of(r) == frontier_of(select_confirmed_plan(with_margin, 2, base, model)));
    CHECK(frontier_of(select_plan(with_margin, 2)) == brute_frontier(shifted, 2));
    for (const PlanEntry& e : r.frontier) {
      CHECK(e.margin_bytes == kept);
      CHECK(e.peak_bytes <= device - kept);
      CHECK(e.spare_bytes() == e.headroom_bytes - kept);
    }
  }
}

TEST_CASE("plan: a margin that leaves nothing, or both forms at once, is refused by name") {
  const Model model = preset("llama-3.1-8b");
  const Config base = base_config("llama-3.1-8b", "h100-80gb", 4096, 32);
  PlanBounds b;
  b.margin.bytes = 100LL << 30;  // 100 GiB of an 79.19 GiB device
  PlanResult r = plan(base, model, b);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "plan.margin");
  CHECK(r.diagnostics.errors[0].message.find("leaves nothing of the device's 79.19 GiB") !=
        std::string::npos);
  b.margin = {.bytes = 1 << 30, .percent_hundredths = 1000};
  r = plan(base, model, b);
  REQUIRE(!r.diagnostics.ok());
  CHECK(r.diagnostics.errors[0].field == "plan.margin");
}
