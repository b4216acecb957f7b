# stagemem_check_core_layers(CORE_DIR LAYERS): fails the configure step when src/core breaks one
# of its rules:
#  - purity: no front-end header (ImGui, Emscripten, GLFW, GL) anywhere in the core;
#  - every file lives in one of LAYERS (folders, lowest first) and includes core headers as
#    "folder/file.h" (so the include graph between folders can be read off the includes);
#  - a file includes headers of its own folder or of folders listed before it, never after.
# Each core file is a configure dependency, so an edit that breaks a rule fails the next build.
function(stagemem_check_core_layers core_dir layers)
  file(GLOB_RECURSE core_files RELATIVE ${core_dir} ${core_dir}/*.h ${core_dir}/*.cpp)
  set(problems "")
  foreach(file IN LISTS core_files)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${core_dir}/${file})
    string(REGEX MATCH "^[^/]+" folder "${file}")
    list(FIND layers "${folder}" rank)
    if(rank EQUAL -1 OR folder STREQUAL file)
      string(APPEND problems "\n  ${file}: not inside one of the layers (${layers})")
      continue()
    endif()
    file(STRINGS ${core_dir}/${file} includes REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS includes)
      if(line MATCHES "[<\"](imgui|emscripten|GLFW|GLES|GL/)")
        string(APPEND problems "\n  ${file}: src/core must stay pure: ${line}")
      elseif(line MATCHES "\"([^\"]+)\"")
        set(header "${CMAKE_MATCH_1}")
        string(REGEX MATCH "^[^/]+" target "${header}")
        list(FIND layers "${target}" target_rank)
        if(target_rank EQUAL -1 OR target STREQUAL header)
          string(APPEND problems "\n  ${file}: include \"${header}\" is not \"folder/file.h\" "
                                 "of a core folder")
        elseif(target_rank GREATER rank)
          string(APPEND problems "\n  ${file}: ${folder}/ may not include ${header} "
                                 "(${target}/ is above it in the layers)")
        elseif(NOT EXISTS ${core_dir}/${header})
          string(APPEND problems "\n  ${file}: includes ${header}, which does not exist")
        endif()
      endif()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "src/core breaks its layering (cmake/CoreLayers.cmake):${problems}")
  endif()
endfunction()
