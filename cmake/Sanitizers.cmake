# SPDX-License-Identifier: GPL-3.0-or-later
# Sanitizers as an interface target (wafer::sanitizers, linked by every engine module, test and
# app target). WAFER_SANITIZE names them: "address,undefined" (ASan + UBSan) or "thread" (TSan);
# empty/OFF builds without; ON is the old spelling of "address,undefined".
# `./test.sh --sanitize address,undefined` / `./test.sh --sanitize thread` configure their own
# build folder with it (build-asan, build-tsan) and set the runtime options (tests/sanitizers/).
set(WAFER_SANITIZE "" CACHE STRING
    "Sanitizers to build with: address,undefined | thread | empty (none)")
add_library(wafer_sanitizers INTERFACE)
add_library(wafer::sanitizers ALIAS wafer_sanitizers)

if(WAFER_SANITIZE)
  set(wafer_sanitize_list "${WAFER_SANITIZE}")
  if(WAFER_SANITIZE STREQUAL "ON" OR WAFER_SANITIZE STREQUAL "TRUE" OR WAFER_SANITIZE STREQUAL "1")
    set(wafer_sanitize_list "address,undefined")
  endif()
  string(REPLACE "," ";" wafer_sanitize_items "${wafer_sanitize_list}")
  foreach(item ${wafer_sanitize_items})
    if(NOT item MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "WAFER_SANITIZE=${WAFER_SANITIZE}: unknown sanitizer '${item}'; use "
                          "address,undefined or thread")
    endif()
  endforeach()
  if("thread" IN_LIST wafer_sanitize_items AND "address" IN_LIST wafer_sanitize_items)
    message(FATAL_ERROR "WAFER_SANITIZE=${WAFER_SANITIZE}: thread and address cannot be combined; "
                        "build them in two folders (./test.sh --sanitize thread, "
                        "./test.sh --sanitize address,undefined)")
  endif()
  message(STATUS "Sanitizers: ${wafer_sanitize_list}")
  # -O1 -g after the build type's -O3: readable stacks at a bearable speed (the sanitized tests run
  # 2-15x slower than Release).
  target_compile_options(wafer_sanitizers INTERFACE -fsanitize=${wafer_sanitize_list}
                         -fno-omit-frame-pointer -O1 -g)
  target_link_options(wafer_sanitizers INTERFACE -fsanitize=${wafer_sanitize_list})
  if("undefined" IN_LIST wafer_sanitize_items)
    # A UBSan finding aborts the test instead of printing and carrying on.
    target_compile_options(wafer_sanitizers INTERFACE -fno-sanitize-recover=undefined)
  endif()
  if("thread" IN_LIST wafer_sanitize_items AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC warns that TSan does not model std::atomic_thread_fence; the compute pool's seqlock
    # (engine/tensor/threads.cpp) uses one beside acquire/release atomics that TSan does model.
    target_compile_options(wafer_sanitizers INTERFACE -Wno-tsan)
  endif()
endif()
