// estimate.h — the estimate: a configuration and its model in, the per-stage report out.
//
// Purpose: the one entry point every front end calls. estimate.cpp reads as the physics
// pipeline: the layout's stage plan and per-rank parameters (parallel/), the resident and
// optimizer-step terms (memory/resident_terms.h, memory/optimizer_transients.h), each stage's
// activations and transients with its peak moment (memory/activation_terms.h), the library
// workspaces and gaps (memory/gaps.h), the stage's peak and headroom, the allocator replay of each
// stage (estimate/replay_stages.h), then the cross-checks of the measurements
// (estimate/cross_check.h). estimate_cache.cpp keeps what a sweep or the app
// reuses between estimates (EstimateCache below): each step above looks its inputs up there,
// through estimate_cache.h (internal to estimate/; front ends include this header only).
// Units: bytes (int64) per rank; every product and sum is overflow-checked, and a report that
// would pass 2^63 - 1 bytes is an error naming the fields that drive it (report/report.h).
// Limitations: a cache recognises its model by address (see EstimateCache).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "allocator/step_replay.h"
#include "config/config.h"
#include "config/sharding_rules.h"
#include "memory/activation_pieces.h"
#include "parallel/layout.h"
#include "report/report.h"

namespace stagemem {

// One stage's activation and transient terms and the numbers its peak comes from, for the piece
// generation, recompute setting and micro-batches per step they were computed for: an estimate
// whose activation inputs did not change (another optimizer, precision, device, gap, measurement
// or flat headroom) takes them as they are.
struct StageActivationMemo {
  std::uint64_t generation = 0;  // LayerPieceCache::generation; 0: empty
  RecomputeConfig recompute{};
  std::int64_t micro_batches = -1;
  bool has_terms = false;   // false: computed for peaks only (numbers, no term list)
  std::vector<Term> terms;  // the stored then the transient terms, as the stage lists them
  std::int64_t stored_bytes = 0;
  std::int64_t largest_transient_bytes = 0;
  std::int64_t largest_transient = -1;  // index into `terms`; -1: none
  std::vector<std::int64_t> in_flight_per_chunk;
  std::vector<std::int64_t> chunk_stored_bytes;
  std::vector<std::int64_t> activation_units;
  PeakMoment moment;  // its transient and enclosing are indices into `terms`
  bool fits = true;
};

// Where one stage's activation terms are in its term list, and whether they fit in int64 bytes.
struct StageTermRange {
  std::int64_t first = 0;
  std::int64_t end = 0;
  bool fits = true;
};

// One stage's library workspace terms then its gap rows, for the gap entries and workspace choice
// EstimateCache keys them by; `entry` per term: the index of the MEASURED entry whose source it
// shows (-1: none), so that a later estimate shows its own configuration's text.
struct StageGapTerms {
  bool valid = false;
  std::vector<Term> terms;
  std::size_t workspace_count = 0;  // the first terms are workspaces (resident), the rest gaps
  std::vector<std::int32_t> entry;
};

// What estimates of one model share while the parallel layout stays the same: the layout's
// validation, the stage plan and every stage's per-rank parameters (none depend on sequence,
// micro-batch, recompute, kernels, precision or optimizer). A sweep or search keeps one cache per
// model and passes it to every estimate; a changed layout or model refills it.
// Limitation: the model is recognised by address: do not change a Model while a cache built from
// it is in use.
struct EstimateCache {
  const Model* model = nullptr;
  ParallelLayout layout{};
  Diagnostics layout_diagnostics{};
  std::optional<StagePlan> plan{};
  std::vector<StageParameters> parameters{};
  std::vector<std::int64_t> parameters_per_rank{};  // parameters[i].per_rank.total()
  std::int64_t total_parameters = 0;
  // Per stage, the resident and optimizer-step terms: they depend on the layout, `precision` and
  // `optimizer` only, so a sweep over sequence, batch or recompute computes them once.
  bool state_terms_valid = false;
  Precision precision{};
  OptimizerConfig optimizer{};
  SoftwareStack state_stack{};  // the releases decide which dummy weight gradients are kept
  LowPrecisionCompute state_low_precision{};  // the recipe, history and bf16 layers
  ResolvedSharding state_sharding{};          // what data parallelism shards
  std::vector<std::vector<Term>> resident_terms{};
  std::vector<std::vector<Term>> optimizer_step_terms{};
  // Per stage, the resident terms as the tensors the replay allocates (memory/parameter_
  // tensors.h), built on the first full estimate that replays; null until then. They also
  // depend on Megatron DDP's gradient buckets.
  std::vector<std::shared_ptr<const ResidentAllocations>> resident_allocations{};
  bool state_overlap_grad_reduce = false;
  std::int64_t state_ddp_bucket_size = 0;
  // Their sums per stage (what a sweep of peaks reads); -1: the terms do not fit in int64 bytes.
  std::vector<std::int64_t> resident_sums{};
  std::vector<std::int64_t> optimizer_step_sums{};
  // Per stage, the pipeline input the model keeps past the step (0 or 1 term; it depends on the
  // layout and the piece inputs: rebuilt when `pieces` starts a new generation) and its bytes.
  std::uint64_t kept_input_generation = 0;
  std::vector<std::vector<Term>> kept_input_terms{};
  std::vector<std::int64_t> kept_input_sums{};
  // Per micro-batch activation pieces (they depend on the layout and the training inputs
  // LayerPieceCache names, not on recompute, batch, optimizer or device).
  LayerPieceCache pieces{};
  std::vector<StageActivationMemo> activations{};  // per stage, in report order
  // False for a cache that serves one estimate only (estimate(config, model)): it keeps no memo.
  bool keep_activations = true;
  // False: full estimates skip the allocator replay (no peak reserved; every stage fits against
  // its peak allocated). For property tests of other physics that run thousands of estimates.
  bool replay_allocator = true;
  // Per stage: the allocator replay's inputs (replay_key in estimate.cpp: the settings, the
  // schedule, M and every number of the stage the replay reads) and its result. An estimate whose
  // stage has the same inputs takes the result instead of replaying: a change that moves no
  // tensor (the device, a measurement) costs no replay. Only when keep_activations is set.
  struct ReplayMemo {
    std::vector<std::int64_t> key;  // without the device limit
    ReplayedStage result;
    // The replay against the device, for a stage whose unlimited reserved exceeds it (the key
    // above plus the limit): a device change replays only such stages.
    std::vector<std::int64_t> limited_key;
    ReplayedStage limited_result;
    // The allocator after the stage's init, without and against the device limit.
    ReplayInitCache init;
    ReplayInitCache limited_init;
  };
  std::vector<ReplayMemo> replays{};
  // The stages (and their lists' storage) of a report whose estimate ended in an error.
  std::vector<StageReport> spare_stages{};
  std::vector<StageTermRange> activation_ranges{};  // scratch of one estimate, per stage
  // Per stage, the workspace and gap terms (they depend on the layout, `gaps` and the GEMM
  // workspace choice only).
  std::vector<GapEntry> gaps_key{};
  GemmWorkspaces workspaces_key = GemmWorkspaces::sm90;
  Framework workspaces_framework_key = Framework::megatron_core;
  Release workspaces_te_key{};  // the TE release decides the workspace's size
  std::vector<StageGapTerms> gap_terms{};
};

Report estimate(const Config& config);
// With the model already resolved (resolve_model in config.h): sweeps resolve it once.
Report estimate(const Config& config, const Model& model);
// How much of a report to build: every term (what every front end shows), or only the per-stage
// numbers (peak, phases, headroom, binding stage) with empty term lists and no cross-checks, for
// sweeps and searches. Both come from the same sums, so the numbers are identical (tested).
enum class EstimateDetail : std::uint8_t { terms, peaks };
Report estimate(const Config& config, const Model& model, EstimateCache& cache,
                EstimateDetail detail = EstimateDetail::terms);
// The same into `report`, replacing everything in it but keeping its lists' storage: a sweep or
// the app estimating again and again into one report allocates nothing once it is warm.
void estimate_into(const Config& config, const Model& model, EstimateCache& cache, Report& report,
                   EstimateDetail detail = EstimateDetail::terms);

class StageReplays;
// estimate_into with every term, in steps: the constructor computes the terms and peaks, then each
// step() replays the allocator for at least `allocations` more activation tensors (the replay is
// most of a large layout's estimate: a kimi-k3 PP 8 x VPP 2 layout replays about a million,
// a third of a second), so a front end can spread one estimate over frames. Once step() returns
// false, `report` is what estimate_into gives (tested). `model`, `cache` and `report` must
// outlive it and not change while it runs.
class SteppedEstimate {
 public:
  SteppedEstimate(const Config& config, const Model& model, EstimateCache& cache, Report& report);
  ~SteppedEstimate();
  SteppedEstimate(const SteppedEstimate&) = delete;
  SteppedEstimate& operator=(const SteppedEstimate&) = delete;
  bool step(std::int64_t allocations);

 private:
  Config config_;
  EstimateCache& cache_;
  Report& report_;
  std::unique_ptr<StageReplays> replays_;
  bool done_ = false;
};

}  // namespace stagemem
