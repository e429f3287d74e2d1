// SPDX-License-Identifier: GPL-3.0-or-later
// Phase 1 of the Jinja interpreter: the lexer. Splits a template into text, `{{ expression }}`
// and `{% statement %}` pieces (comments `{# #}` vanish), applying whitespace control as
// Jinja2 does: `-` inside a tag's delimiter strips the whitespace beside it, and with the
// options transformers sets for chat templates (trim_blocks: the first newline after a block or
// comment tag goes; lstrip_blocks: spaces and tabs from the start of a line up to a block or
// comment tag go; `+` turns either off for one tag). The insides of tags become tokens (names,
// numbers, strings with Python's escapes, operators), each with its line and column (1-based,
// columns counted in bytes). Never fails except with an Error naming line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"

namespace ws::chat::jinja {

struct Location {
    int line = 1;
    int column = 1;
};

// "line 3, column 12"
std::string describe(Location at);

struct Token {
    enum class Kind { Name, String, Int, Float, Operator };
    Kind kind = Kind::Name;
    std::string text;  // a name, an operator, or a string's value (escapes resolved)
    int64_t intValue = 0;
    double floatValue = 0.0;
    Location at;
};

struct Piece {
    enum class Kind { Text, Expression, Statement };
    Kind kind = Kind::Text;
    std::string text;           // Text: the literal text
    std::vector<Token> tokens;  // Expression/Statement: the tag's inside
    Location at;                // where the piece starts
    Location end;               // the tag's closing delimiter (for "expected ... at the end")
};

struct LexOptions {
    bool trimBlocks = true;
    bool lstripBlocks = true;
};

Result<std::vector<Piece>> lex(std::string_view source, const LexOptions& options = {});

}  // namespace ws::chat::jinja
