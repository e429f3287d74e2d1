// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja interpreter's front door: a chat template parsed once (lexer -> parser) and rendered
// any number of times (renderer) with a context of variables. It implements the subset of Jinja2
// that real chat templates use (see jinja_lexer.h, jinja_parser.h, jinja_renderer.h,
// jinja_builtins.h for each phase) and refuses the rest with an Error naming the template's line
// and column, never guessing. No input makes it throw, abort or hang. Thread-safety: a parsed
// Template is immutable and may be rendered from several threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/chat/jinja_renderer.h"
#include "engine/chat/jinja_value.h"
#include "engine/core/result.h"

namespace ws::chat::jinja {

class Template {
public:
    // Lexes and parses `source`; errors name the line and column.
    static Result<Template> parse(std::string_view source, const LexOptions& options = {});

    Result<std::string> render(const ValueDict& context, const RenderOptions& options = {}) const;

private:
    std::shared_ptr<const ast::Body> m_body;
};

// A JSON text as a template value (objects keep their key order); for contexts given as JSON
// (tests, tools), numbers become ints where they are integral in the text.
Result<Value> valueFromJson(std::string_view json);

}  // namespace ws::chat::jinja
