// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja front door: see jinja.h.
#include "engine/chat/jinja.h"

#include <nlohmann/json.hpp>

#include "engine/chat/jinja_parser.h"

namespace ws::chat::jinja {

Result<Template> Template::parse(std::string_view source, const LexOptions& options) {
    auto pieces = lex(source, options);
    if (!pieces) return pieces.error();
    auto body = jinja::parse(*pieces);
    if (!body) return body.error();
    Template t;
    t.m_body = std::make_shared<const ast::Body>(std::move(*body));
    return t;
}

Result<std::string> Template::render(const ValueDict& context, const RenderOptions& options) const {
    return jinja::render(*m_body, context, options);
}

namespace {

Result<Value> fromJson(const nlohmann::ordered_json& j, int depth) {
    if (depth > 512) return Error{"the JSON nests deeper than 512 levels"};
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value::boolean(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value::integer(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<uint64_t>();
            if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
            return Value::integer(static_cast<int64_t>(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value::number(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value::string(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            ValueList items;
            for (const auto& item : j) {
                auto v = fromJson(item, depth + 1);
                if (!v) return v;
                items.push_back(std::move(*v));
            }
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            ValueDict dict;
            for (const auto& [k, v] : j.items()) {
                auto item = fromJson(v, depth + 1);
                if (!item) return item;
                dict.set(k, std::move(*item));
            }
            return Value::dict(std::move(dict));
        }
        default:
            return Value::none();
    }
}

}  // namespace

Result<Value> valueFromJson(std::string_view json) {
    auto j = nlohmann::ordered_json::parse(json, nullptr, false);
    if (j.is_discarded()) return Error{"the JSON does not parse"};
    return fromJson(j, 0);
}

}  // namespace ws::chat::jinja
