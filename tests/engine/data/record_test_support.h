// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the record reader tests: read bytes under a file name, expecting success or an
// error, with the message shown when the expectation fails.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "engine/data/chat_records.h"

namespace ws::data::testing {

inline RecordSet readOk(std::string_view bytes, std::string_view name,
                        const RecordOptions& options = {}) {
    auto read = readRecordBytes(bytes, name, options);
    EXPECT_TRUE(read.ok()) << (read.ok() ? "" : read.error().message);
    return read.ok() ? std::move(*read) : RecordSet{};
}

inline std::string readError(std::string_view bytes, std::string_view name,
                             const RecordOptions& options = {}) {
    auto read = readRecordBytes(bytes, name, options);
    EXPECT_FALSE(read.ok()) << "read " << name << " without an error";
    return read.ok() ? std::string() : read.error().message;
}

inline bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

}  // namespace ws::data::testing
