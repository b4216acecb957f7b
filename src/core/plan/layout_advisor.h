// layout_advisor.h — uneven assignments of layers to (virtual) pipeline stages that lower the
// worst stage's peak, written as Megatron's --pipeline-model-parallel-layout.
//
// Purpose: for one fixed parallel layout (TP, PP, VPP, CP, EP, DP, micro-batch, recompute), find
// how many decoder layers each virtual stage should hold, and where the MTP layers go, so that the
// largest per-rank peak is as small as possible; report the layout string and the gain over the
// even split.
//
// What Megatron accepts (pipeline_layout_string.h, layout.h assign_layout_string): one 'E' first
// on the first virtual stage, one 'L' last on the last; every decoder layer before every MTP
// layer; all MTP layers in one stage, in the last virtual chunk of its pipeline rank. The advisor
// keeps the embedding on the first and the loss on the last stage (Megatron's rule), and tries the
// MTP layers on the last stage and, with PP > 1, on the stage before it (the last stage then holds
// only the loss, as in DeepSeek-V3's "...|m|L"). Every other stage keeps at least one decoder
// layer.
//
// Search: steepest descent from the even split. A move takes one layer (or one whole AttnRes
// block with `align_attn_res`) from a virtual stage of one of the two ranks with the largest
// peaks and gives it to any other virtual stage (the stages between keep their counts); a move is
// taken when it lowers the per-rank peaks sorted from largest down, compared lexicographically (the
// worst first, then the next worst, ...), so ties at the top do not stall it. It stops when no move
// improves, or after max_moves. Each candidate is a full estimate (the same core as `report`).
// AttnRes block boundaries: a stage boundary inside a block makes the next stage receive the
// partial block sum; the estimate charges it, and the advice reports how many blocks it splits.
// Units: bytes (int64).
// Limitations: a local optimum of single-layer moves, not a proof of optimality; the
// micro-batch schedule is the configuration's (no zero-bubble variants); schedule dualpipev is
// refused (parallel.schedule): its V placement is not a Megatron layout string.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "model/model.h"
#include "parallel/layout.h"
#include "parallel/pipeline_layout_string.h"

namespace stagemem {

// The letters of every virtual stage of a plan (E, t, m, L counts), in pipeline order.
std::vector<LayoutStageEntry> layout_entries(const StagePlan& plan);
// The compact Megatron string of those entries, e.g. "Et*6|(t*6|)*14,t*5L": runs of a letter as
// X*N, runs of identical stages as (...|)*N. parse_pipeline_layout_string reads it back unchanged.
std::string pipeline_layout_text(const std::vector<LayoutStageEntry>& stages);

struct AdvisorOptions {
  bool align_attn_res = false;  // move whole AttnRes blocks only (boundaries at block multiples)
  std::int64_t max_moves = 1000;
};

struct LayoutAdvice {
  Diagnostics diagnostics;  // errors: the configuration is not valid; nothing was advised
  std::vector<std::int64_t> even_stage_peaks;  // per pipeline rank
  std::int64_t even_worst_peak = 0;
  std::int64_t even_binding_stage = 0;
  std::string even_layout;               // the even split as a layout string
  std::vector<LayoutStageEntry> stages;  // advised, per virtual stage
  std::string layout;                    // advised, Megatron's string
  std::vector<std::int64_t> stage_peaks;
  std::int64_t worst_peak = 0;
  std::int64_t binding_stage = 0;
  std::int64_t gain_bytes = 0;  // even worst peak - advised worst peak (>= 0)
  std::int64_t device_bytes = 0;
  std::int64_t attn_res_blocks_split = 0;  // stage boundaries inside an AttnRes block
  std::int64_t moves = 0;
  std::int64_t estimates = 0;
};

// `config`'s own layer assignment is ignored: the advisor starts from the even split.
LayoutAdvice advise_layout(const Config& config, const Model& model,
                           const AdvisorOptions& options = {});

}  // namespace stagemem
