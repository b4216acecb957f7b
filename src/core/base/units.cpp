#include "base/units.h"

#include <cstdio>

namespace stagemem {
namespace {

std::string format_scaled(double value, int decimals, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f %s", decimals, value, unit);
  return buffer;
}

}  // namespace

std::string group_digits(std::int64_t value) {
  const bool negative = value < 0;
  // Work in unsigned so the most negative int64 does not overflow on negation.
  std::uint64_t magnitude =
      negative ? 0 - static_cast<std::uint64_t>(value) : static_cast<std::uint64_t>(value);
  std::string digits = std::to_string(magnitude);
  std::string out;
  const auto n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[i];
    if ((n - 1 - i) % 3 == 0 && i + 1 < n) out += ',';
  }
  return negative ? "-" + out : out;
}

std::string format_gib(std::int64_t bytes, int decimals) {
  return format_scaled(static_cast<double>(bytes) / bytes_per_gib, decimals, "GiB");
}
std::string format_mib(std::int64_t bytes, int decimals) {
  return format_scaled(static_cast<double>(bytes) / bytes_per_mib, decimals, "MiB");
}
std::string format_gb(std::int64_t bytes, int decimals) {
  return format_scaled(static_cast<double>(bytes) / bytes_per_gb, decimals, "GB");
}

}  // namespace stagemem
