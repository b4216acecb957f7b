// estimate_cache.cpp — what a sweep or the app reuses between estimates (EstimateCache).
//
// Each group of cached terms is keyed by the inputs it depends on and rebuilt only when they
// change: the layout's validation, plan and per-rank parameters (the parallel layout and the
// model), the resident and optimizer-step terms (precision, optimizer), the kept pipeline input
// (the activation pieces' generation), the workspace and gap terms (gap entries, GEMM workspace
// choice), and per stage the activation terms of the last full estimate (piece generation,
// recompute, micro-batches per step). The stages of a report that ended in an error keep their
// storage here for the next estimate. estimate.cpp calls these in the order of its pipeline.
#include "estimate/estimate_cache.h"

#include <cstddef>
#include <utility>

#include "memory/gaps.h"
#include "memory/optimizer_transients.h"
#include "memory/resident_terms.h"
#include "memory/sharding_terms.h"
#include "model/parameters.h"

namespace stagemem {

namespace {

// The bytes of `terms`, -1 when they do not fit in int64.
std::int64_t sum_of(const std::vector<Term>& terms) {
  std::int64_t total = 0;
  for (const Term& t : terms) {
    if (!add_bytes(total, t.bytes)) return -1;
  }
  return total;
}

// Forgets everything cached for the previous layout and builds the new one's validation, stage
// plan and per-rank parameters.
void rebuild_layout(EstimateCache& cache, const Model& model, const ParallelLayout& layout) {
  cache.layout = layout;
  cache.layout_diagnostics = {};
  validate_layout(model, layout, cache.layout_diagnostics);
  cache.plan.reset();
  cache.parameters.clear();
  cache.parameters_per_rank.clear();
  cache.state_terms_valid = false;
  cache.pieces = {};
  cache.activations.clear();
  cache.gap_terms.clear();
  cache.kept_input_generation = 0;  // a new piece cache counts its generations from the start
  if (!cache.layout_diagnostics.ok()) return;
  Diagnostics repeated;  // validate_layout already reported the plan's warnings
  cache.plan = plan_stages(model, layout, repeated);
  if (!cache.plan) {
    cache.layout_diagnostics.errors.insert(cache.layout_diagnostics.errors.end(),
                                           repeated.errors.begin(), repeated.errors.end());
    return;
  }
  cache.parameters = stage_parameters(model, layout, *cache.plan);
  for (const StageParameters& p : cache.parameters) {
    cache.parameters_per_rank.push_back(p.per_rank.total());
  }
}

}  // namespace

std::vector<StageReport> take_stage_storage(Report& report, EstimateCache& cache) {
  std::vector<StageReport> stages = std::move(report.stages);
  report.stages.clear();
  if (stages.empty()) std::swap(stages, cache.spare_stages);
  return stages;
}

void reset_stage(StageReport& stage) {
  std::vector<Term> terms = std::move(stage.terms);
  std::vector<LayerRange> chunks = std::move(stage.chunks);
  std::vector<std::int64_t> in_flight = std::move(stage.in_flight_per_chunk);
  std::vector<std::int64_t> chunk_bytes = std::move(stage.chunk_stored_bytes);
  terms.clear();
  chunks.clear();
  in_flight.clear();
  chunk_bytes.clear();
  stage = StageReport{};
  stage.terms = std::move(terms);
  stage.chunks = std::move(chunks);
  stage.in_flight_per_chunk = std::move(in_flight);
  stage.chunk_stored_bytes = std::move(chunk_bytes);
}

void refresh_layout(EstimateCache& cache, const Model& model, const ParallelLayout& layout) {
  if (cache.model != &model) {
    cache.model = &model;
    cache.total_parameters = total_parameters(model);
    cache.layout = ParallelLayout{};
    cache.layout.pipeline_parallel = -1;  // no layout cached yet
  }
  if (!(cache.layout == layout)) rebuild_layout(cache, model, layout);
}

void refresh_state_terms(EstimateCache& cache, const Model& model, const Config& config) {
  const ResolvedSharding sharding =
      resolve_sharding(config.training, config.optimizer, config.parallel);
  if (cache.state_terms_valid && cache.precision == config.precision &&
      cache.optimizer == config.optimizer && cache.state_stack == config.training.stack &&
      cache.state_low_precision == config.training.low_precision &&
      cache.state_sharding == sharding &&
      cache.state_overlap_grad_reduce == config.training.sharding.overlap_grad_reduce &&
      cache.state_ddp_bucket_size == config.training.sharding.ddp_bucket_size) {
    return;
  }
  cache.state_overlap_grad_reduce = config.training.sharding.overlap_grad_reduce;
  cache.state_ddp_bucket_size = config.training.sharding.ddp_bucket_size;
  cache.state_low_precision = config.training.low_precision;
  cache.state_sharding = sharding;
  const StateShards shards = state_shards(sharding);
  cache.precision = config.precision;
  cache.optimizer = config.optimizer;
  cache.state_stack = config.training.stack;
  cache.resident_terms.assign(cache.parameters.size(), {});
  cache.optimizer_step_terms.assign(cache.parameters.size(), {});
  cache.resident_sums.clear();
  cache.optimizer_step_sums.clear();
  cache.resident_allocations.assign(cache.parameters.size(), nullptr);
  for (std::size_t i = 0; i < cache.parameters.size(); ++i) {
    std::vector<Term>& resident = cache.resident_terms[i];
    std::vector<Term>& optimizer_step = cache.optimizer_step_terms[i];
    resident.reserve(12);
    optimizer_step.reserve(2);
    append_resident_terms(
        cache.parameters[i].per_rank_roles, config.precision, config.optimizer, shards, resident,
        low_precision_resident(config.training, model, cache.parameters[i], config.parallel));
    append_sharding_resident_terms(model, config.parallel, sharding, config.precision,
                                   cache.parameters[i], resident);
    // TransformerEngine's dummy weight-gradient buffers exist only with Megatron-core's modules.
    if (sharding.framework == Framework::megatron_core) {
      append_dummy_wgrad_terms(model, cache.parameters[i], config.parallel, config.precision,
                               config.training.stack, resident);
    }
    append_optimizer_step_transients(model, cache.parameters[i], config.parallel, config.optimizer,
                                     optimizer_step, config.precision, &shards);
    cache.resident_sums.push_back(sum_of(resident));
    cache.optimizer_step_sums.push_back(sum_of(optimizer_step));
  }
  cache.state_terms_valid = true;
}

void refresh_activation_inputs(EstimateCache& cache, const Model& model, const Config& config) {
  prepare_piece_cache(cache.pieces, config.training, sharding_piece_inputs(config));
  if (cache.kept_input_generation == cache.pieces.generation &&
      cache.kept_input_terms.size() == cache.parameters.size()) {
    return;
  }
  cache.kept_input_generation = cache.pieces.generation;
  cache.kept_input_terms.assign(cache.parameters.size(), {});
  cache.kept_input_sums.assign(cache.parameters.size(), 0);
  for (std::size_t i = 0; i < cache.parameters.size(); ++i) {
    append_kept_pipeline_input_terms(model, config.parallel, config.training, *cache.plan,
                                     cache.parameters[i].pipeline_rank, cache.kept_input_terms[i]);
    cache.kept_input_sums[i] = sum_of(cache.kept_input_terms[i]);
  }
}

void refresh_gap_terms(EstimateCache& cache, const Config& config) {
  if (cache.gaps_key == config.gaps &&
      cache.workspaces_key == config.training.kernels.gemm_workspaces &&
      cache.workspaces_framework_key == config.training.framework &&
      cache.workspaces_te_key == config.training.stack.transformer_engine &&
      cache.gap_terms.size() == cache.parameters.size()) {
    return;
  }
  cache.gaps_key = config.gaps;
  cache.workspaces_key = config.training.kernels.gemm_workspaces;
  cache.workspaces_framework_key = config.training.framework;
  cache.workspaces_te_key = config.training.stack.transformer_engine;
  cache.gap_terms.assign(cache.parameters.size(), {});
}

const StageGapTerms& stage_gap_terms(EstimateCache& cache, std::size_t slot,
                                     std::int64_t stage_index, const Config& config,
                                     bool grouped_gemm) {
  StageGapTerms& kept = cache.gap_terms[slot];
  if (kept.valid) return kept;
  kept.terms.clear();
  append_library_workspace_terms(stage_index, config.gaps, config.training, grouped_gemm,
                                 kept.terms);
  kept.workspace_count = kept.terms.size();
  append_gap_terms(stage_index, config.gaps, kept.terms);
  // A MEASURED term's source is a view of its gap entry's text: remember which entry, so that a
  // later estimate points at its own configuration's text (estimate.cpp, add_gap_terms).
  kept.entry.clear();
  for (const Term& t : kept.terms) {
    std::int32_t entry = -1;
    for (std::size_t j = 0; j < config.gaps.size(); ++j) {
      if (t.tag == Tag::measured && t.source.data() == config.gaps[j].source.data())
        entry = static_cast<std::int32_t>(j);
    }
    kept.entry.push_back(entry);
  }
  kept.valid = true;
  return kept;
}

bool take_activation_memo(EstimateCache& cache, std::size_t slot, const RecomputeConfig& recompute,
                          std::int64_t micro_batches, bool peaks_only, StageReport& stage,
                          StageActivationTerms& out) {
  if (cache.activations.size() <= slot) cache.activations.resize(slot + 1);
  const StageActivationMemo& memo = cache.activations[slot];
  if (memo.generation != cache.pieces.generation || memo.micro_batches != micro_batches ||
      !(memo.recompute == recompute) || !(peaks_only || memo.has_terms)) {
    return false;
  }
  out.first_stored = static_cast<std::int64_t>(stage.terms.size());
  const auto moved = [&](std::int64_t i) {
    return i < 0 || peaks_only ? std::int64_t{-1} : i + out.first_stored;
  };
  if (!peaks_only) stage.terms.insert(stage.terms.end(), memo.terms.begin(), memo.terms.end());
  out.stored_bytes = memo.stored_bytes;
  out.largest_transient_bytes = memo.largest_transient_bytes;
  out.largest_transient = moved(memo.largest_transient);
  out.in_flight_per_chunk.assign(memo.in_flight_per_chunk.begin(), memo.in_flight_per_chunk.end());
  out.chunk_stored_bytes.assign(memo.chunk_stored_bytes.begin(), memo.chunk_stored_bytes.end());
  out.activation_units.assign(memo.activation_units.begin(), memo.activation_units.end());
  out.moment = memo.moment;
  out.moment.transient = moved(memo.moment.transient);
  out.moment.enclosing = moved(memo.moment.enclosing);
  out.fits = memo.fits;
  return true;
}

void keep_activation_memo(EstimateCache& cache, std::size_t slot, const RecomputeConfig& recompute,
                          std::int64_t micro_batches, bool peaks_only, const StageReport& stage,
                          const StageActivationTerms& computed) {
  // Sweeps of peaks change an activation input at every point: only a full estimate is kept (a
  // peaks estimate may take it).
  if (peaks_only || !cache.keep_activations) return;
  StageActivationMemo& memo = cache.activations[slot];
  memo.generation = cache.pieces.generation;
  memo.recompute = recompute;
  memo.micro_batches = micro_batches;
  memo.has_terms = true;
  const std::int64_t first = computed.first_stored;
  // Indices relative to the first of the stage's activation terms.
  const auto relative = [&](std::int64_t i) { return i < 0 ? i : i - first; };
  memo.terms.assign(stage.terms.begin() + static_cast<std::ptrdiff_t>(first), stage.terms.end());
  memo.stored_bytes = computed.stored_bytes;
  memo.largest_transient_bytes = computed.largest_transient_bytes;
  memo.largest_transient = relative(computed.largest_transient);
  memo.in_flight_per_chunk.assign(computed.in_flight_per_chunk.begin(),
                                  computed.in_flight_per_chunk.end());
  memo.chunk_stored_bytes.assign(computed.chunk_stored_bytes.begin(),
                                 computed.chunk_stored_bytes.end());
  memo.activation_units.assign(computed.activation_units.begin(), computed.activation_units.end());
  memo.moment = computed.moment;
  memo.moment.transient = relative(computed.moment.transient);
  memo.moment.enclosing = relative(computed.moment.enclosing);
  memo.fits = computed.fits;
}

}  // namespace stagemem
