// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja built-ins: see jinja_builtins.h. Case mapping uses ICU (full Unicode mappings, as
// Python's str.upper/lower do); whitespace is Python's str.isspace set.
#include "engine/chat/jinja_builtins.h"

#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>

namespace ws::chat::jinja {

namespace {

const Value kUndefined;
// No string a filter or method builds may pass this (the renderer's own bound is per value).
constexpr size_t kMaxBuiltBytes = size_t{64} << 20;
// Iterating a string makes one value per code point; unique() compares every pair.
constexpr size_t kMaxIteratedChars = 1'000'000;
constexpr size_t kMaxUniqueItems = 2'000;

Error tooLong(std::string_view what) {
    return Error{std::string(what) + " would build a string longer than " +
                 std::to_string(kMaxBuiltBytes) + " bytes; refused as a runaway"};
}

// Decodes one UTF-8 code point at s[i] (advancing i); invalid bytes decode as themselves.
uint32_t decodeAt(std::string_view s, size_t& i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (i + static_cast<size_t>(extra) >= s.size()) extra = 0;
    uint32_t cp = extra == 0 ? c : c & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
        const unsigned char cc = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
        if ((cc & 0xC0) != 0x80) {
            extra = 0;
            cp = c;
            break;
        }
        cp = (cp << 6) | (cc & 0x3F);
    }
    i += 1 + static_cast<size_t>(extra);
    return cp;
}

bool isPyWhitespace(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Python's strip/lstrip/rstrip: whitespace, or any of `chars` (code points) when given.
std::string strip(std::string_view s, const Value& chars, bool left, bool right) {
    std::vector<size_t> offsets = codePointOffsets(s);
    std::set<uint32_t> set;
    const bool custom = chars.isString();
    if (custom)
        for (size_t i = 0; i < chars.asString().size();) set.insert(decodeAt(chars.asString(), i));
    auto strips = [&](size_t index) {
        size_t at = offsets[index];
        const uint32_t cp = decodeAt(s, at);
        return custom ? set.count(cp) > 0 : isPyWhitespace(cp);
    };
    size_t begin = 0;
    size_t end = offsets.size() - 1;
    if (left)
        while (begin < end && strips(begin)) ++begin;
    if (right)
        while (end > begin && strips(end - 1)) --end;
    return std::string(s.substr(offsets[begin], offsets[end] - offsets[begin]));
}

std::string icuCase(const std::string& s, bool upper) {
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
    if (upper)
        u.toUpper(icu::Locale::getRoot());
    else
        u.toLower(icu::Locale::getRoot());
    std::string out;
    u.toUTF8String(out);
    return out;
}

void appendCodePoint(uint32_t cp, std::string& out) {
    icu::UnicodeString u(static_cast<UChar32>(cp));
    u.toUTF8String(out);
}

// Jinja's title filter: words start after - whitespace ( { [ <; str.title(): after any
// uncased character. The first letter goes to title case, the rest to lower case.
std::string titleCase(const std::string& s, bool jinjaFilter) {
    std::string out;
    bool wordStart = true;
    for (size_t i = 0; i < s.size();) {
        const uint32_t cp = decodeAt(s, i);
        const bool separator = jinjaFilter
                                   ? (isPyWhitespace(cp) || cp == '-' || cp == '(' || cp == '{' ||
                                      cp == '[' || cp == '<')
                                   : !u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_CASED);
        if (separator) {
            appendCodePoint(cp, out);
            wordStart = true;
            continue;
        }
        appendCodePoint(static_cast<uint32_t>(wordStart ? u_totitle(static_cast<UChar32>(cp))
                                                        : u_tolower(static_cast<UChar32>(cp))),
                        out);
        wordStart = false;
    }
    return out;
}

std::string capitalize(const std::string& s) {
    if (s.empty()) return s;
    size_t i = 0;
    const uint32_t first = decodeAt(s, i);
    std::string out;
    appendCodePoint(static_cast<uint32_t>(u_totitle(static_cast<UChar32>(first))), out);
    return out + icuCase(s.substr(i), false);
}

Result<std::string> replaceAll(const std::string& s, const std::string& from, const std::string& to,
                               int64_t count) {
    // The hits first, so that the output's size is known before it is built.
    uint64_t hits = 0;
    if (from.empty()) {
        hits = codePointCount(s) + 1;
    } else {
        for (size_t pos = s.find(from); pos != std::string::npos;
             pos = s.find(from, pos + from.size()))
            ++hits;
    }
    if (count >= 0) hits = std::min<uint64_t>(hits, static_cast<uint64_t>(count));
    if (to.size() > from.size() &&
        hits > (kMaxBuiltBytes - std::min(s.size(), kMaxBuiltBytes)) / (to.size() - from.size()))
        return tooLong("replace");
    if (from.empty()) {
        // Python inserts `to` around every code point.
        std::string out;
        const auto offsets = codePointOffsets(s);
        int64_t done = 0;
        for (size_t k = 0; k + 1 < offsets.size(); ++k) {
            if (count < 0 || done < count) {
                out += to;
                ++done;
            }
            out += s.substr(offsets[k], offsets[k + 1] - offsets[k]);
        }
        if (count < 0 || done < count) out += to;
        return out;
    }
    std::string out;
    size_t pos = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
        const size_t hit = s.find(from, pos);
        if (hit == std::string::npos) break;
        out += s.substr(pos, hit - pos) + to;
        pos = hit + from.size();
        ++done;
    }
    return out + s.substr(pos);
}

