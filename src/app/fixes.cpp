#include "fixes.h"

Fix fix_for(const stagemem::Config& config, const stagemem::FieldMessage& error) {
  const stagemem::ParallelLayout& p = config.parallel;
  if (error.field == "parallel.sequence_parallel" && !p.sequence_parallel) {
    return Fix::enable_sequence_parallel;
  }
  if (error.field == "training.sequence_length" && p.sequence_parallel && p.context_parallel <= 1) {
    return Fix::disable_sequence_parallel;
  }
  return Fix::none;
}

const char* fix_label(Fix fix) {
  switch (fix) {
    case Fix::enable_sequence_parallel:
      return "Enable sequence parallelism";
    case Fix::disable_sequence_parallel:
      return "Turn sequence parallelism off";
    case Fix::none:
      break;
  }
  return "";
}

void apply_fix(stagemem::Config& config, Fix fix) {
  if (fix == Fix::enable_sequence_parallel) config.parallel.sequence_parallel = true;
  if (fix == Fix::disable_sequence_parallel) config.parallel.sequence_parallel = false;
}
