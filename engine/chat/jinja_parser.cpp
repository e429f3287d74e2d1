// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja parser: see jinja_parser.h. A recursive-descent parser over one tag's tokens at a
// time (TagCursor) inside a loop over the pieces (Parser::parseBody).
#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <set>
#include <string>

#include "engine/chat/jinja_builtins.h"

namespace ws::chat::jinja {

namespace {

using ast::Expr;
using ast::ExprPtr;
using ast::Stmt;
using ast::StmtPtr;

ExprPtr makeExpr(Expr::Kind kind, Location at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    return e;
}

// The tokens of one tag, consumed left to right.
class TagCursor {
public:
    TagCursor(const Piece& piece) : m_piece(piece) {}

    bool atEnd() const { return m_index >= m_piece.tokens.size(); }
    const Token* peek(size_t ahead = 0) const {
        return m_index + ahead < m_piece.tokens.size() ? &m_piece.tokens[m_index + ahead] : nullptr;
    }
    const Token& next() { return m_piece.tokens[m_index++]; }
    Location here() const { return atEnd() ? m_piece.end : peek()->at; }
    bool isOp(std::string_view op, size_t ahead = 0) const {
        const Token* t = peek(ahead);
        return t && t->kind == Token::Kind::Operator && t->text == op;
    }
    bool isName(std::string_view name, size_t ahead = 0) const {
        const Token* t = peek(ahead);
        return t && t->kind == Token::Kind::Name && t->text == name;
    }
    bool skipOp(std::string_view op) {
        if (!isOp(op)) return false;
        ++m_index;
        return true;
    }
    bool skipName(std::string_view name) {
        if (!isName(name)) return false;
        ++m_index;
        return true;
    }
    std::string describeNext() const {
        if (atEnd()) return "the end of the tag";
        const Token& t = *peek();
        if (t.kind == Token::Kind::String) return "a string";
        return "'" + t.text + "'";
    }
    Error expected(const std::string& what) const {
        return Error{describe(here()) + ": expected " + what + ", found " + describeNext()};
    }
    Status expectOp(std::string_view op) {
        if (skipOp(op)) return {};
        return expected("'" + std::string(op) + "'");
    }
    Result<std::string> expectName(const std::string& what) {
        if (atEnd() || peek()->kind != Token::Kind::Name) return expected(what);
        return next().text;
    }
    Status expectEnd() {
        if (atEnd()) return {};
        return expected("the end of the tag");
    }

private:
    const Piece& m_piece;
    size_t m_index = 0;
};

// Expressions, with Jinja2's precedence: condexpr < or < and < not < compare < + - < ~ <
// * / // % < ** < unary < primary with postfix (. [] ()) and filter/test/call chains.
class ExprParser {
public:
    explicit ExprParser(TagCursor& cursor) : m_cur(cursor) {}

    Result<ExprPtr> parseTuple(bool withCondexpr);
    Result<ExprPtr> parseExpression(bool withCondexpr = true);

private:
    struct DepthGuard {
        int& depth;
        explicit DepthGuard(int& d) : depth(d) { ++depth; }
        ~DepthGuard() { --depth; }
    };
    Result<ExprPtr> parseOr();
    Result<ExprPtr> parseAnd();
    Result<ExprPtr> parseLogical(const char* keyword, Result<ExprPtr> (ExprParser::*operand)());
    Result<ExprPtr> parseNot();
    Result<ExprPtr> parseCompare();
    Result<ExprPtr> parseBinary(int level);
    Result<ExprPtr> parseUnary(bool withFilter);
    Result<ExprPtr> parsePrimary();
    Result<ExprPtr> parsePostfix(ExprPtr node);
    Result<ExprPtr> parseFilterExpr(ExprPtr node);
    Result<ExprPtr> parseSubscript(ExprPtr node);
    Status parseCallArgs(Expr& node);
    Result<ExprPtr> parseListOrDict(bool dict, Location at);

