#include "gaps.h"

#include "units.h"

namespace stagemem {

std::string_view gap_label(GapKind kind) {
  switch (kind) {
    case GapKind::allocator_fragmentation:
      return "allocator fragmentation";
    case GapKind::communication_buffers:
      return "communication-library buffers";
    case GapKind::runtime_context:
      return "runtime context";
    case GapKind::math_library_workspaces:
      return "math-library workspaces";
  }
  return "unknown gap";
}

std::string_view gap_description(GapKind kind) {
  switch (kind) {
    case GapKind::allocator_fragmentation:
      return "reserved but unallocated blocks of the caching allocator";
    case GapKind::communication_buffers:
      return "NCCL/RCCL channels, proxies and registered buffers";
    case GapKind::runtime_context:
      return "CUDA/HIP context, loaded kernels and modules";
    case GapKind::math_library_workspaces:
      return "cuBLAS/hipBLASLt and cuDNN workspaces";
  }
  return "unknown gap";
}

AllocationPoint gap_allocation_point(GapKind kind) {
  switch (kind) {
    case GapKind::runtime_context:
    case GapKind::communication_buffers:
      return AllocationPoint::model_init;
    case GapKind::math_library_workspaces:
    case GapKind::allocator_fragmentation:
      return AllocationPoint::forward;
  }
  return AllocationPoint::forward;
}

std::vector<Term> gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries) {
  std::vector<Term> terms;
  for (int k = 0; k < gap_kind_count; ++k) {
    const auto kind = static_cast<GapKind>(k);
    const GapEntry* chosen = nullptr;
    for (const GapEntry& e : entries) {
      if (e.kind != kind) continue;
      if (e.stage == stage || (e.stage == -1 && (chosen == nullptr || chosen->stage == -1))) {
        chosen = &e;
      }
    }
    Term t{
        .name = "gap: " + std::string(gap_label(kind)),
        .formula = std::string(gap_description(kind)) +
                   ": not derivable from tensor shapes; 0 B until a MEASURED value is entered",
        .scaling = "not derived",
        .family = Family::gap,
        .tag = Tag::not_measured,
        .allocated_at = gap_allocation_point(kind),
        .bytes = 0,
    };
    if (chosen != nullptr) {
      t.tag = Tag::measured;
      t.bytes = chosen->bytes;
      t.source = chosen->source;
      t.formula = std::string(gap_description(kind)) + ": MEASURED " + group_digits(chosen->bytes) +
                  " B (" + chosen->source + ")";
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

}  // namespace stagemem
