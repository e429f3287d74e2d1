// SPDX-License-Identifier: GPL-3.0-or-later
// ProgressFn: how slow engine work (tokenizer training, token cache builds, checkpoint loads)
// reports coarse progress to whoever started it, without the engine knowing about any GUI.
// The callback runs on the thread doing the work; it must be cheap and must not call back into
// the operation it observes. An empty ProgressFn means "nobody is listening".
#pragma once

#include <functional>
#include <string_view>

namespace ws {

// fraction in [0, 1] of the current piece of work; what names it ("training BPE", ...).
using ProgressFn = std::function<void(double fraction, std::string_view what)>;

}  // namespace ws
