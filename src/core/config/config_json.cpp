#include "config/config_json.h"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/json_reader.h"
#include "config/measurement_text.h"
#include "model/hf_config.h"
#include "model/model_text.h"

namespace stagemem {
namespace {

using nlohmann::json;

// A configuration nests 3 levels ("training.recompute.modules"); an inline hf_config a few more.
// Anything deeper is refused before it is walked (read_object recurses).
constexpr int max_json_depth = 32;

// "parallel", "training", "training.recompute", ...: the objects that hold the table's fields.
bool is_section(std::string_view path) {
  for (const ConfigField& field : config_fields()) {
    if (field.path.size() > path.size() && field.path.starts_with(path) &&
        field.path[path.size()] == '.')
      return true;
  }
  return false;
}

// The keys a section holds directly ("tensor_parallel, ..." for "parallel"), for its error.
std::string section_keys(std::string_view path) {
  std::vector<std::string_view> keys;
  for (const ConfigField& field : config_fields()) {
    if (field.path.size() <= path.size() || !field.path.starts_with(path) ||
        field.path[path.size()] != '.')
      continue;
    std::string_view rest = field.path.substr(path.size() + 1);
    rest = rest.substr(0, rest.find('.'));
    if (std::find(keys.begin(), keys.end(), rest) == keys.end()) keys.push_back(rest);
  }
  std::string out;
  for (std::string_view k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

nlohmann::ordered_json field_to_json(const ConfigField& field, const Config& config) {
  using ordered = nlohmann::ordered_json;
  Config copy = config;  // accessors are mutable; reading through a copy keeps `config` const
  switch (field.kind) {
    case FieldKind::integer:
      return *field.integer(copy);
    case FieldKind::boolean:
      return *field.boolean(copy);
    case FieldKind::text:
      return *field.text(copy);
    case FieldKind::choice:
      return format_field_text(field, config);
    case FieldKind::integer_list:
      return *field.integer_list(copy);
    case FieldKind::number:
      return *field.number(copy);
    case FieldKind::stack:
      return format_field_text(field, config);
    case FieldKind::name_set: {
      ordered names = ordered::array();
      const std::string text = format_field_text(field, config);
      if (text != "none") {
        for (std::size_t start = 0;;) {
          const auto comma = text.find(',', start);
          names.push_back(text.substr(start, comma - start));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
      return names;
    }
  }
  return nullptr;
}

// Sets `field` from a JSON value of the right type; the text forms do the range checks.
void field_from_json(const ConfigField& field, const json& value, Config& config, Diagnostics& d,
                     const std::string& reported) {
  const auto wrong_type = [&](const char* found) {
    d.error(reported, std::string("found ") + found + ": expected " + allowed_values(field));
  };
  switch (field.kind) {
    case FieldKind::integer:
      if (!value.is_number_integer()) return wrong_type(value.type_name());
      parse_field_text(field, std::to_string(value.get<std::int64_t>()), config, d, reported);
      return;
    case FieldKind::boolean:
      if (!value.is_boolean()) return wrong_type(value.type_name());
      *field.boolean(config) = value.get<bool>();
      return;
    case FieldKind::text:
    case FieldKind::choice:
    case FieldKind::stack:
      if (!value.is_string()) return wrong_type(value.type_name());
      parse_field_text(field, value.get<std::string>(), config, d, reported);
      return;
    case FieldKind::integer_list: {
      if (!value.is_array()) return wrong_type(value.type_name());
      std::string text;
      for (const json& item : value) {
        if (!item.is_number_integer()) return wrong_type("an array with a non-integer element");
        text += (text.empty() ? "" : ",") + std::to_string(item.get<std::int64_t>());
      }
      parse_field_text(field, text, config, d, reported);
      return;
    }
    case FieldKind::number:
      if (!value.is_number()) return wrong_type(value.type_name());
      if (const double number = value.get<double>();
          !(number >= static_cast<double>(field.min) && number <= static_cast<double>(field.max))) {
        d.error(reported, "out of range: expected " + allowed_values(field));
      } else {
        *field.number(config) = number;
      }
      return;
    case FieldKind::name_set: {
      if (!value.is_array()) return wrong_type(value.type_name());
      std::string text;
      for (const json& item : value) {
        if (!item.is_string()) return wrong_type("an array with a non-string element");
        text += (text.empty() ? "" : ",") + item.get<std::string>();
      }
      parse_field_text(field, text.empty() ? "none" : text, config, d, reported);
      return;
    }
  }
}

constexpr std::int64_t max_stage = 1023;  // the field table's largest PP, minus one

bool read_clean_text(const json& object, const char* key, std::size_t max_length, bool required,
                     const std::string& item, std::string& out, Diagnostics& d) {
  const auto found = object.find(key);
  const std::string field = item + "." + key;
  if (found == object.end()) {
    if (required)
      d.error(field,
              "missing: expected text of 1 to " + std::to_string(max_length) + " characters");
    return !required;
  }
  if (!found->is_string() || found->get_ref<const std::string&>().empty() ||
      found->get_ref<const std::string&>().size() > max_length ||
      !is_clean_text(found->get_ref<const std::string&>())) {
    d.error(field, "expected text of 1 to " + std::to_string(max_length) +
                       " characters without control characters");
    return false;
  }
  out = found->get<std::string>();
  return true;
}

bool read_stage(const json& object, std::int64_t low, const std::string& item, std::int64_t& out,
                Diagnostics& d) {
  const auto found = object.find("stage");
  if (found == object.end()) return true;  // the default stays
  if (!found->is_number_integer() || found->get<std::int64_t>() < low ||
      found->get<std::int64_t>() > max_stage) {
    d.error(item + ".stage", "expected an integer in [" + std::to_string(low) + ", " +
                                 std::to_string(max_stage) + "]");
    return false;
  }
  out = found->get<std::int64_t>();
  return true;
}

// "bytes": an integer in [0, 2^50], or an amount text such as "141.1GiB".
bool read_bytes(const json& object, const std::string& item, std::int64_t& out, Diagnostics& d) {
  const auto found = object.find("bytes");
  std::optional<std::int64_t> bytes;
  if (found != object.end() && found->is_number_integer() && found->get<std::int64_t>() >= 0 &&
      found->get<std::int64_t>() <= max_config_bytes) {
    bytes = found->get<std::int64_t>();
  } else if (found != object.end() && found->is_string()) {
    bytes = parse_byte_amount(found->get_ref<const std::string&>());
  }
  if (!bytes) {
    d.error(item + ".bytes", std::string(found == object.end() ? "missing" : "invalid") +
                                 ": expected an integer in [0, " +
                                 std::to_string(max_config_bytes) +
                                 "] or a text amount: " + allowed_amounts());
    return false;
  }
  out = *bytes;
  return true;
}

void warn_unknown_keys(const json& object, std::initializer_list<std::string_view> known,
                       const std::string& item, Diagnostics& d) {
  for (const auto& [key, value] : object.items()) {
    bool is_known = false;
    for (std::string_view k : known) is_known = is_known || k == key;
    if (!is_known) d.warn(item + "." + key, "unknown key ignored (a file from a newer stagemem?)");
  }
}

void read_measurements(const json& value, Config& config, Diagnostics& d) {
  config.measurements.clear();
  if (!value.is_array() || value.size() > max_measurements) {
    d.error("json.measurements", "expected an array of at most " +
                                     std::to_string(max_measurements) +
                                     " objects {point, stage, bytes, source[, term]}");
    return;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item = "json.measurements[" + std::to_string(i) + "]";
    const json& object = value[i];
    if (!object.is_object()) {
      d.error(item, "expected an object {point, stage, bytes, source[, term]}");
      continue;
    }
    warn_unknown_keys(object,
                      {"point", "stage", "bytes", "source", "term", "rank", "figure", "iteration"},
                      item, d);
    Measurement m;
    bool ok = true;
    const auto point = object.find("point");
    const auto parsed = point != object.end() && point->is_string()
                            ? parse_measurement_point(point->get_ref<const std::string&>())
                            : std::nullopt;
    if (!parsed) {
      std::string names;
      for (std::string_view n : enum_names<MeasurementPoint>)
        names += (names.empty() ? "" : ", ") + std::string(n);
      d.error(item + ".point", "expected one of: " + names);
      ok = false;
    } else {
      m.point = *parsed;
    }
    ok = read_stage(object, 0, item, m.stage, d) && ok;
    ok = read_bytes(object, item, m.bytes, d) && ok;
    ok = read_clean_text(object, "source", max_source_length, true, item, m.source, d) && ok;
    if (parsed.has_value() && m.point == MeasurementPoint::term) {
      // The text form (URL, CLI) splits at '=' and '@': a term name may hold neither.
      if (read_clean_text(object, "term", max_term_name_length, true, item, m.term, d) &&
          m.term.find_first_of("=@") != std::string::npos) {
        d.error(item + ".term", "a term name may not contain '=' or '@'");
        ok = false;
      }
      ok = ok && !m.term.empty();
    } else if (object.contains("term")) {
      d.error(item + ".term", "only point \"term\" takes a term name");
      ok = false;
    }
    if (const auto rank = object.find("rank"); rank != object.end()) {
      if (!rank->is_number_integer() || rank->get<std::int64_t>() < -1 ||
          rank->get<std::int64_t>() > max_rank) {
        d.error(item + ".rank",
                "expected -1 (not known) or an integer in [0, " + std::to_string(max_rank) + "]");
        ok = false;
      } else {
        m.rank = rank->get<std::int64_t>();
      }
    }
    if (const auto iteration = object.find("iteration"); iteration != object.end()) {
      if (!iteration->is_number_integer() || iteration->get<std::int64_t>() < -1 ||
          iteration->get<std::int64_t>() > max_iteration) {
        d.error(item + ".iteration", "expected -1 (not known) or an integer in [0, " +
                                         std::to_string(max_iteration) + "]");
        ok = false;
      } else {
        m.iteration = iteration->get<std::int64_t>();
      }
    }
    if (const auto figure = object.find("figure"); figure != object.end()) {
      const auto figure_parsed = figure->is_string()
                                     ? parse_memory_figure(figure->get_ref<const std::string&>())
                                     : std::nullopt;
      if (!figure_parsed) {
        d.error(item + ".figure",
                "expected one of: unspecified, allocated, max-allocated, reserved, max-reserved");
        ok = false;
      } else {
        m.figure = *figure_parsed;
      }
    }
    if (ok && m.point == MeasurementPoint::term &&
        (m.rank != -1 || m.figure != MemoryFigure::unspecified || m.iteration != -1)) {
      d.error(item + ".rank", "point \"term\" takes no rank, figure or iteration");
      ok = false;
    }
    if (ok) config.measurements.push_back(std::move(m));
  }
}

void read_gaps(const json& value, Config& config, Diagnostics& d) {
  config.gaps.clear();
  if (!value.is_array() || value.size() > max_measurements) {
    d.error("json.gaps", "expected an array of at most " + std::to_string(max_measurements) +
                             " objects {kind, stage, bytes, source}");
    return;
  }
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string item = "json.gaps[" + std::to_string(i) + "]";
    const json& object = value[i];
    if (!object.is_object()) {
      d.error(item, "expected an object {kind, stage, bytes, source}");
      continue;
    }
    warn_unknown_keys(object, {"kind", "stage", "bytes", "source"}, item, d);
    GapEntry g;
    bool ok = true;
    const auto kind = object.find("kind");
    const auto parsed = kind != object.end() && kind->is_string()
                            ? parse_gap_kind(kind->get_ref<const std::string&>())
                            : std::nullopt;
    if (!parsed) {
      std::string names;
      for (std::string_view n : enum_names<GapKind>)
        names += (names.empty() ? "" : ", ") + std::string(n);
      d.error(item + ".kind", "expected one of: " + names);
      ok = false;
    } else {
      g.kind = *parsed;
    }
    ok = read_stage(object, -1, item, g.stage, d) && ok;
    ok = read_bytes(object, item, g.bytes, d) && ok;
    ok = read_clean_text(object, "source", max_source_length, true, item, g.source, d) && ok;
    if (ok) config.gaps.push_back(std::move(g));
  }
}

// An inline Hugging Face config.json becomes the custom model's text.
void read_hf_config(const json& value, Config& config, Diagnostics& d) {
  if (!value.is_object()) {
    d.error("json.hf_config", "expected a Hugging Face config.json object");
    return;
  }
  HfImport imported = import_hf_config(value.dump(-1, ' ', false, json::error_handler_t::replace));
  const auto rename = [](std::string field) {
    return field.starts_with("hf") ? "json.hf_config" + field.substr(2) : "json.hf_config." + field;
  };
  for (auto& e : imported.diagnostics.errors) d.error(rename(e.field), std::move(e.message));
  for (auto& w : imported.diagnostics.warnings) d.warn(rename(w.field), std::move(w.message));
  if (imported.model) config.custom_model = model_to_text(*imported.model);
}

void read_object(const json& object, const std::string& prefix, Config& config, Diagnostics& d) {
  for (const auto& [key, value] : object.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (prefix.empty() && (key == "format" || key == "version")) continue;
    if (prefix.empty() && key == "measurements") {
      read_measurements(value, config, d);
    } else if (prefix.empty() && key == "gaps") {
      read_gaps(value, config, d);
    } else if (prefix.empty() && key == "hf_config") {
      if (object.contains("custom_model")) {
        d.error("json.hf_config", "give either custom_model or hf_config, not both");
      } else {
        read_hf_config(value, config, d);
      }
    } else if (const ConfigField* field = find_field_by_path(path)) {
      field_from_json(*field, value, config, d, "json." + path);
    } else if (is_section(path)) {
      if (value.is_object()) {
        read_object(value, path, config, d);
      } else {
        d.error("json." + path, std::string("found ") + value.type_name() +
                                    ": expected an object with keys " + section_keys(path));
      }
    } else {
      d.warn("json." + path, "unknown key ignored (a file from a newer stagemem?)");
    }
  }
}

}  // namespace

std::string config_to_json(const Config& config) {
  // Ordered: the format and version first, then the fields in table order (people read files).
  using ordered = nlohmann::ordered_json;
  ordered document = {{"format", "stagemem-config"}, {"version", config_json_version}};
  const Config defaults = default_config();
  for (const ConfigField& field : config_fields()) {
    // A kernel option that follows the stack is left out, so that reading the file back derives
    // it from the stack again (version_rules.h); every other field is written.
    if (field.stack_kernel >= 0 && !field_is_written(field, config, defaults)) continue;
    document[ordered::json_pointer("/" + [&] {
      std::string pointer(field.path);
      for (char& c : pointer) c = c == '.' ? '/' : c;
      return pointer;
    }())] = field_to_json(field, config);
  }
  ordered measurements = ordered::array();
  for (const Measurement& m : config.measurements) {
    ordered item = {{"point", std::string(measurement_point_name(m.point))},
                    {"stage", m.stage},
                    {"bytes", m.bytes},
                    {"source", m.source}};
    if (m.point == MeasurementPoint::term) item["term"] = m.term;
    if (m.rank >= 0) item["rank"] = m.rank;
    if (m.figure != MemoryFigure::unspecified)
      item["figure"] = std::string(memory_figure_name(m.figure));
    if (m.iteration >= 0) item["iteration"] = m.iteration;
    measurements.push_back(std::move(item));
  }
  document["measurements"] = std::move(measurements);
  ordered gaps = ordered::array();
  for (const GapEntry& g : config.gaps) {
    gaps.push_back({{"kind", std::string(gap_kind_name(g.kind))},
                    {"stage", g.stage},
                    {"bytes", g.bytes},
                    {"source", g.source}});
  }
  document["gaps"] = std::move(gaps);
  // Decoders only store valid UTF-8; `replace` keeps a hand-built Config from ever throwing here.
  return document.dump(2, ' ', false, ordered::error_handler_t::replace);
}

DecodedConfig config_from_json(std::string_view text) {
  return config_from_json(text, default_config());
}

DecodedConfig config_from_json(std::string_view text, const Config& base) {
  DecodedConfig result{.config = base, .diagnostics = {}};
  Diagnostics& d = result.diagnostics;
  const std::optional<json> parsed = parse_json_bounded(
      text, {.max_bytes = max_config_json_bytes, .max_depth = max_json_depth}, "json", d);
  if (!parsed) return result;
  const json& document = *parsed;
  if (!document.is_object()) {
    d.error("json", "the document must be a JSON object");
    return result;
  }
  if (const auto format = document.find("format");
      format != document.end() && !(format->is_string() && *format == "stagemem-config")) {
    d.error("json.format", "expected \"stagemem-config\"");
    return result;
  }
  if (const auto version = document.find("version"); version != document.end()) {
    if (!version->is_number_integer() || version->get<std::int64_t>() != config_json_version) {
      d.error("json.version", "this build reads version " + std::to_string(config_json_version));
      return result;
    }
  }
  read_object(document, "", result.config, d);
  check_references(result.config, d, "json.", /*by_path=*/true);
  return result;
}

}  // namespace stagemem