// Python's str.split(sep=None, maxsplit=-1).
ValueList split(const std::string& s, const Value& sep, int64_t maxsplit) {
    ValueList parts;
    if (!sep.isString()) {
        size_t i = 0;
        while (true) {
            while (i < s.size()) {
                size_t j = i;
                if (!isPyWhitespace(decodeAt(s, j))) break;
                i = j;
            }
            if (i >= s.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
                std::string rest = s.substr(i);
                // Python keeps the rest as is, trailing whitespace stripped.
                parts.push_back(Value::string(strip(rest, kUndefined, false, true)));
                break;
            }
            size_t j = i;
            while (j < s.size()) {
                size_t k = j;
                if (isPyWhitespace(decodeAt(s, k))) break;
                j = k;
            }
            parts.push_back(Value::string(s.substr(i, j - i)));
            i = j;
        }
        return parts;
    }
    const std::string& separator = sep.asString();
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
        const size_t hit = s.find(separator, pos);
        if (hit == std::string::npos) break;
        parts.push_back(Value::string(s.substr(pos, hit - pos)));
        pos = hit + separator.size();
    }
    parts.push_back(Value::string(s.substr(pos)));
    return parts;
}

Result<int64_t> intArgument(const Value& v, std::string_view what, int64_t fallback) {
    if (v.isUndefined() || v.isNone()) return fallback;
    if (v.kind() == Value::Kind::Int) return v.asInt();
    if (v.kind() == Value::Kind::Bool) return static_cast<int64_t>(v.asBool());
    return Error{std::string(what) + " must be an integer, not a " + kindName(v)};
}

Result<Value> toInt(const Value& v, const Value& fallback) {
    const Value dflt = fallback.isUndefined() ? Value::integer(0) : fallback;
    switch (v.kind()) {
        case Value::Kind::Int:
            return v;
        case Value::Kind::Bool:
            return Value::integer(v.asBool());
        case Value::Kind::Float: {
            const double d = v.asFloat();
            if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
            return Value::integer(static_cast<int64_t>(d));
        }
        case Value::Kind::String: {
            const std::string t = strip(v.asString(), kUndefined, true, true);
            char* end = nullptr;
            errno = 0;
            const long long i = std::strtoll(t.c_str(), &end, 10);
            if (!t.empty() && end == t.c_str() + t.size() && errno == 0) return Value::integer(i);
            const double d = std::strtod(t.c_str(), &end);
            if (!t.empty() && end == t.c_str() + t.size() && std::isfinite(d) &&
                std::fabs(d) < 9.2e18)
                return Value::integer(static_cast<int64_t>(d));
            return dflt;
        }
        default:
            return dflt;
    }
}

