#include "render/report_csv.h"

#include "memory/timeline.h"
#include "render/table.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {
namespace {

// The name of term `i` of the stage, "" when there is none.
std::string name_or_empty(const StageReport& stage, std::int64_t i) {
  if (i < 0 || i >= static_cast<std::int64_t>(stage.terms.size())) return "";
  return term_name(stage.terms[static_cast<std::size_t>(i)]);
}

}  // namespace

std::string report_csv(const Report& report) {
  constexpr Align left = Align::left;
  Table table{.columns = {{"stage", left, CellKind::number},
                          {"layers"},
                          {"term"},
                          {"family"},
                          {"tag"},
                          {"allocated_at"},
                          {"bytes", left, CellKind::number},
                          {"formula"},
                          {"stage_peak_bytes", left, CellKind::number},
                          {"stage_peak_reserved_bytes", left, CellKind::number},
                          {"stage_device_peak_bytes", left, CellKind::number},
                          {"fit_basis"}}};
  for (const StageReport& stage : report.stages) {
    const std::string layers = stage_layers_text(stage);
    // The stage's three figures repeat on each of its rows, so a filtered sheet keeps them; an
    // unknown figure (not replayed, or no measured rows outside the allocator) is empty, as the
    // JSON's null.
    const std::string peak = std::to_string(stage.peak_bytes);
    const std::string reserved =
        stage.reserved_replayed ? std::to_string(stage.peak_reserved_bytes) : "";
    const std::string device =
        stage.device_peak_bytes >= 0 ? std::to_string(stage.device_peak_bytes) : "";
    const std::string basis(enum_name(stage.fit_basis));
    for (const Term& t : stage.terms) {
      table.rows.push_back(
          {std::to_string(stage.index), layers, term_name(t), std::string(family_name(t.family)),
           std::string(tag_name(t.tag)), std::string(allocation_point_name(t.allocated_at)),
           std::to_string(t.bytes), term_formula(t), peak, reserved, device, basis});
    }
  }
  return csv_table(table);
}

std::string timeline_csv(const Report& report) {
  Table table;
  for (const char* number : {"stage", "event"})
    table.columns.push_back({number, Align::left, CellKind::number});
  table.columns.push_back({"phase"});
  for (const char* number : {"micro_batch", "chunk", "resident_bytes", "activation_bytes",
                             "transient_bytes", "gap_bytes", "live_bytes"}) {
    table.columns.push_back({number, Align::left, CellKind::number});
  }
  table.columns.push_back({"transient"});
  table.columns.push_back({"inside"});
  table.columns.push_back({"peak", Align::left, CellKind::number});
  for (const StageReport& stage : report.stages) {
    const StageTimeline t = stage_timeline(report, stage);
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      const TimelineEvent& ev = t.events[e];
      const bool step = ev.phase == StepPhase::optimizer_step;
      std::vector<std::string> row = {
          std::to_string(stage.index), std::to_string(e), std::string(phase_name(ev.phase)),
          step ? "" : std::to_string(ev.micro_batch), step ? "" : std::to_string(ev.chunk)};
      for (const std::int64_t bytes : ev.live_by_family) row.push_back(std::to_string(bytes));
      row.push_back(std::to_string(ev.live_bytes));
      row.push_back(name_or_empty(stage, ev.transient));
      row.push_back(name_or_empty(stage, ev.enclosing));
      row.push_back(static_cast<std::int64_t>(e) == t.peak_event ? "1" : "0");
      table.rows.push_back(std::move(row));
    }
  }
  return csv_table(table);
}

}  // namespace stagemem
