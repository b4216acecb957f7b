// formula.h — a term's formula as numbers: a short list of factors, each a label id (into the
// static label table below) and an int64 value, multiplied with overflow checks.
//
// Purpose: the estimate computes bytes and records *which* factors produced them; the text
// ("[S/CP=8,192] x [B=1] x [h=7,168] x 2 B (bf16)") is rendered only when a front end asks
// (term_text.h). No heap memory: a Formula is a fixed-size value.
// Units: factor values are counts (tokens, widths, layers) or bytes per element.
// Limitations: at most max_factors factors; a factor past that sets overflowed() (a programming
// error the tests catch). A product past 2^63 - 1 saturates and sets overflowed().
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#include "base/checked_math.h"

namespace stagemem {

// Every label a formula factor can carry. Ids are indices; label_id() finds one at compile time,
// so a misspelt label is a build error, not a wrong text.
inline constexpr std::string_view formula_labels[] = {
    "",
    "S/CP",
    "S",
    "B",
    "h",
    "2h",
    "TP (SP)",
    "bf16",
    "fp32",
    "uint8",
    "bf16 + fp32",
    "(heads + 2 kv_heads) x head_dim",
    "heads x v_dim",
    "heads/TP",
    "q_lora_rank",
    "kv_lora_rank + rope_dim",
    "kv_lora_rank",
    "heads x (2 (nope + rope) + v_dim)",
    "3 x heads x head_dim",
    "2 x heads",
    "head_dim",
    "heads x head_dim",
    "2 x heads x head_dim",
    "heads",
    "2 x heads x chunk",
    "heads x chunk",
    "a2a backward width (dout and its copy, dq dk dv with their send, receive and final copies)",
    "chunks = ceil(S/CP / chunk)",
    "head_dim^2",
    "5 x heads x head_dim",
    "2 x intermediate",
    "intermediate",
    "experts",
    "latent",
    "top-k",
    "ETP (token gather)",
    "expert width",
    "2 x expert intermediate/ETP",
    "expert intermediate/ETP",
    "2 x shared intermediate",
    "shared intermediate",
    "padded V/TP",
    "max and log-sum-exp",
    "chunk tokens",
    "slots",
    "sum over mixing sites of (1 + K)",
    "(1 + K) slots + live temporaries",
    "1 + AttnRes slots",
    "send + receive",
    "k + v width/TP",
    // issue 11 activation physics (activations_*.cpp)
    "(heads + kv_heads) x head_dim",
    "heads + kv_heads",
    "2 x chunk x heads x head_dim",
    "chunk x head_dim x (4 x 2 B + 4 B) + head_dim^2 x 2 B",
    "chunk x head_dim x 4 x 2 B + head_dim^2 x 2 B",
    "bf16 / fp32 bytes",
    "bytes per chunk and head",
    "(q, k, v width x 2 B + heads x qk head_dim x 4 B)",
    "3 x intermediate",
    "3 x expert intermediate/ETP + expert width",
    "buffers (permuted copy, received copy)",
    "buffers (permuted, received, ETP-gathered)",
    "1 (probability)",
    "CP + 1 (own and gathered states)",
    "head_dim x (head_dim + v_dim)",
    "((CP - 1) x kv x 2 B + CP x out x 2 B + out x 4 B)",
    "(5 x kv + 2 x q width)",
    "2 (send + receive) x q, k, v width",
    "2 x h",
    // Muon matrices (optimizer_transients.cpp)
    "q projection",
    "attention output projection",
    "MLA q down-projection",
    "MLA q up-projection",
    "MLA q projection",
    "MLA kv down-projection",
    "MLA kv up-projection",
    "MLA output projection",
    "KDA q/k/v projection",
    "KDA output projection",
    "MLP fc1",
    "MLP fc2",
    "routed expert fc2",
    "router",
    "latent projection",
    "MLP fc1 (gate and up, fused)",
    "routed expert fc1 (gate and up, fused)",
    "shared experts fc1 (gate and up, fused)",
    "elements in this rank's optimizer shard",
    // Library buffers (resident_terms.cpp, gaps.cpp)
    "elements of the distinct weight shapes",
    "workspaces",
    "bytes per workspace",
    // fp8 weight caches (resident_terms.cpp)
    "linear-layer weight elements",
    "fp8 row-wise + column-wise",
    "fp8 column-wise",
    "weight tensors",
    "32-value blocks x 2 copies",
    "128 x 128 blocks x 2 copies",
    "32-value blocks",
    "128 x 128 blocks",
    "e8m0",
    // pipeline input kept by the model between steps (activation_terms.cpp)
    "input + its gradient",
    "chunks fed by the previous stage",
    // MoE layer's dispatch and combine buffers, Megatron-core >= 0.13 (model_pieces.cpp)
    "top-k x buffers (permuted, received, un-sorted, combine received) x expert width",
    "top-k x buffers (permuted, received, un-sorted, combine received) x expert width + h "
    "(shared experts' output)",
    // low-precision compute (low_precision.cpp, resident_terms.cpp)
    "quantised copies (one per linear layer)",
    "2 (e2m1 values per byte)",
    "e2m1, column-wise",
    "fp8 transpose (column-wise)",
    "fp8, column-wise",
    "fp32 scale_inv",
    "fp32 scales per 128 tokens",
    "e8m0 scales per 32 tokens",
    "e4m3 scales per 16 tokens + fp32 amax",
    "fp8 e4m3",
    "usages (row-wise, column-wise)",
    "32-value blocks x usages",
    "128 x 128 blocks x usages",
    "16-value blocks x usages",
    "e4m3",
    "quantised GEMMs",
    "5 x amax history + 5 values",
    "e2m1 pair",
    "row-wise scales",
    "widest up-projection output",
    "2 x expert intermediate/ETP + expert width",
    "fp8 attention scales",
    "quantised output gradient (row- and column-wise)",
    "elements on this rank / shard group, rounded up",
    "largest unit's elements on this rank",
    "elements of every unit on this rank",
    "gathered elements at the largest forward moment",
    "bf16 parameter and gradient elements",
    "held reduce-scatter input",
    "units gathered (computing + prefetched)",
    "post-forward shard ranks",
    "elements waiting for reduce-scatter",
    "non-unit elements on this rank",
    "bf16 + 2 x fp32",
    "fp32 gradient accumulator",
};
inline constexpr int formula_label_count =
    static_cast<int>(sizeof formula_labels / sizeof formula_labels[0]);

using Label = std::uint8_t;
static_assert(formula_label_count < 256, "labels must fit a Label");

consteval Label label_id(std::string_view text) {
  for (int i = 0; i < formula_label_count; ++i) {
    if (formula_labels[i] == text) return static_cast<Label>(i);
  }
  throw "label_id: not in formula_labels";  // a compile-time error when reached
}

inline std::string_view label_text(Label id) {
  return id < formula_label_count ? formula_labels[id] : std::string_view("?");
}

enum class FactorOp : std::uint8_t {
  times,        // " x [label=value]"
  times_tp,     // " x [label/TP=value]"
  times_tp_sp,  // " x [label/TP (SP)=value]"
  per,          // " / [label=value]"
  bytes,        // " x value B (label)"
  imbalance,    // " x imbalance scenario 1.2500 (rounded up to whole tokens)"; value: double bits
  value,        // a plain number for a kind-specific template (term_info.h); not multiplied
  plus,         // " + [label=value] B": bytes added to the product (a quantised tensor's scales)
};

inline constexpr int max_factors = 8;

class Formula {
 public:
  Formula& times(Label label, std::int64_t value) { return push(FactorOp::times, label, value); }
  // label/TP: a width split over tensor parallelism (value is already divided).
  Formula& times_tp(Label label, std::int64_t value) {
    return push(FactorOp::times_tp, label, value);
  }
  Formula& times_tp_sp(Label label, std::int64_t value) {
    return push(FactorOp::times_tp_sp, label, value);
  }
  // Exact division (validation guarantees divisibility, e.g. S by CP x TP under SP).
  Formula& per(Label label, std::int64_t divisor);
  Formula& bytes(std::int64_t bytes_per_element, Label dtype) {
    return push(FactorOp::bytes, dtype, bytes_per_element);
  }
  // Multiplies the token count by `factor`, rounded up to whole tokens of `per_token_bytes`.
  Formula& imbalance(double factor, std::int64_t per_token_bytes);
  // Bytes added to the product so far (the scales beside a quantised tensor's data); factors
  // after it multiply the sum.
  Formula& plus(Label label, std::int64_t bytes);
  // A kind-specific number that does not multiply into the value.
  Formula& number(std::int64_t value) { return push(FactorOp::value, 0, value); }

