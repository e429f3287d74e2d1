// The cycle model against the Cerebras-GPT paper's published claims on CS-2 (wse2 spec, its one
// fixed compute_efficiency, nothing tuned per case): weak scaling within 9% to 16 systems,
// utilization within 8% across sizes relative to 111M, weight streaming hidden.
#include <gtest/gtest.h>

#include "engine/wafer/validation.h"

namespace ws::wafer {
namespace {

TEST(Validation, ReproducesTheCerebrasGptClaims) {
    auto spec = loadWaferSpecFile(WAFER_PRESETS_DIR "/wafers/wse2.yaml");
    ASSERT_TRUE(spec.ok()) << spec.error().message;
    auto rep = validateCerebrasGpt(*spec);
    ASSERT_TRUE(rep.ok()) << rep.error().message;
    ASSERT_EQ(rep->rows.size(), 7u);
    EXPECT_TRUE(rep->scalingOk) << "worst weak-scaling efficiency " << rep->worstScaling;
    EXPECT_TRUE(rep->mfuOk) << "worst MFU deviation " << rep->worstMfuDeviation;
    EXPECT_TRUE(rep->streamingOk);
    for (const auto& r : rep->rows) {
        EXPECT_GT(r.mfu1, 0.2) << r.model;
        EXPECT_LT(r.mfu1, 0.6) << r.model;
        EXPECT_LE(r.efficiency.back(), 1.0 + 1e-12) << r.model;  // more systems never help more
    }
}

}  // namespace
}  // namespace ws::wafer
