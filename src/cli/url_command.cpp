#include "url_command.h"

#include <array>
#include <cstdio>
#include <string>

#include "command_steps.h"
#include "config/config_json.h"
#include "config/url_fragment.h"

namespace {

constexpr std::array<stagemem_cli::CommandOption, 1> url_options = {{
    {"--base", "URL", "encode: print the whole link, URL + '#' + fragment"},
}};

void print_url_help() {
  const std::string intro =
      "usage: stagemem url encode [--base URL] <configuration flags>\n"
      "       stagemem url decode 'LINK' [<configuration flags>]\n\n"
      "encode prints the link fragment (#v=" +
      std::to_string(stagemem::url_format_version) +
      "&...) of the configuration the flags give;\n"
      "decode prints a whole pasted link's configuration as JSON (read by --config).\n"
      "Exit codes: 0 success, 2 bad input.\n\noptions:\n";
  stagemem_cli::print_command_help(intro, url_options);
}

// `decode LINK`: the link is the first source, so flags after it override its fields.
stagemem_cli::CommandLine parse_url_flags(const std::vector<std::string_view>& args, bool decode) {
  std::vector<std::string_view> rest(args.begin() + 1, args.end());
  if (decode && !rest.empty() && !rest[0].starts_with("--")) rest.insert(rest.begin(), "--url");
  return stagemem_cli::parse_command_line(rest, {.options = url_options});
}

}  // namespace

int run_url(const std::vector<std::string_view>& args) {
  const std::string_view mode = args.empty() ? std::string_view{} : args[0];
  if (mode == "--help" || mode == "-h") {
    print_url_help();
    return stagemem_cli::exit_ok;
  }
  if (mode != "encode" && mode != "decode") {
    print_url_help();
    std::fprintf(stderr, "error: url: expected `url encode` or `url decode LINK`\n");
    return stagemem_cli::exit_bad_input;
  }
  const bool decode = mode == "decode";
  stagemem_cli::CommandLine line = parse_url_flags(args, decode);
  if (line.help) return run_url({"--help"});
  stagemem::Diagnostics& d = line.diagnostics;
  if (decode && !(args.size() > 1 && !args[1].starts_with("--"))) {
    d.error("url decode", "give the link: stagemem url decode 'https://...#v=1&...'");
  }
  // Flags are checked as a link would be: every name a field refers to must exist.
  stagemem::check_references(line.config, d, "", /*by_path=*/true);
  if (!d.ok()) return stagemem_cli::refuse(d);
  if (decode) {
    std::printf("%s\n", stagemem::config_to_json(line.config).c_str());
  } else {
    std::printf("%s#%s\n", line.option("--base").value_or("").c_str(),
                stagemem::encode_fragment(line.config).c_str());
  }
  return stagemem_cli::finish(stagemem_cli::exit_ok, d);  // warnings only here
}
