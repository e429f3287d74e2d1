// SPDX-License-Identifier: GPL-3.0-or-later
// Kill points (engine/core/kill_points.h): inert without WAFER_TEST_KILL_AT or with a malformed
// one, and SIGKILL at exactly the N-th visit of the named point. Each case runs in a forked child:
// the variable is read once per process.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/core/kill_points.h"

namespace ws {
namespace {

// Visits "other-point" and "test-point" `visits` times in a child with WAFER_TEST_KILL_AT = `plan`
// (null: unset); returns its wait status. The child exits with the number of visits of "test-point"
// it survived.
int visitsSurvived(const char* plan, int visits) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (plan) {
            ::setenv("WAFER_TEST_KILL_AT", plan, 1);
        } else {
            ::unsetenv("WAFER_TEST_KILL_AT");
        }
        int survived = 0;
        for (int i = 0; i < visits; ++i) {
            killPoint("other-point");
            killPoint("test-point");
            ++survived;
        }
        ::_exit(survived);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
}

TEST(KillPoints, KillAtTheNthVisitOfTheNamedPointOnly) {
    const int two = visitsSurvived("test-point:3", 2);
    ASSERT_TRUE(WIFEXITED(two)) << "killed before the third visit";
    EXPECT_EQ(WEXITSTATUS(two), 2);
    const int three = visitsSurvived("test-point:3", 3);
    ASSERT_TRUE(WIFSIGNALED(three)) << "survived the third visit: exit " << WEXITSTATUS(three);
    EXPECT_EQ(WTERMSIG(three), SIGKILL);
}

TEST(KillPoints, InertWithoutTheVariableOrWithAMalformedOne) {
    for (const char* plan : {static_cast<const char*>(nullptr), "test-point", "test-point:0",
                             "test-point:x", ":3", "test-point:3x", "test-point:9"}) {
        const int status = visitsSurvived(plan, 5);
        ASSERT_TRUE(WIFEXITED(status)) << (plan ? plan : "(unset)") << " killed the process";
        EXPECT_EQ(WEXITSTATUS(status), 5) << (plan ? plan : "(unset)");
    }
}

}  // namespace
}  // namespace ws
