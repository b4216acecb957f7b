#include "plan/layout_advisor.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "estimate/estimate.h"
#include "report/report.h"

namespace stagemem {
namespace {

std::string run(char letter, std::int64_t count) {
  if (count <= 0) return {};
  if (count == 1) return std::string(1, letter);
  return std::string(1, letter) + "*" + std::to_string(count);
}

std::string stage_text(const LayoutStageEntry& e) {
  return run('E', e.embedding) + run('t', e.decoder) + run('m', e.mtp) + run('L', e.loss);
}

// One layer assignment the advisor considers: decoder layers per virtual stage, and which virtual
// stage holds the MTP layers.
struct Candidate {
  std::vector<std::int64_t> decoder;
  std::int64_t mtp_stage = 0;
};

std::vector<LayoutStageEntry> entries_of(const Candidate& s, const Model& model) {
  std::vector<LayoutStageEntry> out(s.decoder.size());
  for (std::size_t i = 0; i < out.size(); ++i) out[i].decoder = s.decoder[i];
  out.front().embedding = 1;
  out.back().loss = 1;
  if (model.mtp_layers > 0) out[static_cast<std::size_t>(s.mtp_stage)].mtp = model.mtp_layers;
  return out;
}

// Megatron's rules on top of non-negative counts: no decoder layer follows the MTP layers, and a
// stage holds at least one decoder layer unless it is one of the two kinds Megatron's own
// DeepSeek-V3 layout "Et*3|(tt|)*29,m|L" uses: an MTP-only stage and a loss-only last stage.
bool acceptable(const Candidate& s, const Model& model) {
  const auto count = static_cast<std::int64_t>(s.decoder.size());
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t n = s.decoder[static_cast<std::size_t>(i)];
    if (n < 0) return false;
    const bool mtp_here = model.mtp_layers > 0 && i == s.mtp_stage;
    if (n == 0 && !(i == count - 1 || mtp_here)) return false;
    if (model.mtp_layers > 0 && i > s.mtp_stage && n > 0) return false;
  }
  return true;
}

struct Evaluation {
  bool ok = false;
  std::vector<std::int64_t> peaks;   // per pipeline rank
  std::vector<std::int64_t> sorted;  // descending: the objective
  std::int64_t binding = 0;
};

}  // namespace

std::vector<LayoutStageEntry> layout_entries(const StagePlan& plan) {
  std::vector<LayoutStageEntry> out;
  for (const VirtualStage& v : plan.virtual_stages) {
    out.push_back({.embedding = v.embedding ? 1 : 0,
                   .decoder = v.layer_count,
                   .mtp = v.mtp_layers,
                   .loss = v.head ? 1 : 0});
  }
  return out;
}

std::string pipeline_layout_text(const std::vector<LayoutStageEntry>& stages) {
  std::string out;
  const std::size_t count = stages.size();
  std::size_t i = 0;
  while (i < count) {
    const std::string s = stage_text(stages[i]);
    if (i + 1 == count) {
      out += s;
      break;
    }
    // A run of identical stages that are all followed by a boundary (the last stage is not).
    std::size_t k = 1;
    while (i + k + 1 < count && stage_text(stages[i + k]) == s) ++k;
    out += k >= 2 ? "(" + s + "|)*" + std::to_string(k) : s + "|";
    i += k;
  }
  return out;
}

namespace {

// Estimates candidate splits of one configuration as Megatron layout strings, per-stage numbers
// only, with one EstimateCache (every candidate has the same parallel sizes); counts them.
class CandidateEstimator {
 public:
  CandidateEstimator(const Config& config, const Model& model, std::int64_t& estimates)
      : work_(config), model_(model), estimates_(estimates) {
    work_.parallel.assignment = StageAssignment::layout_string;
    work_.parallel.layers_per_stage.clear();
  }

  // The candidate's per-rank peaks; not ok when Megatron refuses it or the estimate fails.
  Evaluation operator()(const Candidate& s) {
    Evaluation e;
    if (!acceptable(s, model_)) return e;
    work_.parallel.layout_string = pipeline_layout_text(entries_of(s, model_));
    ++estimates_;
    const Report r = estimate(work_, model_, cache_, EstimateDetail::peaks);  // numbers only
    if (!r.diagnostics.ok() || r.stages.empty()) return e;
    e.ok = true;
    for (const StageReport& st : r.stages) e.peaks.push_back(st.peak_bytes);
    e.sorted = e.peaks;
    std::sort(e.sorted.begin(), e.sorted.end(), std::greater<>());
    e.binding = std::max_element(e.peaks.begin(), e.peaks.end()) - e.peaks.begin();
    return e;
  }

