#include "render/term_text.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "base/units.h"
#include "memory/gaps.h"
#include "memory/resident_terms.h"
#include "model/parameters.h"
#include "report/term_info.h"

namespace stagemem {
namespace {

std::string_view attention_label(std::int64_t kind) {
  switch (static_cast<AttentionKind>(kind)) {
    case AttentionKind::gqa:
      return "GQA";
    case AttentionKind::mla:
      return "MLA";
    case AttentionKind::kda:
      return "KDA";
  }
  return "attention";
}

std::string shard_text(std::int64_t expert, std::int64_t shards, std::int64_t distributed) {
  if (distributed == 0) return "not sharded: one full copy per rank";
  return std::string("sharded over ") + (expert != 0 ? "expert DP = " : "DP x CP = ") +
         group_digits(shards);
}

// "ceil(N / d) = <bytes> x <shard>" over d > 1 ranks; "N" alone when nothing is divided.
std::string sharded_count(std::int64_t elements, std::int64_t shards, const std::string& bytes) {
  if (shards <= 1) return group_digits(elements);
  return "ceil(" + group_digits(elements) + " / " + group_digits(shards) + ") = " + bytes + " x " +
         group_digits(ceil_div(elements, shards));
}

std::string generic_formula(const Formula& f) {
  std::string text;
  bool first = true;  // of the current (sub-)formula
  for (int i = 0; i < f.size(); ++i) {
    const std::string_view label = label_text(f.label(i));
    const std::int64_t v = f.factor(i);
    switch (f.op(i)) {
      case FactorOp::times:
      case FactorOp::times_tp:
      case FactorOp::times_tp_sp:
        if (!first) text += " x ";
        text += '[';
        text += label;
        if (f.op(i) == FactorOp::times_tp) text += "/TP";
        if (f.op(i) == FactorOp::times_tp_sp) text += "/TP (SP)";
        text += '=';
        text += group_digits(v);
        text += ']';
        break;
      case FactorOp::per:
        text += " / [";
        text += label;
        text += '=';
        text += group_digits(v);
        text += ']';
        break;
      case FactorOp::bytes:
        if (!first) text += " x ";
        text += std::to_string(v);
        text += " B (";
        text += label;
        text += ')';
        break;
      case FactorOp::imbalance: {
        double factor = 0;
        std::memcpy(&factor, &v, sizeof factor);
        text += " x imbalance scenario " + std::to_string(factor).substr(0, 6) +
                " (rounded up to whole tokens)";
        break;
      }
      case FactorOp::plus:
        text += " + [";
        text += label;
        text += '=';
        text += group_digits(v);
        text += "] B";
        break;
      case FactorOp::value:
        break;
    }
    first = false;
  }
  return text;
}

// The kind-specific templates read their numbers in the order term_info.h lists them.
std::int64_t n(const Term& t, int i) {
  return i < t.formula.size() ? t.formula.factor(i) : 0;
}

// Each factor as [label=value], the copies alive and a DOCUMENTED source.
std::string generic_term_formula(const Term& t) {
  std::string text = generic_formula(t.formula);
  bool sum = false;  // a quantised tensor's data + scales: the copies multiply both
  for (int i = 0; i < t.formula.size(); ++i) sum = sum || t.formula.op(i) == FactorOp::plus;
  if (sum && t.copies > 0) text = "(" + text + ")";
  if (t.copies > 0) text += " x [layer-micro-batches alive=" + group_digits(t.copies) + "]";
  if (t.tag == Tag::documented && !t.source.empty()) text += " (" + std::string(t.source) + ")";
  return text;
}

// Receive and send, each [S/CP] x [B] x [h or h/TP (SP)] x [1 + AttnRes slots] x 2 B (bf16).
std::string pipeline_buffers_formula(const Term& t) {
  const auto direction = [&](std::int64_t slots_plus_one) {
    return "[S/CP=" + group_digits(n(t, 0)) + "] x [B=" + group_digits(n(t, 1)) + "] x [" +
           (n(t, 3) != 0 ? "h/TP (SP)" : "h") + "=" + group_digits(n(t, 2)) + "]" +
           // Without AttnRes a boundary carries the hidden state alone: no factor of 1.
           (slots_plus_one == 1 ? std::string()
                                : " x [1 + AttnRes slots=" + group_digits(slots_plus_one) + "]") +
           " x 2 B (bf16)";
  };
  std::string text;
  if (n(t, 4) > 0) text = "receive " + direction(n(t, 4));
  if (n(t, 5) > 0) text += (text.empty() ? "send " : " + send ") + direction(n(t, 5));
  return text;
}

std::string weights_formula(const Term& t) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%g B",
                weight_value_bytes(static_cast<WeightDtype>(n(t, 0))));
  return std::string(buffer) + " x " + group_digits(n(t, 1)) + " parameters on this rank";
}

