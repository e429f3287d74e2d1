// `wafer tokenize --tokenizer PATH [--json] [--add-special] (TEXT | --file F)`: shows the token ids
// a model sees for a text, so a user can check a tokenizer against the library it comes from.
// PATH is a model folder or a tokenizer file (loadTokenizerAt). Text output: the ids on one line,
// then one line per token with its id, its vocabulary spelling and the bytes it stands for;
// --json: one JSON array of the ids.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/fileio/atomic_file.h"
#include "engine/modelio/load_model.h"

namespace ws::cli {
namespace {

struct TokenizeOptions {
    std::string tokenizer;
    std::string text;
    std::string file;
    bool addSpecial = false;
};

// A token's bytes for the readable view: printable text as it is, the rest escaped.
std::string shownBytes(std::string_view bytes) {
    std::string out;
    for (const char c : bytes) {
        const auto b = uint8_t(c);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\\') {
            out += "\\\\";
        } else if (b < 0x20 || b == 0x7F) {
            out += fmt::format("\\x{:02x}", b);
        } else {
            out += c;
        }
    }
    return out;
}

int runTokenize(const TokenizeOptions& opt, const CommonOptions& common) {
    std::string text = opt.text;
    if (!opt.file.empty()) {
        auto read = fileio::readWholeFile(opt.file);
        if (!read.ok()) return fail(read.error().message);
        text = std::move(read).value();
    }
    auto tokenizer = modelio::loadTokenizerAt(opt.tokenizer);
    if (!tokenizer.ok()) return fail(tokenizer.error().message);
    auto ids = (*tokenizer)->encodeChecked(text, opt.addSpecial);
    if (!ids.ok()) {
        return fail(
            fmt::format("{}: {}", opt.file.empty() ? "TEXT" : opt.file, ids.error().message));
    }
    if (common.json) {
        std::cout << nlohmann::json(*ids).dump() << "\n";
        return 0;
    }
    std::string line;
    for (size_t i = 0; i < ids->size(); ++i) line += fmt::format("{}{}", i ? " " : "", (*ids)[i]);
    std::cout << line << "\n";
    std::cout << fmt::format("{} tokens, {} bytes ({} tokenizer)\n", ids->size(), text.size(),
                             (*tokenizer)->kind());
    for (const int32_t id : *ids) {
        std::cout << fmt::format(
            "{:>8}  {:<24}  {}\n", id, (*tokenizer)->tokenName(id),
            shownBytes((*tokenizer)->decode(std::span<const int32_t>(&id, 1))));
    }
    return 0;
}

}  // namespace

void addTokenizeCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<TokenizeOptions>();
    CLI::App* cmd = app.add_subcommand(
        "tokenize",
        "Print the token ids a tokenizer gives a text (a model folder or a tokenizer.json, e.g. "
        "a Llama, Qwen2 or Mistral tokenizer)");
    cmd->add_option("--tokenizer", opt->tokenizer,
                    "a model folder, or a tokenizer file (Hugging Face tokenizer.json, GPT-2 "
                    "vocab.json)")
        ->required();
    cmd->add_option("text", opt->text, "the text to tokenize");
    cmd->add_option("--file", opt->file, "read the text from this file instead");
    cmd->add_flag("--add-special", opt->addSpecial,
                  "add the special tokens the tokenizer's post-processor adds (BOS/EOS)");
    cmd->add_flag("--json", common.json, "print the ids as one JSON array");
    cmd->callback([opt, &common, &exitCode] {
        if (opt->file.empty() == opt->text.empty() && !(opt->file.empty() && opt->text.empty())) {
            exitCode = fail("give the text or --file, not both");
            return;
        }
        if (opt->file.empty() && opt->text.empty()) {
            exitCode = fail("nothing to tokenize: give TEXT or --file F");
            return;
        }
        exitCode = runTokenize(*opt, common);
    });
}

}  // namespace ws::cli
