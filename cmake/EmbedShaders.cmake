# Embeds GLSL ES 3.0 sources from shaders/ into a generated header at configure time.
# Each file shaders/<name>.<vert|frag> becomes `inline constexpr const char* shader_<name>_<vert|frag>`
# (the body without a #version line; the platform prepends its own version and precision).
# Editing a shader re-runs the configure step (CMAKE_CONFIGURE_DEPENDS).
function(stagemem_embed_shaders out_header)
  file(GLOB shader_files ${PROJECT_SOURCE_DIR}/shaders/*.vert ${PROJECT_SOURCE_DIR}/shaders/*.frag)
  set(text "// Generated from shaders/ by cmake/EmbedShaders.cmake. Do not edit.\n#pragma once\n\n")
  foreach(file IN LISTS shader_files)
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    get_filename_component(name ${file} NAME_WE)
    get_filename_component(stage ${file} EXT)
    string(SUBSTRING ${stage} 1 -1 stage)
    file(READ ${file} body)
    string(APPEND text "inline constexpr const char* shader_${name}_${stage} = R\"glsl(${body})glsl\";\n\n")
  endforeach()
  file(CONFIGURE OUTPUT ${out_header} CONTENT "${text}" @ONLY)
endfunction()
