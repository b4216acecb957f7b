// estimate.cpp — the orchestration: plan the stages, then collect each stage's terms from the
// modules that own their physics (resident_terms, gaps), then the device check and cross-checks.
#include <algorithm>
#include <limits>
#include <utility>

#include "estimate/estimate.h"
#include "memory/activation_terms.h"

#include "config/devices.h"
#include "estimate/cross_check.h"
#include "memory/gaps.h"
#include "memory/optimizer_transients.h"
#include "memory/resident_terms.h"
#include "model/presets.h"
#include "parallel/schedule.h"
#include "report/report.h"
#include "report/term_names.h"

namespace stagemem {

namespace {

// The virtual chunks a pipeline rank holds, in order.
std::vector<const VirtualStage*> chunks_of(const StagePlan& plan, std::int64_t rank) {
  std::vector<const VirtualStage*> out;
  for (const VirtualStage& v : plan.virtual_stages) {
    if (v.pipeline_rank == rank) out.push_back(&v);
  }
  return out;
}

// Whether two ranks keep exactly the same activations and transients: the same layer kinds in
// the same chunks, the same embedding / head / MTP duties and the same micro-batches in flight.
// AttnRes slots depend on where a chunk sits in the model, so a model with AttnRes never shares.
// Equal warm-up counts mean the same order of passes (schedule.h), hence the same peak moment.
bool same_activation_inputs(const Model& model, const StagePlan& plan, const StageReport& a,
                            std::int64_t b, std::int64_t micro_batches) {
  // DualPipeV's phase counts depend on the rank itself, so no two ranks run the same order.
  if (model.attn_res.block_size > 0 || plan.schedule == PipelineSchedule::dualpipev ||
      warmup_forwards(plan.pipeline_ranks, plan.chunks_per_rank, a.index, micro_batches) !=
          warmup_forwards(plan.pipeline_ranks, plan.chunks_per_rank, b, micro_batches)) {
    return false;
  }
  const auto ca = chunks_of(plan, a.index);
  const auto cb = chunks_of(plan, b);
  if (ca.size() != cb.size()) return false;
  for (std::size_t i = 0; i < ca.size(); ++i) {
    const VirtualStage& x = *ca[i];
    const VirtualStage& y = *cb[i];
    if (x.layer_count != y.layer_count || x.embedding != y.embedding || x.head != y.head ||
        x.mtp_layers != y.mtp_layers) {
      return false;
    }
    for (std::int64_t l = 0; l < x.layer_count; ++l) {
      const LayerKind& p = model.layers[static_cast<std::size_t>(x.first_layer + l)];
      const LayerKind& q = model.layers[static_cast<std::size_t>(y.first_layer + l)];
      if (p.attention != q.attention || p.mlp != q.mlp) return false;
    }
  }
  return true;
}

// Copies an identical earlier rank's activation and transient terms (same_activation_inputs);
// the recompute working set names its layers, so they move with the chunk they belong to.
StageActivationTerms copy_activation_terms(const StageReport& from, std::int64_t first,
                                           std::int64_t end, const StagePlan& plan, StageReport& to,
                                           bool fits) {
  StageActivationTerms copied;
  copied.first_stored = static_cast<std::int64_t>(to.terms.size());
  copied.stored_bytes = from.activation_bytes;
  copied.largest_transient_bytes = from.largest_transient_bytes;
  const auto moved = [&](std::int64_t i) { return i < 0 ? -1 : i - first + copied.first_stored; };
  copied.largest_transient = moved(from.largest_transient);
  copied.in_flight_per_chunk = from.in_flight_per_chunk;
  copied.chunk_stored_bytes = from.chunk_stored_bytes;
  copied.moment = from.forward_backward_moment;
  copied.moment.transient = moved(copied.moment.transient);
  copied.moment.enclosing = moved(copied.moment.enclosing);
  copied.fits = fits;
  const auto ca = chunks_of(plan, from.index);
  const auto cb = chunks_of(plan, to.index);
  for (std::int64_t i = first; i < end; ++i) {
    Term t = from.terms[static_cast<std::size_t>(i)];
    if (t.info->text == TermText::recompute_group) {
      const std::int64_t group_first = t.formula.factor(1);
      for (std::size_t c = 0; c < ca.size(); ++c) {
        if (group_first < ca[c]->first_layer ||
            group_first >= ca[c]->first_layer + ca[c]->layer_count) {
          continue;
        }
        const std::int64_t shift = cb[c]->first_layer - ca[c]->first_layer;
        t.formula = Formula()
                        .number(t.formula.factor(0))
                        .number(group_first + shift)
                        .number(t.formula.factor(2) + shift);
        break;
      }
    }
    to.terms.push_back(t);
  }
  return copied;
}

// The stage's activation and transient terms from `memo` when it was computed for the same
// inputs; false when it was not.
bool take_memo(const StageActivationMemo& memo, std::uint64_t generation,
               const RecomputeConfig& recompute, std::int64_t micro_batches, bool peaks_only,
               StageReport& stage, StageActivationTerms& out) {
  if (memo.generation != generation || memo.micro_batches != micro_batches ||
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
  out.moment = memo.moment;
  out.moment.transient = moved(memo.moment.transient);
  out.moment.enclosing = moved(memo.moment.enclosing);
  out.fits = memo.fits;
  return true;
}

// Keeps the stage's activation and transient terms just computed (stage.terms from
// computed.first_stored on) and their numbers, with indices relative to the first of them.
void keep_memo(StageActivationMemo& memo, std::uint64_t generation,
               const RecomputeConfig& recompute, std::int64_t micro_batches,
               const StageReport& stage, const StageActivationTerms& computed) {
  memo.generation = generation;
  memo.recompute = recompute;
  memo.micro_batches = micro_batches;
  memo.has_terms = true;
  const std::int64_t first = computed.first_stored;
  const auto relative = [&](std::int64_t i) { return i < 0 ? i : i - first; };
  memo.terms.assign(stage.terms.begin() + first, stage.terms.end());
  memo.stored_bytes = computed.stored_bytes;
  memo.largest_transient_bytes = computed.largest_transient_bytes;
  memo.largest_transient = relative(computed.largest_transient);
  memo.in_flight_per_chunk.assign(computed.in_flight_per_chunk.begin(),
                                  computed.in_flight_per_chunk.end());
  memo.chunk_stored_bytes.assign(computed.chunk_stored_bytes.begin(),
                                 computed.chunk_stored_bytes.end());
  memo.moment = computed.moment;
  memo.moment.transient = relative(computed.moment.transient);
  memo.moment.enclosing = relative(computed.moment.enclosing);
  memo.fits = computed.fits;
}

// Appends the stage's activation and transient terms (computed, taken from `memo`, or copied from
// `same`, an identical earlier rank) and decides which phase peaks: forward/backward (the step
// timeline's largest moment: stored activations alive then + the transients alive then) or the
// optimizer step (its transients). False when a term's bytes do not fit in int64.
// The optimizer step's transients are `optimizer_step` and `kept_input` (summing to
// `optimizer_step_bytes`, -1 when they do not fit). `memo` holds the stage's activation terms
// of an earlier estimate (taken when its inputs are the same, else replaced).
bool add_activation_phases(StageReport& stage, const Model& model, const Config& config,
                           const StagePlan& plan, const std::vector<Term>& optimizer_step,
                           const std::vector<Term>& kept_input, std::int64_t optimizer_step_bytes,
                           std::int64_t micro_batches, LayerPieceCache& cache,
                           StageActivationMemo& memo, bool keep, bool peaks_only,
                           const StageReport* same, std::int64_t same_first, std::int64_t same_end,
                           bool same_fits) {
  const RecomputeConfig& recompute = config.training.recompute;
  StageActivationTerms activations;
  activations.in_flight_per_chunk = std::move(cache.spare_in_flight);
  activations.chunk_stored_bytes = std::move(cache.spare_chunk_bytes);
  if (!take_memo(memo, cache.generation, recompute, micro_batches, peaks_only, stage,
                 activations)) {
    if (same != nullptr) {
      activations = copy_activation_terms(*same, same_first, same_end, plan, stage, same_fits);
    } else {
      cache.spare_in_flight = std::move(activations.in_flight_per_chunk);
      cache.spare_chunk_bytes = std::move(activations.chunk_stored_bytes);
      activations =
          stage_activation_terms(model, config.parallel, config.training, plan, stage.index,
                                 micro_batches, cache, &stage.terms, peaks_only);
    }
    // Sweeps of peaks change an activation input at every point: only a full estimate is kept
    // (a peaks estimate may take it).
    if (!peaks_only && keep) {
      keep_memo(memo, cache.generation, recompute, micro_batches, stage, activations);
    }
  }
  const auto first_optimizer = static_cast<std::int64_t>(stage.terms.size());
  if (!peaks_only) {
    stage.terms.insert(stage.terms.end(), optimizer_step.begin(), optimizer_step.end());
    stage.terms.insert(stage.terms.end(), kept_input.begin(), kept_input.end());
  }
  stage.activation_bytes = activations.stored_bytes;
  stage.largest_transient_bytes = activations.largest_transient_bytes;
  stage.largest_transient = activations.largest_transient;
  // The stage's old lists keep their storage for the next stage_activation_terms call.
  std::swap(stage.in_flight_per_chunk, activations.in_flight_per_chunk);
  std::swap(stage.chunk_stored_bytes, activations.chunk_stored_bytes);
  cache.spare_in_flight = std::move(activations.in_flight_per_chunk);
  cache.spare_chunk_bytes = std::move(activations.chunk_stored_bytes);
  stage.forward_backward_moment = activations.moment;
  bool fits = activations.fits && optimizer_step_bytes >= 0;
  stage.optimizer_transient_bytes = std::max<std::int64_t>(optimizer_step_bytes, 0);
  std::int64_t forward_backward = 0;
  fits =
      fits && checked_add(stage.activation_bytes, stage.largest_transient_bytes, &forward_backward);
  stage.optimizer_phase_binds = stage.optimizer_transient_bytes > forward_backward;
  if (peaks_only) return fits;
  // Stored activations are part of the peak only when the forward/backward phase binds; of the
  // phase's transients only those alive at its peak moment are co-live with them.
  const auto end = static_cast<std::size_t>(first_optimizer);
  for (auto i = static_cast<std::size_t>(activations.first_stored); i < end; ++i) {
    Term& t = stage.terms[i];
    const auto index = static_cast<std::int64_t>(i);
    t.counts_in_peak = !stage.optimizer_phase_binds &&
                       (t.family == Family::activation || index == activations.moment.transient ||
                        index == activations.moment.enclosing);
  }
  for (auto i = end; i < stage.terms.size(); ++i) {
    stage.terms[i].allocated_at = AllocationPoint::optimizer_step;
    stage.terms[i].counts_in_peak = stage.optimizer_phase_binds;
  }
  return fits;
}

bool add_bytes(std::int64_t& total, std::int64_t bytes) {
  return bytes >= 0 && bytes != std::numeric_limits<std::int64_t>::max() &&
         checked_add(total, bytes, &total);
}

// The bytes of `terms`, -1 when they do not fit in int64.
std::int64_t sum_of(const std::vector<Term>& terms) {
  std::int64_t total = 0;
  for (const Term& t : terms) {
    if (!add_bytes(total, t.bytes)) return -1;
  }
  return total;
}

// Names what drives the first term that does not fit: its formula's factors, as the fields a user
// changes ("seq x mbs x layers on the stage x micro-batches in flight").
FieldMessage overflow_error(const StageReport& stage) {
  const Term* culprit = nullptr;
  for (const Term& t : stage.terms) {
    if (t.formula.overflowed() || t.bytes < 0 ||
        t.bytes == std::numeric_limits<std::int64_t>::max()) {
      culprit = &t;
      break;
    }
  }
  // Canonical order: seq, mbs, the model's widths, then the stage's layers and micro-batches.
  bool seq = false, mbs = false, layers = false;
  std::string widths;
  std::string name = "the sum of its terms";
  if (culprit != nullptr) {
    name = term_name(*culprit);
    const Formula& f = culprit->formula;
    for (int i = 0; i < f.size(); ++i) {
      const std::string_view label = label_text(f.label(i));
      if (f.op(i) == FactorOp::value || f.op(i) == FactorOp::bytes || label.empty()) continue;
      if (label == "S/CP" || label == "S") {
        seq = true;
      } else if (label == "B") {
        mbs = true;
      } else if (widths.find(label) == std::string::npos) {
        widths += widths.empty() ? "" : " x ";
        widths += label;
      }
    }
    layers = culprit->copies > 0;
  }
  std::string drivers;
  const auto add = [&](std::string_view what) {
    drivers += drivers.empty() ? "" : " x ";
    drivers += what;
  };
  if (seq) add("seq");
  if (mbs) add("mbs");
  if (!widths.empty()) add(widths);
  if (layers) add("layers on the stage x micro-batches in flight");
  if (drivers.empty()) add("parameters on the stage");
  const std::string field = seq   ? "training.sequence_length"
                            : mbs ? "training.micro_batch"
                                  : "model";
  return {.field = field,
          .message = drivers + " (" + name + ")" + " exceeds 2^63 bytes on stage " +
                     std::to_string(stage.index) +
                     "; no device holds that: lower the driving fields"};
}

}  // namespace

Report estimate(const Config& config) {
  Diagnostics d;
  const auto model = resolve_model(config, d);
  if (!model) {
    Report report;
    report.model = config.custom_model.empty() ? config.model : "custom";
    report.diagnostics = std::move(d);
    return report;
  }
  return estimate(config, *model);
}

Report estimate(const Config& config, const Model& model) {
  EstimateCache cache;
  cache.keep_activations = false;  // thrown away after this estimate
  return estimate(config, model, cache);
}

Report estimate(const Config& config, const Model& model, EstimateCache& cache,
                EstimateDetail detail) {
  Report report;
  estimate_into(config, model, cache, report, detail);
  return report;
}

namespace {

// Empties a stage kept from an earlier estimate, keeping its lists' storage.
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

}  // namespace

void estimate_into(const Config& config, const Model& model, EstimateCache& cache, Report& report,
                   EstimateDetail detail) {
  const bool peaks_only = detail == EstimateDetail::peaks;
  // Every field is set again; the stages' lists keep their storage.
  // (An estimate that ends in an error leaves them in the cache for the next one.)
  std::vector<StageReport> kept_stages = std::move(report.stages);
  if (kept_stages.empty()) std::swap(kept_stages, cache.spare_stages);
  report.model.assign(model.name);
  report.total_parameters = 0;
  report.data_parallel = 1;
  report.expert_data_parallel = 1;
  report.micro_batches = 0;
  report.schedule = config.parallel.schedule;
  report.flat_headroom_bytes = 0;
  report.stages.clear();
  report.device = {};
  report.binding_stage = -1;
  report.cross_checks.clear();
  if (cache.model != &model) {
    cache.model = &model;
    cache.total_parameters = total_parameters(model);
    cache.layout = ParallelLayout{};
    cache.layout.pipeline_parallel = -1;  // no layout cached yet
  }
  if (!(cache.layout == config.parallel)) {
    cache.layout = config.parallel;
    cache.layout_diagnostics = {};
    validate_layout(model, config.parallel, cache.layout_diagnostics);
    cache.plan.reset();
    cache.parameters.clear();
    cache.parameters_per_rank.clear();
    cache.state_terms_valid = false;
    cache.pieces = {};
    cache.activations.clear();
    cache.gap_terms.clear();
    cache.kept_input_generation = 0;  // a new piece cache counts its generations from the start
    if (cache.layout_diagnostics.ok()) {
      Diagnostics repeated;  // validate_layout already reported the plan's warnings
      cache.plan = plan_stages(model, config.parallel, repeated);
      if (!cache.plan) {
        cache.layout_diagnostics.errors.insert(cache.layout_diagnostics.errors.end(),
                                               repeated.errors.begin(), repeated.errors.end());
      } else {
        cache.parameters = stage_parameters(model, config.parallel, *cache.plan);
        cache.parameters_per_rank.clear();
        for (const StageParameters& p : cache.parameters) {
          cache.parameters_per_rank.push_back(p.per_rank.total());
        }
      }
    }
  }
  report.diagnostics = cache.layout_diagnostics;
  validate_beyond_layout(config, model, report.diagnostics);
  if (!report.diagnostics.ok()) {
    cache.spare_stages = std::move(kept_stages);
    return;
  }
  report.total_parameters = cache.total_parameters;
  report.data_parallel = data_parallel_size(config.parallel);
  report.expert_data_parallel = expert_data_parallel_size(config.parallel);
  report.flat_headroom_bytes = config.training.flat_headroom_bytes;
  report.micro_batches =
      micro_batches_per_step(config.training.global_batch, config.training.micro_batch,
                             report.data_parallel, report.diagnostics);
  if (!report.diagnostics.ok()) {
    cache.spare_stages = std::move(kept_stages);
    return;
  }

  const StagePlan& plan = *cache.plan;
  if (config.device.bytes > 0) {
    report.device = {.name = "custom",
                     .bytes = config.device.bytes,
                     .source = "entered by the user (device.bytes)"};
  } else if (const auto device = find_device(config.device.preset)) {
    report.device = {
        .name = std::string(device->name), .bytes = device->bytes, .source = device->source};
  }
  if (!cache.state_terms_valid || !(cache.precision == config.precision) ||
      !(cache.optimizer == config.optimizer)) {
    const StateShards shards = state_shards(config.optimizer.kind, config.parallel);
    cache.precision = config.precision;
    cache.optimizer = config.optimizer;
    cache.resident_terms.assign(cache.parameters.size(), {});
    cache.optimizer_step_terms.assign(cache.parameters.size(), {});
    for (std::size_t i = 0; i < cache.parameters.size(); ++i) {
      cache.resident_terms[i].reserve(12);
      cache.optimizer_step_terms[i].reserve(2);
      append_resident_terms(cache.parameters[i].per_rank_roles, config.precision, config.optimizer,
                            shards, cache.resident_terms[i]);
      append_dummy_wgrad_terms(model, cache.parameters[i], config.parallel, config.precision,
                               cache.resident_terms[i]);
      append_optimizer_step_transients(model, cache.parameters[i], config.parallel,
                                       config.optimizer, cache.optimizer_step_terms[i],
                                       config.precision);
    }
    cache.resident_sums.clear();
    cache.optimizer_step_sums.clear();
    for (std::size_t i = 0; i < cache.parameters.size(); ++i) {
      cache.resident_sums.push_back(sum_of(cache.resident_terms[i]));
      cache.optimizer_step_sums.push_back(sum_of(cache.optimizer_step_terms[i]));
    }
    cache.state_terms_valid = true;
  }
  if (!(cache.gaps_key == config.gaps) ||
      cache.workspaces_key != config.training.kernels.gemm_workspaces ||
      cache.gap_terms.size() != cache.parameters.size()) {
    cache.gaps_key = config.gaps;
    cache.workspaces_key = config.training.kernels.gemm_workspaces;
    cache.gap_terms.assign(cache.parameters.size(), {});
  }
  prepare_piece_cache(cache.pieces, config.training);
  LayerPieceCache& piece_cache = cache.pieces;
  if (cache.kept_input_generation != piece_cache.generation ||
      cache.kept_input_terms.size() != cache.parameters.size()) {
    cache.kept_input_generation = piece_cache.generation;
    cache.kept_input_terms.assign(cache.parameters.size(), {});
    cache.kept_input_sums.assign(cache.parameters.size(), 0);
    for (std::size_t i = 0; i < cache.parameters.size(); ++i) {
      append_kept_pipeline_input_terms(model, config.parallel, config.training, plan,
                                       cache.parameters[i].pipeline_rank,
                                       cache.kept_input_terms[i]);
      cache.kept_input_sums[i] = sum_of(cache.kept_input_terms[i]);
    }
  }
  std::int64_t largest = -1;
  // Per stage computed so far: where its activation terms are and whether they fit.
  std::vector<StageTermRange>& activation_ranges = cache.activation_ranges;
  activation_ranges.clear();
  report.stages = std::move(kept_stages);
  report.stages.reserve(cache.parameters.size());
  std::size_t stage_count = 0;
  for (const StageParameters& parameters : cache.parameters) {
    if (stage_count == report.stages.size()) report.stages.emplace_back();
    StageReport& stage = report.stages[stage_count];
    reset_stage(stage);
    stage.index = parameters.pipeline_rank;
    stage.first_layer = parameters.first_layer;
    stage.layer_count = parameters.layer_count;
    for (const VirtualStage& v : parameters.chunks) {
      stage.chunks.push_back({.first = v.first_layer, .count = v.layer_count});
    }
    const std::size_t stage_slot = stage_count;
    stage.parameters_per_rank = cache.parameters_per_rank[stage_slot];
    const std::vector<Term>& resident = cache.resident_terms[stage_slot];
    if (!peaks_only) {
      stage.terms.reserve(48);
      stage.terms.insert(stage.terms.end(), resident.begin(), resident.end());
    }
    bool fits = cache.resident_sums[stage_slot] >= 0;
    stage.resident_bytes = std::max<std::int64_t>(cache.resident_sums[stage_slot], 0);
    // An identical earlier rank (same layer kinds, duties and micro-batches in flight) is not
    // computed again.
    const StageReport* same = nullptr;
    std::size_t same_slot = 0;
    for (std::size_t r = 0; r < stage_count && model.attn_res.block_size == 0; ++r) {
      if (same_activation_inputs(model, plan, report.stages[r], stage.index,
                                 report.micro_batches)) {
        same = &report.stages[r];
        same_slot = r;
        break;
      }
    }
    const auto first_activation = static_cast<std::int64_t>(stage.terms.size());
    // The optimizer step also holds the pipeline input the model keeps past the step.
    const std::vector<Term>& optimizer_step = cache.optimizer_step_terms[stage_slot];
    const std::vector<Term>& kept_input = cache.kept_input_terms[stage_slot];
    std::int64_t optimizer_step_bytes = cache.optimizer_step_sums[stage_slot];
    if (optimizer_step_bytes >= 0 &&
        (cache.kept_input_sums[stage_slot] < 0 ||
         !checked_add(optimizer_step_bytes, cache.kept_input_sums[stage_slot],
                      &optimizer_step_bytes))) {
      optimizer_step_bytes = -1;
    }
    if (cache.activations.size() <= stage_slot) cache.activations.resize(stage_slot + 1);
    const bool activation_fits = add_activation_phases(
        stage, model, config, plan, optimizer_step, kept_input, optimizer_step_bytes,
        report.micro_batches, piece_cache, cache.activations[stage_slot], cache.keep_activations,
        peaks_only, same, same ? activation_ranges[same_slot].first : 0,
        same ? activation_ranges[same_slot].end : 0,
        same ? activation_ranges[same_slot].fits : true);
    activation_ranges.push_back(
        {.first = first_activation,
         .end = first_activation +
                (peaks_only
                     ? 0
                     : static_cast<std::int64_t>(stage.terms.size()) - first_activation -
                           static_cast<std::int64_t>(optimizer_step.size() + kept_input.size())),
         .fits = activation_fits});
    fits = activation_fits && fits;
    const bool grouped_gemm = parameters.per_rank_split.expert() > 0;
    if (peaks_only) {
      fits = fits && add_bytes(stage.gap_bytes, gap_bytes(stage.index, config.gaps));
      fits = fits && add_bytes(stage.resident_bytes,
                               library_workspace_bytes(stage.index, config.gaps,
                                                       config.training.kernels.gemm_workspaces,
                                                       grouped_gemm));
    } else {
      // The library workspace and gap terms, built once per gap entries and workspace choice.
      StageGapTerms& kept = cache.gap_terms[stage_slot];
      if (!kept.valid) {
        kept.terms.clear();
        append_library_workspace_terms(stage.index, config.gaps,
                                       config.training.kernels.gemm_workspaces, grouped_gemm,
                                       kept.terms);
        kept.workspace_count = kept.terms.size();
        append_gap_terms(stage.index, config.gaps, kept.terms);
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
      }
      const auto first_workspace = stage.terms.size();
      stage.terms.insert(stage.terms.end(), kept.terms.begin(), kept.terms.end());
      for (std::size_t i = 0; i < kept.terms.size(); ++i) {
        Term& t = stage.terms[first_workspace + i];
        // A MEASURED source is the text of this configuration's entry (equal to the one the
        // terms were built from, perhaps in another Config object).
        if (kept.entry[i] >= 0)
          t.source = config.gaps[static_cast<std::size_t>(kept.entry[i])].source;
        fits = fits && add_bytes(i < kept.workspace_count ? stage.resident_bytes : stage.gap_bytes,
                                 t.bytes);
      }
    }
    std::int64_t phase = stage.optimizer_transient_bytes;
    if (!stage.optimizer_phase_binds) {
      phase = stage.activation_bytes;
      fits = fits && add_bytes(phase, stage.largest_transient_bytes);
    }
    stage.peak_bytes = stage.resident_bytes;
    fits =
        fits && add_bytes(stage.peak_bytes, stage.gap_bytes) && add_bytes(stage.peak_bytes, phase);
    if (!fits) {
      // The terms name what overflows: build them to say so.
      if (peaks_only) return estimate_into(config, model, cache, report, EstimateDetail::terms);
      report.diagnostics.errors.push_back(overflow_error(stage));
      cache.spare_stages = std::move(report.stages);
      report.stages.clear();
      report.binding_stage = -1;
      return;
    }
    stage.non_parameter_bytes = phase;
    if (config.training.flat_headroom_bytes > 0) {
      stage.flat_headroom_margin = config.training.flat_headroom_bytes - phase;
    }
    if (report.device.bytes > 0) stage.headroom_bytes = report.device.bytes - stage.peak_bytes;
    if (stage.peak_bytes > largest) {
      largest = stage.peak_bytes;
      report.binding_stage = stage.index;
    }
    ++stage_count;
  }
  report.stages.resize(stage_count);
  if (!peaks_only) {
    report.cross_checks = cross_check(config.measurements, report.stages, report.diagnostics);
  }
}

}  // namespace stagemem