std::string weight_scales_formula(const Term& t) {
  switch (static_cast<WeightDtype>(n(t, 0))) {
    case WeightDtype::fp8_tensor_scaled:
      return "4 B (fp32 scale_inv) x " + group_digits(n(t, 2)) + " weight tensors";
    case WeightDtype::fp8_block_scaled:
      return "4 B (fp32) x ceil(" + group_digits(n(t, 1)) + " / (128 x 128)) blocks";
    default:
      return "1 B (e8m0) x ceil(" + group_digits(n(t, 1)) + " / 32) blocks";
  }
}

// Adam's two moments or Muon's momentum per element, sharded as the optimizer shards them.
std::string moments_formula(const Term& t) {
  const bool muon_group = t.info->text == TermText::muon_momentum;
  const std::int64_t moment = moment_bytes(static_cast<MomentDtype>(n(t, 0)));
  const std::string per_text =
      muon_group ? std::to_string(moment) + " B"
                 : "(" + std::to_string(moment) + " + " + std::to_string(moment) + ") B";
  const std::string per_element = std::to_string(moments_per_element(muon_group) * moment) + " B";
  const std::string count = sharded_count(n(t, 3), n(t, 4), per_element);
  return (n(t, 4) > 1 ? per_text + " x " + count : per_element + " x " + count) + " (" +
         shard_text(n(t, 1), n(t, 4), n(t, 5)) + "); created lazily in the first step()";
}

// The larger of the two groups (dense, routed-expert), gathered one after the other.
std::string parameter_all_gather_formula(const Term& t) {
  const bool own_slot = static_cast<ParamGather>(n(t, 4)) == ParamGather::layer_wise_2026_01;
  const auto group = [&](std::int64_t elements, std::int64_t shards, const char* what) {
    std::string text = group_digits(elements) + " " + what + " parameters sharded over " +
                       group_digits(shards) + " ranks";
    if (elements == 0) return text + " (not gathered)";
    if (own_slot) text += " + ceil(/" + group_digits(shards) + ") own flattened shard";
    return text;
  };
  return "2 B (bf16) x max(" + group(n(t, 0), n(t, 1), "dense") + ", " +
         group(n(t, 2), n(t, 3), "routed-expert") + "): " +
         (own_slot ? "a receive slot for every rank plus the own flattened shard "
                     "(layer-wise-2026-01)"
                   : "the own flattened shard plus a receive buffer per other rank "
                     "(layer-wise)") +
         ", one group at a time";
}

