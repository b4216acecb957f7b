// png_writer.h — writes RGBA pixels as an uncompressed PNG (stored deflate blocks), so the native
// smoke run can leave a screenshot any image viewer opens, with no image library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// `rgba` is width*height*4 bytes, rows top to bottom. Returns false if the file cannot be written.
bool write_png(const std::string& path, int width, int height,
               const std::vector<std::uint8_t>& rgba);
