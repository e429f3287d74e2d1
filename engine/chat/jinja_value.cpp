// SPDX-License-Identifier: GPL-3.0-or-later
// Jinja values: see jinja_value.h.
#include "engine/chat/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ws::chat::jinja {

const Value* ValueDict::find(std::string_view key) const {
    for (const auto& [k, v] : m_items)
        if (k == key) return &v;
    return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
    for (auto& [k, v] : m_items)
        if (k == key) {
            v = std::move(value);
            return;
        }
    m_items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string name) {
    Value v;
    v.m_data = std::move(name);
    return v;
}
Value Value::none() {
    Value v;
    v.m_kind = Kind::None;
    return v;
}
Value Value::boolean(bool b) {
    Value v;
    v.m_kind = Kind::Bool;
    v.m_data = b;
    return v;
}
Value Value::integer(int64_t i) {
    Value v;
    v.m_kind = Kind::Int;
    v.m_data = i;
    return v;
}
Value Value::number(double d) {
    Value v;
    v.m_kind = Kind::Float;
    v.m_data = d;
    return v;
}
Value Value::string(std::string s) {
    Value v;
    v.m_kind = Kind::String;
    v.m_weight = kValueBytes + s.size();
    v.m_data = std::move(s);
    return v;
}
Value Value::list(ValueList items) {
    Value v;
    v.m_kind = Kind::List;
    for (const Value& item : items) v.include(item, 0);
    v.m_data = std::make_shared<ValueList>(std::move(items));
    return v;
}
Value Value::dict(ValueDict items) {
    Value v;
    v.m_kind = Kind::Dict;
    for (const auto& [k, item] : items.items()) v.include(item, k.size());
    v.m_data = std::make_shared<ValueDict>(std::move(items));
    return v;
}
Value Value::makeNamespace(ValueDict items) {
    Value v;
    v.m_kind = Kind::Namespace;
    for (const auto& [k, item] : items.items()) v.include(item, k.size());
    v.m_data = std::make_shared<ValueDict>(std::move(items));
    return v;
}
Value Value::function(Function f) {
    Value v;
    v.m_kind = Kind::Function;
    v.m_data = std::make_shared<Function>(std::move(f));
    return v;
}

void Value::include(const Value& item, size_t keyBytes) {
    m_depth = std::max(m_depth, item.m_depth + 1);
    const uint64_t add = item.m_weight + keyBytes;
    m_weight = m_weight > UINT64_MAX - add ? UINT64_MAX : m_weight + add;
}

double Value::asFloat() const {
    return m_kind == Kind::Int ? static_cast<double>(asInt()) : std::get<double>(m_data);
}

bool holdsNamespace(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Namespace:
            return true;
        case Value::Kind::List:
            for (const Value& item : v.asList())
                if (holdsNamespace(item)) return true;
            return false;
        case Value::Kind::Dict:
            for (const auto& [k, item] : v.asDict().items())
                if (holdsNamespace(item)) return true;
            return false;
        default:
            return false;
    }
}

bool truthy(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return false;
        case Value::Kind::Bool:
            return v.asBool();
        case Value::Kind::Int:
            return v.asInt() != 0;
        case Value::Kind::Float:
            return v.asFloat() != 0.0;
        case Value::Kind::String:
            return !v.asString().empty();
        case Value::Kind::List:
            return !v.asList().empty();
        case Value::Kind::Dict:
            return v.asDict().size() != 0;
        case Value::Kind::Namespace:
        case Value::Kind::Function:
            return true;
    }
    return false;
}

bool equal(const Value& a, const Value& b) {
    if (a.isNumber() && b.isNumber()) {
        if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int)
            return a.asInt() == b.asInt();
        return a.asFloat() == b.asFloat();
    }
    // Python: True == 1; bools compare as ints with numbers.
    if (a.kind() == Value::Kind::Bool && b.isNumber())
        return static_cast<double>(a.asBool()) == b.asFloat();
    if (b.kind() == Value::Kind::Bool && a.isNumber())
        return static_cast<double>(b.asBool()) == a.asFloat();
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::Undefined:
        case Value::Kind::None:
            return true;
        case Value::Kind::Bool:
            return a.asBool() == b.asBool();
        case Value::Kind::String:
            return a.asString() == b.asString();
        case Value::Kind::List: {
            const auto& x = a.asList();
            const auto& y = b.asList();
            if (x.size() != y.size()) return false;
            for (size_t i = 0; i < x.size(); ++i)
                if (!equal(x[i], y[i])) return false;
            return true;
        }
        case Value::Kind::Dict: {
            const auto& x = a.asDict();
            const auto& y = b.asDict();
            if (x.size() != y.size()) return false;
            for (const auto& [k, v] : x.items()) {
                const Value* other = y.find(k);
                if (!other || !equal(v, *other)) return false;
            }
            return true;
        }
        case Value::Kind::Namespace:
            return &a.namespaceDict() == &b.namespaceDict();
        case Value::Kind::Function:
            return &a.asFunction() == &b.asFunction();
        default:
            return false;
    }
}

std::string kindName(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "undefined";
        case Value::Kind::None:
            return "none";
        case Value::Kind::Bool:
            return "boolean";
        case Value::Kind::Int:
            return "integer";
        case Value::Kind::Float:
            return "float";
        case Value::Kind::String:
            return "string";
        case Value::Kind::List:
            return "list";
        case Value::Kind::Dict:
            return "dict";
        case Value::Kind::Namespace:
            return "namespace";
        case Value::Kind::Function:
            return "function";
    }
    return "value";
}