// Muon's Newton-Schulz iteration on the update: on the full matrix in duplicated TP mode, else
// on the shard (d: the dimension the Gram matrix spans).
std::string newton_schulz_formula(const Term& t) {
  const std::int64_t rows = n(t, 1);
  const std::int64_t cols = n(t, 2);
  const std::int64_t split_dim = n(t, 3);
  const std::int64_t ways = n(t, 4);
  const auto mode = static_cast<MuonTpMode>(n(t, 5));
  const bool split = split_dim >= 0 && ways > 1;
  const std::string shard = "[m x n=" + group_digits(rows) + " x " + group_digits(cols) + "]";
  if (split && mode == MuonTpMode::duplicated) {
    const std::int64_t full_rows = split_dim == 0 ? rows * ways : rows;
    const std::int64_t full_cols = split_dim == 1 ? cols * ways : cols;
    const std::int64_t small = std::min(full_rows, full_cols);
    return "(2 x " + group_digits(ways) + " + 1) x " + shard +
           " x 4 B (fp32 update, its gathered shards and their concatenation) + (2 M N + 2 "
           "min(M,N)^2 [=" +
           group_digits(small) + "^2]) x 2 B on the full [M x N=" + group_digits(full_rows) +
           " x " + group_digits(full_cols) + "] (bf16 iteration: X, X X^T, B, new X; " +
           "duplicated TP mode)";
  }
  const std::int64_t small = split && mode == MuonTpMode::distributed
                                 ? (split_dim == 0 ? cols : rows)
                                 : std::min(rows, cols);
  return shard + " x 4 B (fp32 update) + (2 m n + 2 d^2 [d=" + group_digits(small) +
         "]) x 2 B (bf16 iteration: X, X X^T, B, new X" +
         (split ? (mode == MuonTpMode::distributed ? "; distributed TP mode: d is the full "
                                                     "non-partitioned dimension)"
                                                   : "; blockwise TP mode: on the shard)")
                : ")");
}

std::string gap_formula(const Term& t) {
  const std::string description(gap_description(static_cast<GapKind>(n(t, 0))));
  if (n(t, 1) == 0) {
    return description +
           ": not derivable from tensor shapes; 0 B until a MEASURED value is entered";
  }
  return description + ": MEASURED " + group_digits(t.bytes) + " B (" + std::string(t.source) + ")";
}

}  // namespace

std::string term_formula(const Term& t) {
  switch (t.info->text) {
    case TermText::generic:
      return generic_term_formula(t);
    case TermText::pipeline_buffers:
      return pipeline_buffers_formula(t);
    case TermText::recompute_group:
      return "every piece of " + std::to_string(n(t, 0)) + " recomputed layer(s) (layers " +
             std::to_string(n(t, 1)) + "-" + std::to_string(n(t, 2)) +
             ") for one micro-batch = " + group_digits(t.bytes) + " B";
    case TermText::recompute_selective:
      return "the selectively recomputed pieces of one " + std::string(attention_label(n(t, 0))) +
             " + " + (static_cast<MlpKind>(n(t, 1)) == MlpKind::dense ? "dense MLP" : "MoE") +
             " layer for one micro-batch = " + group_digits(t.bytes) + " B";
    case TermText::weights:
      return weights_formula(t);
    case TermText::weight_scales:
      return weight_scales_formula(t);
    case TermText::main_gradient:
      return std::to_string(grad_bytes(static_cast<GradDtype>(n(t, 0)))) + " B x " +
             group_digits(n(t, 1)) + " parameters on this rank";
    case TermText::master_weights: {
      const std::string bytes =
          std::to_string(master_bytes(static_cast<MasterDtype>(n(t, 0)))) + " B";
      return bytes + " x " + sharded_count(n(t, 2), n(t, 3), bytes) + " (" +
             shard_text(n(t, 1), n(t, 3), n(t, 4)) + ")";
    }
    case TermText::muon_momentum:
    case TermText::adam_moments:
      return moments_formula(t);
    case TermText::cast_copy:
      return "2 B x " + group_digits(n(t, 2)) + " parameters on this rank (not sharded)";
    case TermText::parameter_all_gather:
      return parameter_all_gather_formula(t);
    case TermText::newton_schulz:
      return newton_schulz_formula(t);
    case TermText::gap:
      return gap_formula(t);
  }
  return {};
}

std::string term_scaling(const Term& t) {
  const TermInfo& info = *t.info;
  switch (info.text) {
    case TermText::master_weights:
      return std::string(info.scaling) + "; " + shard_text(n(t, 1), n(t, 3), n(t, 4));
    case TermText::muon_momentum:
    case TermText::adam_moments:
      return std::string(info.scaling) + "; " + shard_text(n(t, 1), n(t, 4), n(t, 5));
    default:
      break;
  }
  if (t.family == Family::activation) {
    return std::string(info.scaling) + ", layers on stage, micro-batches in flight";
  }
  return std::string(info.scaling);
}

std::string_view term_source(const Term& term, const Config&) {
  return term.source;
}

}  // namespace stagemem
