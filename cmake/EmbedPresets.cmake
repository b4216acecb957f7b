# stagemem_embed_presets(OUT_CPP NAMES...): embeds the preset models' Hugging Face config.json
# files (src/core/model/presets/<name>.json) into a generated source file that defines
# stagemem::embedded_preset_sources() (src/core/model/preset_sources.h), in the order of NAMES,
# which is the order `stagemem presets` lists them. The files are the models' own config.json,
# verbatim; only the final newline is dropped. Editing one re-runs the configure step, and the
# output is rewritten only when its content changes.
function(stagemem_embed_presets out_cpp)
  set(dir ${PROJECT_SOURCE_DIR}/src/core/model/presets)
  file(GLOB present RELATIVE ${dir} ${dir}/*.json)
  list(LENGTH present present_count)
  list(LENGTH ARGN name_count)
  if(NOT present_count EQUAL name_count)
    message(FATAL_ERROR "src/core/model/presets holds ${present_count} files but "
                        "src/core/CMakeLists.txt lists ${name_count} presets: list each file once")
  endif()
  set(text "// Generated from src/core/model/presets/ by cmake/EmbedPresets.cmake. Do not edit.\n")
  string(APPEND text "#include \"model/preset_sources.h\"\n\nnamespace stagemem {\nnamespace {\n\n")
  string(APPEND text "constexpr PresetSource sources[] = {\n")
  foreach(name IN LISTS ARGN)
    set(file ${dir}/${name}.json)
    if(NOT EXISTS ${file})
      message(FATAL_ERROR "preset ${name}: ${file} does not exist")
    endif()
    set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    file(READ ${file} body)
    string(REGEX REPLACE "\n$" "" body "${body}")
    string(FIND "${body}" ")json\"" clash)
    if(NOT clash EQUAL -1)
      message(FATAL_ERROR "preset ${name}: the text ')json\"' ends the raw string literal")
    endif()
    string(APPEND text "    {\"${name}\", R\"json(${body})json\"},\n")
  endforeach()
  string(APPEND text "};\n\n}  // namespace\n\n")
  string(APPEND text "std::span<const PresetSource> embedded_preset_sources() { return sources; }\n\n")
  string(APPEND text "}  // namespace stagemem\n")
  file(WRITE ${out_cpp}.new "${text}")
  configure_file(${out_cpp}.new ${out_cpp} COPYONLY)
endfunction()
