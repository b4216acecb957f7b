// version.h — what the app says it is: the project's version and the commit it was built from
// (the status bar, Module.getUiState(), the native window's title).
#pragma once

#include <string_view>

std::string_view app_version();  // "0.1.0" (CMake's project version)
std::string_view app_commit();   // the commit the build was made from (git), or "unknown"
