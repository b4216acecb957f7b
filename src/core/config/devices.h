// devices.h — accelerator presets: the device memory one rank can use, with where it comes from.
//
// Purpose: the capacity a stage's peak is compared with. Each preset carries the exact byte count
// and its source: a public reading of `torch.cuda.get_device_properties(i).total_memory` where one
// was found, else the vendor's specified capacity (and the source text says so).
// Units: bytes (int64).
// Limitations: torch prints total_memory in whole MiB (rounded down), so a reading fixes the bytes
// to within 1 MiB; the preset stores the printed MiB x 2^20. The total also varies by a few MiB
// with the driver version (H100 readings of 81,082 to 81,090 MiB are public). The CUDA/HIP context
// itself is not subtracted here: it is the named gap "runtime context" (gaps.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace stagemem {

struct DevicePreset {
  std::string_view name;          // stable key, e.g. "h100-80gb"
  std::string_view display_name;  // e.g. "NVIDIA H100 80GB HBM3"
  std::int64_t bytes;             // usable device memory per rank
  std::string_view source;        // where the number comes from
};

std::span<const DevicePreset> device_presets();
std::optional<DevicePreset> find_device(std::string_view name);

}  // namespace stagemem
