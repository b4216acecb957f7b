#include "plan/layout_advisor.h"

#include <algorithm>
#include <functional>

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

LayoutAdvice advise_layout(const Config& config, const Model& model,
                           const AdvisorOptions& options) {
  LayoutAdvice out;
  Diagnostics& d = out.diagnostics;
  const ParallelLayout& p = config.parallel;
  const auto layers = static_cast<std::int64_t>(model.layers.size());
  const std::int64_t stages = p.pipeline_parallel * p.virtual_stages;
  const std::int64_t block = model.attn_res.block_size;
  if (options.align_attn_res && block <= 0) {
    d.error("advisor.align_attn_res", "the model has no Attention Residual blocks");
  }
  if (options.max_moves < 0 || options.max_moves > 1'000'000) {
    d.error("advisor.max_moves", "must be an integer in [0, 1000000]");
  }
  // Its layout strings place stage i on rank i % PP (Megatron); DualPipeV's V is not searched.
  if (p.schedule != PipelineSchedule::one_f_one_b) {
    d.error("parallel.schedule",
            "the layout advisor searches Megatron's placement (schedule 1f1b) only; give a "
            "DualPipeV split as parallel.layers_per_stage (2 x PP entries in model order)");
  }
  // The even split, as `report` would lay it out: the baseline and the start.
  Config even = config;
  even.parallel.assignment = StageAssignment::even;
  even.parallel.layers_per_stage.clear();
  even.parallel.layout_string.clear();
  const Report base = estimate(even, model);
  for (const FieldMessage& e : base.diagnostics.errors) d.error(e.field, e.message);
  if (!d.ok()) return out;
  out.device_bytes = base.device.bytes;
  for (const StageReport& s : base.stages) out.even_stage_peaks.push_back(s.peak_bytes);
  out.even_worst_peak = *std::max_element(out.even_stage_peaks.begin(), out.even_stage_peaks.end());
  out.even_binding_stage =
      std::max_element(out.even_stage_peaks.begin(), out.even_stage_peaks.end()) -
      out.even_stage_peaks.begin();
  out.even_layout =
      pipeline_layout_text(entries_of({even_split(layers, stages), stages - 1}, model));

  Config work = config;
  work.parallel.assignment = StageAssignment::layout_string;
  work.parallel.layers_per_stage.clear();
  EstimateCache cache;
  const auto evaluate = [&](const Candidate& s) {
    Evaluation e;
    if (!acceptable(s, model)) return e;
    work.parallel.layout_string = pipeline_layout_text(entries_of(s, model));
    ++out.estimates;
    const Report r = estimate(work, model, cache, EstimateDetail::peaks);  // numbers only
    if (!r.diagnostics.ok() || r.stages.empty()) return e;
    e.ok = true;
    for (const StageReport& st : r.stages) e.peaks.push_back(st.peak_bytes);
    e.sorted = e.peaks;
    std::sort(e.sorted.begin(), e.sorted.end(), std::greater<>());
    e.binding = std::max_element(e.peaks.begin(), e.peaks.end()) - e.peaks.begin();
    return e;
  };

  // Starting splits: the even one (or whole AttnRes blocks), MTP on the last stage; with PP > 1
  // and MTP layers also MTP on the stage before, the last stage holding only the loss.
  std::vector<std::int64_t> start = even_split(layers, stages);
  const std::int64_t step_size = options.align_attn_res ? block : 1;
  if (options.align_attn_res) {
    start = attn_res_aligned_split(layers, block, stages);
    if (start.empty()) {
      d.error("advisor.align_attn_res", "needs at least one whole AttnRes block per virtual stage");
      return out;
    }
  }
  std::vector<Candidate> starts = {{start, stages - 1}};
  if (model.mtp_layers > 0 && p.pipeline_parallel > 1 && stages >= 2) {
    Candidate s{start, stages - 2};
    s.decoder[static_cast<std::size_t>(stages - 2)] += s.decoder.back();
    s.decoder.back() = 0;
    starts.push_back(s);
  }

  bool found = false;
  Candidate best_split;
  Evaluation best;
  for (const Candidate& first : starts) {
    Candidate current = first;
    Evaluation now = evaluate(current);
    if (!now.ok) continue;
    std::int64_t moves = 0;
    while (moves < options.max_moves) {
      // Steepest descent: the best single move across any boundary.
      Candidate best_move;
      Evaluation best_eval;
      bool improved = false;
      // Sources: the virtual stages of the two ranks with the largest peaks (a layer must leave
      // the worst rank to lower the maximum; the runner-up breaks ties at the top).
      std::vector<std::int64_t> order(now.peaks.size());
      for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<std::int64_t>(r);
      std::stable_sort(order.begin(), order.end(), [&](std::int64_t a, std::int64_t b) {
        return now.peaks[static_cast<std::size_t>(a)] > now.peaks[static_cast<std::size_t>(b)];
      });
      order.resize(std::min<std::size_t>(2, order.size()));
      for (std::int64_t i = 0; i < stages; ++i) {
        if (std::find(order.begin(), order.end(), i % p.pipeline_parallel) == order.end()) continue;
        for (std::int64_t j = 0; j < stages; ++j) {
          if (j == i) continue;
          // One layer (or block) leaves stage i for stage j; the stages between keep their
          // counts and shift by one layer.
          Candidate next = current;
          next.decoder[static_cast<std::size_t>(i)] -= step_size;
          next.decoder[static_cast<std::size_t>(j)] += step_size;
          if (!acceptable(next, model)) continue;
          Evaluation e = evaluate(next);
          if (!e.ok) continue;
          if (e.sorted < (improved ? best_eval.sorted : now.sorted)) {
            best_move = std::move(next);
            best_eval = std::move(e);
            improved = true;
          }
        }
      }
      if (!improved) break;
      current = std::move(best_move);
      now = std::move(best_eval);
      ++moves;
    }
    if (!found || now.sorted < best.sorted) {
      found = true;
      best = now;
      best_split = current;
      out.moves = moves;
    }
  }
  if (!found) {
    d.error("parallel.layout_string", "no layout string Megatron accepts fits this layout");
    return out;
  }
  out.stages = entries_of(best_split, model);
  out.layout = pipeline_layout_text(out.stages);
  out.stage_peaks = best.peaks;
  out.worst_peak = best.sorted.front();
  out.binding_stage = best.binding;
  out.gain_bytes = out.even_worst_peak - out.worst_peak;
  if (block > 0) {
    std::int64_t boundary = 0;
    for (std::int64_t i = 0; i + 1 < stages; ++i) {
      boundary += best_split.decoder[static_cast<std::size_t>(i)];
      if (boundary > 0 && boundary < layers && boundary % block != 0) ++out.attn_res_blocks_split;
    }
  }
  return out;
}

}  // namespace stagemem
