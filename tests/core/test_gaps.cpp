// Tests of gaps.h: named gap rows are zero and NOT MEASURED until a measured value is entered.
#include "catch.h"
#include "memory/gaps.h"
#include "render/term_text.h"

using namespace stagemem;

TEST_CASE("Every gap kind is a zero row until measured - never a percentage") {
  const auto rows = gap_terms(0, {});
  REQUIRE(rows.size() == 4);
  for (const Term& t : rows) {
    CHECK(t.family == Family::gap);
    CHECK(t.tag == Tag::not_measured);
    CHECK(t.bytes == 0);
    CHECK(term_formula(t).find('%') == std::string::npos);
  }
  CHECK(term_name(rows[0]) == "gap: allocator fragmentation");
}

TEST_CASE("A measured gap is MEASURED with its source - a stage entry beats an all-stage one") {
  const std::vector<GapEntry> entries = {
      {.kind = GapKind::communication_buffers, .stage = -1, .bytes = 1'000, .source = "all"},
      {.kind = GapKind::communication_buffers, .stage = 2, .bytes = 3'000, .source = "stage 2"},
  };
  const Term s0 = gap_terms(0, entries)[1];
  CHECK(s0.tag == Tag::measured);
  CHECK(s0.bytes == 1'000);
  CHECK(s0.source == "all");
  const Term s2 = gap_terms(2, entries)[1];
  CHECK(s2.bytes == 3'000);
  CHECK(s2.source == "stage 2");
  CHECK(gap_terms(2, entries)[0].bytes == 0);
}

namespace {

TrainingConfig with_workspaces(GemmWorkspaces kind, std::string_view te = "") {
  TrainingConfig t;
  t.kernels.gemm_workspaces = kind;
  if (!te.empty()) t.stack.transformer_engine = *parse_release(te);
  return t;
}

std::vector<Term> workspaces(std::int64_t stage, const std::vector<GapEntry>& entries,
                             GemmWorkspaces kind, bool grouped, std::string_view te = "") {
  std::vector<Term> out;
  append_library_workspace_terms(stage, entries, with_workspaces(kind, te), grouped, out);
  return out;
}

}  // namespace

TEST_CASE("GEMM workspaces are documented library constants with their source") {
  // sm90: TE 32 MiB + 1 KiB = 33,555,456 B; PyTorch cuBLAS :4096:8 = 4096 KiB x 8 = 33,554,432 B
  // per (handle, stream), one for the forward thread and one for autograd's backward thread.
  auto terms = workspaces(0, {}, GemmWorkspaces::sm90, false);
  REQUIRE(terms.size() == 2);
  CHECK(terms[0].bytes == 33'555'456LL);
  CHECK(terms[1].bytes == 2 * 33'554'432LL);
  for (const Term& t : terms) {
    CHECK(t.tag == Tag::documented);
    CHECK(t.family == Family::resident);
    CHECK(t.source.find("documented constant") != std::string_view::npos);
    CHECK(term_formula(t).find(std::string(t.source)) != std::string::npos);
  }
  CHECK(library_workspace_bytes(0, {}, with_workspaces(GemmWorkspaces::sm90), false) ==
        100'664'320LL);
  // MoE: TE's grouped GEMM adds one workspace per compute stream (4): 5 x 33,555,456.
  terms = workspaces(0, {}, GemmWorkspaces::sm90, true);
  CHECK(terms[0].bytes == 5 * 33'555'456LL);
  CHECK(library_workspace_bytes(0, {}, with_workspaces(GemmWorkspaces::sm90), true) ==
        167'777'280LL + 67'108'864);
  // sm80: TE 4 MiB; PyTorch's default :4096:2:16:8 = 2 x 4 MiB + 8 x 16 KiB = 8,519,680 B.
  terms = workspaces(0, {}, GemmWorkspaces::sm80, false);
  CHECK(terms[0].bytes == 4'194'304LL);
  CHECK(terms[1].bytes == 2 * 8'519'680LL);
  CHECK(workspaces(0, {}, GemmWorkspaces::none, false).empty());
  // TE before 2.8 (version rule te-gemm-workspace-plus-1kib): 32 MiB exactly, 33,554,432 B.
  CHECK(workspaces(0, {}, GemmWorkspaces::sm90, false, "2.7.1")[0].bytes == 33'554'432LL);
  CHECK(workspaces(0, {}, GemmWorkspaces::sm90, true, "2.7")[0].bytes == 5 * 33'554'432LL);
  CHECK(workspaces(0, {}, GemmWorkspaces::sm90, false, "2.8")[0].bytes == 33'555'456LL);
  CHECK(library_workspace_bytes(0, {}, with_workspaces(GemmWorkspaces::none), true) == 0);
}

TEST_CASE("A measured math-library gap row replaces the documented workspaces on its stage") {
  const std::vector<GapEntry> entries = {{.kind = GapKind::math_library_workspaces,
                                          .stage = 1,
                                          .bytes = 70'000'000,
                                          .source = "torch.cuda.memory_snapshot, run 3"}};
  CHECK(workspaces(1, entries, GemmWorkspaces::sm90, false).empty());
  CHECK(library_workspace_bytes(1, entries, with_workspaces(GemmWorkspaces::sm90), false) == 0);
  CHECK(gap_terms(1, entries)[3].bytes == 70'000'000);
  // Other stages keep the documented constants.
  CHECK(workspaces(0, entries, GemmWorkspaces::sm90, false).size() == 2);
  // An every-stage measurement replaces them everywhere.
  const std::vector<GapEntry> all = {
      {.kind = GapKind::math_library_workspaces, .stage = -1, .bytes = 1, .source = "x"}};
  CHECK(workspaces(5, all, GemmWorkspaces::sm90, true).empty());
}
