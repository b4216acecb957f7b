#include "presets.h"
#include "report.h"
#include "units.h"

namespace stagemem {

std::string_view family_name(Family family) {
  switch (family) {
    case Family::resident: return "resident";
    case Family::activation: return "activation";
    case Family::transient: return "transient";
    case Family::gap: return "gap";
  }
  return "unknown";
}

std::string_view tag_name(Tag tag) { return tag == Tag::derived ? "DERIVED" : "MEASURED"; }

std::string_view allocation_point_name(AllocationPoint point) {
  switch (point) {
    case AllocationPoint::model_init: return "model init";
    case AllocationPoint::optimizer_init: return "optimizer init";
    case AllocationPoint::first_step: return "first optimizer step";
    case AllocationPoint::forward: return "forward";
    case AllocationPoint::backward: return "backward";
  }
  return "unknown";
}

Diagnostics validate(const Config& config) {
  Diagnostics d;
  const auto model = find_preset(config.model);
  if (!model) {
    std::string names;
    for (std::string_view n : preset_names()) names += (names.empty() ? "" : ", ") + std::string(n);
    d.error("model", "unknown preset '" + config.model + "'; known presets: " + names);
    return d;
  }
  validate_layout(*model, config.parallel, d);
  return d;
}

Report estimate(const Config& config) {
  Report report;
  report.model = config.model;
  report.diagnostics = validate(config);
  if (!report.diagnostics.ok()) return report;
  const Model model = *find_preset(config.model);
  report.total_parameters = total_parameters(model);
  const auto split =
      even_split(static_cast<std::int64_t>(model.layers.size()), config.parallel.pipeline_parallel);
  const auto stages = stage_parameters(model, config.parallel, split);
  std::int64_t largest = -1;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    StageReport stage;
    stage.index = static_cast<std::int64_t>(s);
    stage.first_layer = stages[s].first_layer;
    stage.layer_count = stages[s].layer_count;
    stage.parameters_per_rank = stages[s].per_rank.total();
    constexpr std::int64_t bf16_bytes = 2;
    stage.terms.push_back(Term{
        .name = "weights (bf16)",
        .formula = "2 B x " + group_digits(stage.parameters_per_rank) + " parameters on this rank",
        .scaling = "layers on stage; 1/TP for split tensors; embedding (first) and LM head (last)",
        .family = Family::resident,
        .tag = Tag::derived,
        .allocated_at = AllocationPoint::model_init,
        .bytes = bf16_bytes * stage.parameters_per_rank,
    });
    for (const Term& t : stage.terms) stage.peak_bytes += t.bytes;
    if (stage.peak_bytes > largest) {
      largest = stage.peak_bytes;
      report.binding_stage = stage.index;
    }
    report.stages.push_back(std::move(stage));
  }
  return report;
}

}  // namespace stagemem
