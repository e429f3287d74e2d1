// SPDX-License-Identifier: GPL-3.0-or-later
// The Jinja lexer: see jinja_lexer.h.
#include "engine/chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>

namespace ws::chat::jinja {

std::string describe(Location at) {
    return "line " + std::to_string(at.line) + ", column " + std::to_string(at.column);
}

namespace {

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool isNameStart(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool isNameChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

void appendUtf8(uint32_t cp, std::string& out) {
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Lexer {
public:
    Lexer(std::string_view source, const LexOptions& options) : m_src(source), m_options(options) {
        m_lineStarts.push_back(0);
        for (size_t i = 0; i < source.size(); ++i)
            if (source[i] == '\n') m_lineStarts.push_back(i + 1);
    }

    Result<std::vector<Piece>> run();

private:
    Location locate(size_t offset) const {
        const auto it = std::upper_bound(m_lineStarts.begin(), m_lineStarts.end(), offset);
        const size_t line = static_cast<size_t>(it - m_lineStarts.begin());
        return {static_cast<int>(line), static_cast<int>(offset - m_lineStarts[line - 1] + 1)};
    }
    Error errorAt(size_t offset, const std::string& what) const {
        return Error{describe(locate(offset)) + ": " + what};
    }
    void pushText(std::string text, size_t at);
    Status lexComment(size_t open, size_t& pos);
    Status lexTag(char kind, size_t open, size_t& pos);
    Status lexString(size_t& pos, Token& token);
    void lexNumber(size_t& pos, Token& token);

    std::string_view m_src;
    LexOptions m_options;
    std::vector<size_t> m_lineStarts;
    std::vector<Piece> m_pieces;
};

void Lexer::pushText(std::string text, size_t at) {
    if (text.empty()) return;
    Piece piece;
    piece.kind = Piece::Kind::Text;
    piece.text = std::move(text);
    piece.at = locate(at);
    m_pieces.push_back(std::move(piece));
}

Result<std::vector<Piece>> Lexer::run() {
    size_t pos = 0;
    bool lineStarting = true;
    while (pos <= m_src.size()) {
        size_t open = pos;
        while (true) {
            open = m_src.find('{', open);
            if (open == std::string_view::npos || open + 1 >= m_src.size()) {
                open = std::string_view::npos;
                break;
            }
            const char next = m_src[open + 1];
            if (next == '{' || next == '%' || next == '#') break;
            ++open;
        }
        if (open == std::string_view::npos) {
            pushText(std::string(m_src.substr(pos)), pos);
            break;
        }
        std::string text(m_src.substr(pos, open - pos));
        const char kind = m_src[open + 1];
        size_t inner = open + 2;
        const char modifier = inner < m_src.size() ? m_src[inner] : '\0';
        if (modifier == '-') {
            while (!text.empty() && isSpace(text.back())) text.pop_back();
            ++inner;
        } else if (modifier == '+' && kind != '{') {
            ++inner;
        } else if (kind != '{' && m_options.lstripBlocks) {
            const size_t lineStart = text.rfind('\n') + 1;  // npos + 1 == 0
            if (lineStart > 0 || lineStarting) {
                bool blank = true;
                for (size_t i = lineStart; i < text.size(); ++i)
                    if (!isSpace(text[i])) blank = false;
                if (blank) text.resize(lineStart);
            }
        }
        pushText(std::move(text), pos);
        pos = inner;
        const Status lexed = kind == '#' ? lexComment(open, pos) : lexTag(kind, open, pos);
        if (!lexed) return lexed.error();
        lineStarting = pos > 0 && m_src[pos - 1] == '\n';
    }
    return std::move(m_pieces);
}

// pos: just inside `{#`; leaves it after `#}` and the whitespace control.
Status Lexer::lexComment(size_t open, size_t& pos) {
    const size_t close = m_src.find("#}", pos);
    if (close == std::string_view::npos) return errorAt(open, "the comment is never closed (#})");
    const char before = close > pos ? m_src[close - 1] : '\0';
    pos = close + 2;
    if (before == '-') {
        while (pos < m_src.size() && isSpace(m_src[pos])) ++pos;
    } else if (before != '+' && m_options.trimBlocks && pos < m_src.size() && m_src[pos] == '\n') {
        ++pos;
    }
    return {};
}

// pos: just inside `{{` or `{%` (after any modifier); leaves it after the closing delimiter.
Status Lexer::lexTag(char kind, size_t open, size_t& pos) {
    Piece piece;
    piece.kind = kind == '{' ? Piece::Kind::Expression : Piece::Kind::Statement;
    piece.at = locate(open);
    const char closer = kind == '{' ? '}' : '%';
    int depth = 0;
    while (true) {
        while (pos < m_src.size() && isSpace(m_src[pos])) ++pos;
        if (pos >= m_src.size())
            return errorAt(open,
                           std::string("the tag opened here is never closed (") + closer + "})");
        const auto at = [&](size_t i, char c) { return i < m_src.size() && m_src[i] == c; };
        if (depth == 0) {
            char modifier = '\0';
            size_t end = pos;
            if ((at(pos, '-') || (kind == '%' && at(pos, '+'))) && at(pos + 1, closer) &&
                at(pos + 2, '}')) {
                modifier = m_src[pos];
                end = pos + 1;
            }
            if (at(end, closer) && at(end + 1, '}')) {
                piece.end = locate(pos);
                pos = end + 2;
                if (modifier == '-') {
                    while (pos < m_src.size() && isSpace(m_src[pos])) ++pos;
                } else if (kind == '%' && modifier != '+' && m_options.trimBlocks &&
                           at(pos, '\n')) {
                    ++pos;
                }
                m_pieces.push_back(std::move(piece));
                return {};
            }
        }
        Token token;
        token.at = locate(pos);
        const char c = m_src[pos];
        if (isNameStart(c)) {
            const size_t start = pos;
            while (pos < m_src.size() && isNameChar(m_src[pos])) ++pos;
            token.kind = Token::Kind::Name;
            token.text = std::string(m_src.substr(start, pos - start));
        } else if (isDigit(c)) {
            lexNumber(pos, token);
        } else if (c == '\'' || c == '"') {
            if (Status s = lexString(pos, token); !s) return s;
        } else {
            static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", "<=", ">="};
            token.kind = Token::Kind::Operator;
            for (std::string_view op : kTwo)
                if (m_src.substr(pos, 2) == op) token.text = std::string(op);
            if (token.text.empty()) {
                if (std::string_view("+-*/%~<>=.,:|()[]{}").find(c) == std::string_view::npos)
                    return errorAt(
                        pos, std::string("the character '") + c + "' has no meaning inside a tag");
                token.text = std::string(1, c);
                if (c == '(' || c == '[' || c == '{') ++depth;
                if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
            }
            pos += token.text.size();
        }
        piece.tokens.push_back(std::move(token));
    }
}

void Lexer::lexNumber(size_t& pos, Token& token) {
    const size_t start = pos;
    while (pos < m_src.size() && isDigit(m_src[pos])) ++pos;
    bool isFloat = false;
    if (pos + 1 < m_src.size() && m_src[pos] == '.' && isDigit(m_src[pos + 1])) {
        isFloat = true;
        ++pos;
        while (pos < m_src.size() && isDigit(m_src[pos])) ++pos;
    }
    if (pos < m_src.size() && (m_src[pos] == 'e' || m_src[pos] == 'E')) {
        size_t e = pos + 1;
        if (e < m_src.size() && (m_src[e] == '+' || m_src[e] == '-')) ++e;
        if (e < m_src.size() && isDigit(m_src[e])) {
            isFloat = true;
            pos = e;
            while (pos < m_src.size() && isDigit(m_src[pos])) ++pos;
        }
    }
    token.text = std::string(m_src.substr(start, pos - start));
    if (isFloat) {
        token.kind = Token::Kind::Float;
        token.floatValue = std::strtod(token.text.c_str(), nullptr);
    } else {
        token.kind = Token::Kind::Int;
        // Python ints are unbounded; beyond int64 the value saturates to a float.
        int64_t value = 0;
        bool overflow = false;
        for (char d : token.text) {
            if (value > (INT64_MAX - (d - '0')) / 10) overflow = true;
            if (!overflow) value = value * 10 + (d - '0');
        }
        if (overflow) {
            token.kind = Token::Kind::Float;
            token.floatValue = std::strtod(token.text.c_str(), nullptr);
        }
        token.intValue = value;
    }
}

// A string literal with Python's escapes (\n \t \r \\ \' \" \a \b \f \v \xHH \uHHHH
// \UHHHHHHHH, octal); an unknown escape keeps its backslash, as Python does.
Status Lexer::lexString(size_t& pos, Token& token) {
    const size_t open = pos;
    const char quote = m_src[pos++];
    token.kind = Token::Kind::String;
    std::string& out = token.text;
    while (true) {
        if (pos >= m_src.size()) return errorAt(open, "the string starting here is never closed");
        const char c = m_src[pos++];
        if (c == quote) return {};
        if (c != '\\') {
            out += c;
            continue;
        }
        if (pos >= m_src.size()) return errorAt(open, "the string starting here is never closed");
        const char e = m_src[pos++];
        const auto hex = [&](int digits) -> bool {
            uint32_t cp = 0;
            for (int i = 0; i < digits; ++i) {
                if (pos >= m_src.size() || !std::isxdigit(static_cast<unsigned char>(m_src[pos])))
                    return false;
                const char h = m_src[pos++];
                cp = cp * 16 + static_cast<uint32_t>(isDigit(h) ? h - '0' : (h | 0x20) - 'a' + 10);
            }
            appendUtf8(cp, out);
            return true;
        };
        switch (e) {
            case 'n':
                out += '\n';
                break;
            case 't':
                out += '\t';
                break;
            case 'r':
                out += '\r';
                break;
            case 'a':
                out += '\a';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'v':
                out += '\v';
                break;
            case '\\':
                out += '\\';
                break;
            case '\'':
                out += '\'';
                break;
            case '"':
                out += '"';
                break;
            case '\n':
                break;  // a backslash-newline continues the line
            case 'x':
            case 'u':
            case 'U':
                if (!hex(e == 'x' ? 2 : e == 'u' ? 4 : 8))
                    return errorAt(pos - 1,
                                   std::string("the escape \\") + e + " needs hexadecimal digits");
                break;
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t cp = static_cast<uint32_t>(e - '0');
                    for (int i = 0;
                         i < 2 && pos < m_src.size() && m_src[pos] >= '0' && m_src[pos] <= '7'; ++i)
                        cp = cp * 8 + static_cast<uint32_t>(m_src[pos++] - '0');
                    appendUtf8(cp, out);
                } else {
                    out += '\\';
                    out += e;
                }
        }
    }
}

}  // namespace

Result<std::vector<Piece>> lex(std::string_view source, const LexOptions& options) {
    return Lexer(source, options).run();
}

}  // namespace ws::chat::jinja
