// SPDX-License-Identifier: GPL-3.0-or-later
// HfRegex over PCRE2's 8-bit library (Debian libpcre2-dev): compile with UTF | UCP, JIT when
// available, and the White_Space rewrite of \s described in hf_regex.h.
#include "engine/tokenizer/hf_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

namespace ws::tokenizer {

namespace {

// Unicode's White_Space property (PropList.txt), which Oniguruma's \s is.
constexpr std::string_view kWhiteSpaceMembers =
    "\\t-\\r \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}"
    "\\x{3000}";

}  // namespace

struct HfRegex::Compiled {
    pcre2_code* code = nullptr;
    ~Compiled() { pcre2_code_free(code); }
};

HfRegex::HfRegex(std::unique_ptr<Compiled> compiled) : m_compiled(std::move(compiled)) {}
HfRegex::~HfRegex() = default;
HfRegex::HfRegex(HfRegex&&) noexcept = default;
HfRegex& HfRegex::operator=(HfRegex&&) noexcept = default;

Result<std::string> HfRegex::onigurumaCompatible(std::string_view pattern) {
    std::string out;
    out.reserve(pattern.size() + 64);
    bool inClass = false;
    for (size_t i = 0; i < pattern.size(); ++i) {
        const char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size()) {
            const char e = pattern[i + 1];
            ++i;
            if (e == 's') {
                out += inClass ? std::string(kWhiteSpaceMembers)
                               : fmt::format("[{}]", kWhiteSpaceMembers);
            } else if (e == 'S') {
                if (inClass) {
                    return Error{fmt::format(
                        "\\S inside a character class (at offset {}) is not supported; write "
                        "the class without it",
                        i - 1)};
                }
                out += fmt::format("[^{}]", kWhiteSpaceMembers);
            } else {
                out += c;
                out += e;
            }
            continue;
        }
        if (!inClass && c == '[') {
            inClass = true;
            out += c;
            // A ']' right after '[' or '[^' is a literal member, not the end of the class.
            if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
            if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
            continue;
        }
        if (inClass && c == ']') inClass = false;
        out += c;
    }
    return out;
}

Result<HfRegex> HfRegex::compile(std::string_view pattern) {
    auto rewritten = onigurumaCompatible(pattern);
    if (!rewritten.ok()) return rewritten.error();
    int errorCode = 0;
    PCRE2_SIZE errorOffset = 0;
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten->data()), rewritten->size(),
                      PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(errorCode, message, sizeof message);
        return Error{fmt::format("the regex does not compile: {} (near offset {} of '{}')",
                                 reinterpret_cast<const char*>(message), errorOffset, *rewritten)};
    }
    // JIT is an optimisation only: without it (unsupported CPU, no executable memory) the
    // interpreter gives the same matches.
    (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
    auto compiled = std::make_unique<Compiled>();
    compiled->code = code;
    return HfRegex(std::move(compiled));
}

std::vector<std::pair<size_t, size_t>> HfRegex::findAll(std::string_view text) const {
    std::vector<std::pair<size_t, size_t>> matches;
    pcre2_match_data* data = pcre2_match_data_create_from_pattern(m_compiled->code, nullptr);
    // JIT code keeps backtracking state on its own stack (32 KB by default): give it room to grow
    // for long runs of one class, and fall back to the interpreter should even that not do.
    pcre2_match_context* context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 16 * 1024 * 1024, nullptr);
    if (context != nullptr && stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    // The caller guarantees valid UTF-8; PCRE2 would otherwise check the whole subject again on
    // every call, which makes a long text quadratic.
    const uint32_t options = PCRE2_NO_UTF_CHECK;
    size_t pos = 0;
    while (pos <= text.size()) {
        int rc = pcre2_match(m_compiled->code, subject, text.size(), pos, options, data, context);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            rc = pcre2_match(m_compiled->code, subject, text.size(), pos, options | PCRE2_NO_JIT,
                             data, context);
        }
        if (rc < 0) {
            // No further match (PCRE2_ERROR_NOMATCH); a resource limit (never seen with the
            // patterns of real files) leaves the rest as one unmatched stretch.
            break;
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
        const size_t begin = ov[0], end = ov[1];
        if (end > begin) {
            matches.emplace_back(begin, end);
            pos = end;
            continue;
        }
        // An empty match: step over one whole character, as Oniguruma's iterator does.
        if (begin >= text.size()) break;
        pos = begin + 1;
        while (pos < text.size() && (uint8_t(text[pos]) & 0xC0) == 0x80) ++pos;
    }
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
    return matches;
}

}  // namespace ws::tokenizer
