# SPDX-License-Identifier: GPL-3.0-or-later
# Every third-party package, all from Debian 12 (installer/deps.sh installs them).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(yaml-cpp REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(SQLiteCpp REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
# libzip (Debian libzip-dev): the zip container of torch.save's pytorch_model.bin (engine/modelio).
# Through pkg-config: Debian's libzip CMake package also demands the zipcmp/zipmerge/ziptool
# programs, which libzip-dev does not install.
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBZIP REQUIRED IMPORTED_TARGET GLOBAL libzip)
# PCRE2 (Debian libpcre2-dev, 8-bit library): the Split regexes of Hugging Face tokenizer.json
# files (\p{L}, \p{N}, look-ahead), which std::regex cannot express (engine/tokenizer).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET GLOBAL libpcre2-8)
# ICU (Debian libicu-dev): Unicode normalization (NFC, NFKC, ...) that tokenizer.json
# normalizers ask for (engine/tokenizer).
pkg_check_modules(ICU_UC REQUIRED IMPORTED_TARGET GLOBAL icu-uc)
# HDF5 (Debian libhdf5-dev, serial C library): ModelZoo's preprocessed data sets, the .h5 files of
# GptHDF5DataProcessor / GptHDF5MapDataProcessor (engine/data/hdf5_files.h). FindHDF5 test-compiles
# its C component with the C compiler, so C is enabled for that probe; no project source is C.
enable_language(C)
find_package(HDF5 REQUIRED COMPONENTS C)
# Google Highway: the element kernels' SIMD, one binary dispatching to SSE4/AVX2/AVX-512 at run time.
find_package(hwy REQUIRED)
# OpenBLAS (pthread build): the fp32 matmul backend where it beats Eigen's own kernels.
find_library(OPENBLAS_LIBRARY NAMES openblas REQUIRED)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread
  /usr/include/openblas NO_DEFAULT_PATH)
if(NOT OPENBLAS_INCLUDE_DIR)
  find_path(OPENBLAS_INCLUDE_DIR cblas.h REQUIRED)
endif()
add_library(wafer_openblas INTERFACE)
target_link_libraries(wafer_openblas INTERFACE ${OPENBLAS_LIBRARY})
target_include_directories(wafer_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})
# oneDNN (Debian libdnnl-dev, OpenMP runtime): the bf16 matmul backend. Found as a plain library:
# its CMake package drags in OpenCL for the GPU engine, which we do not use.
find_library(DNNL_LIBRARY NAMES dnnl REQUIRED)
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp REQUIRED)
add_library(wafer_dnnl INTERFACE)
target_link_libraries(wafer_dnnl INTERFACE ${DNNL_LIBRARY})
target_include_directories(wafer_dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})
if(WAFER_BUILD_GUI)
  find_package(Qt6 REQUIRED COMPONENTS Widgets Test PrintSupport Svg)
  find_package(QCustomPlotQt6 REQUIRED)
endif()
if(WAFER_BUILD_TESTS)
  find_package(GTest REQUIRED)
  find_package(benchmark QUIET)
endif()
# Open MPI (Debian openmpi-bin, libopenmpi-dev): training across processes and machines
# (engine/comm). Optional: without it `wafer` runs in one process and the mpi tests are skipped.
set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "Open MPI: the C API only")
find_package(MPI COMPONENTS CXX QUIET)
if(MPI_CXX_FOUND)
  message(STATUS "Open MPI found: mpirun -np P wafer train works, the mpi tests run")
else()
  message(STATUS "MPI not found: wafer runs in one process only and the mpi tests are skipped "
                 "(installer/deps.sh installs openmpi-bin and libopenmpi-dev)")
endif()
