// Tests of estimate/scaling.h (the scaling cross-check), config/scaling_points.h (its points as
// text and link keys) and render/scaling_text.h (its writers).
#include <nlohmann/json.hpp>

#include "catch.h"
#include "config/scaling_points.h"
#include "config/url_fragment.h"
#include "estimate/estimate.h"
#include "estimate/scaling.h"
#include "render/scaling_text.h"
#include "report/term_names.h"

using namespace stagemem;

namespace {

constexpr std::int64_t mib = std::int64_t{1} << 20;
constexpr std::int64_t gib = std::int64_t{1} << 30;

Config from_link(std::string_view fragment) {
  DecodedFragment decoded = decode_fragment(fragment);
  REQUIRE(decoded.diagnostics.ok());
  return decoded.config;
}

ScalingPoint seq_point(std::int64_t seq, std::int64_t bytes) {
  return {.axis = ScalingAxis::sequence_length, .value = seq, .measured_bytes = bytes};
}

ScalingPoints seq_points(std::initializer_list<std::pair<std::int64_t, std::int64_t>> list) {
  ScalingPoints out;
  for (const auto& [seq, bytes] : list) out.points.push_back(seq_point(seq, bytes));
  return out;
}

// The derived side's invariants, whatever the configuration: at every point the constant, linear
// and not-linear terms sum to the stage's peak; the linear terms are exactly proportional to
// tokens; with no not-linear term, derived a + b x tokens is the peak exactly.
void check_derived_invariants(const ScalingCheck& check) {
  REQUIRE(check.diagnostics.ok());
  const ScalingPointResult& first = check.results.front();
  for (std::size_t p = 0; p < check.results.size(); ++p) {
    const ScalingPointResult& r = check.results[p];
    const StageReport& stage = check.reports[p].stages[static_cast<std::size_t>(check.stage)];
    CHECK(r.derived_peak_bytes == stage.peak_bytes);
    CHECK(r.constant_bytes + r.linear_bytes + r.not_linear_bytes == r.derived_peak_bytes);
    CHECK(r.constant_bytes == check.derived_constant_bytes);
    CHECK(r.linear_bytes * first.tokens == first.linear_bytes * r.tokens);
    if (r.not_linear_bytes == 0) {
      CHECK(check.derived_constant_bytes + r.linear_bytes == stage.peak_bytes);
      CHECK(static_cast<double>(check.derived_constant_bytes) +
                check.derived_bytes_per_token * static_cast<double>(r.tokens) ==
            Approx(static_cast<double>(stage.peak_bytes)).epsilon(1e-12));
    }
  }
}

}  // namespace

