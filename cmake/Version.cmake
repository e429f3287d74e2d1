# SPDX-License-Identifier: GPL-3.0-or-later
# Generates wafer/version.h from the project version and the git revision.
execute_process(COMMAND git rev-parse --short HEAD
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE WAFER_GIT_REVISION
  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT WAFER_GIT_REVISION)
  set(WAFER_GIT_REVISION "unknown")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/version.h.in ${PROJECT_BINARY_DIR}/generated/wafer/version.h @ONLY)
