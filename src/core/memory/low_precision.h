// low_precision.h — what a quantised linear layer keeps, per recipe and architecture, in bytes.
//
// Purpose: TransformerEngine quantises the inputs, output gradients and weights of its linear
// layers (Linear, LayerNormLinear, GroupedLinear) under a recipe (training.h Fp8Recipe). This
// file turns a tensor's shape [rows, cols] into the bytes of its quantised data and scales for
// the usages a GEMM needs, from TE's storage classes (transformer_engine/pytorch/tensor/):
//  - per-tensor fp8 (delayed, tensor; Float8Tensor): row-wise data [rows, cols] 1 B; the
//    column-wise usage is a transposed copy, except on sm100/sm103 from TE 2.0 where one array
//    serves both; one fp32 scale_inv per tensor (4 B).
//  - block (Float8BlockwiseQTensor): row-wise data and a transposed column-wise copy, 1 B each;
//    fp32 scales per 1 x 128 values for activations and gradients (row-wise [rows,
//    roundup(ceil(cols/128), 4)], column-wise [ceil(rows/128), roundup(cols, 4)]) and per
//    128 x 128 block for weights ([ceil(rows/128), roundup(ceil(cols/128), 4)] and
//    [ceil(cols/128), roundup(ceil(rows/128), 4)]).
//  - mxfp8 (MXFP8Tensor): row- and column-wise data 1 B each; e8m0 scales (1 B) per 32 values,
//    row-wise [roundup(rows, 128), roundup(ceil(cols/32), 4)], column-wise
//    [roundup(ceil(rows/32), 4), roundup(cols, 128)].
//  - nvfp4 (NVFP4Tensor): e2m1 data, 2 values per byte, row-wise [rows, cols/2] and transposed
//    column-wise [cols, rows/2]; e4m3 scales (1 B) per 16 values, [roundup(rows, 128),
//    roundup(ceil(cols/16), 4)] and [roundup(cols, 128), roundup(ceil(rows/16), 4)]; an fp32
//    amax per usage (4 B).
// What a layer keeps of them (memory/*_pieces.cpp, resident_terms.cpp): the input's column-wise
// quantisation for the weight-gradient GEMM (TE drops the row-wise part after the forward GEMM),
// both usages of the input during the forward GEMM, both usages of the output gradient during
// the backward GEMMs, both usages of a weight in TE's cache.
// Units: bytes (int64); rows are tokens (or a weight's output features), cols input features.
// Limitations: NVFP4's random Hadamard transform and stochastic rounding temporaries, the 2-D
// weight scaling variant's storage and fp8 block scaling's swizzled scales on Blackwell are not
// counted (each is smaller than the data and alive inside one GEMM).
#pragma once

#include <cstdint>

#include "config/training.h"
#include "memory/activation_pieces.h"

namespace stagemem {

// Which of a tensor's quantisations are alive.
enum class QuantisedUse : std::uint8_t { rowwise, columnwise, both };
// Block scaling uses 1 x 128 blocks for activations and gradients, 128 x 128 for weights.
enum class QuantisedKind : std::uint8_t { activation, weight };

struct QuantisedBytes {
  std::int64_t data = 0;
  std::int64_t scales = 0;  // scales and per-tensor amax / scale_inv values
  bool fits = true;         // false: a product passed 2^63 - 1
  std::int64_t total() const;
};

// How the run quantises its linear layers: the recipe and the stack's layout choices.
struct LinearQuantisation {
  Fp8Recipe recipe = Fp8Recipe::none;
  bool one_copy = false;  // per-tensor fp8 keeps one array for both usages (sm100/sm103)
  bool projection_saves_original = false;  // the attention output projection saves bf16
  bool fp8_attention = false;
  bool quantised() const { return recipe != Fp8Recipe::none; }
};
LinearQuantisation linear_quantisation(const TrainingConfig& training);

// Bytes of a [rows, cols] tensor quantised under `q` with the given usages (0 for bf16).
QuantisedBytes quantised_bytes(const LinearQuantisation& q, QuantisedKind kind, QuantisedUse use,
                               std::int64_t rows, std::int64_t cols);

// A tensor a linear layer saves for its backward: bf16 (2 B per element) without a recipe;
// otherwise its column-wise quantisation, the data as the product of `elements` (the tensor's
// shape factors, without bytes) and the scales added. `cols` is the tensor's last dimension;
// rows = elements / cols. `imbalance` > 1 applies the routing imbalance scenario first. `copies`
// > 1: that many linear layers each keep their own quantisation of the same tensor.
ActivationPiece saved_linear_input(const TermInfo& info, Formula elements, std::int64_t cols,
                                   std::uint32_t dropped_by, const LinearQuantisation& q,
                                   double imbalance = 1.0, std::int64_t copies = 1);

// A linear layer's output gradient [rows, cols] quantised row- and column-wise, alive with its
// bf16 gradient across the layer's data- and weight-gradient GEMMs (0 without a recipe).
QuantisedBytes quantised_output_gradient(const LinearQuantisation& q, std::int64_t rows,
                                         std::int64_t cols);
// The row-wise quantisation of a linear layer's input, alive beside the saved column-wise one
// during its forward GEMM (0 without a recipe, and for per-tensor fp8 keeping one array).
QuantisedBytes forward_rowwise_input(const LinearQuantisation& q, std::int64_t rows,
                                     std::int64_t cols);

}  // namespace stagemem
