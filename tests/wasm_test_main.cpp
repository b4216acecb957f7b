// The wasm build links Catch2 v2's single header; this file provides its main().
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
