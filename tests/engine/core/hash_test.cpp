// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/hash.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace ws {
namespace {

TEST(Sha256, MatchesKnownVectors) {
    // FIPS 180-2 test vectors.
    EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, IncrementalEqualsOneShot) {
    Sha256 h;
    h.update("a");
    h.update("bc");
    EXPECT_EQ(h.hexDigest(), sha256Hex("abc"));
}

TEST(Sha256, FileDigestAndMissingFileError) {
    const auto path = std::filesystem::temp_directory_path() / "wafer_hash_test.txt";
    std::ofstream(path) << "abc";
    auto digest = sha256File(path);
    ASSERT_TRUE(digest.ok());
    EXPECT_EQ(*digest, sha256Hex("abc"));
    std::filesystem::remove(path);
    auto missing = sha256File(path);
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message.find("wafer_hash_test.txt"), std::string::npos);
}

}  // namespace
}  // namespace ws
