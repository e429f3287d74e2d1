# SPDX-License-Identifier: GPL-3.0-or-later
# Debian's hardening flags for every target (the programs as packaged, and the tests that run
# them): `dpkg-buildflags` with hardening=+all gives _FORTIFY_SOURCE, the strong stack protector,
# format-string checks and RELRO with immediate binding (-z relro -z now); PIE is the compiler's
# default on Debian. On x86-64 it adds stack-clash protection, which Debian's later dpkg turns on
# by default there. Not control-flow protection (-fcf-protection, CET): a process runs with it
# only when every object in it has it, and on Debian 12 libc, libstdc++, Qt and the static
# SQLiteCpp library do not, so it would only add dead instructions (dpkg-buildflags adds it on
# the Debian releases that build everything with it). The build type keeps its own optimisation
# and debug-info flags (-O2 -g are dropped from dpkg's), and __FILE__ stays as it is (no
# -ffile-prefix-map). Off in sanitizer and fuzzing builds, whose programs are not for shipping
# and whose runtimes intercept the same functions _FORTIFY_SOURCE wraps. `hardening-check` on
# both packaged programs is the package.hardening test (tests/installer/package_test.sh).
option(WAFER_HARDENING "Build with Debian's hardening flags (dpkg-buildflags)" ON)
if(NOT WAFER_HARDENING OR WAFER_SANITIZE OR WAFER_BUILD_FUZZERS)
  message(STATUS "Hardening flags: off")
  return()
endif()
find_program(DPKG_BUILDFLAGS dpkg-buildflags)
if(NOT DPKG_BUILDFLAGS)
  message(STATUS "Hardening flags: off (no dpkg-buildflags; installer/deps.sh installs dpkg-dev)")
  return()
endif()

# One of dpkg-buildflags' variables (CPPFLAGS, CXXFLAGS, LDFLAGS) as a list, in `out`.
function(wafer_dpkg_buildflags kind out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env DEB_BUILD_MAINT_OPTIONS=hardening=+all
                          ${DPKG_BUILDFLAGS} --get ${kind}
                  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

wafer_dpkg_buildflags(CPPFLAGS cppflags)
wafer_dpkg_buildflags(CXXFLAGS cxxflags)
wafer_dpkg_buildflags(LDFLAGS wafer_hardening_link)
set(wafer_hardening_compile ${cppflags} ${cxxflags})
list(FILTER wafer_hardening_compile EXCLUDE REGEX
     "^-(O[0-9s]?|g[0-9]?|f(file|debug|macro)-prefix-map=.*)$")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  list(APPEND wafer_hardening_compile -fstack-clash-protection)
endif()
list(REMOVE_DUPLICATES wafer_hardening_compile)
add_compile_options(${wafer_hardening_compile})
add_link_options(${wafer_hardening_link})
list(JOIN wafer_hardening_compile " " shown_compile)
list(JOIN wafer_hardening_link " " shown_link)
message(STATUS "Hardening flags: ${shown_compile}; linking: ${shown_link}")
