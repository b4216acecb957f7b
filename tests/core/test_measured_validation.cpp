// The measured-validation suite (issue 11, item 5; issue 23, item 5): public measured peaks of
// Megatron-LM CI runs (tests/core/data/measured_validation.tsv: configuration and software stack as
// a stagemem link, measured figure, metric, recording commit and source URL), each compared with
// stagemem's peak of the measured rank's stage.
//
// The measurements are only compared with: no term, option or factor is derived from them. Every
// case prints its signed error and the largest terms alive at the peak, and must be within
// +-2 %; the median |error| of the set is printed. A case outside that band is a physics question
// for the source (which tensor is missing or extra), never a reason to tune an option: such runs
// are kept in measured_validation_open.tsv with their question, printed and not asserted.
//
// The metric, torch.cuda.max_memory_allocated since process start, holds everything the caching
// allocator handed out at the worst moment of any step: resident state (weights, fp32 main
// gradients, optimizer shards, the Adam moments created in step 1), TE's and PyTorch's GEMM
// workspaces (documented constants, gaps.h), and the binding phase (stored activations plus the
// co-live transient). It holds no allocator fragmentation (reserved, not allocated) and no
// CUDA context or NCCL memory (not from the caching allocator): those gap rows stay 0 here.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "base/units.h"
#include "catch.h"
#include "config/config.h"
#include "config/url_fragment.h"
#include "corpus.h"
#include "estimate/estimate.h"
#include "render/term_text.h"
#include "report/report.h"

using namespace stagemem;

namespace {

struct MeasuredCase {
  std::string id;
  std::int64_t stage = 0;
  std::int64_t measured_bytes = 0;
  std::int64_t after_step_bytes = 0;  // torch.cuda.memory_allocated after the optimizer step
  std::string metric;
  std::string source;
  std::string link;
};

// The asserted set, and the known open cases (printed with their error, not asserted).
constexpr const char* asserted_cases = "core/data/measured_validation.tsv";
constexpr const char* open_cases = "core/data/measured_validation_open.tsv";
constexpr const char* fp8_cases = "core/data/measured_validation_fp8.tsv";

std::vector<MeasuredCase> read_cases(const char* file = asserted_cases) {
  std::istringstream in(stagemem_tests::read_whole_file(stagemem_tests::corpus_path(file)));
  std::vector<MeasuredCase> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    while (true) {
      const std::size_t tab = line.find('\t', start);
      fields.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    REQUIRE(fields.size() == 7);
    out.push_back({.id = fields[0],
                   .stage = std::stoll(fields[1]),
                   .measured_bytes = std::stoll(fields[2]),
                   .after_step_bytes = std::stoll(fields[3]),
                   .metric = fields[4],
                   .source = fields[5],
                   .link = fields[6]});
  }
  return out;
}

// The signed error of the derived peak against the measurement, in percent.
double signed_error_percent(std::int64_t derived, std::int64_t measured) {
  return 100.0 * static_cast<double>(derived - measured) / static_cast<double>(measured);
}

void print_case(const MeasuredCase& c, const StageReport& stage, double error) {
  std::printf("%s (stage %lld): derived %s, measured %s (%s), error %+.2f %%\n  source: %s\n",
              c.id.c_str(), static_cast<long long>(c.stage), format_gib(stage.peak_bytes).c_str(),
              format_gib(c.measured_bytes).c_str(), c.metric.c_str(), error, c.source.c_str());
  std::vector<const Term*> live;
  for (const Term& t : stage.terms) {
    if (t.counts_in_peak && t.bytes > 0) live.push_back(&t);
  }
  std::sort(live.begin(), live.end(),
            [](const Term* a, const Term* b) { return a->bytes > b->bytes; });
  for (std::size_t i = 0; i < live.size() && i < 6; ++i) {
    std::printf("    %-90s %14lld B\n", term_name(*live[i]).c_str(),
                static_cast<long long>(live[i]->bytes));
  }
}

// The stage's derived peak against the measured one: checks the link and the logging stage,
// prints the case and returns the signed error in percent.
double peak_error(const MeasuredCase& c) {
  const DecodedFragment decoded = decode_fragment(c.link);
  REQUIRE(decoded.diagnostics.ok());
  const Report report = estimate(decoded.config);
  REQUIRE(report.diagnostics.ok());
  REQUIRE(c.stage < static_cast<std::int64_t>(report.stages.size()));
  // The last global rank logs the figure: the last pipeline stage.
  CHECK(c.stage == static_cast<std::int64_t>(report.stages.size()) - 1);
  const StageReport& stage = report.stages[static_cast<std::size_t>(c.stage)];
  const double error = signed_error_percent(stage.peak_bytes, c.measured_bytes);
  print_case(c, stage, error);
  return error;
}

double median_abs(std::vector<double> errors) {
  REQUIRE_FALSE(errors.empty());
  for (double& e : errors) e = std::abs(e);
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  return n % 2 == 1 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2.0;
}

}  // namespace

