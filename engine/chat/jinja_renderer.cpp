// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja renderer: see jinja_renderer.h. Renderer::run walks the statements
// (renderBody/renderFor/...), Renderer::eval the expressions; the built-in filters, tests and
// methods come from jinja_builtins.
#include "engine/chat/jinja_renderer.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <limits>

#include "engine/chat/jinja_builtins.h"

namespace ws::chat::jinja {

namespace {

using ast::Expr;
using ast::Stmt;

// No chat template counts far; a huge range() is a runaway.
constexpr int64_t kMaxRange = 100'000;
// Values a template builds nest no deeper (real templates nest two or three levels).
constexpr int kMaxNesting = 100;

Error errorAt(Location at, const std::string& what) {
    return Error{describe(at) + ": " + what};
}

class Renderer {
public:
    Renderer(const ValueDict& context, const RenderOptions& options) : m_options(options) {
        m_scopes.push_back(context);
    }

    Result<std::string> run(const ast::Body& body) {
        if (Status s = renderBody(body); !s) return s.error();
        if (m_flow != Flow::Normal) return Error{"'break' or 'continue' outside a for loop"};
        return std::move(m_out);
    }

private:
    enum class Flow { Normal, Break, Continue };

    // Statements.
    Status renderBody(const ast::Body& body);
    Status renderStatement(const Stmt& stmt);
    Status renderFor(const Stmt& stmt);
    Status renderSet(const Stmt& stmt);
    Status bindTargets(const Stmt& stmt, const std::vector<std::string>& targets,
                       const Value& value);
    Status append(Location at, const std::string& text);
    Status step(Location at);

    // Expressions: eval bounds the nesting of what evalNode computes.
    Result<Value> eval(const Expr& e);
    Result<Value> evalNode(const Expr& e);
    Result<Value> evalAttribute(const Expr& e);
    Result<Value> evalSubscript(const Expr& e);
    Result<Value> evalSlice(const Expr& e);
    Result<Value> evalCall(const Expr& e);
    Result<Value> evalBinary(const Expr& e);
    Result<Value> evalArithmetic(const Expr& e, const Value& a, const Value& b);
    Result<Value> evalCompare(const Expr& e);
    Result<Arguments> evalArguments(const Expr& e, size_t firstArg);
    Result<Value> callBuiltin(const Expr& e, const std::string& name, const Arguments& args);
    Result<Value> callMacro(const Expr& e, const Stmt& macro, const Arguments& args);

    Value lookup(const std::string& name) const;
    void assign(const std::string& name, Value value) {
        m_scopes.back().set(name, std::move(value));
    }

