// SPDX-License-Identifier: GPL-3.0-or-later
// The values a Jinja chat template computes with, in Python's semantics as Jinja2 (what
// transformers renders chat templates with) gives them: undefined, none, bool, int, float,
// string, list, dict (insertion-ordered, string keys), namespace (the one mutable value, from
// namespace()) and function (a macro or a built-in). Lists and dicts are shared, immutable once
// built, so copying a Value is cheap. str/repr/tojson follow Python's str(), repr() and
// json.dumps(ensure_ascii=False), since what a template prints must match byte for byte.
// Strings are UTF-8; length, indexing and slicing count code points as Python does.
// Thread-safety: plain values; a namespace is shared and must stay on one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "engine/core/result.h"

namespace ws::chat::jinja {

class Value;
using ValueList = std::vector<Value>;

class ValueDict;

// A callable: a built-in global (raise_exception, namespace, range, ...) or a macro, which the
// renderer knows by its definition.
struct Function {
    std::string name;
    const void* macro = nullptr;  // the ast::Stmt of a macro; null for a built-in
};

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Function };

    Value() = default;  // undefined
    static Value undefined(std::string name);
    static Value none();
    static Value boolean(bool b);
    static Value integer(int64_t i);
    static Value number(double d);
    static Value string(std::string s);
    static Value list(ValueList items);
    static Value dict(ValueDict items);
    static Value makeNamespace(ValueDict items);
    static Value function(Function f);

    Kind kind() const { return m_kind; }
    // How deeply lists and dicts nest inside this value (0 for a scalar); the renderer bounds it
    // so that printing or freeing a value cannot exhaust the stack.
    int depth() const { return m_depth; }
    // Roughly the bytes this value holds (its strings, kValueBytes per item), saturating; the
    // renderer bounds it so no value a template builds can exhaust memory.
    uint64_t weight() const { return m_weight; }
    static constexpr uint64_t kValueBytes = 64;
    bool isUndefined() const { return m_kind == Kind::Undefined; }
    bool isNone() const { return m_kind == Kind::None; }
    bool isString() const { return m_kind == Kind::String; }
    bool isList() const { return m_kind == Kind::List; }
    bool isDict() const { return m_kind == Kind::Dict; }
    bool isNumber() const { return m_kind == Kind::Int || m_kind == Kind::Float; }

    bool asBool() const { return std::get<bool>(m_data); }
    int64_t asInt() const { return std::get<int64_t>(m_data); }
    double asFloat() const;  // an int or a float
    // The string of a String, the name of an Undefined.
    const std::string& asString() const { return std::get<std::string>(m_data); }
    const ValueList& asList() const { return *std::get<std::shared_ptr<ValueList>>(m_data); }
    // A dict's or a namespace's entries.
    const ValueDict& asDict() const { return *std::get<std::shared_ptr<ValueDict>>(m_data); }
    ValueDict& namespaceDict() const { return *std::get<std::shared_ptr<ValueDict>>(m_data); }
    const Function& asFunction() const { return *std::get<std::shared_ptr<Function>>(m_data); }

private:
    void include(const Value& item, size_t keyBytes);  // a list's or dict's item

    Kind m_kind = Kind::Undefined;
    int m_depth = 0;
    uint64_t m_weight = kValueBytes;
    std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ValueList>,
                 std::shared_ptr<ValueDict>, std::shared_ptr<Function>>
        m_data;
};

// A dict or a namespace: string keys in insertion order (as Python dicts keep them).
class ValueDict {
public:
    const Value* find(std::string_view key) const;
    void set(const std::string& key, Value value);
    const std::vector<std::pair<std::string, Value>>& items() const { return m_items; }
    size_t size() const { return m_items.size(); }

private:
    std::vector<std::pair<std::string, Value>> m_items;
};

// True if v is or holds (in a list or dict) a namespace. A namespace may not be stored in one,
// so no value can hold itself (shared values never form a cycle).
bool holdsNamespace(const Value& v);
// Python's truth value; undefined is false.
bool truthy(const Value& v);
// Python's ==; ints and floats compare by value.
bool equal(const Value& a, const Value& b);
// The type name for errors: "string", "list", "undefined", ...
std::string kindName(const Value& v);
// Python's str(): what {{ v }} prints (undefined prints nothing, none prints "None").
std::string toStr(const Value& v);
// Python's repr(), used inside the str() of lists and dicts.
std::string repr(const Value& v);
// Python's repr of a float ("1.0", "0.1", "1e+16").
std::string floatRepr(double d);
// json.dumps(v, ensure_ascii=False, indent=indent) (indent < 0: none); refuses undefined and
// functions, nests no deeper than 512, and stops with an Error past maxBytes.
Result<std::string> toJson(const Value& v, int indent, size_t maxBytes = size_t{64} << 20);

// UTF-8 as code points: a string's length, and the byte offset of code point `index`.
size_t codePointCount(std::string_view s);
std::vector<size_t> codePointOffsets(std::string_view s);  // one per code point, then s.size()

}  // namespace ws::chat::jinja