std::string floatRepr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, res.ptr);  // "-1.2345e+05"
    std::string sign;
    if (!sci.empty() && sci[0] == '-') {
        sign = "-";
        sci.erase(0, 1);
    }
    const size_t e = sci.find('e');
    std::string digits = sci.substr(0, e);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::atoi(sci.c_str() + e + 1);
    if (exponent >= -4 && exponent < 16) {
        std::string out;
        if (exponent < 0) {
            out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        } else {
            const size_t intDigits = static_cast<size_t>(exponent) + 1;
            if (digits.size() <= intDigits)
                out = digits + std::string(intDigits - digits.size(), '0') + ".0";
            else
                out = digits.substr(0, intDigits) + "." + digits.substr(intDigits);
        }
        return sign + out;
    }
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1) mantissa += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + mantissa + exp;
}

namespace {

std::string reprString(const std::string& s) {
    const bool hasSingle = s.find('\'') != std::string::npos;
    const bool hasDouble = s.find('"') != std::string::npos;
    const char quote = hasSingle && !hasDouble ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\')
            out += "\\\\";
        else if (c == static_cast<unsigned char>(quote))
            out += std::string("\\") + quote;
        else if (c == '\n')
            out += "\\n";
        else if (c == '\r')
            out += "\\r";
        else if (c == '\t')
            out += "\\t";
        else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    out += quote;
    return out;
}

std::string strOfContainer(const Value& v) {
    std::string out;
    if (v.kind() == Value::Kind::List) {
        out = "[";
        bool first = true;
        for (const auto& item : v.asList()) {
            if (!first) out += ", ";
            first = false;
            out += repr(item);
        }
        return out + "]";
    }
    out = "{";
    bool first = true;
    for (const auto& [k, item] : v.asDict().items()) {
        if (!first) out += ", ";
        first = false;
        out += reprString(k) + ": " + repr(item);
    }
    out += "}";
    return v.kind() == Value::Kind::Namespace ? "<Namespace " + out + ">" : out;
}

void jsonString(const std::string& s, std::string& out) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

Status jsonValue(const Value& v, int indent, int depth, size_t maxBytes, std::string& out) {
    if (depth > 512) return Error{"tojson: the value nests deeper than 512 levels"};
    if (out.size() > maxBytes)
        return Error{"tojson: the JSON grew past " + std::to_string(maxBytes) + " bytes"};
    const auto newline = [&](int level) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
    };
    const char* itemSeparator = indent < 0 ? ", " : ",";
    switch (v.kind()) {
        case Value::Kind::None:
            out += "null";
            return {};
        case Value::Kind::Bool:
            out += v.asBool() ? "true" : "false";
            return {};
        case Value::Kind::Int:
            out += std::to_string(v.asInt());
            return {};
        case Value::Kind::Float: {
            const double d = v.asFloat();
            if (std::isnan(d))
                out += "NaN";
            else if (std::isinf(d))
                out += d < 0 ? "-Infinity" : "Infinity";
            else
                out += floatRepr(d);
            return {};
        }
        case Value::Kind::String:
            jsonString(v.asString(), out);
            return {};
        case Value::Kind::List: {
            if (v.asList().empty()) {
                out += "[]";
                return {};
            }
            out += '[';
            bool first = true;
            for (const auto& item : v.asList()) {
                if (!first) out += itemSeparator;
                first = false;
                newline(depth + 1);
                if (Status s = jsonValue(item, indent, depth + 1, maxBytes, out); !s) return s;
            }
            newline(depth);
            out += ']';
            return {};
        }
        case Value::Kind::Dict:
        case Value::Kind::Namespace: {
            if (v.asDict().size() == 0) {
                out += "{}";
                return {};
            }
            out += '{';
            bool first = true;
            for (const auto& [k, item] : v.asDict().items()) {
                if (!first) out += itemSeparator;
                first = false;
                newline(depth + 1);
                jsonString(k, out);
                out += ": ";
                if (Status s = jsonValue(item, indent, depth + 1, maxBytes, out); !s) return s;
            }
            newline(depth);
            out += '}';
            return {};
        }
        case Value::Kind::Undefined:
            return Error{"tojson: '" + v.asString() + "' is undefined and has no JSON form"};
        case Value::Kind::Function:
            return Error{"tojson: a function has no JSON form"};
    }
    return {};
}

}  // namespace

std::string repr(const Value& v) {
    if (v.kind() == Value::Kind::String) return reprString(v.asString());
    return toStr(v);
}

std::string toStr(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return "";
        case Value::Kind::None:
            return "None";
        case Value::Kind::Bool:
            return v.asBool() ? "True" : "False";
        case Value::Kind::Int:
            return std::to_string(v.asInt());
        case Value::Kind::Float:
            return floatRepr(v.asFloat());
        case Value::Kind::String:
            return v.asString();
        case Value::Kind::List:
        case Value::Kind::Dict:
        case Value::Kind::Namespace:
            return strOfContainer(v);
        case Value::Kind::Function:
            return "<function " + v.asFunction().name + ">";
    }
    return "";
}

Result<std::string> toJson(const Value& v, int indent, size_t maxBytes) {
    std::string out;
    if (Status s = jsonValue(v, indent, 0, maxBytes, out); !s) return s.error();
    if (out.size() > maxBytes)
        return Error{"tojson: the JSON grew past " + std::to_string(maxBytes) + " bytes"};
    return out;
}

size_t codePointCount(std::string_view s) {
    size_t n = 0;
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 || i == 0) ++n;
    return n;
}

std::vector<size_t> codePointOffsets(std::string_view s) {
    std::vector<size_t> offsets;
    for (size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 || i == 0) offsets.push_back(i);
    offsets.push_back(s.size());
    return offsets;
}

}  // namespace ws::chat::jinja
