# stagemem_check_app_seams(APP_DIR WEB_DIR): fails the configure step when the front end breaks
# one of its seams (docs/architecture.md):
#  - src/app includes nothing of src/web and no Emscripten header: the browser's code depends on
#    the app, never the reverse (one platform seam: platform.h, implemented once per platform);
#  - src/app's headers include only app headers listed before them in app_header_order, so the
#    app's include graph has no cycles (a new header takes its place in the list);
#  - a panel (panel_*.cpp) includes only the app headers in panel_headers: the state, the actions
#    and the shared drawing helpers. It reads the state and emits actions; it cannot reach the
#    platform, the frame, the reducer's loaders or another panel;
#  - panels.h (the panels' entry points) is included only by the frame's own files;
#  - src/web includes only the app headers in web_headers, the app's API for a front end.
# Each file is a configure dependency, so an edit that breaks a rule fails the next build.

# Lowest first: a header may include the app headers before it.
set(app_header_order
    widget_rects.h frame_times.h heat_strip.h heat_map.h gl_quad.h embedded_fonts.h png_writer.h
    report_labels.h sweep.h plan_tab.h fixes.h version.h state.h baseline.h scaling_check.h actions.h platform.h link.h
    share.h load_input.h edit_history.h frame.h widgets.h panels.h)
set(panel_headers
    state.h actions.h widgets.h fixes.h version.h report_labels.h sweep.h plan_tab.h heat_strip.h
    heat_map.h widget_rects.h frame_times.h)
set(panels_header_users frame.cpp refresh.cpp setup.cpp)
set(web_headers
    state.h actions.h platform.h frame.h link.h share.h load_input.h version.h sweep.h
    widget_rects.h baseline.h scaling_check.h)

# The quoted and angled includes of `path`, as a list of header names.
function(stagemem_includes_of path out_var)
  file(STRINGS ${path} lines REGEX "^[ \t]*#[ \t]*include")
  set(headers "")
  foreach(line IN LISTS lines)
    if(line MATCHES "[\"<]([^\">]+)[\">]")
      list(APPEND headers "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out_var} "${headers}" PARENT_SCOPE)
endfunction()

function(stagemem_check_app_seams app_dir web_dir)
  file(GLOB app_headers RELATIVE ${app_dir} ${app_dir}/*.h)
  file(GLOB_RECURSE app_files RELATIVE ${app_dir} ${app_dir}/*.h ${app_dir}/*.cpp)
  file(GLOB web_files RELATIVE ${web_dir} ${web_dir}/*.h ${web_dir}/*.cpp)
  set(web_headers_here "")
  foreach(file IN LISTS web_files)
    if(file MATCHES "\\.h$")
      list(APPEND web_headers_here ${file})
    endif()
  endforeach()
  # Lists as words in the messages.
  string(REPLACE ";" ", " panel_list "${panel_headers}")
  string(REPLACE ";" ", " frame_list "${panels_header_users}")
  string(REPLACE ";" ", " web_list "${web_headers}")
  set(problems "")
  foreach(header IN LISTS app_headers)
    if(NOT header IN_LIST app_header_order)
      string(APPEND problems "\n  src/app/${header}: not in app_header_order "
                             "(cmake/AppSeams.cmake): give it its place")
    endif()
  endforeach()

  foreach(file IN LISTS app_files)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${app_dir}/${file})
    stagemem_includes_of(${app_dir}/${file} includes)
    get_filename_component(name ${file} NAME)
    list(FIND app_header_order ${name} rank)
    foreach(included IN LISTS includes)
      if(included MATCHES "^emscripten" OR included IN_LIST web_headers_here)
        string(APPEND problems "\n  src/app/${file}: includes ${included}: src/app must not "
                               "depend on the browser (src/web depends on src/app)")
        continue()
      endif()
      if(NOT included IN_LIST app_headers)
        continue()  # the core, Dear ImGui, GL, the standard library
      endif()
      if(included STREQUAL "panels.h" AND NOT name IN_LIST panels_header_users)
        string(APPEND problems "\n  src/app/${file}: includes panels.h, which only the frame "
                               "(${frame_list}) may include")
      endif()
      if(name MATCHES "^panel_.*\\.cpp$" AND NOT included IN_LIST panel_headers)
        string(APPEND problems "\n  src/app/${file}: a panel may include only ${panel_list} "
                               "of the app, not ${included}: read the state, emit actions")
      endif()
      if(name MATCHES "\\.h$" AND rank GREATER_EQUAL 0)
        list(FIND app_header_order ${included} included_rank)
        if(included_rank GREATER_EQUAL rank)
          string(APPEND problems "\n  src/app/${file}: includes ${included}, which comes after "
                                 "it in app_header_order (an include cycle in the making)")
        endif()
      endif()
    endforeach()
  endforeach()

  foreach(file IN LISTS web_files)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${web_dir}/${file})
    stagemem_includes_of(${web_dir}/${file} includes)
    foreach(included IN LISTS includes)
      if(included IN_LIST app_headers AND NOT included IN_LIST web_headers)
        string(APPEND problems "\n  src/web/${file}: includes ${included}; src/web may include "
                               "only these app headers: ${web_list}")
      endif()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "the app breaks its seams (cmake/AppSeams.cmake):${problems}")
  endif()
endfunction()
