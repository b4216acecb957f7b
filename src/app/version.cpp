#include "version.h"

// Given by CMake for this file only (src/app/CMakeLists.txt).
#ifndef STAGEMEM_VERSION
#define STAGEMEM_VERSION "unknown"
#endif
#ifndef STAGEMEM_COMMIT
#define STAGEMEM_COMMIT "unknown"
#endif

std::string_view app_version() {
  return STAGEMEM_VERSION;
}
std::string_view app_commit() {
  return STAGEMEM_COMMIT;
}
