#include "render/report_json.h"

#include <array>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/version_rules.h"
#include "memory/timeline.h"
#include "render/cross_check_text.h"
#include "render/report_text.h"
#include "render/term_text.h"
#include "render/vocabulary.h"

namespace stagemem {
namespace {

using json = nlohmann::ordered_json;

json messages(const std::vector<FieldMessage>& list) {
  json out = json::array();
  for (const FieldMessage& m : list) out.push_back({{"field", m.field}, {"message", m.message}});
  return out;
}

json term_json(const Term& t, const Config& config) {
  json term = {{"name", term_name(t)},
               {"family", std::string(family_name(t.family))},
               {"bytes", t.bytes},
               {"formula", term_formula(t)},
               {"scaling", term_scaling(t)},
               {"tag", std::string(tag_name(t.tag))},
               {"allocated_at", std::string(allocation_point_name(t.allocated_at))},
               {"counts_in_peak", t.counts_in_peak}};
  const std::string_view source = term_source(t, config);
  if (!source.empty()) term["source"] = std::string(source);
  return term;
}

json term_name_or_null(const StageReport& s, std::int64_t i) {
  if (i < 0 || i >= static_cast<std::int64_t>(s.terms.size())) return nullptr;
  return term_name(s.terms[static_cast<std::size_t>(i)]);
}

json moment_json(const StageReport& s, const PeakMoment& m) {
  const bool step = m.phase == StepPhase::optimizer_step;
  return {{"name", moment_name(s, m)},
          {"phase", std::string(phase_name(m.phase))},
          {"micro_batch", step ? json(nullptr) : json(m.micro_batch)},
          {"chunk", step ? json(nullptr) : json(m.chunk)},
          {"transient", term_name_or_null(s, m.transient)},
          {"inside", term_name_or_null(s, m.enclosing)}};
}

// The allocator replay's figures of a stage (allocator/step_replay.h): null when not replayed.
json allocator_json(const StageReport& s) {
  if (!s.reserved_replayed) return nullptr;
  const ReservedPeakMoment& m = s.reserved_peak_moment;
  const bool step = m.phase == StepPhase::optimizer_step;
  // The segments held at the peak, grouped by pool and size (largest first): a replay holds
  // hundreds of them.
  std::map<std::pair<bool, std::int64_t>, std::array<std::int64_t, 2>> groups;
  std::int64_t cached_free = 0;
  for (const HeldSegment& seg : s.segments_at_reserved_peak) {
    auto& g = groups[{seg.small_pool, seg.bytes}];
    ++g[0];
    g[1] += seg.allocated_bytes;
    cached_free += seg.bytes - seg.allocated_bytes;
  }
  json segments = json::array();
  for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
    segments.push_back({{"pool", it->first.first ? "small" : "large"},
                        {"bytes", it->first.second},
                        {"count", it->second[0]},
                        {"allocated_bytes", it->second[1]}});
  }
  // The resident terms replayed tensor by tensor (memory/parameter_tensors.h): how many terms and
  // how many tensors they were allocated as.
  std::int64_t resident_tensors = 0;
  std::int64_t resident_terms = 0;
  if (s.resident_allocations) {
    for (const auto* list : {&s.resident_allocations->at_init, &s.resident_allocations->first_step})
      for (const ResidentAllocation& a : *list) resident_tensors += a.frees < 0 ? 1 : 0;
    resident_terms = static_cast<std::int64_t>(s.resident_allocations->covered_terms.size());
  }
  return {
      {"replayed_allocated_bytes", s.replayed_allocated_bytes},
      {"resident_terms_split", resident_terms},
      {"resident_tensors", resident_tensors},
      {"reserved_peak",
       {{"step", m.step},
        {"phase", std::string(phase_name(m.phase))},
        {"micro_batch", step ? json(nullptr) : json(m.micro_batch)},
        {"chunk", step ? json(nullptr) : json(m.chunk)}}},
      {"outside_allocator_bytes", s.outside_allocator_bytes},
      {"device_limit_bytes", s.device_limit_bytes > 0 ? json(s.device_limit_bytes) : json(nullptr)},
      {"alloc_retries", s.alloc_retries},
      {"segments_released_for_room", s.segments_released_for_room},
      {"segments_released_by_gc", s.segments_released_by_gc},
      {"out_of_memory", s.out_of_memory},
      {"segments_at_reserved_peak",
       {{"count", static_cast<std::int64_t>(s.segments_at_reserved_peak.size())},
        {"by_size", segments}}},
      {"cached_free_bytes_at_reserved_peak", cached_free}};
}

json stage_json(const StageReport& s, const Report& report, const Config& config) {
  json layers = json::array();
  for (const LayerRange& c : s.chunks) layers.push_back({{"first", c.first}, {"count", c.count}});
  json terms = json::array();
  for (const Term& t : s.terms) terms.push_back(term_json(t, config));
  json co_live = nullptr;
  if (!s.optimizer_phase_binds && s.largest_transient >= 0 &&
      s.largest_transient < static_cast<std::int64_t>(s.terms.size())) {
    co_live = term_name(s.terms[static_cast<std::size_t>(s.largest_transient)]);
  }
  json stage = {
      {"index", s.index},
      {"layers", layers},
      {"layer_count", s.layer_count},
      {"parameters_per_rank", s.parameters_per_rank},
      {"binding_phase", std::string(binding_phase_name(s))},
      {"resident_bytes", s.resident_bytes},
      {"gap_bytes", s.gap_bytes},
      {"stored_activation_bytes", s.activation_bytes},
      {"co_live_transient_bytes", s.largest_transient_bytes},
      {"co_live_transient", co_live},
      {"optimizer_step_transient_bytes", s.optimizer_transient_bytes},
      {"in_flight_per_chunk", s.in_flight_per_chunk},
      {"peak_moment", moment_json(s, peak_moment(s))},
      {"non_parameter_bytes", s.non_parameter_bytes},
      {"peak_bytes", s.peak_bytes},
      {"peak_reserved_bytes", s.reserved_replayed ? json(s.peak_reserved_bytes) : json(nullptr)},
      {"device_peak_bytes", s.device_peak_bytes >= 0 ? json(s.device_peak_bytes) : json(nullptr)},
      {"fit_basis", std::string(enum_name(s.fit_basis))},
      {"fit_bytes", s.fit_bytes},
      {"allocator", allocator_json(s)},
      {"terms", terms},
  };
  if (report.device.bytes > 0) stage["headroom_bytes"] = s.headroom_bytes;
  if (report.flat_headroom_bytes > 0) stage["flat_headroom_margin_bytes"] = s.flat_headroom_margin;
  return stage;
}

// The releases modelled, every version rule and whether it holds for them, and where each kernel
// option that is a version question came from (the stack or the user).
json stack_json(const TrainingConfig& training) {
  json rules = json::array();
  for (const VersionRuleInfo& r : version_rules()) {
    rules.push_back({{"rule", std::string(enum_name(r.rule))},
                     {"component", std::string(enum_name(r.component))},
                     {"from", r.from.given() ? json(release_text(r.from)) : json(nullptr)},
                     {"holds", rule_holds(training.stack, r.rule)},
                     {"behaviour", std::string(r.behaviour)},
                     {"before", std::string(r.before)},
                     {"change", std::string(r.change)}});
  }
  json kernels = json::array();
  for (const KernelOriginEntry& k : kernel_origins(training)) {
    kernels.push_back({{"key", std::string(enum_name(k.kernel))},
                       {"value", std::string(k.value)},
                       {"origin", std::string(enum_name(k.origin))}});
  }
  return {{"releases", stack_text(training.stack)}, {"rules", rules}, {"kernels", kernels}};
}

json report_document(const Report& report, const Config& config, std::string_view link,
                     const Diagnostics& input_warnings) {
  json out;
  out["schema_version"] = report_schema_version;
  if (!link.empty()) out["link"] = std::string(link);
  out["model"] = report.model;
  out["total_parameters"] = report.total_parameters;
  out["data_parallel"] = report.data_parallel;
  out["expert_data_parallel"] = report.expert_data_parallel;
  out["micro_batches"] = report.micro_batches;
  out["schedule"] = pipeline_schedule_name(report.schedule);
  out["device"] = {{"name", report.device.name},
                   {"bytes", report.device.bytes},
                   {"source", std::string(report.device.source)}};
  out["device_bytes"] = report.device.bytes;
  out["flat_headroom_bytes"] = report.flat_headroom_bytes;
  out["stack"] = stack_json(config.training);
  json stages = json::array();
  for (const StageReport& s : report.stages) stages.push_back(stage_json(s, report, config));
  out["stages"] = stages;
  out["binding_stage"] = report.binding_stage;
  json checks = json::array();
  for (const CrossCheck& c : report.cross_checks) {
    const StageReport* stage = cross_check_stage(report, c);
    json check = {
        {"point", std::string(measurement_point_name(c.measurement.point))},
        {"stage", c.measurement.stage},
        {"source", c.measurement.source},
        {"measured_bytes", c.measurement.bytes},
        {"derived_bytes", c.derived_bytes},
        {"gap_bytes", c.gap_bytes},
        {"ratio", c.has_ratio ? json(c.ratio) : json(nullptr)},
        {"alive_terms", stage ? cross_check_alive_names(c, *stage) : std::vector<std::string>{}},
        {"explanations", stage ? cross_check_explanations(c, *stage) : std::vector<std::string>{}}};
    if (!c.measurement.term.empty()) check["term"] = c.measurement.term;
    if (c.measurement.rank >= 0) check["rank"] = c.measurement.rank;
    if (c.measurement.figure != MemoryFigure::unspecified)
      check["figure"] = std::string(memory_figure_name(c.measurement.figure));
    if (c.measurement.iteration >= 0) check["iteration"] = c.measurement.iteration;
    checks.push_back(check);
  }
  out["cross_checks"] = checks;
  out["errors"] = messages(report.diagnostics.errors);
  json warnings = messages(report.diagnostics.warnings);
  for (const FieldMessage& w : input_warnings.warnings) {
    warnings.push_back({{"field", w.field}, {"message", w.message}});
  }
  out["warnings"] = warnings;
  return out;
}

std::string text_of(const json& document) {
  return document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace

std::string report_json(const Report& report, const Config& config, std::string_view link,
                        const Diagnostics& input_warnings) {
  return text_of(report_document(report, config, link, input_warnings));
}

std::string check_json(const Report& report, const Config& config, std::string_view link,
                       const Diagnostics& input_warnings) {
  json stages = json::array();
  for (const StageReport& s : report.stages) {
    json terms = json::array();
    for (const Term* t : largest_terms(s, check_largest_terms)) {
      terms.push_back({{"name", term_name(*t)},
                       {"family", std::string(family_name(t->family))},
                       {"bytes", t->bytes}});
    }
    stages.push_back(
        {{"index", s.index},
         {"layers", stage_layers_text(s)},
         {"peak_bytes", s.peak_bytes},
         {"peak_reserved_bytes", s.reserved_replayed ? json(s.peak_reserved_bytes) : json(nullptr)},
         {"device_peak_bytes",
          s.device_peak_bytes >= 0 ? json(s.device_peak_bytes) : json(nullptr)},
         {"fit_basis", std::string(enum_name(s.fit_basis))},
         {"fit_bytes", s.fit_bytes},
         {"headroom_bytes", s.headroom_bytes},
         {"fits", s.headroom_bytes >= 0},
         {"largest_terms", terms}});
  }
  const json out = {{"schema_version", report_schema_version},
                    {"kind", "check"},
                    {"model", report.model},
                    {"fits", stages_not_fitting(report) == 0},
                    {"device", {{"name", report.device.name}, {"bytes", report.device.bytes}}},
                    {"binding_stage", report.binding_stage},
                    {"stages", stages},
                    {"report", report_document(report, config, link, input_warnings)}};
  return text_of(out);
}

std::string timeline_json(const Report& report, std::string_view link) {
  json out;
  out["schema_version"] = report_schema_version;
  out["kind"] = "timeline";
  if (!link.empty()) out["link"] = std::string(link);
  out["model"] = report.model;
  out["micro_batches"] = report.micro_batches;
  out["schedule"] = pipeline_schedule_name(report.schedule);
  json stages = json::array();
  for (const StageReport& s : report.stages) {
    const StageTimeline t = stage_timeline(report, s);
    json events = json::array();
    for (std::size_t e = 0; e < t.events.size(); ++e) {
      const TimelineEvent& ev = t.events[e];
      const bool step = ev.phase == StepPhase::optimizer_step;
      const auto first =
          t.alive.begin() + static_cast<std::ptrdiff_t>(e * static_cast<std::size_t>(t.chunks));
      events.push_back({
          {"phase", std::string(phase_name(ev.phase))},
          {"micro_batch", step ? json(nullptr) : json(ev.micro_batch)},
          {"chunk", step ? json(nullptr) : json(ev.chunk)},
          {"alive_per_chunk",
           std::vector<std::int64_t>(first, first + static_cast<std::ptrdiff_t>(t.chunks))},
          {"resident_bytes", ev.live_by_family[static_cast<std::size_t>(Family::resident)]},
          {"activation_bytes", ev.live_by_family[static_cast<std::size_t>(Family::activation)]},
          {"transient_bytes", ev.live_by_family[static_cast<std::size_t>(Family::transient)]},
          {"gap_bytes", ev.live_by_family[static_cast<std::size_t>(Family::gap)]},
          {"live_bytes", ev.live_bytes},
          {"transient", term_name_or_null(s, ev.transient)},
          {"inside", term_name_or_null(s, ev.enclosing)},
      });
    }
    stages.push_back({{"index", s.index},
                      {"peak_bytes", s.peak_bytes},
                      {"peak_event", t.peak_event},
                      {"peak_moment", moment_json(s, peak_moment(s))},
                      {"events", events}});
  }
  out["stages"] = stages;
  return text_of(out);
}

}  // namespace stagemem
