# SPDX-License-Identifier: GPL-3.0-or-later
# wafer/version.h: the project version (set once, by project() in the top CMakeLists.txt; the
# package's version is the same variable) and the git revision the programs were built from.
# The revision is read again at every build, not only at configure time, by
# cmake/WriteVersion.cmake, which rewrites the header only when its text changes: a commit, or
# changes not yet committed ("-modified"), makes `wafer --version` say so at the next build, and
# a build of the same revision recompiles nothing. Targets that include the header depend on
# the wafer_version target (wafer_add_version_dependency).
set(WAFER_VERSION_HEADER ${PROJECT_BINARY_DIR}/generated/wafer/version.h)
set(wafer_write_version
    ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DVERSION=${PROJECT_VERSION}
    -DTEMPLATE=${PROJECT_SOURCE_DIR}/cmake/version.h.in -DOUTPUT=${WAFER_VERSION_HEADER}
    -P ${PROJECT_SOURCE_DIR}/cmake/WriteVersion.cmake)
# Now, so the header exists for the first build's dependency scan; then at every build.
execute_process(COMMAND ${wafer_write_version})
add_custom_target(wafer_version ALL COMMAND ${wafer_write_version}
                  BYPRODUCTS ${WAFER_VERSION_HEADER} VERBATIM)
