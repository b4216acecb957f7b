// plan.h — search every valid parallel layout of a model for the smallest GPU count that fits,
// and rank what fits at each GPU count by derived cost factors.
//
// Purpose: `stagemem plan` and the app's Plan tab. The space is the cartesian product of the
// allowed values of TP, PP, VPP, CP, EP, ETP, SP, optimizer, quantised compute recipe, DP,
// micro-batch and recompute policy; a point is a configuration when DP x micro-batch divides the
// global batch (a whole number M of micro-batches per step), and configurations_searched counts
// those. Each is checked for what is cheap first (divisibility, GPU bounds, Megatron's interleaved
// rule, TP within a node), skipped when earlier estimates prove it cannot fit (the resident set
// alone exceeds the device at the same or a larger DP, or a smaller micro-batch did not fit: exact
// rules, see PlanBounds::exhaustive), and otherwise estimated with the same core as `report`
// (estimate(), which runs validate(); peaks only, one EstimateCache per search: the same numbers).
// A configuration fits when every stage's peak is at most the device's bytes (headroom >= 0),
// exactly `stagemem check`, or, with a safety margin (PlanMargin: an amount or a share of the
// capacity, e.g. the 80 % rule), at most the device's bytes minus the margin.
//
// Cost factors (each shown on its own, never combined into one score):
//  - bubble fraction: (P - 1) / (v x M) with v > 1 virtual stages (interleaved 1F1B), (P - 1) / M
//    with 1F1B (Narayanan et al. 2021); idle pipeline time over useful time; 0 at P = 1.
//  - recompute overhead: recomputed forward FLOPs / (3 x forward FLOPs of the step), where the
//    step's FLOPs are forward + backward (2 x forward) without recompute (step_flops below).
//  - headroom: device bytes - the binding stage's peak (larger is safer).
// Ranking: the minimum is, at the smallest fitting GPU count, the configuration with the least
// bubble, then the least recompute overhead, then the most headroom. The frontier keeps, at every
// GPU count with a fitting configuration, the `top` best by each factor (ties broken by the other
// two factors in that order, then by enumeration order), each entry marked with the factors it
// ranks on.
// Units: bytes (int64), fractions (double), counts.
// Limitations: Megatron-core's schedules only (1F1B, interleaved): a base configuration with
// schedule dualpipev is refused (parallel.schedule). Even layer splits only (earlier stages take
// the remainder); uneven layouts are the layout advisor's job (layout_advisor.h). Measured values
// are dropped from the searched configurations except gaps measured for every stage (stage -1),
// which apply to each candidate.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "estimate/estimate.h"
#include "model/model.h"
#include "report/report.h"

