// repair.h — the obvious repair of a configuration error, the valid neighbours of a field's
// value, and the nearest valid layout of a configuration for its model.
//
// Purpose: a cross-field error ("tensor parallel size 8 must divide the attention heads (32)
// and KV heads (4)") usually has one repair a user would make by hand: the nearest TP below that
// divides the heads, the DP the world size implies, the global batch rounded up to a multiple of
// mbs x DP. repair_for names it ("Set TP to 4 (divides 4 KV heads)") and applies it to a copy of
// the configuration; a front end offers it as one click. nearest_valid_layout applies such
// repairs until none is left (a model imported onto a layout made for another one), and
// step_value walks a field's value to the next value that creates no new error (a -/+ stepper
// that goes TP 8 -> 4 -> 2 -> 1 for a model with 4 KV heads).
//
// Rules: a repair changes one field (two for the DP / world-size pair, which are one quantity:
// set_integer_field), never the model, the device or a measured value other than the one named;
// "nearest" is the closest valid value in the direction that keeps the layout on as many GPUs as
// it can (a smaller TP, EP, ETP, PP; a larger global batch, DP, world size).
// Units: counts (the configuration's own). Labels use the link keys' names (TP, PP, EP, DP, gbs).
// Limitations: errors whose repair is a choice between unrelated fields (an explicit stage list
// that does not sum to the layers, a layout string) get no repair; step_value tries at most
// max_step_candidates values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "config/config_fields.h"
#include "model/model.h"

namespace stagemem {

struct Repair {
  Config config;       // the configuration with the repair applied
  std::string label;   // what changes and why: "Set TP to 4 (divides 4 KV heads)"
  std::string change;  // the change alone, old -> new: "TP 8 -> 4 (divides 4 KV heads)"
  std::string action;  // the label's first part, "Set TP to 4" (for a narrow button)
  std::string reason;  // and its reason, "divides 4 KV heads"
};

// The obvious repair of `error` (one of validate(config, model)'s errors), or nothing.
std::optional<Repair> repair_for(const Config& config, const Model& model,
                                 const FieldMessage& error);

struct NearestLayout {
  Config config;                     // valid unless an error without a repair remains
  std::vector<std::string> changes;  // each applied repair's `change`, in order
};
// Applies the first repairable error's repair until validate(config, model) has no error with a
// repair left (at most 16 rounds); `changes` is empty when `config` was already valid.
NearestLayout nearest_valid_layout(const Config& config, const Model& model);

// Sets an integer field. DP and the world size are one quantity: setting one to a value derives
// the other (the world size clears an explicit DP, and DP clears a given world size), so the
// last one edited wins instead of the two contradicting each other.
void set_integer_field(Config& config, const ConfigField& field, std::int64_t value);

inline constexpr int max_step_candidates = 4096;
// The value a -/+ stepper of integer `field` moves to from its current value (`direction` -1 or
// +1): the nearest value within the field's range whose configuration has no error naming the
// field, and no new error in another field unless repair_for has its repair (TP 1 -> 2 on an MoE
// model without sequence parallelism: the error then offers "Enable sequence parallelism").
// Derived DP and world size (0) step from the value
// they derive to. The current value when none within the range and max_step_candidates
// qualifies (a stepper never walks onto an invalid value). Byte fields step by 1 GiB, unchecked.
std::int64_t step_value(const Config& config, const Model& model, const ConfigField& field,
                        int direction);

}  // namespace stagemem
