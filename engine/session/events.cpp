// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/session/events.h"

namespace ws::session {

const char* runStateName(RunState state) {
    switch (state) {
        case RunState::Preparing:
            return "preparing";
        case RunState::Running:
            return "running";
        case RunState::Paused:
            return "paused";
        case RunState::Finished:
            return "finished";
        case RunState::Stopped:
            return "stopped";
        case RunState::Diverged:
            return "diverged";
        case RunState::Failed:
            return "failed";
    }
    return "unknown";
}

}  // namespace ws::session