namespace stagemem {

// A safety margin below the device's capacity: a configuration fits only when every stage's
// peak is at most the capacity minus the margin. Either an amount (bytes) or a share of the
// capacity in hundredths of a percent: the published "80 % rule" (peak <= 80 % of capacity) is
// percent_hundredths = 2000. At most one of the two is non-zero.
struct PlanMargin {
  std::int64_t bytes = 0;               // [0, 2^50]
  std::int64_t percent_hundredths = 0;  // [0, 9999]: 0.00 % .. 99.99 %
  friend bool operator==(const PlanMargin&, const PlanMargin&) = default;
};

// "8GiB", "8 GiB", "20%", "12.5 %": an amount (measurement_text.h's units) or a percentage of the
// capacity with at most two decimals. nullopt (and an error naming `field` with the allowed
// forms) for anything else.
std::optional<PlanMargin> parse_plan_margin(std::string_view text, const std::string& field,
                                            Diagnostics& diagnostics);
// The margin's text form, parsed back by parse_plan_margin: "20%", "12.5%", "8GiB"; "0" for none.
std::string plan_margin_text(const PlanMargin& margin);
// The margin's bytes on a device of `device_bytes`: the amount, or ceil(capacity x share), so
// that peak <= capacity - margin exactly when peak <= capacity x (1 - share).
std::int64_t plan_margin_bytes(const PlanMargin& margin, std::int64_t device_bytes);

// The allowed values of each searched dimension; an empty list takes the default in brackets.
struct PlanBounds {
  std::int64_t gpus_per_node = 8;  // [1, 1024]
  std::int64_t min_gpus = 1;
  std::int64_t max_gpus = 0;      // 0: bounded only by the global batch (DP divides it)
  bool tp_across_nodes = false;   // false: TP divides gpus_per_node (NVLink / xGMI domain)
  std::vector<std::int64_t> tp;   // [powers of two up to gpus_per_node]
  std::vector<std::int64_t> pp;   // [1 .. min(layers, 32)]
  std::vector<std::int64_t> vpp;  // [1 .. 4]
  std::vector<std::int64_t> cp;   // [1]
  std::vector<std::int64_t> ep;   // [divisors of the routed experts; 1 for dense models]
  std::vector<std::int64_t> etp;  // [1]
  std::vector<std::int64_t> dp;   // [every divisor of global batch / micro-batch]
  std::vector<std::int64_t> mbs;  // [1 .. 4]
  // Recompute policies: none, selective (the base configuration's modules), full (the base
  // configuration's method and layer count). [all three]
  std::vector<RecomputePolicy> recompute;
  std::vector<bool> sp;                  // [on when TP > 1, off at TP 1]
  std::vector<OptimizerKind> optimizer;  // [the base configuration's]
  // Quantised compute recipes (config/low_precision_rules.h with_recipe: none is the bf16 twin;
  // quantised primary weights follow the recipe). [the base configuration's]
  std::vector<Fp8Recipe> recipe;
  // Data-parallel sharding strategies (sharding.h): under Megatron-core, optim_grads and
  // optim_grads_params run Megatron-FSDP (with_sharding). [the base configuration's]
  std::vector<ShardingStrategy> sharding;
  std::int64_t top = 2;  // frontier entries per factor per GPU count, [1, 100]
  // Fits means peak <= device bytes - margin on every stage; the margin must leave some bytes.
  PlanMargin margin{};
  // Exact pruning: the resident set (weights, gradients, optimizer state) and measured gaps do
  // not depend on the micro-batch size or the recompute policy and never grow with DP (state
  // shards over DP and the expert-data-parallel group), and every stage's peak is at least them.
  // DP is visited from the largest down; once one estimate shows the resident set above the
  // device, the rest of that outer point (this DP and every smaller one) is skipped (counted in
  // configurations_pruned; tests hold both facts). Likewise a micro-batch size that does not fit
  // rules out the larger ones at the same DP and recompute policy while M >= 2 x PP (the
  // in-flight counts are then fixed and every term grows with the tokens of a micro-batch).
  // exhaustive: estimate every point anyway, so each non-fitting configuration has its own
  // numbers.
  bool exhaustive = false;
};

// One point of the space, as numbers only.
struct PlanCandidate {
  std::int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1, mbs = 1;
  RecomputePolicy recompute = RecomputePolicy::none;
  bool sp = false;
  OptimizerKind optimizer = OptimizerKind::adam;
  Fp8Recipe recipe = Fp8Recipe::none;
  ShardingStrategy sharding = ShardingStrategy::automatic;
  friend bool operator==(const PlanCandidate&, const PlanCandidate&) = default;
};

// Which ranking an entry of the frontier is among the best of (bit mask).
enum PlanRank : std::uint8_t {
  rank_bubble = 1,
  rank_recompute = 2,
  rank_headroom = 4,
};

// `config` with data-parallel sharding `strategy`: under Megatron-core a strategy that shards
// gradients or parameters runs Megatron-FSDP (Megatron's DDP shards at most the optimizer state),
// and no_shard / optim run Megatron's DDP; torchtitan keeps FSDP2.
Config with_sharding(const Config& config, ShardingStrategy strategy);

struct PlanEntry {
  PlanCandidate candidate;
  std::int64_t ordinal = 0;  // enumeration order: the last tie-breaker
  std::int64_t gpus = 0;     // TP x PP x CP x DP
  std::int64_t micro_batches = 0;
  std::int64_t peak_bytes = 0;  // the binding stage's peak allocated
  // What headroom is measured against: the search estimates peaks only (allocated);
  // select_confirmed_plan replays the allocator for the entries it shows (reserved or device).
  FitBasis fit_basis = FitBasis::allocated;
  std::int64_t fit_bytes = 0;       // the binding stage's figure of that basis
  std::int64_t headroom_bytes = 0;  // device bytes - fit_bytes (the margin is not subtracted)
  std::int64_t margin_bytes = 0;    // the search's safety margin (plan_margin_bytes)
  std::int64_t binding_stage = 0;
  double bubble_fraction = 0.0;
  double recompute_overhead = 0.0;
  std::uint8_t ranks = 0;  // PlanRank bits (frontier entries only)
  // Headroom left once the margin is kept free: negative when the peak eats into the margin.
  std::int64_t spare_bytes() const { return headroom_bytes - margin_bytes; }
  bool fits() const { return headroom_bytes >= margin_bytes; }
};

struct PlanResult {
  Diagnostics diagnostics;  // errors: bad bounds or base configuration; nothing was searched
  std::int64_t device_bytes = 0;
  std::int64_t margin_bytes = 0;              // kept free below device_bytes (PlanBounds::margin)
  std::int64_t configurations_searched = 0;   // every point of the space considered
  std::int64_t configurations_estimated = 0;  // passed the cheap checks and were estimated
  std::int64_t configurations_pruned = 0;     // skipped: cannot fit (PlanBounds::exhaustive)
  std::int64_t configurations_valid = 0;      // the estimate accepted them (validate())
  std::int64_t configurations_fitting = 0;
  bool has_minimum = false;
  PlanEntry minimum;
  std::vector<PlanEntry> frontier;  // ascending GPU count, then bubble, recompute, headroom lists
};

// The forward FLOPs of one token through the model (decoder layers, MTP layers, LM head), from
// shapes: 2 x the elements of every 2-D weight a token passes through (routed experts: top-k of
// the experts' share), plus the attention core at sequence length S (causal, S/2 keys on average):
//  - GQA: 2 x heads x head_dim x S (QK^T and PV);
//  - MLA: heads x (qk_nope + qk_rope + v_head) x S;
//  - KDA (chunked, chunk C): heads x (2 x head_dim x C + 4 x head_dim^2) (intra-chunk QK^T and
//    AV at C/2 keys on average, the state read and the state update);
// elementwise work (norms, activations, softmax) is not counted: it is not matmul FLOPs.
struct StepFlops {
  double forward_per_token = 0.0;     // F
  double recomputed_per_token = 0.0;  // R under the configuration's recompute policy
  double overhead() const {
    return forward_per_token > 0 ? recomputed_per_token / (3.0 * forward_per_token) : 0.0;
  }
};
StepFlops step_flops(const Config& config, const Model& model);

// (P - 1) / (v x M), 0 at P = 1.
double bubble_fraction(std::int64_t pipeline, std::int64_t virtual_stages,
                       std::int64_t micro_batches);

// The base configuration with the candidate's values in place (even split, DP explicit, world
// derived, measurements dropped, stage-specific gaps dropped).
Config candidate_config(const Config& base, const PlanCandidate& candidate);

// A time-sliced search: construct, call step() until it returns false, then result(). `shard`
// of `shards` visits every shards-th outer point, so front ends can split one search over threads
// and merge the entries (merge_plan_entries) into one result that equals the unsplit one.
class PlanSearch {
 public:
  PlanSearch(const Config& base, const Model& model, const PlanBounds& bounds,
             std::int64_t shard = 0, std::int64_t shards = 1);
  // Visits up to `points` points of the space; false when the space is exhausted (or invalid).
  bool step(std::int64_t points);
  double progress() const;  // [0, 1]
  const Diagnostics& diagnostics() const { return diagnostics_; }
  // Every estimated, valid configuration (fitting or not), in enumeration order.
  const std::vector<PlanEntry>& entries() const { return entries_; }
  std::int64_t searched() const { return searched_; }
  std::int64_t estimated() const { return estimated_; }
  std::int64_t pruned() const { return pruned_; }  // skipped: cannot fit (exhaustive)
  std::int64_t device_bytes() const { return device_bytes_; }
  std::int64_t margin_bytes() const { return margin_bytes_; }

