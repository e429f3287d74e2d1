// SPDX-License-Identifier: GPL-3.0-or-later
// ASHA decisions on synthetic losses: who continues and who is stopped at each rung, and why.
#include "engine/sweep/asha.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ws::sweep {
namespace {

TEST(Asha, NobodyIsJudgedBeforeReductionFactorTrialsReachTheRung) {
    AshaScheduler asha({10, 30}, 3);
    EXPECT_TRUE(asha.isRung(10));
    EXPECT_FALSE(asha.isRung(11));
    EXPECT_FALSE(asha.atRung("", 0, 10, 5.0).stop);
    EXPECT_FALSE(asha.atRung("", 1, 10, 9.0).stop) << "second arrival, worse, still too early";
}

TEST(Asha, StopsTrialsOutsideTheBestThirdInArrivalOrder) {
    AshaScheduler asha({10}, 3);
    // Losses arrive 3.0, 2.0, 4.0, 1.0, 5.0, 2.5 at rung 10.
    EXPECT_FALSE(asha.atRung("", 0, 10, 3.0).stop);
    EXPECT_FALSE(asha.atRung("", 1, 10, 2.0).stop);
    const RungDecision third = asha.atRung("", 2, 10, 4.0);  // n=3, keep 1: 4.0 is worst
    EXPECT_TRUE(third.stop);
    EXPECT_NE(third.reason.find("rung 10"), std::string::npos) << third.reason;
    EXPECT_NE(third.reason.find("ranks 3 of 3"), std::string::npos) << third.reason;
    EXPECT_FALSE(asha.atRung("", 3, 10, 1.0).stop) << "the best so far continues";
    EXPECT_TRUE(asha.atRung("", 4, 10, 5.0).stop);
    // n=6, keep 2: 2.5 ranks behind 1.0 and 2.0.
    const RungDecision sixth = asha.atRung("", 5, 10, 2.5);
    EXPECT_TRUE(sixth.stop);
    EXPECT_NE(sixth.reason.find("only the best 2 continue"), std::string::npos) << sixth.reason;
}

TEST(Asha, GroupsCompeteOnlyAmongThemselves) {
    AshaScheduler asha({5}, 2);
    EXPECT_FALSE(asha.atRung("width=32", 0, 5, 3.0).stop);
    EXPECT_FALSE(asha.atRung("width=256", 1, 5, 9.0).stop) << "alone in its group";
    EXPECT_TRUE(asha.atRung("width=32", 2, 5, 4.0).stop);
    EXPECT_FALSE(asha.atRung("width=256", 3, 5, 8.0).stop);
}

TEST(Asha, NaNRanksLastAndRestoredResultsCount) {
    AshaScheduler asha({5}, 2);
    asha.restore("", 0, 5, 2.0);  // from before a resume
    EXPECT_TRUE(asha.atRung("", 1, 5, std::numeric_limits<double>::quiet_NaN()).stop);
    EXPECT_FALSE(asha.atRung("", 2, 5, 1.0).stop);
}

}  // namespace
}  // namespace ws::sweep
