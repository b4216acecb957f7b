#include "formula.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace stagemem {

namespace {
constexpr std::int64_t saturated = std::numeric_limits<std::int64_t>::max();
}

Formula& Formula::push(FactorOp op, Label label, std::int64_t value) {
  if (count_ >= max_factors) {
    overflowed_ = true;
    return *this;
  }
  const auto i = static_cast<std::size_t>(count_++);
  ops_[i] = op;
  labels_[i] = label;
  values_[i] = value;
  switch (op) {
    case FactorOp::times:
    case FactorOp::times_tp:
    case FactorOp::times_tp_sp:
    case FactorOp::bytes:
      if (value < 0 || !checked_mul(value_, value, &value_)) {
        overflowed_ = true;
        value_ = saturated;
      }
      break;
    case FactorOp::receive:
    case FactorOp::send:
      // A new sub-formula: the previous one's product is complete.
      if (started_ && !checked_add(sum_, value_, &sum_)) {
        overflowed_ = true;
        sum_ = saturated;
      }
      started_ = true;
      value_ = 1;
      break;
    case FactorOp::per:
    case FactorOp::imbalance:
    case FactorOp::value:
      break;
  }
  return *this;
}

Formula& Formula::per(Label label, std::int64_t divisor) {
  push(FactorOp::per, label, divisor);
  if (divisor > 0 && value_ != saturated) value_ /= divisor;
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

Formula& Formula::add(const Formula& other) {
  for (int i = 0; i < other.size(); ++i) {
    if (other.op(i) == FactorOp::per) {
      per(other.label(i), other.factor(i));
    } else {
      push(other.op(i), other.label(i), other.factor(i));
    }
  }
  overflowed_ = overflowed_ || other.overflowed_;
  return *this;
}

std::int64_t Formula::value() const {
  if (!started_) return value_;
  std::int64_t total = 0;
  return checked_add(sum_, value_, &total) ? total : saturated;
}

}  // namespace stagemem
