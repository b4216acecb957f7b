#include "url_command.h"

#include <array>
#include <cstdio>
#include <string>

#include "config/config_json.h"
#include "config/url_fragment.h"
#include "config_sources.h"

namespace {

using stagemem_cli::exit_bad_input;

constexpr std::array<stagemem_cli::CommandOption, 1> url_options = {{
    {"--base", "URL", "encode: print the whole link, URL + '#' + fragment"},
}};

}  // namespace

int run_url(const std::vector<std::string_view>& args) {
  const std::string_view mode = args.empty() ? std::string_view{} : args[0];
  if (mode.empty() || mode == "--help" || mode == "-h" || (mode != "encode" && mode != "decode")) {
    std::printf(
        "usage: stagemem url encode [--base URL] <configuration flags>\n"
        "       stagemem url decode 'LINK' [<configuration flags>]\n\n"
        "encode prints the link fragment (#v=%d&...) of the configuration the flags give;\n"
        "decode prints a whole pasted link's configuration as JSON (read by --config).\n"
        "Exit codes: 0 success, 2 bad input.\n\noptions:\n%s%s",
        stagemem::url_format_version, stagemem_cli::command_options_help(url_options).c_str(),
        stagemem_cli::configuration_flags_help().c_str());
    if (mode.empty() || (mode != "--help" && mode != "-h")) {
      std::fprintf(stderr, "error: url: expected `url encode` or `url decode LINK`\n");
      return exit_bad_input;
    }
    return 0;
  }
  // `decode LINK`: the link is the first source, so flags after it override its fields.
  std::vector<std::string_view> rest(args.begin() + 1, args.end());
  const bool decode = mode == "decode";
  if (decode && !rest.empty() && !rest[0].starts_with("--")) rest.insert(rest.begin(), "--url");
  stagemem_cli::CommandLine line = stagemem_cli::parse_command_line(rest, {.options = url_options});
  if (line.help) return run_url({"--help"});
  stagemem::Diagnostics& d = line.diagnostics;
  if (decode && !(args.size() > 1 && !args[1].starts_with("--"))) {
    d.error("url decode", "give the link: stagemem url decode 'https://...#v=1&...'");
  }
  // Flags are checked as a link would be: every name a field refers to must exist.
  stagemem::check_references(line.config, d, "", /*by_path=*/true);
  if (!d.ok()) {
    stagemem_cli::print_diagnostics(d);
    return exit_bad_input;
  }
  if (decode) {
    std::printf("%s\n", stagemem::config_to_json(line.config).c_str());
  } else {
    std::printf("%s#%s\n", line.option("--base").value_or("").c_str(),
                stagemem::encode_fragment(line.config).c_str());
  }
  stagemem_cli::print_diagnostics(d);  // warnings only here
  return 0;
}
