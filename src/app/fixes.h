// fixes.h — one-click fixes for configuration errors with an obvious remedy ("Enable sequence
// parallelism"): which error has one, what its button says, and what it changes. The summary line
// and the configuration panel draw the button (widgets.h); the change is applied to the
// configuration like any other edit.
// Limitations: only the remedies below; every other error is fixed by hand.
#pragma once

#include <cstdint>

#include "base/diagnostics.h"
#include "config/config.h"

enum class Fix : std::uint8_t {
  none,
  enable_sequence_parallel,   // MoE with TP needs sequence parallelism (and others like it)
  disable_sequence_parallel,  // the sequence does not divide by TP, and CP does not need SP
};

// The fix of `error` in `config`, or Fix::none.
Fix fix_for(const stagemem::Config& config, const stagemem::FieldMessage& error);
// What the fix's button says.
const char* fix_label(Fix fix);
void apply_fix(stagemem::Config& config, Fix fix);
