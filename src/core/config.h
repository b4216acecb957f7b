// config.h — the whole input of one estimate: which model, how it is laid out, how it trains.
//
// Purpose: the single value every front end edits and every encoding (URL fragment, JSON, CLI
// flags) round-trips. Defaults here are the defaults everywhere; encodings store only differences.
// Limitations: the model is a built-in preset for now; inline models come with the JSON form.
#pragma once

#include <string>

#include "diagnostics.h"
#include "layout.h"

namespace stagemem {

struct Config {
  std::string model = "llama-3.1-8b";  // a preset name (presets.h)
  ParallelLayout parallel{.pipeline_parallel = 4};
  friend bool operator==(const Config&, const Config&) = default;
};

// Every check that does not need the model's shapes plus those that do; errors name the field.
Diagnostics validate(const Config& config);

}  // namespace stagemem
