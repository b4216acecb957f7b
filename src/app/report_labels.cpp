#include "report_labels.h"

#include <algorithm>
#include <array>
#include <numeric>

#include "imgui.h"
#include "render/cross_check_text.h"
#include "render/term_text.h"
#include "render/vocabulary.h"
#include "report/term_names.h"

namespace {

// Hue by family (resident blue, gaps violet, activations green, transients orange); within a
// family each term its own hue step and brightness, so that no two terms of a stage share a
// colour and the family still reads at a glance.
struct FamilyHue {
  float hue;     // centre, 0..1
  float spread;  // of the family's terms around it
};
constexpr std::array<FamilyHue, 4> family_hues = {{
    {0.60f, 0.16f},  // resident: cyan to blue
    {0.31f, 0.30f},  // activation: yellow-green to teal
    {0.06f, 0.10f},  // transient: red to orange
    {0.80f, 0.08f},  // gap: violets
}};

ImU32 family_colour(stagemem::Family family, std::size_t rank, std::size_t count) {
  const FamilyHue& f = family_hues[static_cast<std::size_t>(family)];
  const float t = count <= 1 ? 0.5f : static_cast<float>(rank) / static_cast<float>(count - 1);
  const float hue = f.hue - f.spread * 0.5f + f.spread * t;
  // Alternate brightness and saturation between neighbours in the stack.
  const float value = rank % 2 == 0 ? 0.88f : 0.62f;
  const float saturation = rank % 3 == 2 ? 0.40f : 0.62f;
  float r = 0, g = 0, b = 0;
  ImGui::ColorConvertHSVtoRGB(hue, saturation, value, r, g, b);
  return ImGui::ColorConvertFloat4ToU32(ImVec4(r, g, b, 1.0f));
}

// Bottom to top: resident, measured gaps, then the phase that binds (stored activations and the
// co-live transient, or the optimizer step's transients). The tops add up to the peak.
std::vector<BarSegment> stack_segments(const stagemem::StageReport& stage) {
  std::vector<BarSegment> segments;
  std::int64_t height = 0;
  const auto add = [&](std::size_t i) {
    const stagemem::Term& term = stage.terms[i];
    if (term.bytes <= 0) return;
    segments.push_back({i, height, height + term.bytes, 0});
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

// One legend entry: a term as the chart's colours tell it apart on every stage. A term whose name
// carries a per-stage number (the TE dummy buffers' "4 distinct weight shapes" on one stage, "5" on
// another) is one entry, whatever the number (its catalogue entry and group), named with every
// number it takes; any other term is its name. Within its family.
struct LegendKey {
  stagemem::Family family = stagemem::Family::resident;
  const stagemem::TermInfo* info = nullptr;  // a numbered name's catalogue entry, else null
  stagemem::TermGroup group = stagemem::TermGroup::none;
  std::string name;                   // the term's name when it carries no number
  std::vector<std::int64_t> numbers;  // the numbers a numbered name takes
  const stagemem::Term* first = nullptr;

  bool matches(const stagemem::Term& term, const std::string& term_name) const {
    if (term.family != family) return false;
    if (info != nullptr) return term.info == info && term.group == group;
    return !stagemem::term_name_has_number(term) && term_name == name;
  }
};

// The legend: every term that is part of some stage's bar, by family in stacking order, each
// with its colour; then every term of every stage takes the colour of its entry. Every entry's
// name is unique: a name two families share (none does today) says its family.
void assign_colours(const stagemem::Report& report, ReportLabels& labels) {
  std::array<std::vector<LegendKey>, 4> keys;
  const auto find = [&](const stagemem::Term& term, const std::string& name) -> LegendKey* {
    for (LegendKey& key : keys[static_cast<std::size_t>(term.family)]) {
      if (key.matches(term, name)) return &key;
    }
    return nullptr;
  };
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    for (const BarSegment& segment : labels.stages[s].segments) {
      const stagemem::Term& term = report.stages[s].terms[segment.term];
      const std::string name = stagemem::term_name(term);
      LegendKey* key = find(term, name);
      if (key == nullptr) {
        const bool numbered = stagemem::term_name_has_number(term);
        key = &keys[static_cast<std::size_t>(term.family)].emplace_back(
            LegendKey{.family = term.family,
                      .info = numbered ? term.info : nullptr,
                      .group = term.group,
                      .name = numbered ? std::string() : name,
                      .numbers = {},
                      .first = &term});
      }
      if (key->info != nullptr) key->numbers.push_back(term.name_value);
    }
  }
  constexpr std::array<stagemem::Family, 4> order = {
      stagemem::Family::resident, stagemem::Family::gap, stagemem::Family::activation,
      stagemem::Family::transient};
  for (const stagemem::Family family : order) {
    auto& list = keys[static_cast<std::size_t>(family)];
    for (std::size_t i = 0; i < list.size(); ++i) {
      LegendKey& key = list[i];
      if (key.info != nullptr) {
        key.name =
            stagemem::term_name_with_number(*key.first, stagemem::alternatives_text(key.numbers));
      }
      labels.legend.push_back({key.name, family, family_colour(family, i, list.size())});
    }
  }
  for (LegendEntry& entry : labels.legend) {
    const auto same = [&](const LegendEntry& other) {
      return &other != &entry && other.name == entry.name;
    };
    if (std::any_of(labels.legend.begin(), labels.legend.end(), same)) {
      entry.name += " (" + std::string(stagemem::family_name(entry.family)) + ")";
    }
  }
  const ImU32 other = IM_COL32(120, 122, 130, 255);  // terms in no bar (not at the peak)
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    StageLabels& stage = labels.stages[s];
    for (std::size_t i = 0; i < report.stages[s].terms.size(); ++i) {
      const stagemem::Term& term = report.stages[s].terms[i];
      stage.terms[i].colour = other;
      const LegendKey* key = find(term, stagemem::term_name(term));
      if (key == nullptr) continue;
      // The entry's index in the legend: its family's entries come in `order`.
      std::size_t index = 0;
      for (const stagemem::Family family : order) {
        if (family == term.family) break;
        index += keys[static_cast<std::size_t>(family)].size();
      }
      index += static_cast<std::size_t>(key - keys[static_cast<std::size_t>(term.family)].data());
      stage.terms[i].colour = labels.legend[index].colour;
    }
    for (BarSegment& segment : stage.segments) segment.colour = stage.terms[segment.term].colour;
  }
}

}  // namespace

