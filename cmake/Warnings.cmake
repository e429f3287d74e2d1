# SPDX-License-Identifier: GPL-3.0-or-later
# Compiler warnings as an interface target; WAFER_WARNINGS_AS_ERRORS (on in CI and ./test.sh)
# turns them into errors.
option(WAFER_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)
add_library(wafer_warnings INTERFACE)
add_library(wafer::warnings ALIAS wafer_warnings)
target_compile_options(wafer_warnings INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow=local -Wnon-virtual-dtor -Wcast-align -Wunused
  -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough)
if(WAFER_WARNINGS_AS_ERRORS)
  target_compile_options(wafer_warnings INTERFACE -Werror)
endif()
