// SPDX-License-Identifier: GPL-3.0-or-later
// Phase 3 of the Jinja interpreter: the renderer. Walks the syntax tree with a context of
// variables and writes the output, with Jinja2's semantics as transformers configures it:
// undefined variables are Jinja's default Undefined (falsy, print nothing, iterate as empty;
// reading an attribute or item of one is an error, as in Jinja2); `for` opens a scope whose
// `set`s do not leak (namespace() is the way out); macros see their arguments and the
// template's top-level variables. Globals: raise_exception(msg) (fails the render with the
// message), namespace(...), range(...), dict(...), and strftime_now(fmt) only when
// RenderOptions::now is set (so a render is reproducible unless the caller asks for the clock).
// Every error names the line and column of the construct that failed. Work is bounded
// (RenderOptions), so no input can hang the renderer or exhaust memory or the stack.
// Thread-safety: a render touches only its own state; one tree can be rendered concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_value.h"
#include "engine/core/result.h"

namespace ws::chat::jinja {

struct RenderOptions {
    size_t maxOutputBytes = size_t{64} << 20;  // also bounds every string built
    int64_t maxSteps = 2'000'000;              // statements run + loop iterations + items built
    int maxCallDepth = 20;                     // macro calls inside macro calls
    // Seconds since the epoch (UTC) that strftime_now formats; unset: strftime_now is undefined.
    std::optional<int64_t> now;
};

Result<std::string> render(const ast::Body& body, const ValueDict& context,
                           const RenderOptions& options = {});

}  // namespace ws::chat::jinja