ReportLabels make_report_labels(const stagemem::Report& report, stagemem::AmountUnit unit) {
  ReportLabels labels;
  labels.total_parameters = stagemem::group_digits(report.total_parameters);
  if (report.device.bytes > 0) {
    labels.device = report.device.name + ": " + stagemem::amount_text(report.device.bytes, unit);
  }
  if (report.flat_headroom_bytes > 0) {
    labels.flat_headroom = stagemem::amount_text(report.flat_headroom_bytes, unit);
  }
  labels.scale_bytes = std::max<std::int64_t>(1, report.device.bytes);
  labels.headroom_column =
      report.stages.empty()
          ? std::string("headroom")
          : "headroom vs " + std::string(stagemem::fit_basis_name(report.stages.front()));
  labels.stages.reserve(report.stages.size());
  for (const auto& stage : report.stages) {
    StageLabels& out = labels.stages.emplace_back();
    out.title =
        "Stage " + std::to_string(stage.index) + ": layers " + stagemem::stage_layers_text(stage);
    out.axis = "stage " + std::to_string(stage.index);
    out.peak_gib = stagemem::amount_text(stage.peak_bytes, unit);
    out.peak_bytes = stagemem::group_digits(stage.peak_bytes) + " B";
    out.peak_reserved =
        stage.reserved_replayed ? stagemem::amount_text(stage.peak_reserved_bytes, unit) : "-";
    out.device_peak = stage.device_peak_bytes >= 0
                          ? stagemem::amount_text(stage.device_peak_bytes, unit)
                          : "not measured";
    out.fit_basis = stagemem::fit_basis_text(stage);
    out.headroom = report.device.bytes <= 0 ? "no device"
                   : stage.headroom_bytes < 0
                       ? stagemem::amount_text(stage.headroom_bytes, unit) + " (does not fit)"
                       : stagemem::amount_text(stage.headroom_bytes, unit);
    out.non_parameter = stagemem::amount_text(stage.non_parameter_bytes, unit);
    out.phase = stagemem::binding_phase_name(stage);
    for (const std::int64_t n : stage.in_flight_per_chunk) {
      out.in_flight += (out.in_flight.empty() ? "" : ", ") + std::to_string(n);
    }
    if (report.flat_headroom_bytes > 0) {
      out.flat_margin =
          stagemem::signed_gib_text(stage.flat_headroom_margin, unit) +
          (stage.flat_headroom_margin < 0 ? " (flat under-provisions)" : " (flat over-provisions)");
    }
    for (const auto& term : stage.terms) {
      out.terms.push_back(
          {stagemem::amount_text(term.bytes, unit), stagemem::group_digits(term.bytes) + " B"});
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
  assign_colours(report, labels);
  labels.cross_check_verdict = stagemem::cross_check_verdict(report, unit);
  labels.verdict_check = stagemem::verdict_cross_check(report);
  for (const auto& check : report.cross_checks) {
    CrossCheckLabels& out = labels.cross_checks.emplace_back();
    const stagemem::Measurement& m = check.measurement;
    out.title = stagemem::measurement_title(m);
    out.measured = stagemem::bytes_text(m.bytes, unit);
    out.derived = stagemem::bytes_text(check.derived_bytes, unit);
    out.gap = stagemem::bytes_text(check.gap_bytes, unit);
    out.ratio = stagemem::ratio_text(check);
    out.line = stagemem::cross_check_line(check);
    if (const stagemem::StageReport* stage = stagemem::cross_check_stage(report, check)) {
      out.explanations = stagemem::cross_check_explanations(check, *stage, unit);
      out.alive_terms = stagemem::cross_check_alive_names(check, *stage);
    }
  }
  return labels;
}
