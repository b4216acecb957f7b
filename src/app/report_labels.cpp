#include "report_labels.h"

#include <algorithm>
#include <numeric>

#include "units.h"

ReportLabels make_report_labels(const stagemem::Report& report) {
  ReportLabels labels;
  labels.total_parameters = stagemem::group_digits(report.total_parameters);
  labels.stages.reserve(report.stages.size());
  for (const auto& stage : report.stages) {
    StageLabels& out = labels.stages.emplace_back();
    const std::int64_t last_layer = stage.first_layer + stage.layer_count - 1;
    out.title = "Stage " + std::to_string(stage.index) + ": layers " +
                std::to_string(stage.first_layer) + "-" + std::to_string(last_layer);
    out.axis = "stage " + std::to_string(stage.index);
    out.peak_gib = stagemem::format_gib(stage.peak_bytes);
    out.peak_bytes = stagemem::group_digits(stage.peak_bytes) + " B";
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
  }
  return labels;
}
