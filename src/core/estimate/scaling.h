// scaling.h — the scaling cross-check: measured peaks at two or more sizes of one configuration,
// fitted as measured = a + b x tokens, next to the derived constant and the derived slope.
//
// Purpose: the users' own way to split what is constant from what grows with tokens: run one
// configuration at several sequence lengths (or micro-batch sizes), read each run's peak, fit a
// line. stagemem estimates the configuration at each point's value and shows, for one stage:
//   measured a, b   the least-squares line through the points (an exact line through two; with
//                   three or more, each point's residual);
//   derived a       the stage's terms at its peak whose bytes are the same at every point:
//                   resident state and the token-independent transients;
//   derived b       the terms whose bytes are exactly proportional to tokens, summed, per token;
//   the gap of each (measured - derived, in bytes and % of derived), and per point the measured
//   peak next to the derived peak.
// A term at the peak that is neither (materialized attention's S^2 scores, a term that counts in
// the peak at one point and not another because the peak moment moves) is listed by name as not
// linear, with its bytes per point, and is in neither derived a nor derived b: it is never forced
// into a line. Terms are matched across points by identity (compare.h: same_term_identity; the
// k-th of an identity at one point with the k-th at another).
// Tokens: the tokens of one micro-batch on one rank, sequence_length / CP x micro_batch (what
// every per-micro-batch activation scales with; TP and SP divide them further, but the same way
// at every point).
// Stage: the one given (ScalingPoints::stage), else the stage that binds at the point with the
// most tokens; the measured peaks are taken to be that stage's (a memory log's max allocated of
// its ranks).
// Measured numbers never feed the model: each point's estimate is the base configuration with the
// varied field set, nothing else.
// Units: bytes (int64) per rank, every sum overflow-checked; the two slopes b are bytes per token
// as double (the only non-integer amounts); the measured a and residuals are the fit's values
// rounded to the nearest byte.
// Limitations: one varied field per set of points (seq or mbs; a mix is refused); a point whose
// configuration is invalid (e.g. mbs not dividing the global batch) is an error naming the point;
// the fit is ordinary least squares in double precision (exact to well under a byte for any real
// peak).
#pragma once

#include <cstdint>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "config/scaling_points.h"
#include "report/report.h"

namespace stagemem {

// How a term's bytes at the peak go with tokens across the points.
enum class TermScaling : std::uint8_t {
  constant,    // the same bytes at every point: in derived a
  linear,      // bytes / tokens the same at every point (and not all 0): in derived b
  not_linear,  // anything else: in neither, named
};

// One term of the stage, matched across the points.
struct ScalingTerm {
  std::int32_t first_point = 0;     // the first point whose stage has the term
  std::vector<std::int32_t> term;   // per point: index into its stage's terms; -1: absent
  std::vector<std::int64_t> bytes;  // per point: its bytes when it counts in the peak, else 0
  TermScaling scaling = TermScaling::constant;
};

struct ScalingPointResult {
  std::int64_t tokens = 0;  // sequence_length / CP x micro_batch at this point
  std::int64_t measured_bytes = 0;
  std::int64_t derived_peak_bytes = 0;  // the stage's peak at this point
  std::int64_t peak_gap_bytes = 0;      // measured - derived peak
  // The derived peak split by the terms' scaling: constant + linear + not_linear == the peak.
  std::int64_t constant_bytes = 0;
  std::int64_t linear_bytes = 0;
  std::int64_t not_linear_bytes = 0;
  std::int64_t fitted_bytes = 0;    // measured a + b x tokens, rounded
  std::int64_t residual_bytes = 0;  // measured - fitted (0 for an exact line)
  std::int64_t binding_stage = -1;  // the report's binding stage at this point
};

struct ScalingCheck {
  ScalingAxis axis = ScalingAxis::sequence_length;
  std::int64_t stage = -1;
  bool stage_given = false;                 // false: the binding stage at the most tokens
  std::vector<ScalingPoint> points;         // as given
  std::vector<Config> configs;              // per point: the base with the varied field set
  std::vector<Report> reports;              // per point
  std::vector<ScalingPointResult> results;  // per point
  std::vector<ScalingTerm> terms;           // the stage's terms that count in a peak, in order
  // Measured: the least-squares line.
  std::int64_t measured_constant_bytes = 0;  // a, rounded to the byte (may be < 0)
  double measured_bytes_per_token = 0.0;     // b
  // Derived, from the terms' scaling.
  std::int64_t derived_constant_bytes = 0;  // a: the constant terms' bytes
  double derived_bytes_per_token = 0.0;     // b: the linear terms' bytes / tokens
  // Derived b exactly: linear_bytes / tokens of the first point.
  std::int64_t derived_linear_bytes = 0;
  std::int64_t derived_linear_tokens = 0;
  // Gaps: measured - derived, and that over derived in % (no % when derived is 0).
  std::int64_t constant_gap_bytes = 0;
  bool has_constant_gap_percent = false;
  double constant_gap_percent = 0.0;
  double slope_gap_bytes_per_token = 0.0;
  bool has_slope_gap_percent = false;
  double slope_gap_percent = 0.0;
  // The stage's peak moment (phase, micro-batch, chunk, or the optimizer step) differs between
  // points: terms enter or leave the peak, and show as not linear.
  bool moment_moves = false;
  bool exact_line = false;  // two points: the measured line passes through both
  Diagnostics diagnostics;  // errors: the numbers above are not filled in
};

// The stage the points are compared on: `scaling.stage` when given (checked against the layout),
// else the binding stage at the point with the most tokens; -1 with errors naming the field.
// The CLI calls it to know which stage's reading to take from a memory log before the points'
// bytes are known (measured bytes are not read).
std::int64_t scaling_stage(const Config& base, const ScalingPoints& scaling,
                           Diagnostics& diagnostics);

// The whole cross-check. Errors name "scaling.points" (fewer than 2, more than
// max_scaling_points), "scaling.points[i].axis" (a mix of seq and mbs), "scaling.points[i].value"
// (the same tokens as an earlier point), "scaling.points[i].bytes" (not above 0 or above
// max_config_bytes), "scaling.points[i] (seq 8192): <field>" (the point's configuration is
// invalid) or "scaling.stage".
ScalingCheck scaling_cross_check(const Config& base, const ScalingPoints& scaling);

// Tokens of one micro-batch on one rank: sequence_length / CP x micro_batch; 0 when CP does not
// divide the sequence (the configuration is then invalid) or the product passes 2^63 - 1.
std::int64_t tokens_per_micro_batch(const Config& config);

}  // namespace stagemem
