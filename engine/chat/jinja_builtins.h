// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja built-ins chat templates use, as Jinja2 and transformers define them: filters
// (trim, length, tojson, default, join, ...), tests (defined, none, string, mapping, ...) and
// the methods of strings, dicts and lists (.strip(), .startswith(), .items(), .get(), ...).
// Built-in globals (raise_exception, namespace, range, strftime_now) live in the renderer, which
// owns the state they need. Each takes its arguments already evaluated and fails with an Error
// naming the problem (the renderer adds the line and column). The parser asks isFilter/isTest
// so that anything not listed is refused before rendering. Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/chat/jinja_value.h"
#include "engine/core/result.h"

namespace ws::chat::jinja {

struct Arguments {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keyword;

    // The argument at position `index` or named `name`, or undefined.
    const Value& get(size_t index, std::string_view name) const;
};

bool isFilter(std::string_view name);
bool isTest(std::string_view name);

// `input | name(args)`. The renderer handles the filters that call back into it (none yet).
Result<Value> applyFilter(std::string_view name, const Value& input, const Arguments& args);
// `input is name(args)`.
Result<bool> applyTest(std::string_view name, const Value& input, const Arguments& args);
// `object.name(args)` for strings, dicts and lists; an Error names an unknown method.
Result<Value> callMethod(const Value& object, std::string_view name, const Arguments& args);
// True if `object.name` is one of those methods (so `x.items` is callable, not undefined).
bool hasMethod(const Value& object, std::string_view name);

// Python's `a in b` for strings, lists and dicts.
Result<bool> contains(const Value& container, const Value& item);
// Python's ordering (<) for numbers and strings; an Error for other kinds.
Result<bool> lessThan(const Value& a, const Value& b);
// The items a for loop or a filter iterates: a list's items, a dict's keys, a string's
// characters; undefined gives nothing; an Error for others (none included, as in Python).
Result<ValueList> iterate(const Value& v);

}  // namespace ws::chat::jinja