Result<Value> toFloat(const Value& v, const Value& fallback) {
    const Value dflt = fallback.isUndefined() ? Value::number(0.0) : fallback;
    if (v.isNumber()) return Value::number(v.asFloat());
    if (v.kind() == Value::Kind::Bool) return Value::number(v.asBool() ? 1.0 : 0.0);
    if (v.isString()) {
        const std::string t = strip(v.asString(), kUndefined, true, true);
        char* end = nullptr;
        const double d = std::strtod(t.c_str(), &end);
        if (!t.empty() && end == t.c_str() + t.size()) return Value::number(d);
    }
    return dflt;
}

Result<Value> length(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return Value::integer(0);
        case Value::Kind::String:
            return Value::integer(static_cast<int64_t>(codePointCount(v.asString())));
        case Value::Kind::List:
            return Value::integer(static_cast<int64_t>(v.asList().size()));
        case Value::Kind::Dict:
        case Value::Kind::Namespace:
            return Value::integer(static_cast<int64_t>(v.asDict().size()));
        default:
            return Error{"a " + kindName(v) + " has no length"};
    }
}

Value firstOrLast(const Value& v, bool first) {
    if (v.isList()) {
        const auto& l = v.asList();
        if (l.empty()) return Value::undefined("first/last of an empty list");
        return first ? l.front() : l.back();
    }
    if (v.isString() && !v.asString().empty()) {
        const auto offsets = codePointOffsets(v.asString());
        const size_t k = first ? 0 : offsets.size() - 2;
        return Value::string(v.asString().substr(offsets[k], offsets[k + 1] - offsets[k]));
    }
    if (v.isDict() && v.asDict().size() > 0)
        return Value::string(first ? v.asDict().items().front().first
                                   : v.asDict().items().back().first);
    return Value::undefined("first/last of an empty value");
}

Value attributeOf(const Value& v, const std::string& path) {
    Value current = v;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot - start);
        if (current.isDict() || current.kind() == Value::Kind::Namespace) {
            const Value* found = current.asDict().find(part);
            current = found ? *found : Value::undefined(part);
        } else {
            return Value::undefined(part);
        }
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

// select/reject/selectattr/rejectattr: keep the items whose test passes (or fails).
Result<Value> selectItems(std::string_view filter, const Value& input, const Arguments& args) {
    auto items = iterate(input);
    if (!items) return items.error();
    const bool byAttribute = filter == "selectattr" || filter == "rejectattr";
    const bool keep = filter == "select" || filter == "selectattr";
    size_t next = 0;
    std::string attribute;
    if (byAttribute) {
        const Value& a = args.get(next++, "");
        if (!a.isString()) return Error{std::string(filter) + " needs an attribute name"};
        attribute = a.asString();
    }
    const Value& testName = args.get(next++, "");
    if (!testName.isUndefined() && !testName.isString())
        return Error{std::string(filter) + ": the test must be given by name"};
    if (testName.isString() && !isTest(testName.asString()))
        return Error{"the test '" + testName.asString() + "' is not supported"};
    Arguments testArgs;
    for (size_t i = next; i < args.positional.size(); ++i)
        testArgs.positional.push_back(args.positional[i]);
    ValueList out;
    for (const Value& item : *items) {
        const Value subject = byAttribute ? attributeOf(item, attribute) : item;
        bool passed = truthy(subject);
        if (testName.isString()) {
            auto r = applyTest(testName.asString(), subject, testArgs);
            if (!r) return r.error();
            passed = *r;
        }
        if (passed == keep) out.push_back(item);
    }
    return Value::list(std::move(out));
}

