// Tests of estimate/compare.h: two reports side by side, per stage and per term, terms matched
// by identity.
#include <set>

#include "catch.h"
#include "config/url_fragment.h"
#include "estimate/compare.h"
#include "estimate/estimate.h"
#include "report/term_names.h"

using namespace stagemem;

namespace {

Config from_link(std::string_view fragment) {
  DecodedFragment decoded = decode_fragment(fragment);
  REQUIRE(decoded.diagnostics.ok());
  return decoded.config;
}

// Every term of both reports appears exactly once; the terms of each side that count in its peak
// sum to its peak; every difference is B - A.
void check_invariants(const Report& a, const Report& b, const Comparison& c) {
  REQUIRE(c.diagnostics.ok());
  REQUIRE(c.stages.size() == std::max(a.stages.size(), b.stages.size()));
  for (const StageComparison& s : c.stages) {
    const auto i = static_cast<std::size_t>(s.index);
    CHECK(s.in_a == (i < a.stages.size()));
    CHECK(s.in_b == (i < b.stages.size()));
    std::set<std::int32_t> a_seen;
    std::set<std::int32_t> b_seen;
    std::int64_t a_peak = 0;
    std::int64_t b_peak = 0;
    for (const TermComparison& t : s.terms) {
      CHECK(t.delta_bytes == t.b_bytes - t.a_bytes);
      CHECK((t.a_term >= 0 || t.b_term >= 0));
      if (t.a_term >= 0) {
        CHECK(a_seen.insert(t.a_term).second);
        const Term& term = a.stages[i].terms[static_cast<std::size_t>(t.a_term)];
        CHECK(t.a_bytes == term.bytes);
        if (term.counts_in_peak) a_peak += term.bytes;
      } else {
        CHECK(t.a_bytes == 0);
      }
      if (t.b_term >= 0) {
        CHECK(b_seen.insert(t.b_term).second);
        const Term& term = b.stages[i].terms[static_cast<std::size_t>(t.b_term)];
        CHECK(t.b_bytes == term.bytes);
        if (term.counts_in_peak) b_peak += term.bytes;
      } else {
        CHECK(t.b_bytes == 0);
      }
      if (t.a_term >= 0 && t.b_term >= 0) {
        const Term& x = a.stages[i].terms[static_cast<std::size_t>(t.a_term)];
        const Term& y = b.stages[i].terms[static_cast<std::size_t>(t.b_term)];
        CHECK(x.info == y.info);
        CHECK(x.group == y.group);
        CHECK(x.family == y.family);
      }
    }
    CHECK(a_seen.size() == (s.in_a ? a.stages[i].terms.size() : 0));
    CHECK(b_seen.size() == (s.in_b ? b.stages[i].terms.size() : 0));
    CHECK(s.a_peak_bytes == (s.in_a ? a.stages[i].peak_bytes : 0));
    CHECK(s.b_peak_bytes == (s.in_b ? b.stages[i].peak_bytes : 0));
    CHECK(a_peak == s.a_peak_bytes);
    CHECK(b_peak == s.b_peak_bytes);
    CHECK(s.peak_delta_bytes == s.b_peak_bytes - s.a_peak_bytes);
  }
  CHECK(c.a_binding_stage == a.binding_stage);
  CHECK(c.b_binding_stage == b.binding_stage);
  CHECK(c.binding_peak_delta_bytes == c.b_binding_peak_bytes - c.a_binding_peak_bytes);
}

}  // namespace

TEST_CASE("Compare: a report with itself matches every term to itself with no difference") {
  const Report r = estimate(from_link("v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&device=h200"));
  REQUIRE(r.diagnostics.ok());
  const Comparison c = compare_reports(r, r);
  check_invariants(r, r, c);
  for (const StageComparison& s : c.stages) {
    CHECK(s.peak_delta_bytes == 0);
    CHECK(changed_terms(s) == 0);
    for (const TermComparison& t : s.terms) CHECK(t.a_term == t.b_term);
  }
}

