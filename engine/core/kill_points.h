// SPDX-License-Identifier: GPL-3.0-or-later
// Kill points: a test-only hook for the kill campaign (scripts/kill_campaign.py). Compiled into
// the real binaries and inert unless the environment variable WAFER_TEST_KILL_AT is set when the
// process first reaches a kill point; then
//     WAFER_TEST_KILL_AT=<point>:<N>
// makes the process raise SIGKILL on itself the N-th time (1-based) any thread reaches <point>,
// so a kill lands exactly inside a moment a random timer rarely hits. The points:
//   step-end          a training step has updated MemoryX; nothing about it is logged or saved yet
//   memoryx-update    inside one layer's optimizer update, after its new values are in MemoryX and
//                     before the update is closed (a file-backed store's undo journal still valid)
//   atomic-commit     an atomic file (a checkpoint's files, the final weights) is complete in its
//                     temp file, fsynced, not yet renamed into place
//   checkpoint-rename a checkpoint's hidden .partial folder is complete, not yet renamed
//   checkpoint-record a checkpoint folder is in place, its checksums not yet in the run store
//   checkpoint-prune  an old checkpoint folder (runconfig.max_checkpoints) is moved out of sight
//                     for deletion, its rows not yet dropped from the run store
//   store-commit      the run store's writer has inserted a batch of rows, not yet committed
// Anything else in the variable (an unknown point, a malformed count) is ignored: this is a test
// hook, never a user setting.
// Thread-safety: killPoint may be called from any thread; the variable is read once.
#pragma once

#include <string_view>

namespace ws {

// Raises SIGKILL when WAFER_TEST_KILL_AT names `point` and this is its N-th visit; otherwise
// returns at once (one atomic load when the variable is unset).
void killPoint(std::string_view point);

}  // namespace ws