 private:
  Config work_;
  const Model& model_;
  std::int64_t& estimates_;
  EstimateCache cache_;
};

// The options and schedule the advisor can work with.
void check_advisor_inputs(const Config& config, const Model& model, const AdvisorOptions& options,
                          Diagnostics& d) {
  if (options.align_attn_res && model.attn_res.block_size <= 0) {
    d.error("advisor.align_attn_res", "the model has no Attention Residual blocks");
  }
  if (options.max_moves < 0 || options.max_moves > 1'000'000) {
    d.error("advisor.max_moves", "must be an integer in [0, 1000000]");
  }
  // Its layout strings place stage i on rank i % PP (Megatron); DualPipeV's V is not searched.
  if (config.parallel.schedule != PipelineSchedule::one_f_one_b) {
    d.error("parallel.schedule",
            "the layout advisor searches Megatron's placement (schedule 1f1b) only; give a "
            "DualPipeV split as parallel.layers_per_stage (2 x PP entries in model order)");
  }
}

// The even split, as `report` would lay it out: the baseline the advice is measured against.
// False (with the estimate's errors) when the configuration is not valid.
bool estimate_even_split(const Config& config, const Model& model, LayoutAdvice& out) {
  Config even = config;
  even.parallel.assignment = StageAssignment::even;
  even.parallel.layers_per_stage.clear();
  even.parallel.layout_string.clear();
  const Report base = estimate(even, model);
  for (const FieldMessage& e : base.diagnostics.errors) out.diagnostics.error(e.field, e.message);
  if (!out.diagnostics.ok()) return false;
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t stages = config.parallel.pipeline_parallel * config.parallel.virtual_stages;
  out.device_bytes = base.device.bytes;
  for (const StageReport& s : base.stages) out.even_stage_peaks.push_back(s.peak_bytes);
  const auto worst = std::max_element(out.even_stage_peaks.begin(), out.even_stage_peaks.end());
  out.even_worst_peak = *worst;
  out.even_binding_stage = worst - out.even_stage_peaks.begin();
  out.even_layout =
      pipeline_layout_text(entries_of({even_split(layers, stages), stages - 1}, model));
  return true;
}

// Starting splits: the even one (or whole AttnRes blocks), MTP on the last stage; with PP > 1
// and MTP layers also MTP on the stage before, the last stage holding only the loss. Empty (with
// an error) when the AttnRes blocks are too few to align.
std::vector<Candidate> starting_splits(const Config& config, const Model& model,
                                       const AdvisorOptions& options, Diagnostics& d) {
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t stages = config.parallel.pipeline_parallel * config.parallel.virtual_stages;
  std::vector<std::int64_t> start = even_split(layers, stages);
  if (options.align_attn_res) {
    start = attn_res_aligned_split(layers, model.attn_res.block_size, stages);
    if (start.empty()) {
      d.error("advisor.align_attn_res", "needs at least one whole AttnRes block per virtual stage");
      return {};
    }
  }
  std::vector<Candidate> starts = {{start, stages - 1}};
  if (model.mtp_layers > 0 && config.parallel.pipeline_parallel > 1 && stages >= 2) {
    Candidate s{start, stages - 2};
    s.decoder[static_cast<std::size_t>(stages - 2)] += s.decoder.back();
    s.decoder.back() = 0;
    starts.push_back(s);
  }
  return starts;
}

// The two pipeline ranks with the largest peaks (a layer must leave the worst rank to lower the
// maximum; the runner-up breaks ties at the top).
std::vector<std::int64_t> worst_two_ranks(const std::vector<std::int64_t>& peaks) {
  std::vector<std::int64_t> order(peaks.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<std::int64_t>(r);
  std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
    return peaks[static_cast<std::size_t>(a)] > peaks[static_cast<std::size_t>(b)];
  });
  order.resize(std::min<std::size_t>(2, order.size()));
  return order;
}