    TagCursor& m_cur;
    int m_depth = 0;
};

Result<ExprPtr> ExprParser::parseTuple(bool withCondexpr) {
    const Location at = m_cur.here();
    auto first = parseExpression(withCondexpr);
    if (!first || !m_cur.isOp(",")) return first;
    auto tuple = makeExpr(Expr::Kind::List, at);
    tuple->args.push_back(std::move(*first));
    while (m_cur.skipOp(",")) {
        if (m_cur.atEnd() || m_cur.isOp(")")) break;
        auto item = parseExpression(withCondexpr);
        if (!item) return item;
        tuple->args.push_back(std::move(*item));
    }
    return tuple;
}

Result<ExprPtr> ExprParser::parseExpression(bool withCondexpr) {
    DepthGuard guard(m_depth);
    if (m_depth > kMaxDepth)
        return Error{describe(m_cur.here()) + ": the expression nests deeper than " +
                     std::to_string(kMaxDepth) + " levels"};
    auto node = parseOr();
    if (!node || !withCondexpr) return node;
    ExprPtr result = std::move(*node);
    while (m_cur.isName("if")) {
        const Location at = m_cur.here();
        m_cur.next();
        auto condition = parseOr();
        if (!condition) return condition;
        auto conditional = makeExpr(Expr::Kind::Conditional, at);
        conditional->args.push_back(std::move(*condition));
        conditional->args.push_back(std::move(result));
        if (m_cur.skipName("else")) {
            auto otherwise = parseExpression(true);
            if (!otherwise) return otherwise;
            conditional->args.push_back(std::move(*otherwise));
        } else {
            conditional->args.push_back(nullptr);
        }
        result = std::move(conditional);
    }
    return result;
}

Result<ExprPtr> ExprParser::parseOr() {
    return parseLogical("or", &ExprParser::parseAnd);
}

Result<ExprPtr> ExprParser::parseAnd() {
    return parseLogical("and", &ExprParser::parseNot);
}

// operand (keyword operand)*, left-associative.
Result<ExprPtr> ExprParser::parseLogical(const char* keyword,
                                         Result<ExprPtr> (ExprParser::*operand)()) {
    auto left = (this->*operand)();
    while (left && m_cur.isName(keyword)) {
        auto node = makeExpr(Expr::Kind::Binary, m_cur.here());
        node->name = m_cur.next().text;
        auto right = (this->*operand)();
        if (!right) return right;
        node->args.push_back(std::move(*left));
        node->args.push_back(std::move(*right));
        left = std::move(node);
    }
    return left;
}

Result<ExprPtr> ExprParser::parseNot() {
    if (m_cur.isName("not")) {
        const Location at = m_cur.here();
        m_cur.next();
        DepthGuard guard(m_depth);
        if (m_depth > kMaxDepth)
            return Error{describe(at) + ": the expression nests deeper than " +
                         std::to_string(kMaxDepth) + " levels"};
        auto operand = parseNot();
        if (!operand) return operand;
        auto node = makeExpr(Expr::Kind::Not, at);
        node->args.push_back(std::move(*operand));
        return node;
    }
    return parseCompare();
}

Result<ExprPtr> ExprParser::parseCompare() {
    const Location at = m_cur.here();
    auto first = parseBinary(0);
    if (!first) return first;
    ExprPtr compare;
    while (true) {
        std::string op;
        const Token* t = m_cur.peek();
        if (!t) break;
        if (t->kind == Token::Kind::Operator &&
            (t->text == "==" || t->text == "!=" || t->text == "<" || t->text == "<=" ||
             t->text == ">" || t->text == ">=")) {
            op = t->text;
            m_cur.next();
        } else if (m_cur.isName("in")) {
            op = "in";
            m_cur.next();
        } else if (m_cur.isName("not") && m_cur.isName("in", 1)) {
            op = "not in";
            m_cur.next();
            m_cur.next();
        } else {
            break;
        }
        if (!compare) {
            compare = makeExpr(Expr::Kind::Compare, at);
            compare->args.push_back(std::move(*first));
        }
        auto right = parseBinary(0);
        if (!right) return right;
        compare->ops.push_back(op);
        compare->args.push_back(std::move(*right));
    }
    if (compare) return compare;
    return first;
}

// Levels: 0 `+ -`, 1 `~`, 2 `* / // %`, 3 `**`; then unary.
Result<ExprPtr> ExprParser::parseBinary(int level) {
    static const std::vector<std::vector<std::string>> kLevels = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == 4) return parseUnary(true);
    auto left = parseBinary(level + 1);
    while (left) {
        const Token* t = m_cur.peek();
        if (!t || t->kind != Token::Kind::Operator) break;
        const auto& ops = kLevels[static_cast<size_t>(level)];
        if (std::find(ops.begin(), ops.end(), t->text) == ops.end()) break;
        auto node = makeExpr(Expr::Kind::Binary, t->at);
        node->name = m_cur.next().text;
        auto right = parseBinary(level + 1);
        if (!right) return right;
        node->args.push_back(std::move(*left));
        node->args.push_back(std::move(*right));
        left = std::move(node);
    }
    return left;
}

Result<ExprPtr> ExprParser::parseUnary(bool withFilter) {
    DepthGuard guard(m_depth);
    if (m_depth > kMaxDepth)
        return Error{describe(m_cur.here()) + ": the expression nests deeper than " +
                     std::to_string(kMaxDepth) + " levels"};
    Result<ExprPtr> node = Error{};
    const Location at = m_cur.here();
    if (m_cur.isOp("-") || m_cur.isOp("+")) {
        const bool negate = m_cur.next().text == "-";
        auto operand = parseUnary(false);
        if (!operand) return operand;
        auto unary = makeExpr(negate ? Expr::Kind::Negate : Expr::Kind::Plus, at);
        unary->args.push_back(std::move(*operand));
        node = std::move(unary);
    } else {
        node = parsePrimary();
    }
    if (!node) return node;
    node = parsePostfix(std::move(*node));
    if (!node || !withFilter) return node;
    return parseFilterExpr(std::move(*node));
}

Result<ExprPtr> ExprParser::parsePrimary() {
    if (m_cur.atEnd()) return m_cur.expected("an expression");
    const Token& t = m_cur.next();
    switch (t.kind) {
        case Token::Kind::Name: {
            auto node = makeExpr(Expr::Kind::Literal, t.at);
            if (t.text == "true" || t.text == "True")
                node->literal = Value::boolean(true);
            else if (t.text == "false" || t.text == "False")
                node->literal = Value::boolean(false);
            else if (t.text == "none" || t.text == "None")
                node->literal = Value::none();
            else {
                node->kind = Expr::Kind::Name;
                node->name = t.text;
            }
            return node;
        }
        case Token::Kind::String: {
            std::string text = t.text;
            while (m_cur.peek() && m_cur.peek()->kind == Token::Kind::String)
                text += m_cur.next().text;  // adjacent literals join, as in Python
            auto node = makeExpr(Expr::Kind::Literal, t.at);
            node->literal = Value::string(std::move(text));
            return node;
        }
        case Token::Kind::Int:
        case Token::Kind::Float: {
            auto node = makeExpr(Expr::Kind::Literal, t.at);
            node->literal = t.kind == Token::Kind::Int ? Value::integer(t.intValue)
                                                       : Value::number(t.floatValue);
            return node;
        }
        case Token::Kind::Operator:
            break;
    }
    if (t.text == "(") {
        if (m_cur.skipOp(")")) return makeExpr(Expr::Kind::List, t.at);  // ()
        auto inner = parseTuple(true);
        if (!inner) return inner;
        if (Status s = m_cur.expectOp(")"); !s) return s.error();
        return inner;
    }
    if (t.text == "[" || t.text == "{") return parseListOrDict(t.text == "{", t.at);
    return Error{describe(t.at) + ": expected an expression, found '" + t.text + "'"};
}

Result<ExprPtr> ExprParser::parseListOrDict(bool dict, Location at) {
    auto node = makeExpr(dict ? Expr::Kind::Dict : Expr::Kind::List, at);
    const char* close = dict ? "}" : "]";
    while (!m_cur.skipOp(close)) {
        if (!node->args.empty())
            if (Status s = m_cur.expectOp(","); !s) return s.error();
        if (m_cur.skipOp(close)) break;  // a trailing comma
        auto item = parseExpression(true);
        if (!item) return item;
        node->args.push_back(std::move(*item));
        if (dict) {
            if (Status s = m_cur.expectOp(":"); !s) return s.error();
            auto value = parseExpression(true);
            if (!value) return value;
            node->args.push_back(std::move(*value));
        }
    }
    return node;
}

Result<ExprPtr> ExprParser::parsePostfix(ExprPtr node) {
    while (true) {
        if (m_cur.isOp(".") || m_cur.isOp("[")) {
            auto next = parseSubscript(std::move(node));
            if (!next) return next;
            node = std::move(*next);
        } else if (m_cur.isOp("(")) {
            auto call = makeExpr(Expr::Kind::Call, node->at);
            call->args.push_back(std::move(node));
            if (Status s = parseCallArgs(*call); !s) return s.error();
            node = std::move(call);
        } else {
            return node;
        }
    }
}

Result<ExprPtr> ExprParser::parseSubscript(ExprPtr node) {
    const Location at = m_cur.here();
    if (m_cur.skipOp(".")) {
        const Token* t = m_cur.peek();
        if (t && t->kind == Token::Kind::Int) {
            auto sub = makeExpr(Expr::Kind::Subscript, at);
            auto index = makeExpr(Expr::Kind::Literal, t->at);
            index->literal = Value::integer(m_cur.next().intValue);
            sub->args.push_back(std::move(node));
            sub->args.push_back(std::move(index));
            return sub;
        }
        auto name = m_cur.expectName("an attribute name after '.'");
        if (!name) return name.error();
        auto attr = makeExpr(Expr::Kind::Attribute, at);
        attr->name = *name;
        attr->args.push_back(std::move(node));
        return attr;
    }
    m_cur.next();  // [
    std::vector<ExprPtr> parts(3);
    bool slice = false;
    for (size_t part = 0; part < 3; ++part) {
        if (!m_cur.isOp(":") && !m_cur.isOp("]")) {
            auto e = parseExpression(true);
            if (!e) return e;
            parts[part] = std::move(*e);
        }
        if (!m_cur.skipOp(":")) break;
        slice = true;
    }
    if (Status s = m_cur.expectOp("]"); !s) return s.error();
    if (!slice && !parts[0]) return Error{describe(at) + ": expected a subscript inside []"};
    auto sub = makeExpr(slice ? Expr::Kind::Slice : Expr::Kind::Subscript, at);
    sub->args.push_back(std::move(node));
    sub->args.push_back(std::move(parts[0]));
    if (slice) {
        sub->args.push_back(std::move(parts[1]));
        sub->args.push_back(std::move(parts[2]));
    }
    return sub;
}

// `(a, b, key=c)`; node.args already holds the callee or the filtered value.
Status ExprParser::parseCallArgs(Expr& node) {
    m_cur.next();  // (
    bool first = true;
    while (!m_cur.skipOp(")")) {
        if (!first)
            if (Status s = m_cur.expectOp(","); !s) return s;
        first = false;
        if (m_cur.skipOp(")")) break;
        if (m_cur.isOp("*") || m_cur.isOp("**"))
            return Error{describe(m_cur.here()) +
                         ": *args and **kwargs in calls are not supported"};
        const Token* t = m_cur.peek();
        if (t && t->kind == Token::Kind::Name && m_cur.isOp("=", 1)) {
            std::string key = m_cur.next().text;
            m_cur.next();
            auto value = parseExpression(true);
            if (!value) return value.error();
            node.kwargs.emplace_back(std::move(key), std::move(*value));
            continue;
        }
        if (!node.kwargs.empty())
            return Error{describe(m_cur.here()) +
                         ": a positional argument follows a keyword argument"};
        auto value = parseExpression(true);
        if (!value) return value.error();
        node.args.push_back(std::move(*value));
    }
    return {};
}

Result<ExprPtr> ExprParser::parseFilterExpr(ExprPtr node) {
    while (true) {
        if (m_cur.isOp("|")) {
            m_cur.next();
            const Location at = m_cur.here();
            auto name = m_cur.expectName("a filter name after '|'");
            if (!name) return name.error();
            while (m_cur.isOp(".") && m_cur.peek(1) && m_cur.peek(1)->kind == Token::Kind::Name) {
                m_cur.next();
                *name += "." + m_cur.next().text;
            }
            if (!isFilter(*name))
                return Error{describe(at) + ": the filter '" + *name + "' is not supported"};
            auto filter = makeExpr(Expr::Kind::Filter, at);
            filter->name = *name;
            filter->args.push_back(std::move(node));
            if (m_cur.isOp("("))
                if (Status s = parseCallArgs(*filter); !s) return s.error();
            node = std::move(filter);
        } else if (m_cur.isName("is")) {
            m_cur.next();
            auto test = makeExpr(Expr::Kind::Test, m_cur.here());
            test->negated = m_cur.skipName("not");
            const Location at = m_cur.here();
            auto name = m_cur.expectName("a test name after 'is'");
            if (!name) return name.error();
            if (!isTest(*name))
                return Error{describe(at) + ": the test '" + *name + "' is not supported"};
            test->name = *name;
            test->args.push_back(std::move(node));
            static const std::set<std::string> kNotArgument = {"else", "or", "and", "if",
                                                               "in",   "is", "not"};
            const Token* t = m_cur.peek();
            if (m_cur.isOp("(")) {
                if (Status s = parseCallArgs(*test); !s) return s.error();
            } else if (t && ((t->kind == Token::Kind::Name && !kNotArgument.count(t->text)) ||
                             t->kind == Token::Kind::String || t->kind == Token::Kind::Int ||
                             t->kind == Token::Kind::Float || m_cur.isOp("[") || m_cur.isOp("{"))) {
                auto arg = parsePrimary();
                if (!arg) return arg;
                auto post = parsePostfix(std::move(*arg));
                if (!post) return post;
                test->args.push_back(std::move(*post));
            }
            node = std::move(test);
        } else if (m_cur.isOp("(")) {
            auto call = makeExpr(Expr::Kind::Call, node->at);
            call->args.push_back(std::move(node));
            if (Status s = parseCallArgs(*call); !s) return s.error();
            node = std::move(call);
        } else {
            return node;
        }
    }
}

// An end tag ({% endif %} etc.) holds its keyword alone.
Status expectBareEnd(const Piece& piece) {
    TagCursor cur(piece);
    cur.next();
    return cur.expectEnd();
}

// The statements, over the pieces.
class Parser {
public:
    explicit Parser(const std::vector<Piece>& pieces) : m_pieces(pieces) {}

