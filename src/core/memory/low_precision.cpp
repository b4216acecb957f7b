#include "memory/low_precision.h"

#include "base/checked_math.h"
#include "config/low_precision_rules.h"

namespace stagemem {
namespace {

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
  return ceil_div(value, multiple) * multiple;
}

// a x b, saturating (and marking `fits`) past 2^63 - 1.
std::int64_t product(std::int64_t a, std::int64_t b, bool& fits) {
  std::int64_t out = 0;
  if (!checked_mul(a, b, &out)) {
    fits = false;
    return std::int64_t{1} << 62;
  }
  return out;
}

void add(QuantisedBytes& to, const QuantisedBytes& more) {
  to.fits = to.fits && more.fits && checked_add(to.data, more.data, &to.data) &&
            checked_add(to.scales, more.scales, &to.scales);
}

// One usage of a [rows, cols] tensor: row-wise scales along cols, column-wise along rows.
QuantisedBytes one_usage(const LinearQuantisation& q, QuantisedKind kind, bool rowwise,
                         std::int64_t rows, std::int64_t cols) {
  QuantisedBytes b;
  switch (q.recipe) {
    case Fp8Recipe::none:
      break;
    case Fp8Recipe::delayed:
    case Fp8Recipe::tensor:
      b.data = product(rows, cols, b.fits);
      break;
    case Fp8Recipe::block: {
      b.data = product(rows, cols, b.fits);
      const std::int64_t along = rowwise ? cols : rows;  // the quantised direction
      const std::int64_t across = rowwise ? rows : cols;
      const std::int64_t scales =
          kind == QuantisedKind::weight
              ? product(ceil_div(across, 128), round_up(ceil_div(along, 128), 4), b.fits)
              : (rowwise ? product(rows, round_up(ceil_div(cols, 128), 4), b.fits)
                         : product(ceil_div(rows, 128), round_up(cols, 4), b.fits));
      b.scales = product(scales, 4, b.fits);
      break;
    }
    case Fp8Recipe::mxfp8:
      b.data = product(rows, cols, b.fits);
      b.scales = rowwise ? product(round_up(rows, 128), round_up(ceil_div(cols, 32), 4), b.fits)
                         : product(round_up(ceil_div(rows, 32), 4), round_up(cols, 128), b.fits);
      break;
    case Fp8Recipe::nvfp4:
      b.data = rowwise ? product(rows, ceil_div(cols, 2), b.fits)
                       : product(cols, ceil_div(rows, 2), b.fits);
      b.scales = (rowwise ? product(round_up(rows, 128), round_up(ceil_div(cols, 16), 4), b.fits)
                          : product(round_up(cols, 128), round_up(ceil_div(rows, 16), 4), b.fits)) +
                 4;
      break;
  }
  return b;
}

bool per_tensor(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::delayed || recipe == Fp8Recipe::tensor;
}

}  // namespace

std::int64_t QuantisedBytes::total() const {
  std::int64_t out = 0;
  if (!checked_add(data, scales, &out)) return std::int64_t{1} << 62;
  return out;
}

LinearQuantisation linear_quantisation(const TrainingConfig& training) {
  return {.recipe = training.low_precision.recipe,
          .one_copy = per_tensor_one_copy(training.stack),
          .projection_saves_original = projection_saves_original_input(training),
          .fp8_attention = training.low_precision.fp8_attention};
}

QuantisedBytes quantised_bytes(const LinearQuantisation& q, QuantisedKind kind, QuantisedUse use,
                               std::int64_t rows, std::int64_t cols) {
  if (!q.quantised() || rows <= 0 || cols <= 0) return {};
  if (per_tensor(q.recipe)) {
    // One fp32 scale_inv shared by both layouts; the transpose only where GEMMs need it.
    QuantisedBytes b = one_usage(q, kind, true, rows, cols);
    if (use == QuantisedUse::both && !q.one_copy) b.data = product(b.data, 2, b.fits);
    b.scales = 4;
    return b;
  }
  QuantisedBytes b;
  if (use != QuantisedUse::columnwise) add(b, one_usage(q, kind, true, rows, cols));
  if (use != QuantisedUse::rowwise) add(b, one_usage(q, kind, false, rows, cols));
  return b;
}

QuantisedBytes quantised_output_gradient(const LinearQuantisation& q, std::int64_t rows,
                                         std::int64_t cols) {
  return quantised_bytes(q, QuantisedKind::activation, QuantisedUse::both, rows, cols);
}

QuantisedBytes forward_rowwise_input(const LinearQuantisation& q, std::int64_t rows,
                                     std::int64_t cols) {
  if (!q.quantised() || (per_tensor(q.recipe) && q.one_copy)) return {};
  QuantisedBytes b =
      quantised_bytes(q, QuantisedKind::activation, QuantisedUse::rowwise, rows, cols);
  if (per_tensor(q.recipe)) b.scales = 0;  // the saved copy's scale_inv is the same tensor
  return b;
}

ActivationPiece saved_linear_input(const TermInfo& info, Formula elements, std::int64_t cols,
                                   std::uint32_t dropped_by, const LinearQuantisation& q,
                                   double imbalance, std::int64_t copies) {
  if (!q.quantised()) {
    // The bf16 text as every piece writes it: the dtype, then the imbalance scenario.
    if (copies > 1) elements.times(label_id("quantised copies (one per linear layer)"), copies);
    elements.bytes(2, label_id("bf16"));
    if (imbalance > 1.0) elements.imbalance(imbalance, cols * 2);
    return make_piece(info, elements, dropped_by);
  }
  if (imbalance > 1.0) elements.imbalance(imbalance, cols);
  const std::int64_t rows = cols > 0 ? elements.value() / cols : 0;
  const QuantisedBytes b =
      quantised_bytes(q, QuantisedKind::activation, QuantisedUse::columnwise, rows, cols);
  if (copies > 1) elements.times(label_id("quantised copies (one per linear layer)"), copies);
  if (q.recipe == Fp8Recipe::nvfp4) {
    elements.per(label_id("2 (e2m1 values per byte)"), 2).bytes(1, label_id("e2m1, column-wise"));
  } else {
    elements.bytes(1, per_tensor(q.recipe) && !q.one_copy ? label_id("fp8 transpose (column-wise)")
                                                          : label_id("fp8, column-wise"));
  }
  Label scales = label_id("fp32 scale_inv");
  if (q.recipe == Fp8Recipe::block) scales = label_id("fp32 scales per 128 tokens");
  if (q.recipe == Fp8Recipe::mxfp8) scales = label_id("e8m0 scales per 32 tokens");
  if (q.recipe == Fp8Recipe::nvfp4) scales = label_id("e4m3 scales per 16 tokens + fp32 amax");
  bool fits = b.fits;
  elements.plus(scales, product(b.scales, copies, fits));
  ActivationPiece p = make_piece(info, elements, dropped_by);
  if (!fits) p.formula.times(label_id(""), std::int64_t{1} << 62);  // marks the overflow
  return p;
}

}  // namespace stagemem
