# Precompiled headers for the cold build (CI builds from scratch on two cores). nlohmann/json.hpp
# costs about 5.6 s of CPU per translation unit at -O3 and roughly half of our sources include it
# (the trace library's public headers do), Catch2's single header about 2 s per test file; each
# target compiles them once instead. SHARDSCOPE_PCH=OFF builds without them (every source still
# includes what it uses, which a build with OFF checks).
option(SHARDSCOPE_PCH "Precompile the heavy common headers once per target" ON)

# shardscope_precompile(TARGET [CATCH]): TARGET's C++ sources get the common headers precompiled;
# CATCH adds Catch2's header (only for targets whose sources all include it the same way: a source
# that defines CATCH_CONFIG_RUNNER before including it must not get it precompiled).
function(shardscope_precompile target)
  if(NOT SHARDSCOPE_PCH)
    return()
  endif()
  set(headers nlohmann/json.hpp string vector string_view optional memory algorithm functional)
  if("CATCH" IN_LIST ARGN)
    list(APPEND headers catch2/catch.hpp)
  endif()
  set(entries "")
  foreach(h IN LISTS headers)
    list(APPEND entries "$<$<COMPILE_LANGUAGE:CXX>:<${h}$<ANGLE-R>>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${entries})
  # GCC 12 loses the system-header mark of libstdc++ code that comes from a precompiled header,
  # so the false positives of bug 105329 (`"literal" + std::string` at -O2) surface as
  # -Warray-bounds / -Wstringop-overflow inside char_traits.h; fixed in GCC 13. Only the targets
  # with a precompiled header, only on GCC 12.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds;-Wno-stringop-overflow>")
  endif()
endfunction()
