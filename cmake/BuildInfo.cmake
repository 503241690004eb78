# Writes harness's build_info.hpp with the git revision of the tree as it is built, not as it was
# configured: a run's records name the revision that made its numbers. Runs at every build; the file
# is rewritten only when its text changes, so an unchanged revision rebuilds nothing.
#   cmake -DSOURCE_DIR=… -DIN=build_info.hpp.in -DOUT=… -DPROJECT_VERSION=… -DIBVERBS_VERSION=… -P BuildInfo.cmake
execute_process(COMMAND git describe --always --dirty --abbrev=12
                WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE ROCEBENCH_GIT_REVISION OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT ROCEBENCH_GIT_REVISION)
  set(ROCEBENCH_GIT_REVISION "unknown")
endif()
configure_file(${IN} ${OUT} @ONLY)