Result<Value> mapItems(const Value& input, const Arguments& args) {
    auto items = iterate(input);
    if (!items) return items.error();
    ValueList out;
    const Value& attribute = args.get(99, "attribute");
    if (attribute.isString()) {
        const Value& dflt = args.get(99, "default");
        for (const Value& item : *items) {
            Value v = attributeOf(item, attribute.asString());
            out.push_back(v.isUndefined() && !dflt.isUndefined() ? dflt : v);
        }
        return Value::list(std::move(out));
    }
    const Value& filterName = args.get(0, "");
    if (!filterName.isString() || !isFilter(filterName.asString()) ||
        filterName.asString() == "map")
        return Error{"map needs attribute= or the name of a supported filter"};
    Arguments rest;
    for (size_t i = 1; i < args.positional.size(); ++i)
        rest.positional.push_back(args.positional[i]);
    for (const Value& item : *items) {
        auto v = applyFilter(filterName.asString(), item, rest);
        if (!v) return v;
        out.push_back(std::move(*v));
    }
    return Value::list(std::move(out));
}

Result<Value> joinItems(const Value& input, const Arguments& args) {
    auto items = iterate(input);
    if (!items) return items.error();
    const Value& attribute = args.get(1, "attribute");
    const std::string sep = toStr(args.get(0, "d"));
    if (!items->empty() && sep.size() > 0 && items->size() - 1 > kMaxBuiltBytes / sep.size())
        return tooLong("join");
    std::string out;
    bool first = true;
    for (const Value& item : *items) {
        if (!first) out += sep;
        if (out.size() > kMaxBuiltBytes) return tooLong("join");
        first = false;
        out += toStr(attribute.isString() ? attributeOf(item, attribute.asString()) : item);
    }
    return Value::string(std::move(out));
}

Result<Value> dictItems(const Value& input) {
    if (input.isUndefined()) return Value::list({});
    if (!input.isDict()) return Error{"items needs a dict, not a " + kindName(input)};
    ValueList out;
    for (const auto& [k, v] : input.asDict().items())
        out.push_back(Value::list({Value::string(k), v}));
    return Value::list(std::move(out));
}

Result<Value> tojson(const Value& input, const Arguments& args) {
    for (const auto& [key, value] : args.keyword)
        if (key != "indent")
            return Error{"tojson: the argument '" + key + "' is not supported (only indent)"};
    const Value& indent = args.get(0, "indent");
    auto width = intArgument(indent, "tojson's indent", -1);
    if (!width) return width.error();
    if (*width > 64) return Error{"tojson: an indent above 64 is refused"};
    auto json = toJson(input, static_cast<int>(*width), kMaxBuiltBytes);
    if (!json) return json.error();
    return Value::string(std::move(*json));
}

const std::set<std::string, std::less<>>& filterNames() {
    static const std::set<std::string, std::less<>> names = {
        "trim",   "length",  "count",      "upper",      "lower", "title",  "capitalize",
        "tojson", "default", "d",          "first",      "last",  "join",   "replace",
        "items",  "list",    "string",     "int",        "float", "safe",   "abs",
        "select", "reject",  "selectattr", "rejectattr", "map",   "unique", "reverse"};
    return names;
}

}  // namespace

const Value& Arguments::get(size_t index, std::string_view name) const {
    if (index < positional.size()) return positional[index];
    for (const auto& [k, v] : keyword)
        if (k == name) return v;
    return kUndefined;
}

bool isFilter(std::string_view name) {
    return filterNames().count(name) > 0;
}

bool isTest(std::string_view name) {
    static const std::set<std::string, std::less<>> names = {
        "defined", "undefined", "none",        "boolean", "true",     "false",    "string",
        "number",  "integer",   "float",       "mapping", "iterable", "sequence", "callable",
        "even",    "odd",       "divisibleby", "equalto", "eq",       "==",       "ne",
        "!=",      "lt",        "<",           "le",      "<=",       "gt",       ">",
        "ge",      ">=",        "in",          "sameas",  "lower",    "upper"};
    return names.count(name) > 0;
}

