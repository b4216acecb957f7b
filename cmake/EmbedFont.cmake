# Embeds subsets of Debian's DejaVu fonts (package fonts-dejavu-core) into the app at build time.
# cmake/embed_font.mjs (run with node, which the web build and the browser tests need anyway)
# keeps the glyphs of STAGEMEM_FONT_RANGES and writes them as byte arrays into a generated .cpp
# that defines what src/app/embedded_fonts.h declares. The ranges are written once, here: the
# same list becomes the ImGui glyph ranges (embedded_font_ranges), so every glyph ImGui asks for
# is in the subset.
set(STAGEMEM_FONT_DIR "/usr/share/fonts/truetype/dejavu" CACHE PATH
    "Folder holding DejaVuSans.ttf and DejaVuSansMono.ttf (Debian: fonts-dejavu-core)")
# Basic Latin, Latin-1, Latin Extended-A, Greek, punctuation (dashes, bullet, ellipsis, per mille),
# super/subscripts, arrows, the maths operators formulas use (minus, sum, root, approx, <=, >=, dot),
# and U+FFFD for anything else.
set(STAGEMEM_FONT_RANGES
    "20-7E,A0-17F,391-3C9,2010-2027,2030-203A,2070-2079,207F-208F,2190-2193,2202,2206,2211-2213,221A,221E,2248,2260-2265,22C5,FFFD")

function(stagemem_embed_fonts out_cpp)
  find_program(STAGEMEM_FONT_NODE node NO_CMAKE_FIND_ROOT_PATH)
  if(NOT STAGEMEM_FONT_NODE)
    message(FATAL_ERROR "node not found: it subsets the embedded fonts (scripts/install-deps.sh)")
  endif()
  set(sans ${STAGEMEM_FONT_DIR}/DejaVuSans.ttf)
  set(mono ${STAGEMEM_FONT_DIR}/DejaVuSansMono.ttf)
  foreach(font IN ITEMS ${sans} ${mono})
    if(NOT EXISTS ${font})
      message(FATAL_ERROR "${font} not found: install fonts-dejavu-core (scripts/install-deps.sh) "
                          "or set STAGEMEM_FONT_DIR")
    endif()
  endforeach()
  set(script ${PROJECT_SOURCE_DIR}/cmake/embed_font.mjs)
  add_custom_command(
    OUTPUT ${out_cpp}
    COMMAND ${STAGEMEM_FONT_NODE} ${script} ${out_cpp} "${STAGEMEM_FONT_RANGES}"
            dejavu_sans=${sans} dejavu_sans_mono=${mono}
    DEPENDS ${script} ${sans} ${mono}
    COMMENT "Subsetting and embedding DejaVu Sans and DejaVu Sans Mono"
    VERBATIM)
endfunction()