    Result<ast::Body> parseTemplate() {
        std::string end;
        auto body = parseBody({}, end);
        if (!body) return body;
        return body;
    }

private:
    // Parses statements until a tag whose keyword is one of `ends` (left for the caller, its
    // keyword in `found`, m_index at that piece); with no ends, to the end of the template.
    Result<ast::Body> parseBody(const std::vector<std::string>& ends, std::string& found);
    Result<StmtPtr> parseStatement(const Piece& piece);
    Result<StmtPtr> parseIf(TagCursor& cur, Location at);
    Result<StmtPtr> parseFor(TagCursor& cur, Location at);
    Result<StmtPtr> parseSet(TagCursor& cur, Location at);
    Result<StmtPtr> parseMacro(TagCursor& cur, Location at);
    // The body up to `end` (e.g. "endfor"), or up to one of `ends`.
    Result<ast::Body> parseBlock(const std::string& opener, Location at,
                                 const std::vector<std::string>& ends, std::string& found);

    const std::vector<Piece>& m_pieces;
    size_t m_index = 0;
    int m_depth = 0;
};

Result<ast::Body> Parser::parseBody(const std::vector<std::string>& ends, std::string& found) {
    ast::Body body;
    while (m_index < m_pieces.size()) {
        const Piece& piece = m_pieces[m_index];
        if (piece.kind == Piece::Kind::Text) {
            auto text = std::make_unique<Stmt>();
            text->kind = Stmt::Kind::Text;
            text->at = piece.at;
            text->text = piece.text;
            body.push_back(std::move(text));
            ++m_index;
            continue;
        }
        if (piece.kind == Piece::Kind::Expression) {
            TagCursor cur(piece);
            auto expr = ExprParser(cur).parseTuple(true);
            if (!expr) return expr.error();
            if (Status s = cur.expectEnd(); !s) return s.error();
            auto output = std::make_unique<Stmt>();
            output->kind = Stmt::Kind::Output;
            output->at = piece.at;
            output->expr = std::move(*expr);
            body.push_back(std::move(output));
            ++m_index;
            continue;
        }
        const Token* keyword = piece.tokens.empty() ? nullptr : &piece.tokens[0];
        if (keyword && keyword->kind == Token::Kind::Name &&
            std::find(ends.begin(), ends.end(), keyword->text) != ends.end()) {
            found = keyword->text;
            return body;
        }
        ++m_index;
        auto stmt = parseStatement(piece);
        if (!stmt) return stmt.error();
        body.push_back(std::move(*stmt));
    }
    if (!ends.empty()) found.clear();
    return body;
}

Result<ast::Body> Parser::parseBlock(const std::string& opener, Location at,
                                     const std::vector<std::string>& ends, std::string& found) {
    if (++m_depth > kMaxDepth) {
        --m_depth;
        return Error{describe(at) + ": blocks nest deeper than " + std::to_string(kMaxDepth) +
                     " levels"};
    }
    auto body = parseBody(ends, found);
    --m_depth;
    if (!body) return body;
    if (found.empty())
        return Error{describe(at) + ": the '" + opener + "' opened here is never closed (" +
                     ends.back() + ")"};
    return body;
}

Result<StmtPtr> Parser::parseStatement(const Piece& piece) {
    TagCursor cur(piece);
    const Location at = piece.at;
    if (cur.atEnd()) return Error{describe(at) + ": the statement tag {% %} is empty"};
    if (cur.peek()->kind != Token::Kind::Name)
        return Error{describe(cur.here()) + ": expected a statement name, found " +
                     cur.describeNext()};
    const std::string keyword = cur.next().text;
    auto simple = [&](Stmt::Kind kind) -> Result<StmtPtr> {
        if (Status s = cur.expectEnd(); !s) return s.error();
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = kind;
        stmt->at = at;
        return stmt;
    };
    if (keyword == "if") return parseIf(cur, at);
    if (keyword == "for") return parseFor(cur, at);
    if (keyword == "set") return parseSet(cur, at);
    if (keyword == "macro") return parseMacro(cur, at);
    if (keyword == "break") return simple(Stmt::Kind::Break);
    if (keyword == "continue") return simple(Stmt::Kind::Continue);
    if (keyword == "generation") {
        auto stmt = simple(Stmt::Kind::Generation);
        if (!stmt) return stmt;
        std::string found;
        auto body = parseBlock("generation", at, {"endgeneration"}, found);
        if (!body) return body.error();
        if (Status s = expectBareEnd(m_pieces[m_index++]); !s) return s.error();
        (*stmt)->bodies.push_back(std::move(*body));
        return stmt;
    }
    static const std::set<std::string> kKnown = {
        "include", "import", "from",  "extends", "block",      "call", "filter",
        "with",    "raw",    "trans", "do",      "autoescape", "print"};
    if (kKnown.count(keyword))
        return Error{describe(at) + ": the statement '" + keyword + "' is not supported"};
    if (keyword.rfind("end", 0) == 0 || keyword == "elif" || keyword == "else")
        return Error{describe(at) + ": '" + keyword + "' closes no open block"};
    return Error{describe(at) + ": unknown statement '" + keyword + "'"};
}

Result<StmtPtr> Parser::parseIf(TagCursor& cur, Location at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::If;
    stmt->at = at;
    auto condition = ExprParser(cur).parseTuple(true);
    if (!condition) return condition.error();
    if (Status s = cur.expectEnd(); !s) return s.error();
    stmt->conditions.push_back(std::move(*condition));
    while (true) {
        std::string found;
        auto body = parseBlock("if", at, {"elif", "else", "endif"}, found);
        if (!body) return body.error();
        stmt->bodies.push_back(std::move(*body));
        const Piece& tag = m_pieces[m_index++];
        if (found == "endif") {
            if (Status s = expectBareEnd(tag); !s) return s.error();
            return stmt;
        }
        if (found == "else") {
            if (Status s = expectBareEnd(tag); !s) return s.error();
            auto elseBody = parseBlock("if", at, {"endif"}, found);
            if (!elseBody) return elseBody.error();
            if (Status s = expectBareEnd(m_pieces[m_index++]); !s) return s.error();
            stmt->bodies.push_back(std::move(*elseBody));
            return stmt;
        }
        TagCursor elif (tag);
        elif.next();
        auto elifCondition = ExprParser(elif).parseTuple(true);
        if (!elifCondition) return elifCondition.error();
        if (Status s = elif.expectEnd(); !s) return s.error();
        stmt->conditions.push_back(std::move(*elifCondition));
    }
}

Result<StmtPtr> Parser::parseFor(TagCursor& cur, Location at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::For;
    stmt->at = at;
    const bool parenthesised = cur.skipOp("(");
    do {
        auto name = cur.expectName("a loop variable name");
        if (!name) return name.error();
        stmt->targets.push_back(*name);
    } while (cur.skipOp(","));
    if (parenthesised)
        if (Status s = cur.expectOp(")"); !s) return s.error();
    if (!cur.skipName("in")) return cur.expected("'in'");
    auto iterable = ExprParser(cur).parseTuple(false);
    if (!iterable) return iterable.error();
    stmt->expr = std::move(*iterable);
    if (cur.skipName("if")) {
        auto condition = ExprParser(cur).parseExpression(false);
        if (!condition) return condition.error();
        stmt->condition = std::move(*condition);
    }
    if (cur.isName("recursive"))
        return Error{describe(cur.here()) + ": recursive for loops are not supported"};
    if (Status s = cur.expectEnd(); !s) return s.error();
    std::string found;
    auto body = parseBlock("for", at, {"else", "endfor"}, found);
    if (!body) return body.error();
    stmt->bodies.push_back(std::move(*body));
    if (found == "else") {
        if (Status s = expectBareEnd(m_pieces[m_index++]); !s) return s.error();
        auto elseBody = parseBlock("for", at, {"endfor"}, found);
        if (!elseBody) return elseBody.error();
        stmt->bodies.push_back(std::move(*elseBody));
    }
    if (Status s = expectBareEnd(m_pieces[m_index++]); !s) return s.error();
    return stmt;
}

Result<StmtPtr> Parser::parseSet(TagCursor& cur, Location at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::Set;
    stmt->at = at;
    auto name = cur.expectName("a variable name after 'set'");
    if (!name) return name.error();
    stmt->targets.push_back(*name);
    if (cur.skipOp(".")) {
        auto attribute = cur.expectName("an attribute name after '.'");
        if (!attribute) return attribute.error();
        stmt->attribute = *attribute;
    } else {
        while (cur.skipOp(",")) {
            auto more = cur.expectName("a variable name");
            if (!more) return more.error();
            stmt->targets.push_back(*more);
        }
    }
    if (cur.atEnd() && stmt->attribute.empty() && stmt->targets.size() == 1) {
        stmt->kind = Stmt::Kind::SetBlock;
        std::string found;
        auto body = parseBlock("set", at, {"endset"}, found);
        if (!body) return body.error();
        if (Status s = expectBareEnd(m_pieces[m_index++]); !s) return s.error();
        stmt->bodies.push_back(std::move(*body));
        return stmt;
    }
    if (cur.isOp("|"))
        return Error{describe(cur.here()) + ": filtered set blocks are not supported"};
    if (Status s = cur.expectOp("="); !s) return s.error();
    auto value = ExprParser(cur).parseTuple(true);
    if (!value) return value.error();
    if (Status s = cur.expectEnd(); !s) return s.error();
    stmt->expr = std::move(*value);
    return stmt;
}

Result<StmtPtr> Parser::parseMacro(TagCursor& cur, Location at) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = Stmt::Kind::Macro;
    stmt->at = at;
    auto name = cur.expectName("the macro's name");
    if (!name) return name.error();
    stmt->name = *name;
    if (Status s = cur.expectOp("("); !s) return s.error();
    while (!cur.skipOp(")")) {
        if (!stmt->targets.empty())
            if (Status s = cur.expectOp(","); !s) return s.error();
        auto param = cur.expectName("a parameter name");
        if (!param) return param.error();
        stmt->targets.push_back(*param);
        if (cur.skipOp("=")) {
            auto value = ExprParser(cur).parseExpression(true);
            if (!value) return value.error();
            stmt->defaults.push_back(std::move(*value));
        } else {
            stmt->defaults.push_back(nullptr);
        }
    }
    if (Status s = cur.expectEnd(); !s) return s.error();
    std::string found;
    auto body = parseBlock("macro", at, {"endmacro"}, found);
    if (!body) return body.error();
    TagCursor end(m_pieces[m_index++]);
    end.next();
    end.skipName(stmt->name);  // {% endmacro name %} is allowed
    if (Status s = end.expectEnd(); !s) return s.error();
    stmt->bodies.push_back(std::move(*body));
    return stmt;
}

}  // namespace

Result<ast::Body> parse(const std::vector<Piece>& pieces) {
    return Parser(pieces).parseTemplate();
}

}  // namespace ws::chat::jinja
