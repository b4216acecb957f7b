// OpenGL ES 3.0 (WebGL2) for the browser build.
#pragma once
#include <GLES3/gl3.h>

// Prepended to every embedded shader (shaders/ holds bodies without a version line).
inline constexpr const char* glsl_prelude = "#version 300 es\nprecision highp float;\n";
