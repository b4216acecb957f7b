#include "gaps.h"

#include "term_info.h"

namespace stagemem {
namespace {

constexpr TermInfo term_gap{"gap", "not derived", TermText::gap};

// The reading for this stage: its own, else the last one entered for every stage.
const GapEntry* chosen_entry(std::int64_t stage, GapKind kind,
                             const std::vector<GapEntry>& entries) {
  const GapEntry* chosen = nullptr;
  for (const GapEntry& e : entries) {
    if (e.kind != kind) continue;
    if (e.stage == stage || (e.stage == -1 && (chosen == nullptr || chosen->stage == -1))) {
      chosen = &e;
    }
  }
  return chosen;
}

}  // namespace

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
  append_gap_terms(stage, entries, terms);
  return terms;
}

std::int64_t gap_bytes(std::int64_t stage, const std::vector<GapEntry>& entries) {
  std::int64_t bytes = 0;
  for (int k = 0; k < gap_kind_count; ++k) {
    const GapEntry* chosen = chosen_entry(stage, static_cast<GapKind>(k), entries);
    if (chosen != nullptr) bytes += chosen->bytes;  // each at most 2^50: no overflow
  }
  return bytes;
}

void append_gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                      std::vector<Term>& terms) {
  for (int k = 0; k < gap_kind_count; ++k) {
    const auto kind = static_cast<GapKind>(k);
    const GapEntry* chosen = chosen_entry(stage, kind, entries);
    Term t{
        .info = &term_gap,
        .bytes = 0,
        .formula = Formula().number(k).number(0),
        .family = Family::gap,
        .tag = Tag::not_measured,
        .allocated_at = gap_allocation_point(kind),
    };
    if (chosen != nullptr) {
      t.tag = Tag::measured;
      t.bytes = chosen->bytes;
      t.source = chosen->source;
      t.formula = Formula().number(k).number(1);
    }
    terms.push_back(t);
  }
}

}  // namespace stagemem
