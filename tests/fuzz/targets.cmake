# SPDX-License-Identifier: GPL-3.0-or-later
# The fuzz targets, shared by the libFuzzer build (tests/fuzz/CMakeLists.txt, clang) and the
# corpus replay tests of the ordinary build (tests/fuzz/replay/CMakeLists.txt, any compiler).
# One entry per input the program reads: "<target>|<source>|<libraries it links, comma-separated>"; the seed
# corpus is corpus/<target>/, crash inputs found and fixed go to regressions/<target>/.
set(WAFER_FUZZ_TARGETS
    "safetensors|safetensors_fuzz.cpp|wafer::fileio"
    "torch_checkpoint|torch_checkpoint_fuzz.cpp|wafer::modelio"
    "peft_adapter|peft_adapter_fuzz.cpp|wafer::interop"
    "config|config_fuzz.cpp|wafer::config"
    "tokenizer|tokenizer_fuzz.cpp|wafer::tokenizer"
    "token_cache|token_cache_fuzz.cpp|wafer::data"
    "trainer_state|trainer_state_fuzz.cpp|wafer::modelio"
    "checkpoint_folder|checkpoint_folder_fuzz.cpp|wafer::modelio,nlohmann_json::nlohmann_json"
    "hf_config|hf_config_fuzz.cpp|wafer::modelio"
    "run_store|run_store_fuzz.cpp|wafer::store"
    "lesson|lesson_fuzz.cpp|wafer::lesson"
    "chat_json_records|chat_json_records_fuzz.cpp|wafer::data"
    "csv_records|csv_records_fuzz.cpp|wafer::data"
    "zip_records|zip_records_fuzz.cpp|wafer::data,PkgConfig::LIBZIP"
    "chat_template|chat_template_fuzz.cpp|wafer::chat"
    "hdf5_dataset|hdf5_dataset_fuzz.cpp|wafer::data,HDF5::HDF5")
set(WAFER_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})

# wafer_fuzz_entry(ENTRY NAME SOURCE MODULES): unpacks one entry of WAFER_FUZZ_TARGETS.
macro(wafer_fuzz_entry entry out_name out_source out_modules)
  string(REGEX REPLACE "[|,]" ";" _parts "${entry}")
  list(GET _parts 0 ${out_name})
  list(GET _parts 1 ${out_source})
  list(SUBLIST _parts 2 -1 ${out_modules})
endmacro()
