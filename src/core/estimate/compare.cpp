#include "estimate/compare.h"

#include <algorithm>
#include <string>

#include "base/checked_math.h"

namespace stagemem {
namespace {

// The k-th unmatched term of B with A's term's identity, where k counts A's earlier terms of
// that identity: pairs the first of A with the first of B, the second with the second.
std::int32_t match_in_b(const StageReport& a, std::size_t a_index, const StageReport& b,
                        const std::vector<bool>& b_taken) {
  const Term& term = a.terms[a_index];
  for (std::size_t j = 0; j < b.terms.size(); ++j) {
    if (!b_taken[j] && same_term_identity(term, b.terms[j])) return static_cast<std::int32_t>(j);
  }
  return -1;
}

bool fill_delta(TermComparison& t) {
  return checked_sub(t.b_bytes, t.a_bytes, &t.delta_bytes);
}

// One stage index: A's terms with their matches, then B's unmatched ones.
bool compare_stage(const StageReport* a, const StageReport* b, StageComparison& out) {
  out.in_a = a != nullptr;
  out.in_b = b != nullptr;
  out.a_peak_bytes = a ? a->peak_bytes : 0;
  out.b_peak_bytes = b ? b->peak_bytes : 0;
  bool ok = checked_sub(out.b_peak_bytes, out.a_peak_bytes, &out.peak_delta_bytes);
  const auto reserved = [](const StageReport* s) {
    return s != nullptr && s->reserved_replayed ? s->peak_reserved_bytes : std::int64_t{-1};
  };
  out.a_peak_reserved_bytes = reserved(a);
  out.b_peak_reserved_bytes = reserved(b);
  out.a_device_peak_bytes = a ? a->device_peak_bytes : -1;
  out.b_device_peak_bytes = b ? b->device_peak_bytes : -1;
  std::vector<bool> b_taken(b ? b->terms.size() : 0, false);
  if (a) {
    for (std::size_t i = 0; i < a->terms.size(); ++i) {
      TermComparison t{.a_term = static_cast<std::int32_t>(i), .a_bytes = a->terms[i].bytes};
      if (b) t.b_term = match_in_b(*a, i, *b, b_taken);
      if (t.b_term >= 0) {
        b_taken[static_cast<std::size_t>(t.b_term)] = true;
        t.b_bytes = b->terms[static_cast<std::size_t>(t.b_term)].bytes;
      }
      ok = fill_delta(t) && ok;
      out.terms.push_back(t);
    }
  }
  for (std::size_t j = 0; j < b_taken.size(); ++j) {
    if (b_taken[j]) continue;
    TermComparison t{.b_term = static_cast<std::int32_t>(j), .b_bytes = b->terms[j].bytes};
    ok = fill_delta(t) && ok;
    out.terms.push_back(t);
  }
  return ok;
}

std::int64_t binding_peak(const Report& report) {
  if (report.binding_stage < 0 ||
      report.binding_stage >= static_cast<std::int64_t>(report.stages.size())) {
    return 0;
  }
  return report.stages[static_cast<std::size_t>(report.binding_stage)].peak_bytes;
}

}  // namespace

// What makes two terms the same term (compare.h): everything but the numbers and the name's
// filled-in values.
bool same_term_identity(const Term& a, const Term& b) {
  return a.info == b.info && a.group == b.group && a.family == b.family && a.place == b.place &&
         a.chunk == b.chunk;
}

Comparison compare_reports(const Report& a, const Report& b) {
  Comparison out;
  if (!a.diagnostics.ok()) out.diagnostics.error("a", "configuration A has errors: no report");
  if (!b.diagnostics.ok()) out.diagnostics.error("b", "configuration B has errors: no report");
  if (!out.diagnostics.ok()) return out;
  out.a_binding_stage = a.binding_stage;
  out.b_binding_stage = b.binding_stage;
  out.a_binding_peak_bytes = binding_peak(a);
  out.b_binding_peak_bytes = binding_peak(b);
  if (!checked_sub(out.b_binding_peak_bytes, out.a_binding_peak_bytes,
                   &out.binding_peak_delta_bytes)) {
    out.diagnostics.error("b", "the difference of the binding peaks passes 2^63 - 1 bytes");
  }
  const std::size_t count = std::max(a.stages.size(), b.stages.size());
  out.stages.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    out.stages[i].index = static_cast<std::int64_t>(i);
    const StageReport* sa = i < a.stages.size() ? &a.stages[i] : nullptr;
    const StageReport* sb = i < b.stages.size() ? &b.stages[i] : nullptr;
    if (!compare_stage(sa, sb, out.stages[i])) {
      out.diagnostics.error(
          "b", "stage " + std::to_string(i) + ": a difference of A and B passes 2^63 - 1 bytes");
    }
  }
  if (!out.diagnostics.ok()) out.stages.clear();
  return out;
}

std::int64_t changed_terms(const StageComparison& stage) {
  return std::count_if(stage.terms.begin(), stage.terms.end(),
                       [](const TermComparison& t) { return t.delta_bytes != 0; });
}

}  // namespace stagemem
