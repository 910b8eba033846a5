# Turns GLSL files into one C++ header of string constants (script mode, run at build time):
#   cmake -DOUT=<header> -DINPUTS=<a.glsl|b.glsl> -P EmbedShaders.cmake
# Each file becomes `inline constexpr const char* k<CamelName> = R"glsl(...)glsl";` in namespace
# shardscope::app::gui::shaders, so the binary runs from any directory.
set(_text "#pragma once\n// Generated from shaders/*.glsl by cmake/EmbedShaders.cmake; do not edit.\n\nnamespace shardscope::app::gui::shaders {\n\n")
string(REPLACE "|" ";" _inputs "${INPUTS}")
foreach(_in ${_inputs})
  get_filename_component(_name ${_in} NAME)
  string(REGEX REPLACE "\\.glsl$" "" _stem ${_name})
  string(REGEX REPLACE "[^A-Za-z0-9]+" ";" _parts ${_stem})
  set(_id "k")
  foreach(_p ${_parts})
    string(SUBSTRING ${_p} 0 1 _first)
    string(SUBSTRING ${_p} 1 -1 _rest)
    string(TOUPPER ${_first} _first)
    string(APPEND _id "${_first}${_rest}")
  endforeach()
  file(READ ${_in} _src)
  string(APPEND _text "/// ${_name}\ninline constexpr const char* ${_id} = R\"glsl(${_src})glsl\";\n\n")
endforeach()
string(APPEND _text "}  // namespace shardscope::app::gui::shaders\n")
file(WRITE ${OUT}.tmp "${_text}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