Result<Value> applyFilter(std::string_view name, const Value& input, const Arguments& args) {
    const auto asText = [&] { return toStr(input); };
    if (name == "trim") return Value::string(strip(asText(), args.get(0, "chars"), true, true));
    if (name == "length" || name == "count") return length(input);
    if (name == "upper") return Value::string(icuCase(asText(), true));
    if (name == "lower") return Value::string(icuCase(asText(), false));
    if (name == "title") return Value::string(titleCase(asText(), true));
    if (name == "capitalize") return Value::string(capitalize(asText()));
    if (name == "tojson") return tojson(input, args);
    if (name == "default" || name == "d") {
        const bool boolean = truthy(args.get(1, "boolean"));
        const bool use = boolean ? !truthy(input) : input.isUndefined();
        if (!use) return input;
        const Value& fallback = args.get(0, "default_value");
        return fallback.isUndefined() ? Value::string("") : fallback;
    }
    if (name == "first" || name == "last") return firstOrLast(input, name == "first");
    if (name == "join") return joinItems(input, args);
    if (name == "replace") {
        const Value& from = args.get(0, "old");
        const Value& to = args.get(1, "new");
        auto count = intArgument(args.get(2, "count"), "replace's count", -1);
        if (!count) return count.error();
        auto out = replaceAll(asText(), toStr(from), toStr(to), *count);
        if (!out) return out.error();
        return Value::string(std::move(*out));
    }
    if (name == "items") return dictItems(input);
    if (name == "list") {
        auto items = iterate(input);
        if (!items) return items.error();
        return Value::list(std::move(*items));
    }
    if (name == "string") return Value::string(asText());
    if (name == "int") return toInt(input, args.get(0, "default"));
    if (name == "float") return toFloat(input, args.get(0, "default"));
    if (name == "safe") return input;
    if (name == "abs") {
        if (input.kind() == Value::Kind::Int && input.asInt() != INT64_MIN)
            return Value::integer(std::llabs(input.asInt()));
        if (input.isNumber()) return Value::number(std::fabs(input.asFloat()));
        return Error{"abs needs a number, not a " + kindName(input)};
    }
    if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
        return selectItems(name, input, args);
    if (name == "map") return mapItems(input, args);
    if (name == "unique" || name == "reverse") {
        auto items = iterate(input);
        if (!items) return items.error();
        if (name == "reverse") {
            if (input.isString()) {
                std::string out;
                for (auto it = items->rbegin(); it != items->rend(); ++it) out += it->asString();
                return Value::string(std::move(out));
            }
            return Value::list(ValueList(items->rbegin(), items->rend()));
        }
        if (items->size() > kMaxUniqueItems)
            return Error{"unique of more than " + std::to_string(kMaxUniqueItems) +
                         " items is refused as a runaway"};
        ValueList out;
        for (const Value& item : *items)
            if (std::none_of(out.begin(), out.end(),
                             [&](const Value& seen) { return equal(seen, item); }))
                out.push_back(item);
        return Value::list(std::move(out));
    }
    return Error{"the filter '" + std::string(name) + "' is not supported"};
}

