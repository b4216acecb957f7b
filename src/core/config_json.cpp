#include "config_json.h"

#include <nlohmann/json.hpp>

namespace stagemem {
namespace {

using nlohmann::json;

constexpr std::size_t max_json_length = 1 << 20;

json field_to_json(const ConfigField& field, const Config& config) {
  Config copy = config;  // accessors are mutable; reading through a copy keeps `config` const
  switch (field.kind) {
    case FieldKind::integer: return *field.integer(copy);
    case FieldKind::boolean: return *field.boolean(copy);
    case FieldKind::text: return *field.text(copy);
    case FieldKind::choice: return format_field_text(field, config);
    case FieldKind::integer_list: return *field.integer_list(copy);
    case FieldKind::number: return *field.number(copy);
    case FieldKind::name_set: {
      json names = json::array();
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

void read_object(const json& object, const std::string& prefix, Config& config, Diagnostics& d) {
  for (const auto& [key, value] : object.items()) {
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (prefix.empty() && (key == "format" || key == "version")) continue;
    if (const ConfigField* field = find_field_by_path(path)) {
      field_from_json(*field, value, config, d, "json." + path);
    } else if (value.is_object()) {
      read_object(value, path, config, d);
    } else {
      d.warn("json." + path, "unknown key ignored (a file from a newer stagemem?)");
    }
  }
}

}  // namespace

std::string config_to_json(const Config& config) {
  json document = {{"format", "stagemem-config"}, {"version", config_json_version}};
  for (const ConfigField& field : config_fields()) {
    document[json::json_pointer("/" + [&] {
      std::string pointer(field.path);
      for (char& c : pointer) c = c == '.' ? '/' : c;
      return pointer;
    }())] = field_to_json(field, config);
  }
  return document.dump(2);
}

DecodedConfig config_from_json(std::string_view text) {
  DecodedConfig result;
  Diagnostics& d = result.diagnostics;
  if (text.size() > max_json_length) {
    d.error("json", "the document is " + std::to_string(text.size()) + " bytes; at most " +
                        std::to_string(max_json_length) + " are read");
    return result;
  }
  const json document = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    d.error("json", "not valid JSON");
    return result;
  }
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
  return result;
}

}  // namespace stagemem
