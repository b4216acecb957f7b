#include "markdown_table.h"
#include "term_text.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "units.h"

namespace {

// A cell must not end the row early: '|' is escaped and line breaks become spaces.
void append_cell(std::string& out, std::string_view text) {
  out += ' ';
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  out += " |";
}

}  // namespace

std::string markdown_table(const stagemem::Report& report) {
  std::string out;
  if (!report.diagnostics.ok()) {
    out += "stagemem: the configuration has errors:\n\n";
    for (const auto& e : report.diagnostics.errors)
      out += "- `" + e.field + "`: " + e.message + "\n";
    return out;
  }
  std::vector<std::string> term_names;
  for (const auto& stage : report.stages) {
    for (const auto& term : stage.terms) {
      if (std::find(term_names.begin(), term_names.end(), stagemem::term_name(term)) ==
          term_names.end()) {
        term_names.push_back(stagemem::term_name(term));
      }
    }
  }

  out += "Per-rank device memory of each pipeline stage: " + report.model + ", " +
         stagemem::group_digits(report.total_parameters) + " parameters; binding stage " +
         std::to_string(report.binding_stage) + " (GiB = 2^30 bytes).\n\n|";
  append_cell(out, "stage");
  append_cell(out, "layers");
  append_cell(out, "params/rank");
  for (const auto& name : term_names) append_cell(out, name);
  append_cell(out, "peak");
  append_cell(out, "peak (bytes)");
  out += "\n|";
  out += " --- | --- | ---: |";
  for (std::size_t i = 0; i < term_names.size(); ++i) out += " ---: |";
  out += " ---: | ---: |\n";

  for (const auto& stage : report.stages) {
    out += '|';
    append_cell(out, std::to_string(stage.index) +
                         (stage.index == report.binding_stage ? " (binding)" : ""));
    append_cell(out, std::to_string(stage.first_layer) + "-" +
                         std::to_string(stage.first_layer + stage.layer_count - 1));
    append_cell(out, stagemem::group_digits(stage.parameters_per_rank));
    for (const auto& name : term_names) {
      const auto term =
          std::find_if(stage.terms.begin(), stage.terms.end(),
                       [&](const stagemem::Term& t) { return stagemem::term_name(t) == name; });
      append_cell(out, term == stage.terms.end() ? "0" : stagemem::format_gib(term->bytes));
    }
    append_cell(out, stagemem::format_gib(stage.peak_bytes));
    append_cell(out, stagemem::group_digits(stage.peak_bytes));
    out += '\n';
  }
  return out;
}
