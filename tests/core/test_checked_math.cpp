// Tests of base/checked_math.h: products and sums at the edge of int64 are refused, never wrapped,
// and ceil_div splits elements over ranks as a shard does.
#include <cstdint>
#include <limits>

#include "base/checked_math.h"
#include "catch.h"

using namespace stagemem;

TEST_CASE("checked_mul: exact below 2^63, refused above") {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::int64_t out = 7;
  // 2^31 x 2^31 = 2^62 fits; 2^32 x 2^31 = 2^63 does not (one more than INT64_MAX).
  CHECK(checked_mul(std::int64_t{1} << 31, std::int64_t{1} << 31, &out));
  CHECK(out == std::int64_t{1} << 62);
  CHECK_FALSE(checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 31, &out));
  // 3,037,000,499^2 = 9,223,372,030,926,249,001 < INT64_MAX; 3,037,000,500^2 overflows.
  CHECK(checked_mul(3'037'000'499LL, 3'037'000'499LL, &out));
  CHECK(out == 9'223'372'030'926'249'001LL);
  CHECK_FALSE(checked_mul(3'037'000'500LL, 3'037'000'500LL, &out));
  CHECK(checked_mul(max, 1, &out));
  CHECK(out == max);
  CHECK(checked_mul(0, max, &out));
  CHECK(out == 0);
  CHECK(checked_mul(-4, 5, &out));
  CHECK(out == -20);
  CHECK_FALSE(checked_mul(std::numeric_limits<std::int64_t>::min(), -1, &out));
}

TEST_CASE("checked_add: INT64_MAX is the last sum that fits") {
  constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
  std::int64_t out = 0;
  CHECK(checked_add(max - 1, 1, &out));
  CHECK(out == max);
  CHECK_FALSE(checked_add(max, 1, &out));
  CHECK(checked_add(-5, 2, &out));
  CHECK(out == -3);
}

TEST_CASE("ceil_div: elements per shard, the last shard padded; a divisor <= 0 splits nothing") {
  CHECK(ceil_div(10, 4) == 3);  // 3 + 3 + 3 + 1
  CHECK(ceil_div(12, 4) == 3);
  CHECK(ceil_div(1, 8) == 1);
  CHECK(ceil_div(0, 8) == 0);
  CHECK(ceil_div(10, 0) == 10);
  CHECK(ceil_div(10, -2) == 10);
}
