// diagnostics.h — errors and warnings that name the offending field.
//
// Purpose: every validator and decoder in the core reports problems as data, never by throwing
// or printing, so each front end can show them its own way (CLI stderr, browser banner).
// Limitations: messages are English only.
#pragma once

#include <string>
#include <vector>

namespace stagemem {

struct FieldMessage {
  std::string field;    // dotted path of the input field, e.g. "parallel.tp" or "url.pp"
  std::string message;  // what is wrong and the allowed range
};

struct Diagnostics {
  std::vector<FieldMessage> errors;
  std::vector<FieldMessage> warnings;
  bool ok() const { return errors.empty(); }
  void error(std::string field, std::string message) {
    errors.push_back({std::move(field), std::move(message)});
  }
  void warn(std::string field, std::string message) {
    warnings.push_back({std::move(field), std::move(message)});
  }
};

}  // namespace stagemem
