// compare.h — two reports side by side: per stage, the peak of each and the difference, and per
// term the bytes of each with the difference, terms matched by identity.
//
// Purpose: the question a wiki page asks is "what changed?" (TP 8 vs TP 4, bf16 vs fp8, before
// vs after a version bump, the even split vs the advised layout). `stagemem diff A B` and the
// app's pinned baseline both call compare_reports; render/comparison.h writes it.
// A term's identity is what it is, not what it is called: its catalogue entry (report/
// term_info.h), its layer group, its family, its place in the step and its virtual chunk. So
// "weights (bf16)" and "weights (fp8 + bf16)" are the same term with different bytes, and its
// name in each report is kept. When a stage holds several terms of one identity (one per chunk
// is already told apart; a few workspaces are not), the k-th of A is matched with the k-th of B.
// Stages are matched by index; a stage only one report has is compared with nothing (its other
// side 0 bytes, `in_a`/`in_b` false).
// Units: bytes (int64) per rank; every difference is overflow-checked (a difference that would
// pass 2^63 - 1 makes the comparison an error naming the stage).
// Limitations: the reports must be free of errors (a report with errors compares to an error);
// the comparison keeps indices into both reports' terms: keep both reports (and the configs their
// MEASURED terms reference) alive while it is used.
#pragma once

#include <cstdint>
#include <vector>

#include "base/diagnostics.h"
#include "report/report.h"

namespace stagemem {

// One term of a stage in A, in B or in both.
struct TermComparison {
  std::int32_t a_term = -1;  // index into A's stage terms; -1: B only
  std::int32_t b_term = -1;  // index into B's stage terms; -1: A only
  std::int64_t a_bytes = 0;  // 0 when A has no such term
  std::int64_t b_bytes = 0;
  std::int64_t delta_bytes = 0;  // b_bytes - a_bytes
};

// One stage index of A and B.
struct StageComparison {
  std::int64_t index = 0;
  bool in_a = false;
  bool in_b = false;
  std::int64_t a_peak_bytes = 0;  // 0 when the stage is not in A
  std::int64_t b_peak_bytes = 0;
  std::int64_t peak_delta_bytes = 0;  // b_peak_bytes - a_peak_bytes
  // Each side's replayed peak reserved and device figure (report.h); -1 when unknown (the stage
  // is not on that side, not replayed, or the rows outside the allocator are not measured).
  std::int64_t a_peak_reserved_bytes = -1;
  std::int64_t b_peak_reserved_bytes = -1;
  std::int64_t a_device_peak_bytes = -1;
  std::int64_t b_device_peak_bytes = -1;
  // A's terms in A's order (each with its B match, if any), then B's unmatched terms in B's order.
  std::vector<TermComparison> terms;
};

struct Comparison {
  std::vector<StageComparison> stages;  // index 0 .. max(A stages, B stages) - 1
  std::int64_t a_binding_stage = -1;    // Report::binding_stage of each
  std::int64_t b_binding_stage = -1;
  std::int64_t a_binding_peak_bytes = 0;  // the binding stage's peak (the report's largest)
  std::int64_t b_binding_peak_bytes = 0;
  std::int64_t binding_peak_delta_bytes = 0;  // b - a
  Diagnostics diagnostics;                    // errors: `stages` is empty
};

// Whether two terms are one term (its catalogue entry, group, family, place and chunk; the bytes
// and the name's numbers may differ): how a comparison and the scaling cross-check match terms.
bool same_term_identity(const Term& a, const Term& b);

// B against A (deltas are B - A). Either report with errors gives a comparison with an error
// naming which one ("a" or "b").
Comparison compare_reports(const Report& a, const Report& b);

// The number of matched pairs, A-only and B-only terms whose bytes differ: what a reader scans.
std::int64_t changed_terms(const StageComparison& stage);

}  // namespace stagemem
