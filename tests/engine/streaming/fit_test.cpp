// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/fit.h"

#include <gtest/gtest.h>

#include "engine/streaming/executor.h"
#include "streaming_test_util.h"

namespace ws::streaming {
namespace {

FitInput input(const std::string& setting, int64_t sramInSequences) {
    FitInput in;
    in.shape = testing::streamingShape();
    in.seqLen = 8;
    in.perSystemBatch = 12;
    in.microBatchSetting = setting;
    in.weightBufferBytes = 1000;
    in.sramBytes = in.weightBufferBytes + sramInSequences * activationBytesPerSequence(in.shape, 8);
    return in;
}

TEST(Fit, AutoPicksTheLargestDivisorThatFits) {
    EXPECT_EQ(chooseMicroBatch(input("auto", 12))->microBatch, 12);
    EXPECT_EQ(chooseMicroBatch(input("auto", 11))->microBatch, 6);  // 12 does not fit; 6 divides
    EXPECT_EQ(chooseMicroBatch(input("auto", 5))->microBatch, 4);
    EXPECT_EQ(chooseMicroBatch(input("auto", 1))->microBatch, 1);
    const auto r = chooseMicroBatch(input("auto", 5));
    EXPECT_EQ(r->activationBytes, 4 * r->bytesPerSequence);
}

TEST(Fit, NoneAndNumbersAreTakenAsGivenWhenTheyFit) {
    EXPECT_EQ(chooseMicroBatch(input("none", 12))->microBatch, 12);
    EXPECT_EQ(chooseMicroBatch(input("3", 12))->microBatch, 3);
    auto tooBig = chooseMicroBatch(input("none", 5));
    ASSERT_FALSE(tooBig.ok());
    EXPECT_NE(tooBig.error().message.find("at most 5 sequences fit"), std::string::npos)
        << tooBig.error().message;
}

TEST(Fit, NotEvenOneSequenceNamesTheLayerAndALengthThatFits) {
    auto in = input("auto", 0);
    in.sramBytes += activationBytesPerSequence(in.shape, 5);  // room for 5 tokens, not 8
    auto r = chooseMicroBatch(in);
    ASSERT_FALSE(r.ok());
    const auto& m = r.error().message;
    EXPECT_NE(m.find("micro_batch_size 1 does not fit"), std::string::npos) << m;
    EXPECT_NE(m.find("max_sequence_length 5 or less"), std::string::npos) << m;
    EXPECT_NE(m.find("the largest layer is"), std::string::npos) << m;
    // Binary units, as every front end writes them (engine/core/units.h): this small model's
    // sequence needs a few KiB.
    EXPECT_NE(m.find(" KiB"), std::string::npos) << m;
    EXPECT_EQ(m.find(" kB"), std::string::npos) << m;
    EXPECT_EQ(m.find(" MB"), std::string::npos) << m;
}

// Issue 31: lesson 2's "bound" (4 slots of a block that fills a quarter of the wafer) said "use
// max_sequence_length 0 or less". The buffer alone is the problem: say so, and how many slots
// leave room.
TEST(Fit, ABufferThatFillsTheWaferSaysSoAndHowManySlotsFit) {
    auto in = input("auto", 0);
    const int64_t perSlot = 3 << 20;
    in.weightBufferLayers = 4;
    in.weightBufferBytes = 4 * perSlot;
    in.sramBytes = 4 * perSlot - (1 << 20);  // a MiB short of the buffer alone
    auto r = chooseMicroBatch(in);
    ASSERT_FALSE(r.ok());
    const auto& m = r.error().message;
    EXPECT_NE(m.find("the weight buffer alone needs 12.0 MiB (wafer.weight_buffer_layers 4 x "
                     "3.00 MiB"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("of the wafer's 11.0 MiB SRAM"), std::string::npos) << m;
    EXPECT_NE(m.find("use wafer.weight_buffer_layers 3 or fewer"), std::string::npos) << m;
    EXPECT_EQ(m.find("max_sequence_length"), std::string::npos) << m;
    EXPECT_EQ(m.find(" MB"), std::string::npos) << m;
    // Without room for any token beside the buffer, no sequence length is suggested either.
    auto none = input("auto", 0);
    none.sramBytes = none.weightBufferBytes + 1;
    auto n = chooseMicroBatch(none);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.error().message.find("max_sequence_length 0"), std::string::npos)
        << n.error().message;
}

}  // namespace
}  // namespace ws::streaming
