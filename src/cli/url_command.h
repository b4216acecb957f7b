// url_command.h — `stagemem url encode|decode`: converts between a shareable link and JSON.
//
//   stagemem url encode [--base URL] <configuration flags>   prints the fragment "#v=1&..."
//                                                            (or the whole link with --base)
//   stagemem url decode 'LINK' [<configuration flags>]       prints the JSON configuration
// Exit codes: 0 success, 2 bad input (every bad field named with its allowed values).
#pragma once

#include <string_view>
#include <vector>

int run_url(const std::vector<std::string_view>& args);
