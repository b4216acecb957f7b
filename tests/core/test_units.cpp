// Tests of units.h: labelled, exact formatting of 64-bit sizes.
#include <cstdint>
#include <limits>

#include "base/units.h"
#include "catch.h"

using namespace stagemem;

TEST_CASE("Digit grouping handles the whole int64 range") {
  CHECK(group_digits(0) == "0");
  CHECK(group_digits(999) == "999");
  CHECK(group_digits(8'030'261'248LL) == "8,030,261,248");
  CHECK(group_digits(-1'000) == "-1,000");
  CHECK(group_digits(std::numeric_limits<std::int64_t>::min()) == "-9,223,372,036,854,775,808");
}

TEST_CASE("Binary and decimal units are labelled") {
  // 224 MiB: the AttnRes payload at the first boundary, (1+1) x 8192 x 7168 x 2 B.
  CHECK(format_mib(2LL * 8192 * 7168 * 2) == "224.0 MiB");
  CHECK(format_gib(1LL << 30) == "1.00 GiB");
  // Sizes above 4 GiB must not wrap on wasm32 (32-bit size_t).
  CHECK(format_gib(141LL << 30) == "141.00 GiB");
  CHECK(format_gb(2'580'000'000LL) == "2.58 GB");
}
