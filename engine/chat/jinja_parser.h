// SPDX-License-Identifier: GPL-3.0-or-later
// Phase 2 of the Jinja interpreter: the parser. Turns the lexer's pieces into the syntax tree
// (jinja_ast.h) with Jinja2's grammar and operator precedence (filters and `is` tests bind
// tighter than arithmetic: `'a' + x | trim` is `'a' + (x | trim)`). Statements: if/elif/else,
// for (tuple targets, `if` filter, else), set (names, `ns.attr`, set blocks), macro,
// break/continue and transformers' generation block. Statements and filters/tests it does not
// implement are refused here, before any rendering, with an Error naming the line, the column
// and the construct ("line 3, column 12: the filter 'wordwrap' is not supported"). Nesting is
// bounded (kMaxDepth), so garbage input cannot exhaust the stack.
#pragma once

#include <vector>

#include "engine/chat/jinja_ast.h"
#include "engine/chat/jinja_lexer.h"
#include "engine/core/result.h"

namespace ws::chat::jinja {

inline constexpr int kMaxDepth = 100;

Result<ast::Body> parse(const std::vector<Piece>& pieces);

}  // namespace ws::chat::jinja
