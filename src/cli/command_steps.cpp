#include "command_steps.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "config/config.h"

namespace stagemem_cli {

void print_diagnostics(const stagemem::Diagnostics& d) {
  for (const auto& e : d.errors)
    std::fprintf(stderr, "error: %s: %s\n", e.field.c_str(), e.message.c_str());
  for (const auto& w : d.warnings)
    std::fprintf(stderr, "warning: %s: %s\n", w.field.c_str(), w.message.c_str());
}

void print_command_help(std::string_view intro, std::span<const CommandOption> options,
                        std::string_view outro) {
  const std::string text = std::string(intro) + command_options_help(options) +
                           configuration_flags_help() + std::string(outro);
  std::fputs(text.c_str(), stdout);
}

std::string checked_format(const CommandLine& line, std::span<const std::string_view> formats,
                           stagemem::Diagnostics& d) {
  const std::string format = line.option("--format").value_or("text");
  std::string listed;
  bool known = false;
  for (std::string_view f : formats) {
    listed += (listed.empty() ? "" : ", ") + std::string(f);
    known |= format == f;
  }
  if (!known) d.error("--format", "'" + format.substr(0, 32) + "' is not one of: " + listed);
  return format;
}

stagemem::AmountUnit checked_units(const CommandLine& line, stagemem::Diagnostics& d) {
  const std::string units = line.option("--units").value_or("gib");
  const auto& names = stagemem::enum_names<stagemem::AmountUnit>;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (units == names[i]) return static_cast<stagemem::AmountUnit>(i);
  }
  d.error("--units", "'" + units.substr(0, 32) +
                         "' is not one of: gib (2^30 bytes, the default), gb (10^9 bytes)");
  return stagemem::AmountUnit::gib;
}

std::string json_or_checked_format(const CommandLine& line,
                                   std::span<const std::string_view> formats,
                                   stagemem::Diagnostics& d) {
  return line.option("--json") ? "json" : checked_format(line, formats, d);
}

void require_model(CommandLine& line, std::string_view hint) {
  if (!line.model_given) line.diagnostics.error("model", std::string(hint));
}

std::optional<stagemem::Model> resolved_model(CommandLine& line) {
  if (!line.diagnostics.ok()) return std::nullopt;
  std::optional<stagemem::Model> model = stagemem::resolve_model(line.config, line.diagnostics);
  if (!line.diagnostics.ok()) return std::nullopt;
  return model;
}

void print_json(const nlohmann::ordered_json& value) {
  std::printf("%s\n",
              value.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
}

std::string table_text(const stagemem::Table& table, std::string_view format) {
  if (format == "csv") return stagemem::csv_table(table);
  if (format == "markdown") return stagemem::markdown_table(table);
  return stagemem::text_table(table);
}

}  // namespace stagemem_cli
