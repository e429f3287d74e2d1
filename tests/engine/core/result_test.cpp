// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/core/result.h"

#include <gtest/gtest.h>

#include <memory>

namespace ws {
namespace {

Result<int> parsePositive(int x) {
    if (x <= 0) return Error{"expected a positive number, got " + std::to_string(x)};
    return x;
}

TEST(Result, CarriesValueOrError) {
    auto good = parsePositive(3);
    ASSERT_TRUE(good.ok());
    EXPECT_EQ(*good, 3);
    auto bad = parsePositive(-1);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "expected a positive number, got -1");
}

TEST(Result, MovesOutMoveOnlyValues) {
    Result<std::unique_ptr<int>> r(std::make_unique<int>(7));
    std::unique_ptr<int> p = std::move(r).value();
    EXPECT_EQ(*p, 7);
}

TEST(Status, DefaultIsSuccess) {
    Status s;
    EXPECT_TRUE(s.ok());
    Status f = Error{"disk full"};
    EXPECT_FALSE(f.ok());
    EXPECT_EQ(f.error().message, "disk full");
}

}  // namespace
}  // namespace ws