  std::int64_t value() const { return value_; }
  bool overflowed() const { return overflowed_; }
  int size() const { return count_; }
  FactorOp op(int i) const { return ops_[static_cast<std::size_t>(i)]; }
  Label label(int i) const { return labels_[static_cast<std::size_t>(i)]; }
  std::int64_t factor(int i) const { return values_[static_cast<std::size_t>(i)]; }

 private:
  Formula& push(FactorOp op, Label label, std::int64_t value) {
    if (count_ >= max_factors) {
      overflowed_ = true;
      return *this;
    }
    const auto i = static_cast<std::size_t>(count_++);
    ops_[i] = op;
    labels_[i] = label;
    values_[i] = value;
    if (op <= FactorOp::bytes && op != FactorOp::per) multiply(value);
    return *this;
  }
  void multiply(std::int64_t value) {
    if (value < 0 || !checked_mul(value_, value, &value_)) {
      overflowed_ = true;
      value_ = saturated;
    }
  }
  static constexpr std::int64_t saturated = std::numeric_limits<std::int64_t>::max();
  std::int64_t value_ = 1;
  std::array<std::int64_t, max_factors> values_{};
  std::array<Label, max_factors> labels_{};
  std::array<FactorOp, max_factors> ops_{};
  std::uint8_t count_ = 0;
  bool overflowed_ = false;
};

}  // namespace stagemem
