// estimate_cache.h — internal to estimate/: what estimate.cpp's steps look up in EstimateCache.
//
// Purpose: estimate.cpp reads as the physics pipeline; the bookkeeping of what a sweep or the app
// reuses between estimates (EstimateCache, declared in estimate.h with the entry points) lives in
// estimate_cache.cpp: each refresh_* function rebuilds one group of cached terms when the inputs
// it is keyed by changed, and leaves it as it is otherwise. Front ends include estimate.h only.
// Units: bytes (int64) per rank; a cached sum of -1 means its terms do not fit in int64 bytes.
// Limitations: the model is recognised by address (EstimateCache); refresh_layout must run first,
// and the others only when the layout is valid (cache.plan holds a plan).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "estimate/estimate.h"
#include "memory/activation_terms.h"
#include "report/formula.h"

namespace stagemem {

// Adds `bytes` to `total`; false when `bytes` is a term that did not fit (negative, or int64's
// maximum: what an overflowed formula evaluates to) or the sum passes int64.
inline bool add_bytes(std::int64_t& total, std::int64_t bytes) {
  return bytes >= 0 && bytes != std::numeric_limits<std::int64_t>::max() &&
         checked_add(total, bytes, &total);
}

// The stages of `report`, or when it has none those of an estimate that ended in an error
// (cache.spare_stages): this estimate refills them, keeping their lists' storage.
std::vector<StageReport> take_stage_storage(Report& report, EstimateCache& cache);
// Empties a stage kept from an earlier estimate, keeping its lists' storage.
void reset_stage(StageReport& stage);

// The layout's validation, stage plan and per-rank parameters, rebuilt when the model or the
// parallel layout changed (a new layout also drops every cached term: they all depend on it).
void refresh_layout(EstimateCache& cache, const Model& model, const ParallelLayout& layout);
// Per stage, the resident and optimizer-step terms and their sums, rebuilt when the precision or
// the optimizer changed.
void refresh_state_terms(EstimateCache& cache, const Model& model, const Config& config);
// The activation pieces' inputs (prepare_piece_cache) and, per stage, the pipeline input the
// model keeps past the step, rebuilt when the pieces start a new generation.
void refresh_activation_inputs(EstimateCache& cache, const Model& model, const Config& config);
// Drops the cached workspace and gap terms when the gap entries or the GEMM workspace choice
// changed; stage_gap_terms rebuilds each stage's on first use.
void refresh_gap_terms(EstimateCache& cache, const Config& config);
// The library workspace then gap terms of the stage in report slot `slot`, built once per gap
// entries and workspace choice.
const StageGapTerms& stage_gap_terms(EstimateCache& cache, std::size_t slot,
                                     std::int64_t stage_index, const Config& config,
                                     bool grouped_gemm);

// The stage's activation and transient terms from its memo (appended to stage.terms, into `out`)
// when the memo was computed for the same piece generation, recompute setting and micro-batches
// per step; false when it was not (then neither is touched).
bool take_activation_memo(EstimateCache& cache, std::size_t slot, const RecomputeConfig& recompute,
                          std::int64_t micro_batches, bool peaks_only, StageReport& stage,
                          StageActivationTerms& out);
// Keeps the stage's activation and transient terms just computed (stage.terms from
// computed.first_stored on) and their numbers as its memo; a cache serving one estimate only and
// a peaks estimate (a sweep changes an activation input at every point) keep none.
void keep_activation_memo(EstimateCache& cache, std::size_t slot, const RecomputeConfig& recompute,
                          std::int64_t micro_batches, bool peaks_only, const StageReport& stage,
                          const StageActivationTerms& computed);

}  // namespace stagemem
