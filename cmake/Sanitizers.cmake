# Address/undefined-behaviour sanitizers as an interface target (-DWAFER_SANITIZE=ON).
option(WAFER_SANITIZE "Build with AddressSanitizer and UBSan" OFF)
add_library(wafer_sanitizers INTERFACE)
add_library(wafer::sanitizers ALIAS wafer_sanitizers)
if(WAFER_SANITIZE)
  target_compile_options(wafer_sanitizers INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer)
  target_link_options(wafer_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
