#include "estimate/scaling.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "base/checked_math.h"
#include "estimate/compare.h"
#include "estimate/estimate.h"

namespace stagemem {
namespace {

std::string point_field(std::size_t i) {
  return "scaling.points[" + std::to_string(i) + "]";
}

std::string point_name(const ScalingPoint& point) {
  return std::string(enum_name(point.axis)) + " " + std::to_string(point.value);
}

Config point_config(const Config& base, const ScalingPoint& point) {
  Config config = base;
  if (point.axis == ScalingAxis::sequence_length) {
    config.training.sequence_length = point.value;
  } else {
    config.training.micro_batch = point.value;
  }
  return config;
}

// The points' own checks, before anything is estimated: count, one axis, bytes.
bool check_points(const ScalingPoints& scaling, Diagnostics& d) {
  const auto& points = scaling.points;
  if (points.size() < 2) {
    d.error("scaling.points",
            "give at least 2 measured points (e.g. seq=4096:61.2GiB and "
            "seq=8192:70.4GiB); " +
                std::to_string(points.size()) + " given");
  } else if (points.size() > max_scaling_points) {
    d.error("scaling.points", "at most " + std::to_string(max_scaling_points) + " points; " +
                                  std::to_string(points.size()) + " given");
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (points[i].axis != points[0].axis) {
      d.error(point_field(i) + ".axis",
              "varies " + std::string(enum_name(points[i].axis)) + " while points[0] varies " +
                  std::string(enum_name(points[0].axis)) + "; vary one field per set of points");
    }
    if (points[i].measured_bytes <= 0 || points[i].measured_bytes > max_config_bytes) {
      d.error(point_field(i) + ".bytes",
              "the measured peak must be above 0 and at most 2^50 "
              "bytes; got " +
                  std::to_string(points[i].measured_bytes));
    }
    if (points[i].value < 1 || points[i].value > max_scaling_value) {
      d.error(point_field(i) + ".value", "must be in [1, " + std::to_string(max_scaling_value) +
                                             "]; got " + std::to_string(points[i].value));
    }
  }
  return d.ok();
}

// Each point's report (errors named by the point) and tokens; false with errors.
bool estimate_points(const Config& base, const ScalingPoints& scaling, std::vector<Config>& configs,
                     std::vector<Report>& reports, std::vector<std::int64_t>& tokens,
                     Diagnostics& d) {
  // An error every point shares (the base configuration's own) is named once, at its first point.
  std::vector<std::pair<std::string, std::string>> named;
  for (std::size_t i = 0; i < scaling.points.size(); ++i) {
    configs.push_back(point_config(base, scaling.points[i]));
    reports.push_back(estimate(configs.back()));
    const std::string field = point_field(i) + " (" + point_name(scaling.points[i]) + ")";
    for (const auto& e : reports.back().diagnostics.errors) {
      if (std::find(named.begin(), named.end(), std::pair(e.field, e.message)) != named.end())
        continue;
      named.emplace_back(e.field, e.message);
      d.error(field + ": " + e.field, e.message);
    }
    const std::int64_t t = tokens_per_micro_batch(configs.back());
    if (reports.back().diagnostics.ok() && t <= 0) {
      d.error(field, "CP " + std::to_string(configs.back().parallel.context_parallel) +
                         " does not divide the sequence length into whole tokens per rank");
    }
    tokens.push_back(t);
    for (std::size_t j = 0; j < i && d.ok(); ++j) {
      if (tokens[j] == t) {
        d.error(point_field(i) + ".value",
                point_name(scaling.points[i]) + " has the same tokens per micro-batch (" +
                    std::to_string(t) + ") as points[" + std::to_string(j) +
                    "]; a line needs two different token counts");
      }
    }
  }
  return d.ok();
}

std::int64_t most_tokens_point(const std::vector<std::int64_t>& tokens) {
  std::size_t best = 0;
  for (std::size_t i = 1; i < tokens.size(); ++i) {
    if (tokens[i] > tokens[best]) best = i;
  }
  return static_cast<std::int64_t>(best);
}

// The stage: given (and within every report), or the binding stage at the most tokens.
std::int64_t pick_stage(const ScalingPoints& scaling, const std::vector<Report>& reports,
                        const std::vector<std::int64_t>& tokens, Diagnostics& d) {
  if (scaling.stage >= 0) {
    for (const Report& report : reports) {
      if (scaling.stage >= static_cast<std::int64_t>(report.stages.size())) {
        d.error("scaling.stage", "stage " + std::to_string(scaling.stage) +
                                     " does not exist: the layout has " +
                                     std::to_string(report.stages.size()) + " stages (0.." +
                                     std::to_string(report.stages.size() - 1) + ")");
        return -1;
      }
    }
    return scaling.stage;
  }
  return reports[static_cast<std::size_t>(most_tokens_point(tokens))].binding_stage;
}

// The stage's terms across the points, matched by identity (the k-th of an identity at one point
// with the k-th at another); only terms that count in some point's peak are kept.
std::vector<ScalingTerm> match_terms(const std::vector<const StageReport*>& stages) {
  const std::size_t n = stages.size();
  std::vector<ScalingTerm> rows;
  auto term_of = [&](const ScalingTerm& row) -> const Term& {
    const auto p = static_cast<std::size_t>(row.first_point);
    return stages[p]->terms[static_cast<std::size_t>(row.term[p])];
  };
  for (std::size_t p = 0; p < n; ++p) {
    std::vector<bool> taken(rows.size(), false);
    const auto& terms = stages[p]->terms;
    for (std::size_t j = 0; j < terms.size(); ++j) {
      std::size_t r = 0;
      while (r < rows.size() && (taken[r] || !same_term_identity(term_of(rows[r]), terms[j]))) ++r;
      if (r == rows.size()) {
        rows.push_back({.first_point = static_cast<std::int32_t>(p),
                        .term = std::vector<std::int32_t>(n, -1),
                        .bytes = std::vector<std::int64_t>(n, 0)});
        taken.push_back(false);
      }
      taken[r] = true;
      rows[r].term[p] = static_cast<std::int32_t>(j);
      rows[r].bytes[p] = terms[j].counts_in_peak ? terms[j].bytes : 0;
    }
  }
  std::erase_if(rows, [](const ScalingTerm& row) {
    return std::all_of(row.bytes.begin(), row.bytes.end(), [](std::int64_t b) { return b == 0; });
  });
  return rows;
}

// x * (y_tokens / g) == y * (x_tokens / g): bytes x at x_tokens and y at y_tokens are in the same
// proportion to tokens. False when a product would pass 2^63 - 1 (no real term does).
bool proportional(std::int64_t x, std::int64_t x_tokens, std::int64_t y, std::int64_t y_tokens) {
  const std::int64_t g = std::gcd(x_tokens, y_tokens);
  std::int64_t left = 0;
  std::int64_t right = 0;
  return checked_mul(x, y_tokens / g, &left) && checked_mul(y, x_tokens / g, &right) &&
         left == right;
}

TermScaling classify(const ScalingTerm& row, const std::vector<std::int64_t>& tokens) {
  bool constant = true;
  bool linear = true;
  for (std::size_t p = 1; p < tokens.size(); ++p) {
    constant = constant && row.bytes[p] == row.bytes[0];
    linear = linear && proportional(row.bytes[0], tokens[0], row.bytes[p], tokens[p]);
  }
  if (constant) return TermScaling::constant;
  return linear ? TermScaling::linear : TermScaling::not_linear;
}

bool same_moment(const StageReport& a, const StageReport& b) {
  if (a.optimizer_phase_binds != b.optimizer_phase_binds) return false;
  if (a.optimizer_phase_binds) return true;
  const PeakMoment& x = a.forward_backward_moment;
  const PeakMoment& y = b.forward_backward_moment;
  return x.phase == y.phase && x.micro_batch == y.micro_batch && x.chunk == y.chunk;
}

// Rounds a fitted amount to the byte; false beyond +-2^62 (never for peaks within 2^50).
bool rounded(double value, std::int64_t* out) {
  constexpr double limit = 4611686018427387904.0;  // 2^62
  if (!std::isfinite(value) || value > limit || value < -limit) return false;
  *out = std::llround(value);
  return true;
}

// measured = a + b x tokens by least squares; residuals per point.
bool fit_measured(ScalingCheck& check, const std::vector<std::int64_t>& tokens) {
  const auto n = static_cast<double>(tokens.size());
  double mean_t = 0.0;
  double mean_m = 0.0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    mean_t += static_cast<double>(tokens[i]) / n;
    mean_m += static_cast<double>(check.points[i].measured_bytes) / n;
  }
  double sxx = 0.0;
  double sxy = 0.0;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const double dt = static_cast<double>(tokens[i]) - mean_t;
    sxx += dt * dt;
    sxy += dt * (static_cast<double>(check.points[i].measured_bytes) - mean_m);
  }
  if (sxx <= 0.0) return false;
  check.measured_bytes_per_token = sxy / sxx;
  const double a = mean_m - check.measured_bytes_per_token * mean_t;
  if (!rounded(a, &check.measured_constant_bytes)) return false;
  check.exact_line = tokens.size() == 2;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    ScalingPointResult& r = check.results[i];
    const double fitted = a + check.measured_bytes_per_token * static_cast<double>(tokens[i]);
    if (!rounded(fitted, &r.fitted_bytes)) return false;
    r.residual_bytes = check.exact_line ? 0 : r.measured_bytes - r.fitted_bytes;
    if (check.exact_line) r.fitted_bytes = r.measured_bytes;
  }
  return true;
}