TEST_CASE("Compare: PP 2 -> PP 4 moves 8 layers' weights off stage 0 and adds two stages") {
  const Report a = estimate(from_link("v=1&pp=2"));
  const Report b = estimate(from_link("v=1&pp=4"));
  const Comparison c = compare_reports(a, b);
  check_invariants(a, b, c);
  REQUIRE(c.stages.size() == 4);
  CHECK((c.stages[2].in_a == false && c.stages[2].in_b));
  for (const TermComparison& t : c.stages[3].terms) CHECK(t.a_term == -1);
  // Llama-3.1-8B stage 0: PP 2 holds 16 layers + the embedding, PP 4 holds 8 + the embedding;
  // one layer is 218,112,000 parameters in bf16: -8 x 218,112,000 x 2 B = -3,489,792,000 B
  // (8,030,257,152 B -> 4,540,465,152 B).
  const TermComparison& weights = c.stages[0].terms[0];
  REQUIRE(term_name(a.stages[0].terms[0]) == "weights (bf16)");
  CHECK(weights.a_bytes == 8'030'257'152);
  CHECK(weights.b_bytes == 4'540'465'152);
  CHECK(weights.delta_bytes == -3'489'792'000);
}

TEST_CASE("Compare: TP 2 -> 4 halves DeepSeek-V3's up-projected q, k, v on every stage") {
  const Report a = estimate(from_link("v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&device=h200"));
  const Report b = estimate(from_link("v=1&model=deepseek-v3&tp=4&sp=1&pp=16&ep=64&device=h200"));
  const Comparison c = compare_reports(a, b);
  check_invariants(a, b, c);
  int found = 0;
  for (const StageComparison& s : c.stages) {
    for (const TermComparison& t : s.terms) {
      if (t.a_term < 0 || t.b_term < 0) continue;
      const Term& term =
          a.stages[static_cast<std::size_t>(s.index)].terms[static_cast<std::size_t>(t.a_term)];
      if (term_name(term) != "MLA: up-projected q, k, v (attention inputs)") continue;
      // [S, B, heads/TP, head dims]: the heads split over TP, so TP 4 keeps half of TP 2.
      CHECK(t.a_bytes == 2 * t.b_bytes);
      CHECK(t.delta_bytes == -t.b_bytes);
      ++found;
    }
  }
  CHECK(found == 16);
  CHECK(c.binding_peak_delta_bytes < 0);
}

TEST_CASE("Compare: bf16 -> fp8 weights keeps the weights row as one term, renamed") {
  const Report a = estimate(from_link("v=1&pp=2"));
  const Report b = estimate(from_link("v=1&pp=2&weights=fp8-tensor&fp8_recipe=tensor"));
  const Comparison c = compare_reports(a, b);
  check_invariants(a, b, c);
  const TermComparison& weights = c.stages[0].terms[0];
  REQUIRE(weights.b_term >= 0);
  CHECK(term_name(a.stages[0].terms[0]) == "weights (bf16)");
  CHECK(term_name(b.stages[0].terms[static_cast<std::size_t>(weights.b_term)]) != "weights (bf16)");
  CHECK(weights.delta_bytes < 0);
  // B's added terms (the fp8 weights' transposed copies, scales) come after A's, as B-only rows.
  bool b_only = false;
  for (const TermComparison& t : c.stages[0].terms) {
    if (t.a_term < 0) b_only = true;
    if (b_only) CHECK(t.a_term < 0);
  }
  CHECK(b_only);
}

TEST_CASE("Compare: a side with errors is an error naming it") {
  const Report ok = estimate(from_link("v=1&pp=2"));
  Config bad = from_link("v=1&pp=2");
  bad.parallel.tensor_parallel = 3;  // does not divide Llama's 32 heads
  const Report broken = estimate(bad);
  REQUIRE(!broken.diagnostics.ok());
  const Comparison ab = compare_reports(ok, broken);
  REQUIRE(ab.diagnostics.errors.size() == 1);
  CHECK(ab.diagnostics.errors[0].field == "b");
  CHECK(ab.stages.empty());
  const Comparison ba = compare_reports(broken, ok);
  REQUIRE(ba.diagnostics.errors.size() == 1);
  CHECK(ba.diagnostics.errors[0].field == "a");
}

TEST_CASE("Property: 60 pairs of configurations compare with every invariant") {
  const std::vector<std::string> links = {
      "v=1&pp=2",
      "v=1&pp=4&tp=2&recompute=selective",
      "v=1&pp=8&vpp=2&recompute=full",
      "v=1&model=mixtral-8x7b&pp=4&ep=8&tp=2&sp=1",
      "v=1&model=deepseek-v3&tp=2&sp=1&pp=16&ep=64&device=h200",
      "v=1&model=deepseek-v3&pp=16&ep=64&device=h200&schedule=dualpipev&gbs=2048",
      "v=1&model=kimi-k3&pp=8&ep=28&optimizer=distributed-muon&gbs=896",
      "v=1&model=qwen3-30b-a3b&pp=4&ep=8&weights=fp8-block&fp8_recipe=block",
  };
  std::vector<Report> reports;
  for (const std::string& link : links) {
    reports.push_back(estimate(from_link(link)));
    REQUIRE(reports.back().diagnostics.ok());
  }
  int pairs = 0;
  for (const Report& a : reports) {
    for (const Report& b : reports) {
      if (&a == &b) continue;
      check_invariants(a, b, compare_reports(a, b));
      ++pairs;
      if (pairs == 60) return;
    }
  }
}
