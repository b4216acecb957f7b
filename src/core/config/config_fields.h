// config_fields.h — the one table of every editable configuration field.
//
// Purpose: each field of Config is described exactly once — its short key (URL fragment key and
// CLI flag `--key`), its JSON path, a one-line help text, its kind and allowed range — and every
// encoding (URL fragment, JSON, CLI flags) and the app's field editors are driven from this
// table. Adding a field to Config means adding one row here; nothing else changes.
//
// Units: integers are plain counts or bytes as the help text says; no unit conversion happens here.
// Limitations: the model itself (preset name or an inline custom model) is encoded separately
// (model_text.h); this table holds scalar and list fields only.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/diagnostics.h"
#include "config/config.h"
#include "config/software_stack.h"

namespace stagemem {

// name_set: a set of names from `choices`, stored as a bit mask, written comma-separated.
enum class FieldKind : std::uint8_t {
  integer,
  boolean,
  text,
  choice,
  integer_list,
  number,
  name_set,
  stack  // a software stack (software_stack.h), written as name=version pairs
};

// Another spelling a choice field accepts on input (its own name is always written).
struct ChoiceAlias {
  std::string_view name;
  int index = 0;
};

struct ConfigField {
  std::string_view key;   // "tp": URL key, CLI flag --tp
  std::string_view path;  // "parallel.tensor_parallel": JSON path (dotted)
  std::string_view help;  // one line for --help and the app
  FieldKind kind = FieldKind::integer;
  std::int64_t min = 0;  // integer, integer_list elements and number: inclusive range
  std::int64_t max = 0;
  std::span<const std::string_view> choices{};  // choice: the allowed names, in enum order
  std::int64_t max_list_length = 0;             // integer_list
  std::int64_t max_text_length = 0;             // text

  // Accessors; the one matching `kind` is set. They take a mutable Config; readers of a const
  // Config go through the const helpers below.
  std::int64_t* (*integer)(Config&) = nullptr;
  bool* (*boolean)(Config&) = nullptr;
  std::string* (*text)(Config&) = nullptr;
  std::vector<std::int64_t>* (*integer_list)(Config&) = nullptr;
  int (*get_choice)(const Config&) = nullptr;
  void (*set_choice)(Config&, int) = nullptr;
  double* (*number)(Config&) = nullptr;
  std::uint32_t* (*bits)(Config&) = nullptr;   // name_set
  SoftwareStack* (*stack)(Config&) = nullptr;  // stack
  // A kernel option that is a version question (version_rules.h): the StackKernel it is, whose
  // bit set_choice sets in TrainingConfig::explicit_kernels; -1: an ordinary field.
  int stack_kernel = -1;

  // text only: the names the value is one of (the model presets, the device presets) when it
  // names one item rather than being free text. parse_field_text does not check it (a link may
  // name a preset of another build); check_references and the estimate do. nullptr: free text.
  std::vector<std::string_view> (*names)() = nullptr;
  // choice only: other accepted spellings (Megatron's), read but never written.
  std::span<const ChoiceAlias> choice_aliases{};
};

// A configuration read from untrusted text (URL fragment, JSON, CLI flags): use `config` only
// when `diagnostics.ok()`.
struct DecodedConfig {
  Config config;
  Diagnostics diagnostics;
};

std::span<const ConfigField> config_fields();
const ConfigField* find_field_by_key(std::string_view key);
const ConfigField* find_field_by_path(std::string_view path);

// "an integer in [1, 1024]", "one of: even, list, ...": the allowed range, for error messages.
std::string allowed_values(const ConfigField& field);

// Parses `text` (the field's text form, as in a URL or on the command line) into `config`.
// On error leaves `config` unchanged and adds an error naming `reported_name` with the allowed
// values. Integer lists are comma-separated.
bool parse_field_text(const ConfigField& field, std::string_view text, Config& config,
                      Diagnostics& diagnostics, std::string_view reported_name);
// The field's text form; parse_field_text(format_field_text(x)) round-trips.
std::string format_field_text(const ConfigField& field, const Config& config);
bool field_equals(const ConfigField& field, const Config& a, const Config& b);
// Whether an encoding that leaves out what its decoder restores (a link, the JSON's derived
// kernel options, the Markdown settings) writes the field: an ordinary field when it differs from
// `defaults` (default_config()); a kernel option derived from the stack when the user set it
// explicitly or it differs from what the stack gives (a decoder re-derives it otherwise).
bool field_is_written(const ConfigField& field, const Config& config, const Config& defaults);

// What a field's own text form cannot check, for decoders of untrusted text: the model preset
// exists (or the custom model text parses) and the device preset exists. Errors are named
// `prefix` + the field's key (`by_path` false: "url.model") or JSON path ("json.device.preset").
void check_references(const Config& config, Diagnostics& diagnostics, std::string_view prefix,
                      bool by_path);

}  // namespace stagemem
