// libFuzzer target for a .zip of data files (engine/data: readRecordBytes on a .zip name:
// zip_records through libzip, then each record file inside through its own reader). The whole
// input is the archive. Any bytes must be refused with a message or read into records that keep
// the readers' promises (record_fuzz_support.h); never a crash, hang, a read past a lying
// directory entry or undefined behaviour.
#include <cstddef>
#include <cstdint>

#include "record_fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto read = ws::data::readRecordBytes(ws::fuzz::asText(data, size), "data.zip");
    ws::fuzz::checkRecordRead("zip_records_fuzz", read);
    return 0;
}