TEST_CASE("Measured validation: Megatron-LM CI peaks within +-2 %", "[measured]") {
  const std::vector<MeasuredCase> cases = read_cases();
  REQUIRE(cases.size() == 15);
  std::vector<double> errors;
  for (const MeasuredCase& c : cases) {
    INFO(c.id);
    const double error = peak_error(c);
    errors.push_back(error);
    CHECK(std::abs(error) <= 2.0);
  }
  std::printf("measured validation: %zu cases, median |error| %.2f %%\n", errors.size(),
              median_abs(errors));
}

// The known open cases: each prints its signed error; none is asserted (the file names the
// question each one leaves). That they still decode, estimate and name the logging stage is.
TEST_CASE("Measured validation: known open cases are printed, not asserted", "[measured]") {
  const std::vector<MeasuredCase> cases = read_cases(open_cases);
  REQUIRE(cases.size() == 5);
  std::vector<double> errors;
  for (const MeasuredCase& c : cases) {
    INFO(c.id);
    std::printf("open case, not asserted: ");
    errors.push_back(peak_error(c));
  }
  std::printf("open cases: %zu, median |error| %.2f %% (not asserted)\n", errors.size(),
              median_abs(errors));
}

namespace {
// What each run's yaml says about the settings that decide which terms exist (not the numbers):
// --sequence-parallel, dropout (Megatron's default 0.1 unless --hidden-dropout/--attention-dropout
// 0), and gradient-accumulation fusion (on unless --no-gradient-accumulation-fusion).
struct RunFacts {
  bool sequence_parallel = false;
  bool dropout = true;
  bool gradient_accumulation_fusion = false;
};
RunFacts run_facts(const std::string& id) {
  if (id == "mlmci-toy-tp2-pp2-mla-sp") return {.sequence_parallel = true};
  if (id == "mlmci-toy-tp2-pp2-cp2-sp" || id == "mlmci-toy-tp2-pp1-cp2-sp-nondet") {
    return {.sequence_parallel = true, .dropout = false};
  }
  if (id == "mlmci-moe-dsv3like-tp2-pp2-vpp4-ep4" ||
      id == "mlmci-moe-dsv3like-tp2-pp2-vpp4-ep4-fp8-tensorwise") {
    return {.sequence_parallel = true, .dropout = false, .gradient_accumulation_fusion = true};
  }
  return {};
}
}  // namespace

