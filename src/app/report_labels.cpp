#include "report_labels.h"
#include "term_text.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <numeric>

#include "imgui.h"
#include "units.h"

namespace {

// Twelve distinguishable colours (a Tableau-like qualitative palette) on the dark background.
constexpr std::array<ImU32, 12> palette = {
    IM_COL32(78, 121, 167, 255),  IM_COL32(242, 142, 43, 255),  IM_COL32(225, 87, 89, 255),
    IM_COL32(118, 183, 178, 255), IM_COL32(89, 161, 79, 255),   IM_COL32(237, 201, 72, 255),
    IM_COL32(176, 122, 161, 255), IM_COL32(255, 157, 167, 255), IM_COL32(156, 117, 95, 255),
    IM_COL32(186, 176, 172, 255), IM_COL32(134, 188, 232, 255), IM_COL32(160, 203, 110, 255)};

std::string both_units(std::int64_t bytes) {
  return stagemem::format_gib(bytes) + " (" + stagemem::group_digits(bytes) + " B)";
}

std::string signed_gib(std::int64_t bytes) {
  return (bytes > 0 ? "+" : "") + stagemem::format_gib(bytes);
}

// Bottom to top: resident, measured gaps, then the phase that binds (stored activations and the
// co-live transient, or the optimizer step's transients). The tops add up to the peak.
std::vector<BarSegment> stack_segments(const stagemem::StageReport& stage) {
  std::vector<BarSegment> segments;
  std::int64_t height = 0;
  const auto add = [&](std::size_t i) {
    const stagemem::Term& term = stage.terms[i];
    if (term.bytes <= 0) return;
    segments.push_back({i, height, height + term.bytes, term_colour(stagemem::term_name(term))});
    height += term.bytes;
  };
  using stagemem::Family;
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    if (stage.terms[i].family == Family::resident) add(i);
  }
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    if (stage.terms[i].family == Family::gap) add(i);
  }
  if (!stage.optimizer_phase_binds) {
    for (std::size_t i = 0; i < stage.terms.size(); ++i) {
      if (stage.terms[i].family == Family::activation) add(i);
    }
  }
  for (std::size_t i = 0; i < stage.terms.size(); ++i) {
    const stagemem::Term& term = stage.terms[i];
    if (term.family == Family::transient && term.counts_in_peak) add(i);
  }
  return segments;
}

}  // namespace

std::uint32_t term_colour(std::string_view name) {
  std::uint32_t hash = 2166136261u;  // FNV-1a
  for (const char c : name) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return palette[hash % palette.size()];
}

ReportLabels make_report_labels(const stagemem::Report& report) {
  ReportLabels labels;
  labels.total_parameters = stagemem::group_digits(report.total_parameters);
  if (report.device.bytes > 0) {
    labels.device = report.device.name + ": " + stagemem::format_gib(report.device.bytes);
  }
  if (report.flat_headroom_bytes > 0) {
    labels.flat_headroom = stagemem::format_gib(report.flat_headroom_bytes);
  }
  labels.scale_bytes = std::max<std::int64_t>(1, report.device.bytes);
  labels.stages.reserve(report.stages.size());
  for (const auto& stage : report.stages) {
    StageLabels& out = labels.stages.emplace_back();
    const std::int64_t last_layer = stage.first_layer + stage.layer_count - 1;
    out.title = "Stage " + std::to_string(stage.index) + ": layers " +
                std::to_string(stage.first_layer) + "-" + std::to_string(last_layer);
    out.axis = "stage " + std::to_string(stage.index);
    out.peak_gib = stagemem::format_gib(stage.peak_bytes);
    out.peak_bytes = stagemem::group_digits(stage.peak_bytes) + " B";
    out.headroom = report.device.bytes <= 0 ? "no device"
                   : stage.headroom_bytes < 0
                       ? stagemem::format_gib(stage.headroom_bytes) + " (does not fit)"
                       : stagemem::format_gib(stage.headroom_bytes);
    out.non_parameter = stagemem::format_gib(stage.non_parameter_bytes);
    out.phase = stage.optimizer_phase_binds ? "optimizer step" : "forward/backward";
    for (const std::int64_t n : stage.in_flight_per_chunk) {
      out.in_flight += (out.in_flight.empty() ? "" : ", ") + std::to_string(n);
    }
    if (report.flat_headroom_bytes > 0) {
      out.flat_margin =
          signed_gib(stage.flat_headroom_margin) +
          (stage.flat_headroom_margin < 0 ? " (flat under-provisions)" : " (flat over-provisions)");
    }
    for (const auto& term : stage.terms) {
      out.terms.push_back(
          {stagemem::format_gib(term.bytes), stagemem::group_digits(term.bytes) + " B"});
    }
    out.terms_by_size.resize(stage.terms.size());
    std::iota(out.terms_by_size.begin(), out.terms_by_size.end(), std::size_t{0});
    // Stable: equal terms keep the core's order, so the table does not shuffle between reports.
    std::stable_sort(
        out.terms_by_size.begin(), out.terms_by_size.end(),
        [&](std::size_t a, std::size_t b) { return stage.terms[a].bytes > stage.terms[b].bytes; });
    out.segments = stack_segments(stage);
    labels.scale_bytes = std::max(labels.scale_bytes, stage.peak_bytes);
    if (report.flat_headroom_bytes > 0) {
      labels.scale_bytes = std::max(
          labels.scale_bytes, stage.resident_bytes + stage.gap_bytes + report.flat_headroom_bytes);
    }
  }
  for (const auto& check : report.cross_checks) {
    CrossCheckLabels& out = labels.cross_checks.emplace_back();
    const stagemem::Measurement& m = check.measurement;
    out.title = std::string(stagemem::measurement_point_name(m.point)) + ", stage " +
                std::to_string(m.stage) +
                (m.point == stagemem::MeasurementPoint::term ? ": " + m.term : std::string());
    out.measured = both_units(m.bytes);
    out.derived = both_units(check.derived_bytes);
    out.gap = signed_gib(check.gap_bytes) + " (" + (check.gap_bytes > 0 ? "+" : "") +
              stagemem::group_digits(check.gap_bytes) + " B)";
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "x%.3f", check.ratio);
    out.ratio = check.has_ratio ? std::string(ratio) : "n/a (nothing derived)";
  }
  return labels;
}
