// checked_math.h — int64 arithmetic that says when a result does not fit.
//
// Purpose: every byte product and sum in stagemem goes through these, so a configuration whose
// memory would pass 2^63 - 1 bytes becomes an error naming its fields, never a wrapped number.
// Units: none. Limitations: GCC/Clang builtins (__builtin_mul_overflow, __builtin_add_overflow,
// __builtin_sub_overflow).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <limits>

namespace stagemem {

// Checked int64 arithmetic: false when the result does not fit; *out then holds the wrapped
// value, which callers must not use.
inline bool checked_mul(std::int64_t a, std::int64_t b, std::int64_t* out) {
  // On 32-bit targets (wasm32) the overflow check needs a 128-bit product, a library call: a fast
  // path skips it for non-negative factors whose bit lengths add up to at most 63 (they cannot
  // overflow). 64-bit targets check with one multiply and its overflow flag.
  if (sizeof(void*) < 8 && a >= 0 && b >= 0) {
    const auto ua = static_cast<std::uint64_t>(a);
    const auto ub = static_cast<std::uint64_t>(b);
    if (ua == 0 || ub == 0 || __builtin_clzll(ua) + __builtin_clzll(ub) >= 65) {
      *out = a * b;
      return true;
    }
  }
  return !__builtin_mul_overflow(a, b, out);
}
// Elements per shard when `value` is split over `divisor` ranks (a divisor <= 0 splits nothing).
inline std::int64_t ceil_div(std::int64_t value, std::int64_t divisor) {
  return divisor <= 0 ? value : (value + divisor - 1) / divisor;
}
inline bool checked_add(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}
inline bool checked_sub(std::int64_t a, std::int64_t b, std::int64_t* out) {
  return !__builtin_sub_overflow(a, b, out);
}

// a x b x ... and a + b + ..., saturating at the int64 maximum, which the estimate reports as an
// overflow naming the term.
inline std::int64_t saturating_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t out = 1;
  for (const std::int64_t f : factors) {
    if (!checked_mul(out, f, &out)) return std::numeric_limits<std::int64_t>::max();
  }
  return out;
}
inline std::int64_t saturating_sum(std::initializer_list<std::int64_t> terms) {
  std::int64_t out = 0;
  for (const std::int64_t t : terms) {
    if (!checked_add(out, t, &out)) return std::numeric_limits<std::int64_t>::max();
  }
  return out;
}

}  // namespace stagemem