// Worked number: llama-3.1-8b at the default configuration (TP 1, PP 4, 1F1B, mbs 1, 1024
// micro-batches), stage 0 binds: 8 layers x 4 micro-batches in flight = 32 layer-micro-batches.
// Tokens = seq / CP x mbs = seq. Stored bytes per token of one layer and micro-batch (bf16,
// h = 4096, 32 heads, 8 KV heads, head_dim 128, ffn 14336; flash attention, no recompute):
//   layer input 2h 8,192 + attention norm output 2h 8,192 + q, k, v 2 x (32 + 2 x 8) x 128 12,288
//   + log-sum-exp 4 x 32 heads 128 + attention output 2h 8,192 + MLP norm input 2h 8,192
//   + MLP norm output 2h 8,192 + fc1 output 2 x 2 x 14336 57,344 + SwiGLU output 2 x 14336 28,672
//   = 139,392 B; x 32 = 4,460,544 B per token stored.
// The co-live transient at the peak, the MLP backward working set of one layer (gradients of the
// fc1 output and of the SwiGLU output, bf16): 2 x (2 x 14336 + 14336) = 86,016 B per token.
// Derived b = 4,460,544 + 86,016 = 4,546,560 B per token (4.336 MiB/token).
// Derived a = the resident terms: 2 + 4 + 4 + 8 = 18 B x 2,270,232,576 parameters on the rank
// (bf16 weights, fp32 gradient buffer, fp32 master weights, Adam moments) = 40,864,186,368 B,
// + TE's dummy weight-gradient buffers 436,207,616 B + the GEMM workspaces (documented
// constants).
TEST_CASE("scaling: llama-3.1-8b derived slope is the linear terms' bytes per token", "[scaling]") {
  const Config base = default_config();
  const ScalingCheck check =
      scaling_cross_check(base, seq_points({{4096, 40 * gib}, {8192, 48 * gib}}));
  REQUIRE(check.diagnostics.ok());
  check_derived_invariants(check);
  CHECK(check.stage == 0);
  CHECK_FALSE(check.stage_given);
  CHECK(check.axis == ScalingAxis::sequence_length);
  CHECK(check.results[0].tokens == 4096);
  CHECK(check.results[1].tokens == 8192);
  CHECK(check.derived_linear_tokens == 4096);
  CHECK(check.derived_linear_bytes == 4'546'560LL * 4096);
  CHECK(check.derived_bytes_per_token == 4'546'560.0);
  CHECK(check.results[0].not_linear_bytes == 0);
  CHECK_FALSE(check.moment_moves);

  std::int64_t workspaces = 0;
  std::int64_t linear_terms = 0;
  for (const ScalingTerm& row : check.terms) {
    const Term& term = check.reports[0].stages[0].terms[static_cast<std::size_t>(row.term[0])];
    if (row.scaling == TermScaling::linear) ++linear_terms;
    if (row.scaling == TermScaling::constant) {
      CHECK(term.family == Family::resident);
      if (term.tag == Tag::documented) workspaces += term.bytes;
    } else {
      CHECK(row.scaling == TermScaling::linear);
      CHECK(term.family != Family::resident);
    }
  }
  CHECK(linear_terms == 10);  // the nine stored tensors and the MLP backward working set
  CHECK(workspaces > 0);
  CHECK(check.derived_constant_bytes == 18 * 2'270'232'576LL + 436'207'616 + workspaces);

  // Measured: an exact line through two points: b = 8 GiB / 4096 tokens = 2 MiB per token,
  // a = 40 GiB - 4096 x 2 MiB = 32 GiB.
  CHECK(check.exact_line);
  CHECK(check.measured_bytes_per_token == 2.0 * mib);
  CHECK(check.measured_constant_bytes == 32 * gib);
  CHECK(check.constant_gap_bytes == 32 * gib - check.derived_constant_bytes);
  CHECK(check.has_constant_gap_percent);
  CHECK(check.constant_gap_percent == Approx(100.0 * static_cast<double>(check.constant_gap_bytes) /
                                             static_cast<double>(check.derived_constant_bytes)));
  CHECK(check.slope_gap_bytes_per_token == 2.0 * mib - 4'546'560.0);
  CHECK(check.slope_gap_percent == Approx(100.0 * (2.0 * mib - 4'546'560.0) / 4'546'560.0));
  for (const ScalingPointResult& r : check.results) {
    CHECK(r.residual_bytes == 0);
    CHECK(r.fitted_bytes == r.measured_bytes);
    CHECK(r.peak_gap_bytes == r.measured_bytes - r.derived_peak_bytes);
  }
}

TEST_CASE("scaling: least squares over three points, residuals", "[scaling]") {
  // Evenly spaced tokens 1024, 2048, 3072 on the line 10 GiB + 1 MiB x tokens, the middle point
  // 3 MiB above it: the slope is unchanged (the middle point's tokens are the mean), a moves up
  // by 3 MiB / 3 = 1 MiB, residuals -1, +2, -1 MiB.
  const auto on_line = [](std::int64_t tokens) { return 10 * gib + tokens * mib; };
  const ScalingCheck check = scaling_cross_check(
      default_config(),
      seq_points({{1024, on_line(1024)}, {2048, on_line(2048) + 3 * mib}, {3072, on_line(3072)}}));
  check_derived_invariants(check);
  CHECK_FALSE(check.exact_line);
  CHECK(check.measured_bytes_per_token == Approx(static_cast<double>(mib)).epsilon(1e-12));
  CHECK(check.measured_constant_bytes == 10 * gib + mib);
  CHECK(check.results[0].residual_bytes == -mib);
  CHECK(check.results[1].residual_bytes == 2 * mib);
  CHECK(check.results[2].residual_bytes == -mib);
  CHECK(check.results[1].fitted_bytes == on_line(2048) + mib);
}

TEST_CASE("scaling: the micro-batch axis counts seq / CP x mbs tokens", "[scaling]") {
  const Config base = from_link("v=1&seq=2048&cp=2&gbs=64");
  ScalingPoints scaling;
  scaling.points = {{.axis = ScalingAxis::micro_batch, .value = 1, .measured_bytes = 30 * gib},
                    {.axis = ScalingAxis::micro_batch, .value = 2, .measured_bytes = 34 * gib},
                    {.axis = ScalingAxis::micro_batch, .value = 4, .measured_bytes = 42 * gib}};
  const ScalingCheck check = scaling_cross_check(base, scaling);
  check_derived_invariants(check);
  CHECK(check.axis == ScalingAxis::micro_batch);
  CHECK(check.results[0].tokens == 1024);
  CHECK(check.results[1].tokens == 2048);
  CHECK(check.results[2].tokens == 4096);
  CHECK(check.configs[2].training.micro_batch == 4);
  CHECK(check.configs[2].training.sequence_length == 2048);
  // 4 GiB per 1024 tokens: exactly on a line.
  CHECK(check.measured_bytes_per_token == Approx(4.0 * mib).epsilon(1e-12));
  CHECK(check.measured_constant_bytes == 26 * gib);
  for (const ScalingPointResult& r : check.results) CHECK(r.residual_bytes == 0);
}

TEST_CASE("scaling: derived a + b x tokens reproduces each point's peak (property)", "[scaling]") {
  // Configurations whose peak moment does not move with the sequence: every term at the peak is
  // constant or linear, so the derived line passes through every point's peak exactly.
  const char* links[] = {
      "v=1",
      "v=1&tp=2&sp=1&pp=2",
      "v=1&recompute=full",
      "v=1&model=llama-3.1-70b&tp=8&pp=4",
      "v=1&model=mixtral-8x7b&tp=2&sp=1&pp=4&ep=4&dp=4",
      "v=1&model=qwen3-30b-a3b&pp=2&ep=8&dp=8&gbs=256",
      "v=1&pp=4&vpp=2",
  };
  for (const char* link : links) {
    INFO(link);
    const Config base = from_link(link);
    for (std::int64_t stage = -1; stage < 2; ++stage) {
      INFO("stage " << stage);
      ScalingPoints scaling = seq_points({{2048, 20 * gib}, {4096, 24 * gib}, {8192, 33 * gib}});
      scaling.stage = stage;
      const ScalingCheck check = scaling_cross_check(base, scaling);
      REQUIRE(check.diagnostics.ok());
      check_derived_invariants(check);
      if (!check.moment_moves) {
        for (const ScalingPointResult& r : check.results) CHECK(r.not_linear_bytes == 0);
      }
    }
  }
}

TEST_CASE("scaling: materialized attention's scores are named not linear", "[scaling]") {
  const Config base = from_link("v=1&attention_kernel=materialized");
  const ScalingCheck check =
      scaling_cross_check(base, seq_points({{2048, 30 * gib}, {4096, 40 * gib}}));
  check_derived_invariants(check);
  std::vector<std::string> not_linear;
  for (const ScalingTerm& row : check.terms) {
    if (row.scaling != TermScaling::not_linear) continue;
    const Term& term = check.reports[0]
                           .stages[static_cast<std::size_t>(check.stage)]
                           .terms[static_cast<std::size_t>(row.term[0])];
    not_linear.push_back(term_name(term));
    // S^2: doubling the sequence quadruples the bytes.
    CHECK(row.bytes[1] == 4 * row.bytes[0]);
  }
  REQUIRE_FALSE(not_linear.empty());
  CHECK(check.results[0].not_linear_bytes > 0);
  // Never forced into a or b: derived a + b x tokens + the not-linear bytes is the peak.
  for (const ScalingPointResult& r : check.results) {
    CHECK(check.derived_constant_bytes + r.linear_bytes + r.not_linear_bytes ==
          r.derived_peak_bytes);
  }
  const std::string notes = scaling_notes(check);
  CHECK(notes.find("not linear in tokens") != std::string::npos);
  CHECK(notes.find(not_linear.front()) != std::string::npos);
  CHECK(scaling_text(check, {}).find("not linear terms") != std::string::npos);
}

TEST_CASE("scaling: bad inputs each name the field", "[scaling]") {
  const Config base = default_config();
  const auto first_error = [&](const ScalingPoints& scaling) {
    const ScalingCheck check = scaling_cross_check(base, scaling);
    REQUIRE_FALSE(check.diagnostics.ok());
    return check.diagnostics.errors.front();
  };
  CHECK(first_error(seq_points({})).field == "scaling.points");
  CHECK(first_error(seq_points({{4096, gib}})).field == "scaling.points");
  const auto same = first_error(seq_points({{4096, gib}, {4096, 2 * gib}}));
  CHECK(same.field == "scaling.points[1].value");
  CHECK(same.message.find("same tokens") != std::string::npos);
  CHECK(first_error(seq_points({{4096, 0}, {8192, gib}})).field == "scaling.points[0].bytes");
  CHECK(first_error(seq_points({{4096, gib}, {8192, -5}})).field == "scaling.points[1].bytes");
  ScalingPoints mixed = seq_points({{4096, gib}});
  mixed.points.push_back({.axis = ScalingAxis::micro_batch, .value = 2, .measured_bytes = gib});
  CHECK(first_error(mixed).field == "scaling.points[1].axis");
  ScalingPoints far_stage = seq_points({{4096, gib}, {8192, 2 * gib}});
  far_stage.stage = 4;
  const auto stage = first_error(far_stage);
  CHECK(stage.field == "scaling.stage");
  CHECK(stage.message.find("4 stages") != std::string::npos);
  // mbs 3 does not divide the global batch 1024: the point's own configuration is invalid.
  ScalingPoints bad_mbs;
  bad_mbs.points = {{.axis = ScalingAxis::micro_batch, .value = 1, .measured_bytes = gib},
                    {.axis = ScalingAxis::micro_batch, .value = 3, .measured_bytes = gib}};
  const auto invalid = first_error(bad_mbs);
  CHECK(invalid.field.starts_with("scaling.points[1] (mbs 3): "));
  // An error of the base configuration itself is named once, at the first point.
  const Config no_sp = from_link("v=1&model=mixtral-8x7b&tp=2&pp=4&ep=4&dp=4");
  const ScalingCheck shared = scaling_cross_check(no_sp, seq_points({{4096, gib}, {8192, gib}}));
  REQUIRE_FALSE(shared.diagnostics.ok());
  CHECK(shared.diagnostics.errors.size() == estimate(no_sp).diagnostics.errors.size());
  CHECK(shared.diagnostics.errors.front().field.starts_with("scaling.points[0] (seq 4096): "));
  ScalingPoints too_many;
  for (std::int64_t i = 1; i <= 17; ++i) too_many.points.push_back(seq_point(256 * i, gib));
  CHECK(first_error(too_many).field == "scaling.points");

  Diagnostics d;
  CHECK(scaling_stage(base, far_stage, d) == -1);
  CHECK(d.errors.front().field == "scaling.stage");
}

TEST_CASE("scaling: a point's text and the link keys round-trip", "[scaling]") {
  const ScalingPoint point{.axis = ScalingAxis::sequence_length,
                           .value = 8192,
                           .measured_bytes = 75'591'363'788,
                           .source = "max_memory_allocated, run 17: a=b @ 100% & more"};
  Diagnostics d;
  const auto parsed = parse_scaling_point_text(scaling_point_text(point), d, "--point");
  REQUIRE(d.ok());
  REQUIRE(parsed);
  CHECK(*parsed == point);

  const auto amount = parse_scaling_point_text("mbs=2:61.2GiB", d, "--point");
  REQUIRE(amount);
  CHECK(amount->axis == ScalingAxis::micro_batch);
  CHECK(amount->value == 2);
  CHECK(amount->measured_bytes == std::llround(61.2 * static_cast<double>(gib)));
  CHECK(amount->source.empty());

  ScalingPoints scaling;
  scaling.points = {
      point, {.axis = ScalingAxis::sequence_length, .value = 4096, .measured_bytes = 61 * gib}};
  scaling.stage = 2;
  const std::string link = "https://wiki/stagemem/#v=1&pp=4" + scaling_fragment(scaling);
  const DecodedScalingLink decoded = decode_scaling_link(link);
  REQUIRE(decoded.diagnostics.ok());
  REQUIRE(decoded.scaling);
  CHECK(*decoded.scaling == scaling);
  // The configuration decoder skips the keys without a word.
  const DecodedFragment config = decode_fragment(link);
  CHECK(config.diagnostics.ok());
  CHECK(config.diagnostics.warnings.empty());
  CHECK(config.config == from_link("v=1&pp=4"));
  // A link without points has none.
  CHECK_FALSE(decode_scaling_link("#v=1&pp=4").scaling);
  CHECK(scaling_fragment({}).empty());
}

TEST_CASE("scaling: bad point texts and link keys name the part", "[scaling]") {
  const auto field_of = [](std::string_view text) {
    Diagnostics d;
    CHECK_FALSE(parse_scaling_point_text(text, d, "--point"));
    REQUIRE_FALSE(d.ok());
    return d.errors.front().field;
  };
  CHECK(field_of("4096:1GiB") == "--point");
  CHECK(field_of("seq=4096") == "--point");
  CHECK(field_of("tp=4:1GiB") == "--point.axis");
  CHECK(field_of("seq=0:1GiB") == "--point.value");
  CHECK(field_of("seq=-1:1GiB") == "--point.value");
  CHECK(field_of("seq=99999999:1GiB") == "--point.value");
  CHECK(field_of("seq=4096:0") == "--point.bytes");
  CHECK(field_of("seq=4096:lots") == "--point.bytes");
  CHECK(field_of("seq=4096:1GiB@") == "--point.source");
  CHECK(field_of("seq=4096:1GiB@bad\x01source") == "--point.source");

  const DecodedScalingLink bad = decode_scaling_link("#v=1&scaling=seq=4096:1GiB&scaling=x");
  CHECK_FALSE(bad.scaling);
  REQUIRE_FALSE(bad.diagnostics.ok());
  CHECK(bad.diagnostics.errors.front().field == "url.scaling[1]");
  const DecodedScalingLink bad_stage =
      decode_scaling_link("#v=1&scaling=seq=4096:1GiB&scaling_stage=x");
  REQUIRE_FALSE(bad_stage.diagnostics.ok());
  CHECK(bad_stage.diagnostics.errors.front().field == "url.scaling_stage");
  // scaling= repeats by design; scaling_stage= is one key.
  const DecodedFragment twice = decode_fragment("#v=1&scaling_stage=1&scaling_stage=2");
  CHECK_FALSE(twice.diagnostics.ok());
}

TEST_CASE("scaling: JSON holds the numbers and points that parse back", "[scaling]") {
  const ScalingPoints scaling = seq_points({{2048, 30 * gib}, {4096, 35 * gib}, {8192, 46 * gib}});
  const ScalingCheck check = scaling_cross_check(default_config(), scaling);
  REQUIRE(check.diagnostics.ok());
  const auto json = nlohmann::json::parse(scaling_json(check, "#v=1"));
  CHECK(json["kind"] == "scaling");
  CHECK(json["stage"] == check.stage);
  CHECK(json["field"] == "seq");
  CHECK(json["measured"]["constant_bytes"] == check.measured_constant_bytes);
  CHECK(json["measured"]["bytes_per_token"].get<double>() == check.measured_bytes_per_token);
  CHECK(json["derived"]["constant_bytes"] == check.derived_constant_bytes);
  CHECK(json["derived"]["bytes_per_token"].get<double>() == check.derived_bytes_per_token);
  CHECK(json["gap"]["constant_bytes"] == check.constant_gap_bytes);
  REQUIRE(json["points"].size() == 3);
  ScalingPoints back;
  for (std::size_t p = 0; p < 3; ++p) {
    const auto& entry = json["points"][p];
    CHECK(entry["derived_peak_bytes"] == check.results[p].derived_peak_bytes);
    CHECK(entry["residual_bytes"] == check.results[p].residual_bytes);
    Diagnostics d;
    const auto point = parse_scaling_point_text(entry["text"].get<std::string>(), d,
                                                "points[" + std::to_string(p) + "]");
    REQUIRE(point);
    back.points.push_back(*point);
  }
  CHECK(back == scaling);
  REQUIRE(json["terms"].size() == check.terms.size());
  for (std::size_t i = 0; i < check.terms.size(); ++i) {
    CHECK(json["terms"][i]["bytes"].get<std::vector<std::int64_t>>() == check.terms[i].bytes);
    CHECK(json["terms"][i]["scaling"] == term_scaling_name(check.terms[i].scaling));
  }
}

TEST_CASE("scaling: slopes are written per token in the asked unit", "[scaling]") {
  CHECK(bytes_per_token_text(4'546'560.0) == "4.336 MiB/token");
  CHECK(bytes_per_token_text(4'546'560.0, AmountUnit::gb) == "4.547 MB/token");
  CHECK(bytes_per_token_text(2048.0) == "2.0 KiB/token");
  CHECK(bytes_per_token_text(96.0) == "96.00 B/token");
  CHECK(bytes_per_token_text(0.5) == "0.50 B/token");
  CHECK(bytes_per_token_delta_text(-2048.0) == "-2.0 KiB/token");
  CHECK(bytes_per_token_delta_text(1.0 * mib) == "+1.000 MiB/token");
  CHECK(bytes_per_token_delta_text(0.0) == "0 B/token");
  CHECK(gap_percent_text(true, 3.74) == "+3.7 %");
  CHECK(gap_percent_text(false, 0.0) == "-");
}