TEST_CASE("Measured validation: the configurations say what the runs keep", "[measured]") {
  std::vector<MeasuredCase> cases = read_cases();
  const std::vector<MeasuredCase> open = read_cases(open_cases);
  cases.insert(cases.end(), open.begin(), open.end());
  for (const MeasuredCase& c : cases) {
    INFO(c.id);
    const DecodedFragment decoded = decode_fragment(c.link);
    REQUIRE(decoded.diagnostics.ok());
    const Config& config = decoded.config;
    const RunFacts facts = run_facts(c.id);
    CHECK(config.precision.gradient_accumulation_fusion == facts.gradient_accumulation_fusion);
    // Dropout 0.1 keeps the masks; --hidden-dropout 0 --attention-dropout 0 keeps none.
    CHECK(config.training.dropout == facts.dropout);
    CHECK(config.parallel.sequence_parallel == facts.sequence_parallel);
    // Every run is an H100 (sm90) run with its recording commit's stack.
    CHECK(config.training.kernels.gemm_workspaces == GemmWorkspaces::sm90);
    CHECK(config.training.stack.architecture == Architecture::sm90);
    CHECK(config.training.stack.megatron_core.given());
    CHECK(config.training.stack.transformer_engine.given());
    const Report report = estimate(config);
    REQUIRE(report.diagnostics.ok());
    const StageReport& stage = report.stages.back();
    bool dummy = false;
    bool moe = false;
    std::int64_t workspaces = 0;
    for (const Term& t : stage.terms) {
      dummy = dummy || term_name(t).starts_with("TE dummy weight-gradient buffers");
      moe = moe || term_name(t).starts_with("MoE");
      if (t.tag == Tag::documented) workspaces += t.bytes;
    }
    // TE's dummy weight gradients exist exactly when gradient-accumulation fusion is on.
    CHECK(dummy == facts.gradient_accumulation_fusion);
    // TE's one workspace (32 MiB + 1 KiB) + PyTorch's two cuBLAS workspaces (2 x 32 MiB) on a
    // dense model: 100,664,320 B; an MoE stage adds one TE workspace per grouped-GEMM stream (4).
    CHECK(workspaces == (moe ? 4 : 0) * (33'554'432LL + 1'024) + 3 * 33'554'432LL + 1'024);
  }
}

// The case's link with its after-step figure as an after-first-step measurement: the report's one
// cross-check (derived between-steps bytes against the measurement).
namespace {
CrossCheck after_step_cross_check(const MeasuredCase& c, DecodedFragment& decoded) {
  REQUIRE(decoded.diagnostics.ok());
  decoded.config.measurements = {{.point = MeasurementPoint::after_first_step,
                                  .stage = c.stage,
                                  .bytes = c.after_step_bytes,
                                  .source = c.source}};
  const Report report = estimate(decoded.config);
  REQUIRE(report.diagnostics.ok());
  REQUIRE(report.cross_checks.size() == 1);
  return report.cross_checks[0];
}
}  // namespace

// What stays allocated between steps, read through the cross-check machinery (measurement point
// after-first-step: every resident term, Adam's moments, TE's dummy weight gradients, the GEMM
// workspaces, and on PP > 1 ranks the pipeline input each chunk fed by a previous stage keeps in
// TransformerBlock.input_tensor with its gradient; no activation). Before that last term the PP > 1
// last stages measured 2.6-3.3 hidden states U = [S, B, h] bf16 (1 chunk: 2 U kept), 10.0 U (toy
// VPP 3: 6 U kept) and 20.0 U (7B VPP 8: 16 U kept) above the derivation; what remains is printed
// in U and explained in docs/physics-notes.md.
TEST_CASE("Measured validation: allocated after the step within +-3 %", "[measured]") {
  for (const MeasuredCase& c : read_cases()) {
    INFO(c.id);
    DecodedFragment decoded = decode_fragment(c.link);
    const CrossCheck check = after_step_cross_check(c, decoded);
    const double error = signed_error_percent(check.derived_bytes, c.after_step_bytes);
    // The gap in units of one [S, B, h] bf16 hidden state of the run.
    const TrainingConfig& training = decoded.config.training;
    Diagnostics model_diagnostics;
    const std::optional<Model> model = resolve_model(decoded.config, model_diagnostics);
    REQUIRE(model.has_value());
    const double hidden_state = 2.0 * static_cast<double>(training.sequence_length) *
                                static_cast<double>(training.micro_batch) *
                                static_cast<double>(model->hidden);
    std::printf(
        "%s after the step: derived %s, measured %s, error %+.3f %% (gap %lld B = %.3f hidden "
        "states)\n",
        c.id.c_str(), format_gib(check.derived_bytes).c_str(),
        format_gib(c.after_step_bytes).c_str(), error, static_cast<long long>(check.gap_bytes),
        static_cast<double>(check.gap_bytes) / hidden_state);
    CHECK(std::abs(error) <= 3.0);
  }
}

// The derivation is a lower bound of what the runs keep between steps: every term is a tensor the
// stage holds, so no run may measure less than stagemem derives (the open gap above is memory
// stagemem does not name, never memory it counts twice). Small tensors (loss reports, step
// counters, a few KiB) are the least a run adds.
TEST_CASE("Measured validation: allocated after the step is never below the derivation",
          "[measured]") {
  for (const MeasuredCase& c : read_cases()) {
    INFO(c.id);
    DecodedFragment decoded = decode_fragment(c.link);
    const CrossCheck check = after_step_cross_check(c, decoded);
    CHECK(check.derived_bytes <= c.after_step_bytes);
    CHECK(check.gap_bytes == c.after_step_bytes - check.derived_bytes);
  }
}

// Issue 24, item 4: the public measured fp8 runs (measured_validation_fp8.tsv), each on H100 and
// GB200, within +-3 % on the peak and after the step, and never below the derivation after it.
TEST_CASE("Measured validation: fp8 runs within +-3 %, peak and after the step",
          "[measured][fp8]") {
  const std::vector<MeasuredCase> cases = read_cases(fp8_cases);
  REQUIRE(cases.size() == 4);
  std::vector<double> errors;
  for (const MeasuredCase& c : cases) {
    INFO(c.id);
    const double error = peak_error(c);
    errors.push_back(error);
    CHECK(std::abs(error) <= 3.0);
    DecodedFragment decoded = decode_fragment(c.link);
    CHECK(decoded.config.training.low_precision.recipe != Fp8Recipe::none);
    const CrossCheck check = after_step_cross_check(c, decoded);
    const double after = signed_error_percent(check.derived_bytes, c.after_step_bytes);
    std::printf("%s after the step: derived %s, measured %s, error %+.3f %%\n", c.id.c_str(),
                format_gib(check.derived_bytes).c_str(), format_gib(c.after_step_bytes).c_str(),
                after);
    CHECK(std::abs(after) <= 3.0);
    CHECK(check.derived_bytes <= c.after_step_bytes);
  }
  std::printf("fp8 measured validation: %zu cases, median |error| %.2f %%\n", errors.size(),
              median_abs(errors));
}