// A split and its estimate.
struct Evaluated {
  Candidate split;
  Evaluation evaluation;
};

// The best single move from `current` (one layer, or one AttnRes block, leaves a virtual stage
// of the two worst ranks for any other stage; the stages between keep their counts and shift by
// one layer), when it lowers the sorted peaks of `now`.
std::optional<Evaluated> best_move(const Candidate& current, const Evaluation& now,
                                   std::int64_t pipeline_parallel, std::int64_t step_size,
                                   CandidateEstimator& evaluate) {
  std::optional<Evaluated> best;
  const std::vector<std::int64_t> sources = worst_two_ranks(now.peaks);
  const auto stages = static_cast<std::int64_t>(current.decoder.size());
  for (std::int64_t i = 0; i < stages; ++i) {
    if (std::find(sources.begin(), sources.end(), i % pipeline_parallel) == sources.end()) continue;
    for (std::int64_t j = 0; j < stages; ++j) {
      if (j == i) continue;
      Candidate next = current;
      next.decoder[static_cast<std::size_t>(i)] -= step_size;
      next.decoder[static_cast<std::size_t>(j)] += step_size;
      Evaluation e = evaluate(next);
      if (!e.ok) continue;
      if (e.sorted < (best ? best->evaluation.sorted : now.sorted)) {
        best = Evaluated{std::move(next), std::move(e)};
      }
    }
  }
  return best;
}

// Steepest descent from `first`: the best single move across any boundary, until none improves
// or after `max_moves`. Not ok when `first` itself cannot be estimated.
Evaluated descend(const Candidate& first, std::int64_t pipeline_parallel, std::int64_t step_size,
                  std::int64_t max_moves, CandidateEstimator& evaluate, std::int64_t& moves) {
  Evaluated now{first, evaluate(first)};
  moves = 0;
  if (!now.evaluation.ok) return now;
  while (moves < max_moves) {
    std::optional<Evaluated> next =
        best_move(now.split, now.evaluation, pipeline_parallel, step_size, evaluate);
    if (!next) break;
    now = std::move(*next);
    ++moves;
  }
  return now;
}

// Stage boundaries of `split` that fall inside an AttnRes block of `block` layers.
std::int64_t attn_res_blocks_split(const Candidate& split, std::int64_t layers,
                                   std::int64_t block) {
  std::int64_t count = 0;
  std::int64_t boundary = 0;
  for (std::size_t i = 0; i + 1 < split.decoder.size(); ++i) {
    boundary += split.decoder[i];
    if (boundary > 0 && boundary < layers && boundary % block != 0) ++count;
  }
  return count;
}

}  // namespace

LayoutAdvice advise_layout(const Config& config, const Model& model,
                           const AdvisorOptions& options) {
  LayoutAdvice out;
  Diagnostics& d = out.diagnostics;
  check_advisor_inputs(config, model, options, d);
  if (!estimate_even_split(config, model, out)) return out;
  const std::vector<Candidate> starts = starting_splits(config, model, options, d);
  if (starts.empty()) return out;

  CandidateEstimator evaluate(config, model, out.estimates);
  const std::int64_t block = model.attn_res.block_size;
  const std::int64_t step_size = options.align_attn_res ? block : 1;
  std::optional<Evaluated> best;
  for (const Candidate& first : starts) {
    std::int64_t moves = 0;
    Evaluated found = descend(first, config.parallel.pipeline_parallel, step_size,
                              options.max_moves, evaluate, moves);
    if (!found.evaluation.ok) continue;
    if (!best || found.evaluation.sorted < best->evaluation.sorted) {
      best = std::move(found);
      out.moves = moves;
    }
  }
  if (!best) {
    d.error("parallel.layout_string", "no layout string Megatron accepts fits this layout");
    return out;
  }
  out.stages = entries_of(best->split, model);
  out.layout = pipeline_layout_text(out.stages);
  out.stage_peaks = best->evaluation.peaks;
  out.worst_peak = best->evaluation.sorted.front();
  out.binding_stage = best->evaluation.binding;
  out.gain_bytes = out.even_worst_peak - out.worst_peak;
  if (block > 0) {
    out.attn_res_blocks_split =
        attn_res_blocks_split(best->split, static_cast<std::int64_t>(model.layers.size()), block);
  }
  return out;
}

}  // namespace stagemem
