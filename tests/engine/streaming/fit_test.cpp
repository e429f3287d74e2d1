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
}

}  // namespace
}  // namespace ws::streaming
