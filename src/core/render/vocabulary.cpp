#include "render/vocabulary.h"

#include <string>

#include "report/term_names.h"

namespace stagemem {

std::string_view family_name(Family family) {
  switch (family) {
    case Family::resident:
      return "resident";
    case Family::activation:
      return "activation";
    case Family::transient:
      return "transient";
    case Family::gap:
      return "gap";
  }
  return "unknown";
}

std::string_view tag_name(Tag tag) {
  switch (tag) {
    case Tag::derived:
      return "DERIVED";
    case Tag::measured:
      return "MEASURED";
    case Tag::not_measured:
      return "NOT MEASURED";
    case Tag::documented:
      return "DOCUMENTED";
  }
  return "unknown";
}

std::string_view allocation_point_name(AllocationPoint point) {
  switch (point) {
    case AllocationPoint::model_init:
      return "model init";
    case AllocationPoint::optimizer_init:
      return "optimizer init";
    case AllocationPoint::first_step:
      return "first optimizer step";
    case AllocationPoint::forward:
      return "forward";
    case AllocationPoint::backward:
      return "backward";
    case AllocationPoint::optimizer_step:
      return "optimizer step";
  }
  return "unknown";
}

std::string layers_text(std::int64_t first, std::int64_t last) {
  if (first == last) return "layer " + std::to_string(first);
  return "layers " + std::to_string(first) + "-" + std::to_string(last);
}

std::string moment_name(const StageReport& stage, const PeakMoment& moment) {
  std::string out = "stage " + std::to_string(stage.index) + ", ";
  if (moment.phase == StepPhase::optimizer_step) return out + "optimizer step";
  out += moment.phase == StepPhase::backward ? "backward" : "forward";
  out += " of micro-batch " + std::to_string(moment.micro_batch);
  if (stage.chunks.size() > 1) out += " on chunk " + std::to_string(moment.chunk);
  const auto valid = [&](std::int64_t i) {
    return i >= 0 && i < static_cast<std::int64_t>(stage.terms.size());
  };
  const Term* enclosing =
      valid(moment.enclosing) ? &stage.terms[static_cast<std::size_t>(moment.enclosing)] : nullptr;
  const Term* transient =
      valid(moment.transient) ? &stage.terms[static_cast<std::size_t>(moment.transient)] : nullptr;
  if (transient != nullptr && transient->info->text == TermText::recompute_group) {
    enclosing = transient;
    transient = nullptr;
  }
  if (enclosing != nullptr && enclosing->info->text == TermText::recompute_group) {
    out += ", " + layers_text(enclosing->formula.factor(1), enclosing->formula.factor(2)) +
           " recomputed";
  } else {
    if (moment.chunk >= 0 && static_cast<std::size_t>(moment.chunk) < stage.chunks.size()) {
      const LayerRange& r = stage.chunks[static_cast<std::size_t>(moment.chunk)];
      if (r.count > 0) out += " (" + layers_text(r.first, r.first + r.count - 1) + ")";
    }
    if (enclosing != nullptr) out += ", inside " + term_name(*enclosing);
  }
  if (transient != nullptr) out += ", " + term_name(*transient);
  return out;
}

std::string event_name(const StageReport& stage, const TimelineEvent& event) {
  return moment_name(stage, {.phase = event.phase,
                             .micro_batch = event.micro_batch,
                             .chunk = event.chunk,
                             .transient = event.transient,
                             .enclosing = event.enclosing});
}

}  // namespace stagemem