Result<bool> applyTest(std::string_view name, const Value& input, const Arguments& args) {
    using K = Value::Kind;
    const K k = input.kind();
    const Value& arg = args.get(0, "");
    if (name == "defined") return k != K::Undefined;
    if (name == "undefined") return k == K::Undefined;
    if (name == "none") return k == K::None;
    if (name == "boolean") return k == K::Bool;
    if (name == "true") return k == K::Bool && input.asBool();
    if (name == "false") return k == K::Bool && !input.asBool();
    if (name == "string") return k == K::String;
    if (name == "number") return k == K::Int || k == K::Float || k == K::Bool;
    if (name == "integer") return k == K::Int;
    if (name == "float") return k == K::Float;
    if (name == "mapping") return k == K::Dict;
    if (name == "iterable")
        return k == K::List || k == K::Dict || k == K::String || k == K::Undefined;
    if (name == "sequence") return k == K::List || k == K::Dict || k == K::String;
    if (name == "callable") return k == K::Function;
    if (name == "lower")
        return k == K::String && icuCase(input.asString(), false) == input.asString();
    if (name == "upper")
        return k == K::String && icuCase(input.asString(), true) == input.asString();
    if (name == "even" || name == "odd" || name == "divisibleby") {
        if (k != K::Int) return Error{"the test '" + std::string(name) + "' needs an integer"};
        int64_t divisor = name == "divisibleby" ? 0 : 2;
        if (name == "divisibleby") {
            if (arg.kind() != K::Int || arg.asInt() == 0)
                return Error{"divisibleby needs a non-zero integer"};
            divisor = arg.asInt();
        }
        const bool divisible = divisor == -1 || input.asInt() % divisor == 0;
        return name == "odd" ? !divisible : divisible;
    }
    if (name == "equalto" || name == "eq" || name == "==") return equal(input, arg);
    if (name == "ne" || name == "!=") return !equal(input, arg);
    if (name == "sameas") {
        if (k != arg.kind()) return false;
        if (k == K::None || k == K::Undefined) return true;
        if (k == K::Bool) return input.asBool() == arg.asBool();
        return false;
    }
    if (name == "in") return contains(arg, input);
    if (name == "lt" || name == "<") return lessThan(input, arg);
    if (name == "gt" || name == ">") return lessThan(arg, input);
    if (name == "le" || name == "<=") {
        auto r = lessThan(arg, input);
        if (!r) return r;
        return !*r;
    }
    if (name == "ge" || name == ">=") {
        auto r = lessThan(input, arg);
        if (!r) return r;
        return !*r;
    }
    return Error{"the test '" + std::string(name) + "' is not supported"};
}

bool hasMethod(const Value& object, std::string_view name) {
    static const std::set<std::string, std::less<>> stringMethods = {
        "strip", "lstrip", "rstrip",     "startswith", "endswith", "split", "upper",
        "lower", "title",  "capitalize", "replace",    "find",     "count"};
    static const std::set<std::string, std::less<>> dictMethods = {"items", "keys", "values",
                                                                   "get"};
    if (object.isString()) return stringMethods.count(name) > 0;
    if (object.isDict()) return dictMethods.count(name) > 0;
    return false;
}

namespace {

Result<bool> affix(const std::string& s, const Value& arg, bool start) {
    ValueList options;
    if (arg.isList())
        options = arg.asList();
    else
        options.push_back(arg);
    for (const Value& o : options) {
        if (!o.isString()) return Error{"startswith/endswith need a string or a list of them"};
        const std::string& a = o.asString();
        if (a.size() > s.size()) continue;
        if (start ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0)
            return true;
    }
    return false;
}

Result<Value> stringMethod(const std::string& s, std::string_view name, const Arguments& args) {
    const Value& a0 = args.get(0, "");
    if (name == "strip") return Value::string(strip(s, a0, true, true));
    if (name == "lstrip") return Value::string(strip(s, a0, true, false));
    if (name == "rstrip") return Value::string(strip(s, a0, false, true));
    if (name == "startswith" || name == "endswith") {
        auto r = affix(s, a0, name == "startswith");
        if (!r) return r.error();
        return Value::boolean(*r);
    }
    if (name == "split") {
        const Value& sep = args.get(0, "sep");
        if (sep.isString() && sep.asString().empty()) return Error{"split: empty separator"};
        auto maxsplit = intArgument(args.get(1, "maxsplit"), "split's maxsplit", -1);
        if (!maxsplit) return maxsplit.error();
        return Value::list(split(s, sep, *maxsplit));
    }
    if (name == "upper") return Value::string(icuCase(s, true));
    if (name == "lower") return Value::string(icuCase(s, false));
    if (name == "title") return Value::string(titleCase(s, false));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "replace") {
        if (!a0.isString() || !args.get(1, "").isString())
            return Error{"replace needs two strings"};
        auto count = intArgument(args.get(2, "count"), "replace's count", -1);
        if (!count) return count.error();
        auto out = replaceAll(s, a0.asString(), args.get(1, "").asString(), *count);
        if (!out) return out.error();
        return Value::string(std::move(*out));
    }
    if (!a0.isString()) return Error{std::string(name) + " needs a string"};
    if (name == "find") {
        const size_t hit = s.find(a0.asString());
        if (hit == std::string::npos) return Value::integer(-1);
        return Value::integer(static_cast<int64_t>(codePointCount(s.substr(0, hit))));
    }
    // count
    if (a0.asString().empty()) return Value::integer(static_cast<int64_t>(codePointCount(s) + 1));
    int64_t n = 0;
    for (size_t pos = s.find(a0.asString()); pos != std::string::npos;
         pos = s.find(a0.asString(), pos + a0.asString().size()))
        ++n;
    return Value::integer(n);
}

}  // namespace

