#include "report/formula.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace stagemem {

Formula& Formula::per(Label label, std::int64_t divisor) {
  push(FactorOp::per, label, divisor);
  if (divisor > 0 && value_ != saturated) value_ /= divisor;
  return *this;
}

Formula& Formula::plus(Label label, std::int64_t bytes) {
  push(FactorOp::plus, label, bytes);
  if (bytes < 0 || !checked_add(value_, bytes, &value_)) {
    overflowed_ = true;
    value_ = saturated;
  }
  return *this;
}

Formula& Formula::imbalance(double factor, std::int64_t per_token_bytes) {
  std::int64_t bits = 0;
  static_assert(sizeof bits == sizeof factor);
  std::memcpy(&bits, &factor, sizeof bits);
  push(FactorOp::imbalance, 0, bits);
  if (overflowed_ || per_token_bytes <= 0) return *this;
  const std::int64_t tokens = value_ / per_token_bytes;
  const double busiest = std::ceil(static_cast<double>(tokens) * factor);
  // 2^63 as a double: anything at or past it does not fit.
  if (!(busiest < 9.2233720368547758e18) ||
      !checked_mul(static_cast<std::int64_t>(busiest), per_token_bytes, &value_)) {
    overflowed_ = true;
    value_ = saturated;
  }
  return *this;
}

}  // namespace stagemem
