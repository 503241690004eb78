# Precompiled headers: every translation unit parsed nlohmann/json, fmt and the standard library again
# (and GoogleTest in the tests): most of a file's compile time. Each target with several C++ sources now
# parses them once. ROCEBENCH_PCH=OFF builds without (a file that forgot an include shows up there).
option(ROCEBENCH_PCH "Precompile the third-party headers every source uses, once per target" ON)

set(ROCEBENCH_PCH_HEADERS
  <algorithm> <chrono> <cmath> <cstdint> <filesystem> <fstream> <functional> <map> <memory> <optional>
  <set> <sstream> <string> <string_view> <vector> <fmt/format.h> <nlohmann/json.hpp>)

# GCC 12 warns of out-of-bounds copies inside std::string that cannot happen (its -Warray-bounds,
# -Wstringop-overflow and -Wrestrict false positives on inlined string code), and inlining from the
# precompiled header brings them up in files that were clean; -Werror then fails the build. Off for
# those targets only; ASan in the sanitize and fuzz builds checks the real bounds.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  set(ROCEBENCH_PCH_OPTIONS -Wno-array-bounds -Wno-stringop-overflow -Wno-restrict)
  list(TRANSFORM ROCEBENCH_PCH_OPTIONS REPLACE "(.+)" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")
endif()

# A target's C++ sources that are compiled (not headers, not CUDA).
function(rocebench_cxx_source_count target out)
  get_target_property(sources ${target} SOURCES)
  list(FILTER sources INCLUDE REGEX "\\.(cpp|cc)$")
  list(LENGTH sources n)
  set(${out} ${n} PARENT_SCOPE)
endfunction()

# Run once the whole tree is configured: every library and executable of every directory.
function(rocebench_precompile_directory dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    rocebench_cxx_source_count(${target} n)
    if(n LESS 3)  # the header's own build would cost more than it saves
      continue()
    endif()
    set(headers ${ROCEBENCH_PCH_HEADERS})
    get_target_property(links ${target} LINK_LIBRARIES)
    if(links MATCHES "GTest::")
      list(APPEND headers <gtest/gtest.h>)
    endif()
    list(TRANSFORM headers REPLACE "(.+)" "$<$<COMPILE_LANGUAGE:CXX>:\\1>")
    target_precompile_headers(${target} PRIVATE ${headers})
    # A source compiled with options of its own (another -O) cannot use the target's header: clang
    # refuses it (__OPTIMIZE__ differs), gcc ignores it.
    get_target_property(sources ${target} SOURCES)
    get_target_property(source_dir ${target} SOURCE_DIR)
    foreach(source IN LISTS sources)
      cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY ${source_dir})  # a relative one is read from here, not there
      get_source_file_property(own ${source} DIRECTORY ${source_dir} COMPILE_OPTIONS)
      if(own)
        set_source_files_properties(${source} DIRECTORY ${source_dir} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      endif()
    endforeach()
    target_compile_options(${target} PRIVATE ${ROCEBENCH_PCH_OPTIONS})
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    rocebench_precompile_directory(${sub})
  endforeach()
endfunction()

if(ROCEBENCH_PCH)
  cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL rocebench_precompile_directory ${PROJECT_SOURCE_DIR})
endif()
