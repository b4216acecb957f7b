// Tests of devices.h: every preset has exact bytes and a cited source.
#include "catch.h"
#include "config/devices.h"

using namespace stagemem;

TEST_CASE("Device presets carry exact bytes and a source") {
  REQUIRE(device_presets().size() == 5);
  for (const DevicePreset& d : device_presets()) {
    CHECK(d.bytes > 0);
    CHECK(d.bytes % (1 << 20) == 0);  // readings are whole MiB as torch prints them
    CHECK(!d.source.empty());
    CHECK((d.source.starts_with("MEASURED") || d.source.starts_with("VENDOR SPEC")));
  }
  // H200: total_memory=143156MB -> 143,156 x 2^20 = 150,109,945,856 B.
  CHECK(find_device("h200")->bytes == 150'109'945'856LL);
  // MI300X: 196,592 MiB = 206,141,652,992 B, 16 MiB below 192 GiB.
  CHECK(find_device("mi300x")->bytes == (192LL << 30) - (16LL << 20));
  // MI355X: vendor 288 GiB.
  CHECK(find_device("mi355x")->bytes == 288LL << 30);
  CHECK(!find_device("a100").has_value());
}
