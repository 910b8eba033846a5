# One home for how a layer library (trace, engine, program; docs/architecture.md) is declared:
# the static library shardscope_<name>, its alias shardscope::<name>, its public headers in the
# calling folder's include/, its warnings and, with SHARDSCOPE_INSTALL, its install rules into the
# shardscopeTargets export. The caller adds what is its own (sources' dependencies, private
# include folders, backends).
function(shardscope_layer_library name)
  add_library(shardscope_${name} STATIC ${ARGN})
  add_library(shardscope::${name} ALIAS shardscope_${name})
  set_target_properties(shardscope_${name} PROPERTIES EXPORT_NAME ${name} POSITION_INDEPENDENT_CODE ON)
  target_include_directories(shardscope_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_options(shardscope_${name} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${SHARDSCOPE_WARNINGS}>")
  if(SHARDSCOPE_INSTALL)
    include(GNUInstallDirs)
    install(TARGETS shardscope_${name} EXPORT shardscopeTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()
