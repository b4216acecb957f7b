#include "config_fields.h"

#include <array>
#include <charconv>

namespace stagemem {
namespace {

constexpr std::array<std::string_view, 5> assignment_names = {
    "even", "explicit", "first-last", "attnres-aligned", "layout-string"};
static_assert(static_cast<int>(StageAssignment::layout_string) == 4,
              "assignment_names follows StageAssignment's order");

// The table. Keys are short, lowercase and stable: they appear in published links.
const std::array<ConfigField, 16> fields = {{
    {.key = "model",
     .path = "model",
     .help = "built-in model preset name",
     .kind = FieldKind::text,
     .max_text_length = 64,
     .text = [](Config& c) { return &c.model; }},
    {.key = "tp",
     .path = "parallel.tensor_parallel",
     .help = "tensor parallel size",
     .min = 1,
     .max = 1024,
     .integer = [](Config& c) { return &c.parallel.tensor_parallel; }},
    {.key = "pp",
     .path = "parallel.pipeline_parallel",
     .help = "pipeline parallel size (pipeline ranks)",
     .min = 1,
     .max = 1024,
     .integer = [](Config& c) { return &c.parallel.pipeline_parallel; }},
    {.key = "vpp",
     .path = "parallel.virtual_stages",
     .help = "virtual pipeline stages (model chunks) per pipeline rank",
     .min = 1,
     .max = 1024,
     .integer = [](Config& c) { return &c.parallel.virtual_stages; }},
    {.key = "cp",
     .path = "parallel.context_parallel",
     .help = "context parallel size",
     .min = 1,
     .max = 1024,
     .integer = [](Config& c) { return &c.parallel.context_parallel; }},
    {.key = "ep",
     .path = "parallel.expert_parallel",
     .help = "expert parallel size",
     .min = 1,
     .max = 65536,
     .integer = [](Config& c) { return &c.parallel.expert_parallel; }},
    {.key = "etp",
     .path = "parallel.expert_tensor_parallel",
     .help = "expert tensor parallel size",
     .min = 1,
     .max = 1024,
     .integer = [](Config& c) { return &c.parallel.expert_tensor_parallel; }},
    {.key = "dp",
     .path = "parallel.data_parallel",
     .help = "data parallel size (0: derive from the world size or the expert groups)",
     .min = 0,
     .max = 1048576,
     .integer = [](Config& c) { return &c.parallel.data_parallel; }},
    {.key = "world",
     .path = "parallel.world_size",
     .help = "world size in GPUs (0: TP x PP x CP x DP)",
     .min = 0,
     .max = 16777216,
     .integer = [](Config& c) { return &c.parallel.world_size; }},
    {.key = "sp",
     .path = "parallel.sequence_parallel",
     .help = "sequence parallel (shards token-wise tensors over TP)",
     .kind = FieldKind::boolean,
     .boolean = [](Config& c) { return &c.parallel.sequence_parallel; }},
    {.key = "vocab_multiple",
     .path = "parallel.vocab_multiple",
     .help = "vocabulary padded to a multiple of this times TP (Megatron's default 128)",
     .min = 1,
     .max = 65536,
     .integer = [](Config& c) { return &c.parallel.vocab_multiple; }},
    {.key = "split",
     .path = "parallel.assignment",
     .help = "how layers are assigned to pipeline stages",
     .kind = FieldKind::choice,
     .choices = assignment_names,
     .get_choice = [](const Config& c) { return static_cast<int>(c.parallel.assignment); },
     .set_choice =
         [](Config& c, int index) { c.parallel.assignment = static_cast<StageAssignment>(index); }},
    {.key = "stages",
     .path = "parallel.layers_per_stage",
     .help = "layers per (virtual) stage in pipeline order, for split=explicit",
     .kind = FieldKind::integer_list,
     .min = 0,
     .max = 100000,
     .max_list_length = 65536,
     .integer_list = [](Config& c) { return &c.parallel.layers_per_stage; }},
    {.key = "first_layers",
     .path = "parallel.first_stage_layers",
     .help = "decoder layers on the first stage, for split=first-last (-1: not set)",
     .min = -1,
     .max = 100000,
     .integer = [](Config& c) { return &c.parallel.first_stage_layers; }},
    {.key = "last_layers",
     .path = "parallel.last_stage_layers",
     .help = "decoder layers on the last stage, for split=first-last (-1: not set)",
     .min = -1,
     .max = 100000,
     .integer = [](Config& c) { return &c.parallel.last_stage_layers; }},
    {.key = "layout",
     .path = "parallel.layout_string",
     .help = "Megatron --pipeline-model-parallel-layout string, for split=layout-string",
     .kind = FieldKind::text,
     .max_text_length = 4096,
     .text = [](Config& c) { return &c.parallel.layout_string; }},
}};

bool parse_integer(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string quoted_prefix(std::string_view text) {
  constexpr std::size_t shown = 40;
  return "'" + std::string(text.substr(0, shown)) + (text.size() > shown ? "...'" : "'");
}

// Readers of a const Config share the mutable accessors; nothing is written through them.
Config& readable(const Config& config) { return const_cast<Config&>(config); }

}  // namespace

std::span<const ConfigField> config_fields() { return fields; }

const ConfigField* find_field_by_key(std::string_view key) {
  for (const ConfigField& f : fields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

const ConfigField* find_field_by_path(std::string_view path) {
  for (const ConfigField& f : fields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::string allowed_values(const ConfigField& field) {
  switch (field.kind) {
    case FieldKind::integer:
      return "an integer in [" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
    case FieldKind::boolean: return "true or false (1 or 0)";
    case FieldKind::text:
      return "text of at most " + std::to_string(field.max_text_length) + " characters";
    case FieldKind::choice: {
      std::string names;
      for (std::string_view c : field.choices) names += (names.empty() ? "" : ", ") + std::string(c);
      return "one of: " + names;
    }
    case FieldKind::integer_list:
      return "a comma-separated list of at most " + std::to_string(field.max_list_length) +
             " integers in [" + std::to_string(field.min) + ", " + std::to_string(field.max) + "]";
  }
  return "a valid value";
}

bool parse_field_text(const ConfigField& field, std::string_view text, Config& config,
                      Diagnostics& diagnostics, std::string_view reported_name) {
  const auto fail = [&](const std::string& what) {
    diagnostics.error(std::string(reported_name), what + ": expected " + allowed_values(field));
    return false;
  };
  switch (field.kind) {
    case FieldKind::integer: {
      std::int64_t value = 0;
      if (!parse_integer(text, value)) return fail(quoted_prefix(text) + " is not an integer");
      if (value < field.min || value > field.max) {
        return fail(std::to_string(value) + " is out of range");
      }
      *field.integer(config) = value;
      return true;
    }
    case FieldKind::boolean:
      if (text == "1" || text == "true") {
        *field.boolean(config) = true;
      } else if (text == "0" || text == "false") {
        *field.boolean(config) = false;
      } else {
        return fail(quoted_prefix(text) + " is not a boolean");
      }
      return true;
    case FieldKind::text:
      if (static_cast<std::int64_t>(text.size()) > field.max_text_length) {
        return fail("the text is " + std::to_string(text.size()) + " characters long");
      }
      for (char c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          return fail("the text contains a control character");
        }
      }
      *field.text(config) = std::string(text);
      return true;
    case FieldKind::choice:
      for (std::size_t i = 0; i < field.choices.size(); ++i) {
        if (field.choices[i] == text) {
          field.set_choice(config, static_cast<int>(i));
          return true;
        }
      }
      return fail(quoted_prefix(text) + " is not a known name");
    case FieldKind::integer_list: {
      std::vector<std::int64_t> values;
      std::string_view rest = text;
      while (!rest.empty()) {
        const auto comma = rest.find(',');
        const std::string_view item = rest.substr(0, comma);
        std::int64_t value = 0;
        if (!parse_integer(item, value)) return fail(quoted_prefix(item) + " is not an integer");
        if (value < field.min || value > field.max) {
          return fail(std::to_string(value) + " is out of range");
        }
        if (static_cast<std::int64_t>(values.size()) >= field.max_list_length) {
          return fail("the list is too long");
        }
        values.push_back(value);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
        if (rest.empty()) return fail("the list ends with a comma");
      }
      *field.integer_list(config) = std::move(values);
      return true;
    }
  }
  return false;
}

std::string format_field_text(const ConfigField& field, const Config& config) {
  Config& c = readable(config);
  switch (field.kind) {
    case FieldKind::integer: return std::to_string(*field.integer(c));
    case FieldKind::boolean: return *field.boolean(c) ? "1" : "0";
    case FieldKind::text: return *field.text(c);
    case FieldKind::choice: {
      const int index = field.get_choice(config);
      return index >= 0 && static_cast<std::size_t>(index) < field.choices.size()
                 ? std::string(field.choices[static_cast<std::size_t>(index)])
                 : std::string("?");
    }
    case FieldKind::integer_list: {
      std::string out;
      for (std::int64_t v : *field.integer_list(c)) {
        out += (out.empty() ? "" : ",") + std::to_string(v);
      }
      return out;
    }
  }
  return {};
}

bool field_equals(const ConfigField& field, const Config& a, const Config& b) {
  Config& x = readable(a);
  Config& y = readable(b);
  switch (field.kind) {
    case FieldKind::integer: return *field.integer(x) == *field.integer(y);
    case FieldKind::boolean: return *field.boolean(x) == *field.boolean(y);
    case FieldKind::text: return *field.text(x) == *field.text(y);
    case FieldKind::choice: return field.get_choice(a) == field.get_choice(b);
    case FieldKind::integer_list: return *field.integer_list(x) == *field.integer_list(y);
  }
  return false;
}

}  // namespace stagemem