    const RenderOptions& m_options;
    std::vector<ValueDict> m_scopes;
    size_t m_frameBase = 1;  // lookups see m_scopes[m_frameBase..] and then m_scopes[0]
    std::string m_out;
    Flow m_flow = Flow::Normal;
    int64_t m_steps = 0;
    int m_callDepth = 0;
    int m_loopDepth = 0;
};

Value Renderer::lookup(const std::string& name) const {
    for (size_t i = m_scopes.size(); i-- > m_frameBase;)
        if (const Value* v = m_scopes[i].find(name)) return *v;
    if (const Value* v = m_scopes[0].find(name)) return *v;
    static const std::vector<std::string> kGlobals = {"raise_exception", "namespace", "range",
                                                      "dict"};
    for (const auto& g : kGlobals)
        if (g == name) return Value::function(Function{name});
    if (name == "strftime_now" && m_options.now) return Value::function(Function{name});
    return Value::undefined(name);
}

Status Renderer::step(Location at) {
    if (++m_steps > m_options.maxSteps)
        return errorAt(at, "the template ran more than " + std::to_string(m_options.maxSteps) +
                               " steps; it is refused as a runaway");
    return {};
}

Status Renderer::append(Location at, const std::string& text) {
    if (m_out.size() + text.size() > m_options.maxOutputBytes)
        return errorAt(at, "the output grew past " + std::to_string(m_options.maxOutputBytes) +
                               " bytes; it is refused as a runaway");
    m_out += text;
    return {};
}

Status Renderer::renderBody(const ast::Body& body) {
    for (const auto& stmt : body) {
        if (Status s = renderStatement(*stmt); !s) return s;
        if (m_flow != Flow::Normal) return {};
    }
    return {};
}

Status Renderer::renderStatement(const Stmt& stmt) {
    if (Status s = step(stmt.at); !s) return s;
    switch (stmt.kind) {
        case Stmt::Kind::Text:
            return append(stmt.at, stmt.text);
        case Stmt::Kind::Output: {
            auto v = eval(*stmt.expr);
            if (!v) return v.error();
            return append(stmt.at, toStr(*v));
        }
        case Stmt::Kind::If:
            for (size_t i = 0; i < stmt.conditions.size(); ++i) {
                auto c = eval(*stmt.conditions[i]);
                if (!c) return c.error();
                if (truthy(*c)) return renderBody(stmt.bodies[i]);
            }
            if (stmt.bodies.size() > stmt.conditions.size()) return renderBody(stmt.bodies.back());
            return {};
        case Stmt::Kind::For:
            return renderFor(stmt);
        case Stmt::Kind::Set:
            return renderSet(stmt);
        case Stmt::Kind::SetBlock: {
            std::string saved = std::move(m_out);
            m_out.clear();
            Status s = renderBody(stmt.bodies[0]);
            std::string captured = std::move(m_out);
            m_out = std::move(saved);
            if (!s) return s;
            assign(stmt.targets[0], Value::string(std::move(captured)));
            return {};
        }
        case Stmt::Kind::Macro:
            assign(stmt.name, Value::function(Function{stmt.name, &stmt}));
            return {};
        case Stmt::Kind::Break:
        case Stmt::Kind::Continue:
            if (m_loopDepth == 0)
                return errorAt(stmt.at,
                               std::string("'") +
                                   (stmt.kind == Stmt::Kind::Break ? "break" : "continue") +
                                   "' outside a for loop");
            m_flow = stmt.kind == Stmt::Kind::Break ? Flow::Break : Flow::Continue;
            return {};
        case Stmt::Kind::Generation:
            return renderBody(stmt.bodies[0]);
    }
    return {};
}

Status Renderer::bindTargets(const Stmt& stmt, const std::vector<std::string>& targets,
                             const Value& value) {
    if (targets.size() == 1) {
        assign(targets[0], value);
        return {};
    }
    auto items = iterate(value);
    if (!items) return errorAt(stmt.at, "cannot unpack: " + items.error().message);
    if (items->size() != targets.size())
        return errorAt(stmt.at, "cannot unpack " + std::to_string(items->size()) + " values into " +
                                    std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i) assign(targets[i], (*items)[i]);
    return {};
}

Status Renderer::renderFor(const Stmt& stmt) {
    auto iterable = eval(*stmt.expr);
    if (!iterable) return iterable.error();
    auto all = iterate(*iterable);
    if (!all) return errorAt(stmt.expr->at, all.error().message);
    m_scopes.emplace_back();
    struct ScopeGuard {
        std::vector<ValueDict>& scopes;
        int& depth;
        ~ScopeGuard() {
            scopes.pop_back();
            --depth;
        }
    } guard{m_scopes, ++m_loopDepth};
    ValueList items;
    if (stmt.condition) {
        for (const Value& item : *all) {
            if (Status s = step(stmt.at); !s) return s;
            if (Status s = bindTargets(stmt, stmt.targets, item); !s) return s;
            auto keep = eval(*stmt.condition);
            if (!keep) return keep.error();
            if (truthy(*keep)) items.push_back(item);
        }
    } else {
        items = std::move(*all);
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
        if (Status s = step(stmt.at); !s) return s;
        const auto k = static_cast<size_t>(i);
        ValueDict loop;
        loop.set("index", Value::integer(i + 1));
        loop.set("index0", Value::integer(i));
        loop.set("revindex", Value::integer(n - i));
        loop.set("revindex0", Value::integer(n - i - 1));
        loop.set("first", Value::boolean(i == 0));
        loop.set("last", Value::boolean(i == n - 1));
        loop.set("length", Value::integer(n));
        loop.set("depth", Value::integer(1));
        loop.set("depth0", Value::integer(0));
        loop.set("previtem", i > 0 ? items[k - 1] : Value::undefined("loop.previtem"));
        loop.set("nextitem", i + 1 < n ? items[k + 1] : Value::undefined("loop.nextitem"));
        assign("loop", Value::dict(std::move(loop)));
        if (Status s = bindTargets(stmt, stmt.targets, items[k]); !s) return s;
        if (Status s = renderBody(stmt.bodies[0]); !s) return s;
        const Flow flow = m_flow;
        m_flow = Flow::Normal;
        if (flow == Flow::Break) break;
    }
    if (n == 0 && stmt.bodies.size() > 1) return renderBody(stmt.bodies[1]);
    return {};
}

Status Renderer::renderSet(const Stmt& stmt) {
    auto value = eval(*stmt.expr);
    if (!value) return value.error();
    if (stmt.attribute.empty()) return bindTargets(stmt, stmt.targets, *value);
    const Value target = lookup(stmt.targets[0]);
    if (target.kind() != Value::Kind::Namespace)
        return errorAt(stmt.at, "cannot set the attribute '" + stmt.attribute + "' of '" +
                                    stmt.targets[0] + "', a " + kindName(target) +
                                    "; only a namespace() takes attributes");
    if (holdsNamespace(*value))
        return errorAt(stmt.at, "a namespace cannot hold a namespace (the attribute '" +
                                    stmt.attribute + "')");
    target.namespaceDict().set(stmt.attribute, std::move(*value));
    return {};
}

Result<Value> Renderer::eval(const Expr& e) {
    auto v = evalNode(e);
    if (v && v->weight() > m_options.maxOutputBytes)
        return errorAt(e.at, "the value grew past " + std::to_string(m_options.maxOutputBytes) +
                                 " bytes; refused as a runaway");
    if (v && v->depth() > kMaxNesting)
        return errorAt(e.at, "lists and dicts nest deeper than " + std::to_string(kMaxNesting) +
                                 " levels; refused as a runaway");
    return v;
}

Result<Value> Renderer::evalNode(const Expr& e) {
    switch (e.kind) {
        case Expr::Kind::Literal:
            return e.literal;
        case Expr::Kind::Name:
            return lookup(e.name);
        case Expr::Kind::List: {
            ValueList items;
            for (const auto& a : e.args) {
                auto v = eval(*a);
                if (!v) return v;
                items.push_back(std::move(*v));
            }
            return Value::list(std::move(items));
        }
        case Expr::Kind::Dict: {
            ValueDict dict;
            for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
                auto k = eval(*e.args[i]);
                if (!k) return k;
                if (!k->isString())
                    return errorAt(e.args[i]->at,
                                   "dict keys must be strings here, not a " + kindName(*k));
                auto v = eval(*e.args[i + 1]);
                if (!v) return v;
                dict.set(k->asString(), std::move(*v));
            }
            return Value::dict(std::move(dict));
        }
        case Expr::Kind::Attribute:
            return evalAttribute(e);
        case Expr::Kind::Subscript:
            return evalSubscript(e);
        case Expr::Kind::Slice:
            return evalSlice(e);
        case Expr::Kind::Call:
            return evalCall(e);
        case Expr::Kind::Filter: {
            auto input = eval(*e.args[0]);
            if (!input) return input;
            auto args = evalArguments(e, 1);
            if (!args) return args.error();
            auto r = applyFilter(e.name, *input, *args);
            if (!r) return errorAt(e.at, "the filter '" + e.name + "': " + r.error().message);
            if (r->isString() && r->asString().size() > m_options.maxOutputBytes)
                return errorAt(e.at, "the filter '" + e.name + "' made a string too long");
            return r;
        }
        case Expr::Kind::Test: {
            auto input = eval(*e.args[0]);
            if (!input) return input;
            auto args = evalArguments(e, 1);
            if (!args) return args.error();
            auto r = applyTest(e.name, *input, *args);
            if (!r) return errorAt(e.at, "the test '" + e.name + "': " + r.error().message);
            return Value::boolean(*r != e.negated);
        }
        case Expr::Kind::Not: {
            auto v = eval(*e.args[0]);
            if (!v) return v;
            return Value::boolean(!truthy(*v));
        }
        case Expr::Kind::Negate:
        case Expr::Kind::Plus: {
            auto v = eval(*e.args[0]);
            if (!v) return v;
            if (v->kind() == Value::Kind::Bool) v = Value::integer(v->asBool());
            if (!v->isNumber())
                return errorAt(e.at, "a " + kindName(*v) + " has no sign to change");
            if (e.kind == Expr::Kind::Plus) return v;
            if (v->kind() == Value::Kind::Float) return Value::number(-v->asFloat());
            if (v->asInt() == std::numeric_limits<int64_t>::min())
                return errorAt(e.at, "the integer overflows 64 bits");
            return Value::integer(-v->asInt());
        }
        case Expr::Kind::Binary:
            return evalBinary(e);
        case Expr::Kind::Compare:
            return evalCompare(e);
        case Expr::Kind::Conditional: {
            auto c = eval(*e.args[0]);
            if (!c) return c;
            if (truthy(*c)) return eval(*e.args[1]);
            if (e.args[2]) return eval(*e.args[2]);
            return Value::undefined("the else branch");
        }
    }
    return errorAt(e.at, "unknown expression");
}

Result<Value> Renderer::evalAttribute(const Expr& e) {
    auto object = eval(*e.args[0]);
    if (!object) return object;
    if (object->isUndefined())
        return errorAt(e.at, "'" + object->asString() + "' is undefined, so it has no attribute '" +
                                 e.name + "'");
    if (object->isDict() || object->kind() == Value::Kind::Namespace) {
        if (const Value* v = object->asDict().find(e.name)) return *v;
    }
    return Value::undefined(e.name);
}

Result<Value> Renderer::evalSubscript(const Expr& e) {
    auto object = eval(*e.args[0]);
    if (!object) return object;
    auto key = eval(*e.args[1]);
    if (!key) return key;
    if (object->isUndefined())
        return errorAt(
            e.at, "'" + object->asString() + "' is undefined, so it has no item " + repr(*key));
    const std::string missing = toStr(*key);
    if ((object->isDict() || object->kind() == Value::Kind::Namespace) && key->isString()) {
        if (const Value* v = object->asDict().find(key->asString())) return *v;
        return Value::undefined(missing);
    }
    if ((object->isList() || object->isString()) &&
        (key->kind() == Value::Kind::Int || key->kind() == Value::Kind::Bool)) {
        const int64_t raw = key->kind() == Value::Kind::Int ? key->asInt() : key->asBool();
        if (object->isList()) {
            const auto n = static_cast<int64_t>(object->asList().size());
            const int64_t i = raw < 0 ? raw + n : raw;
            if (i < 0 || i >= n) return Value::undefined(missing);
            return object->asList()[static_cast<size_t>(i)];
        }
        const auto offsets = codePointOffsets(object->asString());
        const auto n = static_cast<int64_t>(offsets.size()) - 1;
        const int64_t i = raw < 0 ? raw + n : raw;
        if (i < 0 || i >= n) return Value::undefined(missing);
        const auto k = static_cast<size_t>(i);
        return Value::string(object->asString().substr(offsets[k], offsets[k + 1] - offsets[k]));
    }
    return Value::undefined(missing);
}

Result<Value> Renderer::evalSlice(const Expr& e) {
    auto object = eval(*e.args[0]);
    if (!object) return object;
    int64_t bounds[3] = {0, 0, 1};
    bool given[3] = {false, false, false};
    for (size_t i = 0; i < 3; ++i) {
        if (!e.args[i + 1]) continue;
        auto v = eval(*e.args[i + 1]);
        if (!v) return v;
        if (v->isNone()) continue;
        if (v->kind() != Value::Kind::Int)
            return errorAt(e.args[i + 1]->at,
                           "slice bounds must be integers or none, not a " + kindName(*v));
        bounds[i] = v->asInt();
        given[i] = true;
    }
    const int64_t stride = bounds[2];
    if (stride == 0) return errorAt(e.at, "a slice step cannot be zero");
    if (object->isUndefined())
        return errorAt(e.at, "'" + object->asString() + "' is undefined, so it cannot be sliced");
    if (!object->isList() && !object->isString())
        return errorAt(e.at, "a " + kindName(*object) + " cannot be sliced");
    const std::vector<size_t> offsets =
        object->isString() ? codePointOffsets(object->asString()) : std::vector<size_t>{};
    const int64_t n = object->isList() ? static_cast<int64_t>(object->asList().size())
                                       : static_cast<int64_t>(offsets.size()) - 1;
    // Python's slice.indices().
    const auto clamp = [&](int64_t v, bool isGiven, int64_t dflt) {
        if (!isGiven) return dflt;
        if (v < 0) v = std::max<int64_t>(v, -n - 1) + n;
        if (stride > 0) return std::min(std::max<int64_t>(v, 0), n);
        return std::min(std::max<int64_t>(v, -1), n - 1);
    };
    const int64_t start = clamp(bounds[0], given[0], stride > 0 ? 0 : n - 1);
    const int64_t stop = clamp(bounds[1], given[1], stride > 0 ? n : -1);
    ValueList items;
    std::string text;
    for (int64_t i = start; stride > 0 ? i < stop : i > stop; i += stride) {
        const auto k = static_cast<size_t>(i);
        if (object->isList())
            items.push_back(object->asList()[k]);
        else
            text += object->asString().substr(offsets[k], offsets[k + 1] - offsets[k]);
        if (stride > 0 ? i > std::numeric_limits<int64_t>::max() - stride
                       : i < std::numeric_limits<int64_t>::min() - stride)
            break;
    }
    if (object->isList()) return Value::list(std::move(items));
    return Value::string(std::move(text));
}

Result<Arguments> Renderer::evalArguments(const Expr& e, size_t firstArg) {
    Arguments args;
    for (size_t i = firstArg; i < e.args.size(); ++i) {
        auto v = eval(*e.args[i]);
        if (!v) return v.error();
        args.positional.push_back(std::move(*v));
    }
    for (const auto& [name, expr] : e.kwargs) {
        auto v = eval(*expr);
        if (!v) return v.error();
        args.keyword.emplace_back(name, std::move(*v));
    }
    return args;
}

Result<Value> Renderer::evalCall(const Expr& e) {
    const Expr& callee = *e.args[0];
    if (callee.kind == Expr::Kind::Attribute) {
        auto object = eval(*callee.args[0]);
        if (!object) return object;
        if (hasMethod(*object, callee.name)) {
            auto args = evalArguments(e, 1);
            if (!args) return args.error();
            auto r = callMethod(*object, callee.name, *args);
            if (!r) return errorAt(e.at, "." + callee.name + "(): " + r.error().message);
            return r;
        }
        if (object->isUndefined())
            return errorAt(callee.at, "'" + object->asString() +
                                          "' is undefined, so it has no "
                                          "method '" +
                                          callee.name + "'");
        const Value* attr = nullptr;
        if (object->isDict() || object->kind() == Value::Kind::Namespace)
            attr = object->asDict().find(callee.name);
        if (!attr || attr->kind() != Value::Kind::Function)
            return errorAt(callee.at, "the method '" + callee.name + "' of a " + kindName(*object) +
                                          " is not supported");
    }
    auto f = eval(callee);
    if (!f) return f;
    if (f->kind() != Value::Kind::Function) {
        if (f->isUndefined())
            return errorAt(callee.at,
                           "'" + f->asString() + "' is undefined, so it cannot be called");
        return errorAt(callee.at, "a " + kindName(*f) + " cannot be called");
    }
    auto args = evalArguments(e, 1);
    if (!args) return args.error();
    const Function& fn = f->asFunction();
    if (fn.macro) return callMacro(e, *static_cast<const Stmt*>(fn.macro), *args);
    return callBuiltin(e, fn.name, *args);
}

Result<Value> Renderer::callBuiltin(const Expr& e, const std::string& name, const Arguments& args) {
    if (name == "raise_exception")
        return errorAt(e.at, "the template raised an error: " + toStr(args.get(0, "message")));
    if (name == "namespace" || name == "dict") {
        ValueDict dict;
        for (const Value& p : args.positional) {
            if (!p.isDict()) return errorAt(e.at, name + "() takes a dict or keyword arguments");
            for (const auto& [k, v] : p.asDict().items()) dict.set(k, v);
        }
        for (const auto& [k, v] : args.keyword) dict.set(k, v);
        if (name == "namespace")
            for (const auto& [k, v] : dict.items())
                if (holdsNamespace(v))
                    return errorAt(
                        e.at, "a namespace cannot hold a namespace (the attribute '" + k + "')");
        return name == "dict" ? Value::dict(std::move(dict))
                              : Value::makeNamespace(std::move(dict));
    }
    if (name == "range") {
        int64_t bounds[3] = {0, 0, 1};
        if (args.positional.empty() || args.positional.size() > 3 || !args.keyword.empty())
            return errorAt(e.at, "range() takes one to three integers");
        for (size_t i = 0; i < args.positional.size(); ++i) {
            if (args.positional[i].kind() != Value::Kind::Int)
                return errorAt(e.at,
                               "range() takes integers, not a " + kindName(args.positional[i]));
        }
        if (args.positional.size() == 1) bounds[1] = args.positional[0].asInt();
        for (size_t i = 0; i < args.positional.size() && args.positional.size() > 1; ++i)
            bounds[i] = args.positional[i].asInt();
        if (bounds[2] == 0) return errorAt(e.at, "range() step cannot be zero");
        const double count =
            std::ceil((static_cast<double>(bounds[1]) - static_cast<double>(bounds[0])) /
                      static_cast<double>(bounds[2]));
        if (count > static_cast<double>(kMaxRange))
            return errorAt(e.at, "range() of more than " + std::to_string(kMaxRange) +
                                     " numbers is refused as a runaway");
        ValueList items;
        for (int64_t i = bounds[0]; bounds[2] > 0 ? i < bounds[1] : i > bounds[1];) {
            if (Status s = step(e.at); !s) return s.error();
            items.push_back(Value::integer(i));
            if (bounds[2] > 0 ? i > std::numeric_limits<int64_t>::max() - bounds[2]
                              : i < std::numeric_limits<int64_t>::min() - bounds[2])
                break;
            i += bounds[2];
        }
        return Value::list(std::move(items));
    }
    if (name == "strftime_now" && m_options.now) {
        const Value& format = args.get(0, "format");
        if (!format.isString() || format.asString().size() > 256)
            return errorAt(e.at, "strftime_now() takes a format string (of at most 256 bytes)");
        const std::string& f = format.asString();
        for (size_t i = 0; i < f.size(); ++i)
            if (f[i] == '%' &&
                (i + 1 >= f.size() ||
                 std::string_view("aAbBdHIjmMpSyYZz%eF").find(f[++i]) == std::string_view::npos))
                return errorAt(e.at, "strftime_now(): the format '" + f +
                                         "' holds a directive that is not supported");
        const std::time_t t = static_cast<std::time_t>(*m_options.now);
        std::tm tm{};
        gmtime_r(&t, &tm);
        std::string out(f.size() * 16 + 64, '\0');
        out.resize(std::strftime(out.data(), out.size(), f.c_str(), &tm));
        return Value::string(std::move(out));
    }
    return errorAt(e.at, "the function '" + name + "' is not supported");
}

Result<Value> Renderer::callMacro(const Expr& e, const Stmt& macro, const Arguments& args) {
    if (m_callDepth >= m_options.maxCallDepth)
        return errorAt(e.at,
                       "macro calls nest deeper than " + std::to_string(m_options.maxCallDepth));
    if (args.positional.size() > macro.targets.size())
        return errorAt(e.at, "the macro '" + macro.name + "' takes " +
                                 std::to_string(macro.targets.size()) + " arguments, not " +
                                 std::to_string(args.positional.size()));
    for (const auto& [k, v] : args.keyword)
        if (std::find(macro.targets.begin(), macro.targets.end(), k) == macro.targets.end())
            return errorAt(e.at, "the macro '" + macro.name + "' has no parameter '" + k + "'");
    const size_t savedBase = m_frameBase;
    const size_t savedScopes = m_scopes.size();
    const int savedLoopDepth = m_loopDepth;
    std::string savedOut = std::move(m_out);
    m_out.clear();
    m_frameBase = m_scopes.size();
    m_scopes.emplace_back();
    m_loopDepth = 0;
    ++m_callDepth;
    Status status;
    for (size_t i = 0; i < macro.targets.size() && status; ++i) {
        const Value* kw = nullptr;
        for (const auto& [k, v] : args.keyword)
            if (k == macro.targets[i]) kw = &v;
        if (i < args.positional.size()) {
            assign(macro.targets[i], args.positional[i]);
        } else if (kw) {
            assign(macro.targets[i], *kw);
        } else if (macro.defaults[i]) {
            auto v = eval(*macro.defaults[i]);
            if (!v)
                status = v.error();
            else
                assign(macro.targets[i], std::move(*v));
        } else {
            assign(macro.targets[i], Value::undefined(macro.targets[i]));
        }
    }
    if (status) status = renderBody(macro.bodies[0]);
    --m_callDepth;
    m_loopDepth = savedLoopDepth;
    m_flow = Flow::Normal;
    m_scopes.resize(savedScopes);
    m_frameBase = savedBase;
    std::string result = std::move(m_out);
    m_out = std::move(savedOut);
    if (!status) return status.error();
    return Value::string(std::move(result));
}

Result<Value> Renderer::evalBinary(const Expr& e) {
    auto a = eval(*e.args[0]);
    if (!a) return a;
    if (e.name == "and") return truthy(*a) ? eval(*e.args[1]) : a;
    if (e.name == "or") return truthy(*a) ? a : eval(*e.args[1]);
    auto b = eval(*e.args[1]);
    if (!b) return b;
    if (e.name == "~") {
        std::string s = toStr(*a) + toStr(*b);
        if (s.size() > m_options.maxOutputBytes) return errorAt(e.at, "the string grew too long");
        return Value::string(std::move(s));
    }
    return evalArithmetic(e, *a, *b);
}

Result<Value> Renderer::evalArithmetic(const Expr& e, const Value& a0, const Value& b0) {
    const std::string& op = e.name;
    const auto asNumber = [](const Value& v) {
        return v.kind() == Value::Kind::Bool ? Value::integer(v.asBool()) : v;
    };
    const Value a = asNumber(a0);
    const Value b = asNumber(b0);
    const auto cannot = [&]() -> Result<Value> {
        return errorAt(e.at,
                       "cannot apply '" + op + "' to a " + kindName(a0) + " and a " + kindName(b0));
    };
    if (op == "+" && a.isString() && b.isString()) {
        if (a.asString().size() + b.asString().size() > m_options.maxOutputBytes)
            return errorAt(e.at, "the string grew too long");
        return Value::string(a.asString() + b.asString());
    }
    if (op == "+" && a.isList() && b.isList()) {
        ValueList items = a.asList();
        items.insert(items.end(), b.asList().begin(), b.asList().end());
        if (Status s = step(e.at); !s) return s.error();
        return Value::list(std::move(items));
    }
    if (op == "*" && (a.isString() || a.isList() || b.isString() || b.isList())) {
        const Value& seq = a.isString() || a.isList() ? a : b;
        const Value& count = a.isString() || a.isList() ? b : a;
        if (count.kind() != Value::Kind::Int) return cannot();
        const int64_t times = std::max<int64_t>(count.asInt(), 0);
        const uint64_t unit = seq.weight();
        if (unit > 0 && static_cast<uint64_t>(times) > m_options.maxOutputBytes / unit)
            return errorAt(e.at, "the repetition makes a value too long");
        if (seq.isString()) {
            std::string out;
            for (int64_t i = 0; i < times; ++i) out += seq.asString();
            return Value::string(std::move(out));
        }
        ValueList items;
        for (int64_t i = 0; i < times; ++i)
            items.insert(items.end(), seq.asList().begin(), seq.asList().end());
        return Value::list(std::move(items));
    }
    if (op == "%" && a.isString())
        return errorAt(e.at, "string formatting with '%' is not supported");
    if (!a.isNumber() || !b.isNumber()) return cannot();
    if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int && op != "/" && op != "**") {
        const int64_t x = a.asInt();
        const int64_t y = b.asInt();
        int64_t r = 0;
        bool overflow = false;
        if (op == "+")
            overflow = __builtin_add_overflow(x, y, &r);
        else if (op == "-")
            overflow = __builtin_sub_overflow(x, y, &r);
        else if (op == "*")
            overflow = __builtin_mul_overflow(x, y, &r);
        else {
            if (y == 0) return errorAt(e.at, "division by zero");
            if (x == std::numeric_limits<int64_t>::min() && y == -1)
                overflow = true;
            else {
                // Python floors: the quotient rounds down, the remainder takes y's sign.
                int64_t q = x / y;
                int64_t m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) {
                    --q;
                    m += y;
                }
                r = op == "//" ? q : m;
            }
        }
        if (overflow) return errorAt(e.at, "the integer overflows 64 bits");
        return Value::integer(r);
    }
    const double x = a.asFloat();
    const double y = b.asFloat();
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "**") {
        const double r = std::pow(x, y);
        if (a.kind() == Value::Kind::Int && b.kind() == Value::Kind::Int && b.asInt() >= 0) {
            if (std::fabs(r) >= 9.2e18) return errorAt(e.at, "the integer overflows 64 bits");
            int64_t acc = 1;
            for (int64_t i = 0; i < b.asInt(); ++i) {
                if (__builtin_mul_overflow(acc, a.asInt(), &acc))
                    return errorAt(e.at, "the integer overflows 64 bits");
                if (acc == 0 || acc == 1) break;
            }
            return Value::integer(acc);
        }
        return Value::number(r);
    }
    if (y == 0.0) return errorAt(e.at, "division by zero");
    if (op == "/") return Value::number(x / y);
    if (op == "//") return Value::number(std::floor(x / y));
    double m = std::fmod(x, y);
    if (m != 0.0 && ((m < 0) != (y < 0))) m += y;
    return Value::number(m);
}

Result<Value> Renderer::evalCompare(const Expr& e) {
    auto left = eval(*e.args[0]);
    if (!left) return left;
    for (size_t i = 0; i < e.ops.size(); ++i) {
        auto right = eval(*e.args[i + 1]);
        if (!right) return right;
        const std::string& op = e.ops[i];
        Result<bool> r = false;
        if (op == "==")
            r = equal(*left, *right);
        else if (op == "!=")
            r = !equal(*left, *right);
        else if (op == "in" || op == "not in") {
            r = contains(*right, *left);
            if (r && op == "not in") r = !*r;
        } else if (op == "<")
            r = lessThan(*left, *right);
        else if (op == ">")
            r = lessThan(*right, *left);
        else if (op == "<=") {
            r = lessThan(*right, *left);
            if (r) r = !*r;
        } else {
            r = lessThan(*left, *right);
            if (r) r = !*r;
        }
        if (!r) return errorAt(e.at, r.error().message);
        if (!*r) return Value::boolean(false);
        left = std::move(right);
    }
    return Value::boolean(true);
}

}  // namespace

Result<std::string> render(const ast::Body& body, const ValueDict& context,
                           const RenderOptions& options) {
    return Renderer(context, options).run(body);
}

}  // namespace ws::chat::jinja