double percent_of(double gap, double derived) {
  return 100.0 * gap / derived;
}

}  // namespace

std::int64_t tokens_per_micro_batch(const Config& config) {
  const std::int64_t cp = config.parallel.context_parallel;
  if (cp < 1 || config.training.sequence_length % cp != 0) return 0;
  std::int64_t tokens = 0;
  if (!checked_mul(config.training.sequence_length / cp, config.training.micro_batch, &tokens))
    return 0;
  return tokens;
}

std::int64_t scaling_stage(const Config& base, const ScalingPoints& scaling,
                           Diagnostics& diagnostics) {
  ScalingPoints points = scaling;
  // The bytes are not read here: a memory log's are not known yet.
  for (ScalingPoint& p : points.points) p.measured_bytes = 1;
  Diagnostics d;
  std::vector<Config> configs;
  std::vector<Report> reports;
  std::vector<std::int64_t> tokens;
  const bool ok =
      check_points(points, d) && estimate_points(base, points, configs, reports, tokens, d);
  const std::int64_t stage = ok ? pick_stage(points, reports, tokens, d) : -1;
  for (auto& e : d.errors) diagnostics.error(e.field, e.message);
  return d.ok() ? stage : -1;
}

ScalingCheck scaling_cross_check(const Config& base, const ScalingPoints& scaling) {
  ScalingCheck check;
  Diagnostics& d = check.diagnostics;
  check.points = scaling.points;
  check.stage_given = scaling.stage >= 0;
  if (!check_points(scaling, d)) return check;
  check.axis = scaling.points[0].axis;
  std::vector<std::int64_t> tokens;
  if (!estimate_points(base, scaling, check.configs, check.reports, tokens, d)) return check;
  check.stage = pick_stage(scaling, check.reports, tokens, d);
  if (check.stage < 0) return check;
  const auto s = static_cast<std::size_t>(check.stage);

  const std::size_t n = scaling.points.size();
  std::vector<const StageReport*> stages;
  for (const Report& report : check.reports) stages.push_back(&report.stages[s]);
  check.terms = match_terms(stages);
  for (ScalingTerm& row : check.terms) row.scaling = classify(row, tokens);

  check.results.resize(n);
  for (std::size_t p = 0; p < n; ++p) {
    ScalingPointResult& r = check.results[p];
    r.tokens = tokens[p];
    r.measured_bytes = scaling.points[p].measured_bytes;
    r.derived_peak_bytes = stages[p]->peak_bytes;
    r.binding_stage = check.reports[p].binding_stage;
    bool ok = checked_sub(r.measured_bytes, r.derived_peak_bytes, &r.peak_gap_bytes);
    for (const ScalingTerm& row : check.terms) {
      std::int64_t* into = row.scaling == TermScaling::constant ? &r.constant_bytes
                           : row.scaling == TermScaling::linear ? &r.linear_bytes
                                                                : &r.not_linear_bytes;
      ok = checked_add(*into, row.bytes[p], into) && ok;
    }
    std::int64_t sum = 0;
    ok = checked_add(r.constant_bytes, r.linear_bytes, &sum) &&
         checked_add(sum, r.not_linear_bytes, &sum) && ok;
    if (!ok || sum != r.derived_peak_bytes) {
      d.error(point_field(p),
              "the stage's terms at the peak do not sum to its peak in int64 "
              "bytes");
      return check;
    }
    if (p > 0 && !same_moment(*stages[0], *stages[p])) check.moment_moves = true;
  }

  check.derived_constant_bytes = check.results[0].constant_bytes;
  check.derived_linear_bytes = check.results[0].linear_bytes;
  check.derived_linear_tokens = tokens[0];
  check.derived_bytes_per_token =
      static_cast<double>(check.derived_linear_bytes) / static_cast<double>(tokens[0]);
  if (!fit_measured(check, tokens)) {
    d.error("scaling.points", "the measured points give no line in int64 bytes");
    return check;
  }
  if (!checked_sub(check.measured_constant_bytes, check.derived_constant_bytes,
                   &check.constant_gap_bytes)) {
    d.error("scaling.points", "the constant's gap passes 2^63 - 1 bytes");
    return check;
  }
  check.has_constant_gap_percent = check.derived_constant_bytes != 0;
  if (check.has_constant_gap_percent) {
    check.constant_gap_percent = percent_of(static_cast<double>(check.constant_gap_bytes),
                                            static_cast<double>(check.derived_constant_bytes));
  }
  check.slope_gap_bytes_per_token = check.measured_bytes_per_token - check.derived_bytes_per_token;
  check.has_slope_gap_percent = check.derived_linear_bytes != 0;
  if (check.has_slope_gap_percent) {
    check.slope_gap_percent =
        percent_of(check.slope_gap_bytes_per_token, check.derived_bytes_per_token);
  }
  return check;
}

}  // namespace stagemem