 private:
  struct InnerPoint {
    std::int64_t dp = 1;
    std::uint32_t mbs_index = 0;
    std::uint32_t recompute_index = 0;
    std::int64_t ordinal = 0;
  };
  bool next_outer();
  void visit(const InnerPoint& point);

  const Model* model_;
  Config base_;          // the searched configuration (the recipe axis starts from it)
  Config work_;          // the candidate being estimated, edited in place (no copy per point)
  EstimateCache cache_;  // what estimates of one parallel layout share (report.h)
  Report report_;        // every point's estimate, into the same storage (estimate_into)
  PlanBounds bounds_;
  Diagnostics diagnostics_;
  std::int64_t shard_ = 0, shards_ = 1;
  std::int64_t device_bytes_ = 0;
  std::int64_t margin_bytes_ = 0;
  std::int64_t layers_ = 0;
  bool moe_ = false;
  bool done_ = false;
  bool started_ = false;
  std::vector<std::size_t> index_;   // odometer over the outer dimensions
  std::int64_t outer_ordinal_ = -1;  // index of the current outer point
  std::int64_t outer_total_ = 0;
  std::vector<std::int64_t> gbs_divisors_;  // every DP the global batch allows, ascending
  std::vector<std::int64_t> dp_values_;     // the DP values searched (bounded)
  std::int64_t inner_stride_ = 1;           // ordinal stride of one outer point
  std::vector<InnerPoint> inner_;           // the current outer point's inner points
  std::size_t inner_index_ = 0;
  std::int64_t current_dp_ = 0;           // DP of the last visited point
  std::vector<std::int64_t> failed_mbs_;  // per recompute policy: smallest mbs that did not fit
  std::int64_t skip_dp_ = 0;  // points with DP <= this are skipped: their resident set exceeds
  std::vector<double> recompute_overhead_;  // per recompute policy (block methods: per point)
  std::int64_t searched_ = 0, estimated_ = 0, pruned_ = 0;
  std::vector<PlanEntry> entries_;
};

// The minimum and frontier from the entries of one or more searches (any order).
PlanResult select_plan(std::vector<PlanEntry> entries, std::int64_t top);

// select_plan, then each entry it shows (the minimum and the frontier) estimated in full with
// the allocator replay: its headroom is then measured against the device figure, or the peak
// reserved (StageReport::fit_basis). An entry that no longer fits is dropped and the selection
// made again, until every entry shown is confirmed (at most `max_confirmations` full estimates;
// entries beyond that keep fit_basis allocated and say so).
PlanResult select_confirmed_plan(std::vector<PlanEntry> entries, std::int64_t top,
                                 const Config& base, const Model& model,
                                 std::int64_t max_confirmations = 256);

// select_confirmed_plan in steps, so that a front end confirms a few entries per frame (one full
// estimate with the replay can take tens of milliseconds on a large interleaved layout).
// `model` must outlive it. step() until it returns false, then result() is select_confirmed_plan's.
class PlanConfirmation {
 public:
  PlanConfirmation(std::vector<PlanEntry> entries, std::int64_t top, const Config& base,
                   const Model& model, std::int64_t max_confirmations = 256);
  // Confirms at most `estimates` entries (at least one); false once every entry shown is
  // confirmed or the confirmation budget is spent.
  bool step(std::int64_t estimates);
  // The same in smaller pieces, for a front end's frame: one piece of one confirmation per call
  // (its terms, or at least `allocations` more activation tensors of its allocator replay:
  // SteppedEstimate), so that no call takes a whole large layout's replay. False once done; the
  // result is step()'s.
  bool advance(std::int64_t allocations);
  bool done() const { return done_; }
  std::int64_t confirmed() const { return confirmed_count_; }
  // The selection over the entries as confirmed so far (final once done()).
  PlanResult result() const { return select_plan(entries_, top_); }

