// SPDX-License-Identifier: GPL-3.0-or-later
// Phase 2's output, the Jinja syntax tree: expressions and statements, each with the location
// its errors name. One node type each for expressions and statements, with the fields a kind
// uses listed beside it, so the renderer's switch reads like the grammar. Immutable after
// parsing; shared by every render of the template.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/chat/jinja_lexer.h"
#include "engine/chat/jinja_value.h"

namespace ws::chat::jinja::ast {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
    enum class Kind {
        Literal,      // literal
        Name,         // name
        List,         // args: the items (also tuples)
        Dict,         // args: key, value, key, value, ...
        Attribute,    // args[0].name
        Subscript,    // args[0][args[1]]
        Slice,        // args[0][args[1]:args[2]:args[3]] (null where omitted)
        Call,         // args[0](args[1..], kwargs)
        Filter,       // args[0] | name(args[1..], kwargs)
        Test,         // args[0] is [not] name(args[1..]); negated
        Not,          // not args[0]
        Negate,       // -args[0]
        Plus,         // +args[0]
        Binary,       // args[0] op args[1]: + - * / // % ** ~ and or
        Compare,      // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in "not in"
        Conditional,  // args[1] if args[0] else args[2] (args[2] null: undefined)
    };
    Kind kind = Kind::Literal;
    Location at;
    Value literal;
    std::string name;              // Name, Attribute, Filter, Test; Binary: the operator
    std::vector<ExprPtr> args;     // see above (entries may be null for Slice, Conditional)
    std::vector<std::string> ops;  // Compare
    std::vector<std::pair<std::string, ExprPtr>> kwargs;  // Call, Filter
    bool negated = false;                                 // Test
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
    enum class Kind {
        Text,        // text
        Output,      // {{ expr }}
        If,          // conditions[i] -> bodies[i]; bodies.back() is the else body when
                     // bodies.size() == conditions.size() + 1
        For,         // for targets in expr [if condition]: bodies[0], else bodies[1]
        Set,         // set targets = expr; or set targets[0].attribute = expr (namespace)
        SetBlock,    // set targets[0] %} bodies[0] {% endset
        Macro,       // macro name(targets with defaults) bodies[0]
        Break,       // break
        Continue,    // continue
        Generation,  // transformers' {% generation %} bodies[0] {% endgeneration %}
    };
    Kind kind = Kind::Text;
    Location at;
    std::string text;
    std::string name;                  // Macro: its name
    std::string attribute;             // Set: ns.attribute
    std::vector<std::string> targets;  // For/Set: the names bound; Macro: its parameters
    std::vector<ExprPtr> defaults;     // Macro: one per parameter (null: no default)
    ExprPtr expr;                      // Output, For (the iterable), Set
    ExprPtr condition;                 // For: the `if` filter (null: none)
    std::vector<ExprPtr> conditions;   // If
    std::vector<Body> bodies;
};

}  // namespace ws::chat::jinja::ast
