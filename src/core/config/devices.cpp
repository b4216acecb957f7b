#include "config/devices.h"

namespace stagemem {
namespace {

constexpr std::int64_t mib = std::int64_t{1} << 20;

constexpr DevicePreset presets[] = {
    {"h100-80gb", "NVIDIA H100 80GB HBM3", 81'089 * mib,
     "MEASURED: torch.cuda.get_device_properties total_memory=81089MB (torch 2.7.0, CUDA 12.8), "
     "printed in the all_reduce benchmark of stas00/ml-engineering; other drivers print "
     "81082-81090"},
    {"h200", "NVIDIA H200", 143'156 * mib,
     "MEASURED: torch.cuda.get_device_properties total_memory=143156MB, quoted in "
     "ai-bot-pro/achatbot deploy/modal/src/llm/vllm/vlm/skywork_r1v.py"},
    {"b200", "NVIDIA B200", 182'642 * mib,
     "MEASURED: torch.cuda.get_device_properties total_memory=182642MB, quoted in "
     "ai-bot-pro/achatbot deploy/modal/src/llm/vllm/vlm/skywork_r1v.py (another public B200 "
     "printout shows 182631MB)"},
    {"mi300x", "AMD Instinct MI300X", 196'592 * mib,
     "MEASURED: torch.cuda.get_device_properties total_memory=196592MB (torch 2.6, ROCm 6.2.4), "
     "https://github.com/ROCm/ROCm/issues/4203 (16 MiB below the physical 192 GiB)"},
    {"mi355x", "AMD Instinct MI355X", 294'912 * mib,
     "VENDOR SPEC: 288 GB HBM3E = 8 stacks x 36 GiB = 288 GiB physical; no public torch reading "
     "was found. The MI300X reading sits 16 MiB below its physical size, so expect slightly less"},
};

}  // namespace

std::span<const DevicePreset> device_presets() {
  return presets;
}

std::optional<DevicePreset> find_device(std::string_view name) {
  for (const DevicePreset& p : presets) {
    if (p.name == name) return p;
  }
  return std::nullopt;
}

}  // namespace stagemem
