// gaps.h — the named memory that tensor shapes cannot derive.
//
// Purpose: allocator fragmentation, communication-library buffers, runtime context and
// math-library workspaces appear on every stage as explicit rows. A row is 0 B and tagged
// NOT MEASURED until the user enters a MEASURED value with its source; there is no default
// amount and never a percentage. Measured rows add to a stage's peak so the capacity check sees
// them, but they never feed a derived term or a cross-check's derived sum.
// Units: bytes (int64) per rank.
// Limitations: one value per kind per stage (the last entry for a stage wins over an every-stage
// entry); the allocation point of each kind is the earliest moment it can exist.
#pragma once

#include <cstdint>
#include <vector>

#include "config.h"
#include "report.h"

namespace stagemem {

// The row's name ("allocator fragmentation"), what the memory is, and when it can first exist.
std::string_view gap_label(GapKind kind);
std::string_view gap_description(GapKind kind);
AllocationPoint gap_allocation_point(GapKind kind);

// One row per GapKind for this stage, MEASURED where `entries` has a value for it.
std::vector<Term> gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries);
// The measured gap bytes of a stage (what its gap terms sum to).
std::int64_t gap_bytes(std::int64_t stage, const std::vector<GapEntry>& entries);
void append_gap_terms(std::int64_t stage, const std::vector<GapEntry>& entries,
                      std::vector<Term>& out);

}  // namespace stagemem