Result<Value> callMethod(const Value& object, std::string_view name, const Arguments& args) {
    if (!hasMethod(object, name))
        return Error{"the method '" + std::string(name) + "' of a " + kindName(object) +
                     " is not supported"};
    if (object.isString()) return stringMethod(object.asString(), name, args);
    const ValueDict& dict = object.asDict();
    if (name == "get") {
        const Value& key = args.get(0, "key");
        const Value* found = key.isString() ? dict.find(key.asString()) : nullptr;
        if (found) return *found;
        const Value& dflt = args.get(1, "default");
        return dflt.isUndefined() ? Value::none() : dflt;
    }
    if (name == "items") return dictItems(object);
    ValueList out;
    for (const auto& [k, v] : dict.items()) out.push_back(name == "keys" ? Value::string(k) : v);
    return Value::list(std::move(out));
}

Result<bool> contains(const Value& container, const Value& item) {
    switch (container.kind()) {
        case Value::Kind::Undefined:
            return false;
        case Value::Kind::String:
            if (!item.isString())
                return Error{"'in <string>' needs a string on the left, not a " + kindName(item)};
            return container.asString().find(item.asString()) != std::string::npos;
        case Value::Kind::List:
            for (const Value& v : container.asList())
                if (equal(v, item)) return true;
            return false;
        case Value::Kind::Dict:
            return item.isString() && container.asDict().find(item.asString()) != nullptr;
        default:
            return Error{"a " + kindName(container) + " cannot be searched with 'in'"};
    }
}

Result<bool> lessThan(const Value& a, const Value& b) {
    const auto numeric = [](const Value& v) {
        return v.isNumber() || v.kind() == Value::Kind::Bool;
    };
    const auto number = [](const Value& v) {
        return v.kind() == Value::Kind::Bool ? (v.asBool() ? 1.0 : 0.0) : v.asFloat();
    };
    if (numeric(a) && numeric(b)) {
        if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int)
            return a.asInt() < b.asInt();
        return number(a) < number(b);
    }
    if (a.isString() && b.isString()) return a.asString() < b.asString();
    return Error{"a " + kindName(a) + " and a " + kindName(b) + " cannot be ordered"};
}

Result<ValueList> iterate(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::Undefined:
            return ValueList{};
        case Value::Kind::List:
            return v.asList();
        case Value::Kind::Dict: {
            ValueList keys;
            for (const auto& [k, item] : v.asDict().items()) keys.push_back(Value::string(k));
            return keys;
        }
        case Value::Kind::String: {
            if (v.asString().size() > kMaxIteratedChars)
                return Error{"iterating a string of more than " +
                             std::to_string(kMaxIteratedChars) + " bytes is refused as a runaway"};
            ValueList chars;
            const auto offsets = codePointOffsets(v.asString());
            for (size_t k = 0; k + 1 < offsets.size(); ++k)
                chars.push_back(
                    Value::string(v.asString().substr(offsets[k], offsets[k + 1] - offsets[k])));
            return chars;
        }
        default:
            return Error{"a " + kindName(v) + " cannot be iterated"};
    }
}

}  // namespace ws::chat::jinja
