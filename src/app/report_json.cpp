#include "report_json.h"
#include "term_text.h"

#include <cstdio>

namespace {

void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;  // UTF-8 passes through unchanged
        }
    }
  }
  out += '"';
}

void append_key(std::string& out, std::string_view key) {
  append_string(out, key);
  out += ':';
}

void append_number(std::string& out, std::int64_t value) {
  out += std::to_string(value);
}

void append_messages(std::string& out, const std::vector<stagemem::FieldMessage>& messages) {
  out += '[';
  for (std::size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += ',';
    out += '{';
    append_key(out, "field");
    append_string(out, messages[i].field);
    out += ',';
    append_key(out, "message");
    append_string(out, messages[i].message);
    out += '}';
  }
  out += ']';
}

void append_term(std::string& out, const stagemem::Term& term) {
  out += '{';
  append_key(out, "name");
  append_string(out, stagemem::term_name(term));
  out += ',';
  append_key(out, "bytes");
  append_number(out, term.bytes);
  out += ',';
  append_key(out, "formula");
  append_string(out, stagemem::term_formula(term));
  out += ',';
  append_key(out, "scaling");
  append_string(out, stagemem::term_scaling(term));
  out += ',';
  append_key(out, "family");
  append_string(out, stagemem::family_name(term.family));
  out += ',';
  append_key(out, "tag");
  append_string(out, stagemem::tag_name(term.tag));
  out += ',';
  append_key(out, "allocatedAt");
  append_string(out, stagemem::allocation_point_name(term.allocated_at));
  out += '}';
}

}  // namespace

std::string report_json(const stagemem::Report& report, std::string_view fragment) {
  std::string out = "{";
  append_key(out, "format");
  append_string(out, "stagemem-report-draft-1");
  out += ',';
  append_key(out, "fragment");
  append_string(out, fragment);
  out += ',';
  append_key(out, "model");
  append_string(out, report.model);
  out += ',';
  append_key(out, "totalParameters");
  append_number(out, report.total_parameters);
  out += ',';
  append_key(out, "bindingStage");
  append_number(out, report.binding_stage);
  out += ',';
  append_key(out, "errors");
  append_messages(out, report.diagnostics.errors);
  out += ',';
  append_key(out, "warnings");
  append_messages(out, report.diagnostics.warnings);
  out += ',';
  append_key(out, "stages");
  out += '[';
  for (std::size_t s = 0; s < report.stages.size(); ++s) {
    const stagemem::StageReport& stage = report.stages[s];
    if (s > 0) out += ',';
    out += '{';
    append_key(out, "index");
    append_number(out, stage.index);
    out += ',';
    append_key(out, "firstLayer");
    append_number(out, stage.first_layer);
    out += ',';
    append_key(out, "layerCount");
    append_number(out, stage.layer_count);
    out += ',';
    append_key(out, "parametersPerRank");
    append_number(out, stage.parameters_per_rank);
    out += ',';
    append_key(out, "peakBytes");
    append_number(out, stage.peak_bytes);
    out += ',';
    append_key(out, "terms");
    out += '[';
    for (std::size_t t = 0; t < stage.terms.size(); ++t) {
      if (t > 0) out += ',';
      append_term(out, stage.terms[t]);
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}