 private:
  bool next_entry(std::size_t& index);  // the next entry to confirm; false once done
  void start(std::size_t index);
  void record(std::size_t index);  // the confirmed figures from report_
  std::vector<PlanEntry> entries_;
  std::int64_t top_ = 1;
  Config base_;
  const Model* model_ = nullptr;
  std::int64_t budget_ = 0;
  std::vector<bool> confirmed_;
  std::map<std::int64_t, std::size_t> index_of_;  // ordinal -> entry
  std::vector<std::size_t> pending_;              // shown, not yet confirmed, in the order shown
  std::size_t next_pending_ = 0;
  std::int64_t confirmed_count_ = 0;
  bool done_ = false;
  EstimateCache cache_;
  Report report_;
  std::unique_ptr<SteppedEstimate> running_;  // advance(): the confirmation under way
  std::size_t running_entry_ = 0;
};

// The whole search in one call.
PlanResult plan(const Config& base, const Model& model, const PlanBounds& bounds);

// Megatron-LM arguments that build this configuration, e.g.
// "--tensor-model-parallel-size 1 --pipeline-model-parallel-size 8 ...
// --use-distributed-optimizer". Uneven splits (layers not divisible by PP x VPP) are written as
// --pipeline-model-parallel-layout.
std::string megatron_arguments(const Config& config, const Model& model);

}  // namespace stagemem
