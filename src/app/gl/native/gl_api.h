// OpenGL for the native build: Mesa's libGL exports every core entry point, so prototypes suffice.
#pragma once
#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>

// Prepended to every embedded shader (shaders/ holds bodies without a version line).
inline constexpr const char* glsl_prelude = "#version 330 core\n";
