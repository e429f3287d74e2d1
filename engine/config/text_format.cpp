// SPDX-License-Identifier: GPL-3.0-or-later
// Number formatting/parsing and string helpers for the config module (see text_format.h).
#include "engine/config/text_format.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace ws::config {

namespace {

std::string_view trim(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
        text.remove_prefix(1);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back())))
        text.remove_suffix(1);
    return text;
}

std::string shortest(double value) {
    std::array<char, 64> buffer{};
    auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
    if (ec != std::errc()) return "nan";
    return std::string(buffer.data(), end);
}

}  // namespace

std::string formatDouble(double value) {
    if (std::isnan(value)) return ".nan";
    if (std::isinf(value)) return value > 0 ? ".inf" : "-.inf";
    std::string text = shortest(value);
    const size_t exponent = text.find('e');
    if (text.find('.') == std::string::npos) {
        if (exponent == std::string::npos)
            text += ".0";
        else
            text.insert(exponent, ".0");
    }
    return text;
}

std::string formatNumberShort(double value) {
    if (std::isinf(value)) return value > 0 ? "infinity" : "-infinity";
    return shortest(value);
}

std::string quoteYaml(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
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
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                if (u < 0x20 || u == 0x7f) {
                    static constexpr char kHex[] = "0123456789abcdef";
                    out += "\\x";
                    out += kHex[u >> 4];
                    out += kHex[u & 15];
                } else {
                    out += c;  // UTF-8 passes through unchanged
                }
        }
    }
    out += '"';
    return out;
}

std::optional<double> parseDouble(std::string_view text) {
    text = trim(text);
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
    // from_chars accepts "inf"/"nan" spellings; a config value must be an ordinary number.
    if (!(std::isdigit(static_cast<unsigned char>(text.front())) || text.front() == '-' ||
          text.front() == '.'))
        return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

std::optional<long long> parseInteger(std::string_view text, bool* isNumber) {
    if (isNumber) *isNumber = false;
    std::string_view t = trim(text);
    if (!t.empty() && t.front() == '+') t.remove_prefix(1);
    long long value = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
    if (!t.empty() && ec == std::errc() && end == t.data() + t.size()) {
        if (isNumber) *isNumber = true;
        return value;
    }
    const std::optional<double> asDouble = parseDouble(t);
    if (!asDouble) return std::nullopt;
    if (isNumber) *isNumber = true;
    // 2^63 is exactly representable; anything at or beyond it does not fit.
    constexpr double kLimit = 9223372036854775808.0;
    if (std::trunc(*asDouble) != *asDouble || *asDouble >= kLimit || *asDouble < -kLimit)
        return std::nullopt;
    return static_cast<long long>(*asDouble);
}

std::optional<bool> parseBool(std::string_view text) {
    const std::string lower = toLower(trim(text));
    if (lower == "true" || lower == "yes" || lower == "on") return true;
    if (lower == "false" || lower == "no" || lower == "off") return false;
    return std::nullopt;
}

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string toLower(std::string_view text) {
    std::string out(text);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

size_t editDistance(std::string_view a0, std::string_view b0) {
    const std::string a = toLower(a0);
    const std::string b = toLower(b0);
    const size_t n = a.size();
    const size_t m = b.size();
    // d[i][j]: distance between the first i chars of a and the first j chars of b.
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1, 0));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

std::optional<std::string> closestMatch(std::string_view word,
                                        const std::vector<std::string>& candidates) {
    // A third of the word's length (at least 2) catches typos without suggesting unrelated keys.
    const size_t threshold = std::max<size_t>(2, word.size() / 3);
    std::optional<std::string> best;
    size_t bestDistance = std::numeric_limits<size_t>::max();
    for (const std::string& candidate : candidates) {
        const size_t distance = editDistance(word, candidate);
        if (distance < bestDistance) {
            bestDistance = distance;
            best = candidate;
        }
    }
    if (bestDistance <= threshold) return best;
    // A truncated key ("hidden" for "hidden_size") is further than the threshold but obvious.
    const std::string lower = toLower(word);
    if (lower.size() >= 4) {
        for (const std::string& candidate : candidates)
            if (toLower(candidate).find(lower) != std::string::npos) return candidate;
    }
    return std::nullopt;
}

std::string joinStrings(const std::vector<std::string>& parts, std::string_view separator) {
    std::string out;
    for (size_t i = 0; i < parts.size(); ++i) {
        if (i > 0) out += separator;
        out += parts[i];
    }
    return out;
}

}  // namespace ws::config
