// embedded_fonts.h — the fonts compiled into the app: subsets of Debian's DejaVu Sans and
// DejaVu Sans Mono, generated at build time by cmake/EmbedFont.cmake (cmake/embed_font.mjs).
// Usage: AddFontFromMemoryTTF(..., embedded_font_ranges) with FontDataOwnedByAtlas = false
// (the bytes are static).
// Limitations: only the code points of embedded_font_ranges have outlines; anything else is
// drawn as U+FFFD.
#pragma once

#include <cstddef>

#include "imgui.h"

struct EmbeddedFont {
  const unsigned char* data;
  std::size_t size;
};

extern const EmbeddedFont dejavu_sans;       // proportional text
extern const EmbeddedFont dejavu_sans_mono;  // numbers and formulas
// Zero-terminated pairs of first/last code point: exactly the glyphs kept in the subsets.
extern const ImWchar embedded_font_ranges[];
