// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer chat MODEL`: a conversation with a model in a terminal, rendered with its chat template
// (sample/chat_model.h: the run's, the model's own, ChatML; or --chat-template) and streamed as
// it is generated; commands /reset, /system TEXT, /save FILE, /quit; end of input ends it.
// `wafer chat MODEL --messages FILE [--json]` answers a conversation once, for scripts.
// Conversations are saved as `messages` JSON Lines (chat/conversation_file.h): training data.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "app/cli/sampling_flags.h"
#include "engine/chat/conversation_file.h"
#include "engine/interop/model_ref.h"
#include "engine/sample/chat_session.h"
#include "engine/tensor/threads.h"

namespace ws::cli {
namespace {

struct ChatOptions {
    std::string model;
    std::string system;
    bool systemGiven = false;
    std::string chatTemplate = "auto";
    std::string messagesFile;
    std::string saveFile;
    sample::SamplingOptions sampling;
    int threads = -1;
    bool noAdapters = false;
};

std::string dumpJson(const nlohmann::ordered_json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The reply's line for --json: the reply, why it stopped, and the conversation including it.
nlohmann::ordered_json replyJson(const sample::ChatReply& r, const sample::ChatSession& chat) {
    return {
        {"reply", r.text},
        {"stop_reason", sample::stopReasonName(r.stop)},
        {"stopped_at", r.stoppedAt},
        {"tokens", r.tokens},
        {"prompt_tokens", r.promptTokens},
        {"tokens_per_s", number(r.tokensPerSecond)},
        {"template", chat.model().chatTemplate.name()},
        {"template_why", chat.model().templateWhy},
        {"messages", nlohmann::ordered_json::parse(chat::messagesJsonArray(chat.conversation()))}};
}

Status save(const sample::ChatSession& chat, const std::string& file) {
    const chat::Conversation& c = chat.conversation();
    return chat::saveConversations(file, std::span<const chat::Conversation>(&c, 1));
}

// One reply: to `userText` when given, else to the conversation as it is; Ctrl-C stops it early
// (what was generated is kept).
Result<sample::ChatReply> replyStreaming(sample::ChatSession& chat, const ChatOptions& opt,
                                         bool stream, const std::string* userText = nullptr) {
    auto onText = [&](std::string_view piece) {
        if (stream) std::cout << piece << std::flush;
    };
    std::atomic<bool>& cancel = catchCtrlC();
    auto reply = userText ? chat.send(*userText, opt.sampling, onText, &cancel)
                          : chat.answer(opt.sampling, onText, &cancel);
    restoreCtrlC();
    return reply;
}

int answerOnce(sample::ChatSession& chat, const ChatOptions& opt, bool json) {
    auto loaded = chat::loadConversations(opt.messagesFile);
    if (!loaded.ok()) return fail(loaded.error().message);
    if (loaded->size() != 1)
        return fail(fmt::format("{}: holds {} conversations; --messages answers one",
                                opt.messagesFile, loaded->size()));
    chat.setConversation(std::move(loaded->front()));
    if (opt.systemGiven) chat.setSystemPrompt(opt.system);
    auto reply = replyStreaming(chat, opt, !json);
    if (!reply.ok()) return fail(opt.messagesFile + ": " + reply.error().message);
    if (json) {
        std::cout << dumpJson(replyJson(*reply, chat)) << std::endl;
    } else {
        std::cout << "\n";
        std::cerr << fmt::format("{} tokens, stopped: {}\n", reply->tokens,
                                 sample::stopReasonName(reply->stop));
    }
    if (!opt.saveFile.empty())
        if (Status st = save(chat, opt.saveFile); !st.ok()) return fail(st.error().message);
    return 0;
}

// A line that starts with '/': a command. Returns false for /quit.
bool runCommand(const std::string& line, sample::ChatSession& chat) {
    const auto space = line.find(' ');
    const std::string name = line.substr(0, space);
    const std::string arg = space == std::string::npos ? "" : line.substr(space + 1);
    if (name == "/quit" || name == "/exit") return false;
    if (name == "/reset") {
        chat.reset();
        std::cerr << "(new conversation)\n";
    } else if (name == "/system") {
        chat.setSystemPrompt(arg);
        std::cerr << (arg.empty() ? "(system prompt removed)\n" : "(system prompt set)\n");
    } else if (name == "/save") {
        if (arg.empty()) {
            std::cerr << "/save needs a file: /save chat.jsonl\n";
        } else if (Status st = save(chat, arg); !st.ok()) {
            std::cerr << "error: " << st.error().message << "\n";
        } else {
            std::cerr << fmt::format("(saved {} messages to {})\n",
                                     chat.conversation().messages.size(), arg);
        }
    } else {
        std::cerr << fmt::format(
            "unknown command {}; the commands are /reset, /system TEXT, /save FILE, /quit\n", name);
    }
    return true;
}

int interactive(sample::ChatSession& chat, const ChatOptions& opt) {
    const bool terminal = isatty(STDIN_FILENO);
    std::cerr << "Commands: /reset, /system TEXT, /save FILE, /quit (or end of input).\n";
    std::string line;
    while (true) {
        if (terminal) std::cout << "you> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        if (line.empty()) continue;
        if (line.front() == '/') {
            if (!runCommand(line, chat)) break;
            continue;
        }
        std::cout << "assistant> " << std::flush;
        auto reply = replyStreaming(chat, opt, true, &line);
        std::cout << "\n";
        if (!reply.ok()) {
            std::cerr << "error: " << reply.error().message << "\n";
            continue;
        }
        std::cerr << fmt::format(
            "({} tokens, {:.1f} tokens/s, {})\n", reply->tokens, reply->tokensPerSecond,
            reply->stop == sample::StopReason::Cancelled ? "stopped"
                                                         : sample::stopReasonName(reply->stop));
        if (!opt.saveFile.empty())
            if (Status st = save(chat, opt.saveFile); !st.ok())
                std::cerr << "error: " << st.error().message << "\n";
    }
    if (terminal) std::cout << "\n";
    return 0;
}

int runChat(const ChatOptions& opt, const CommonOptions& common) {
    if (Status st = opt.sampling.validate(); !st.ok()) return fail(st.error().message);
    if (common.json && opt.messagesFile.empty())
        return fail(
            "--json answers a conversation given with --messages FILE; interactive "
            "chat prints text");
    if (opt.threads >= 0) tensor::setComputeThreads(opt.threads);
    std::string description;
    auto loaded = interop::loadModelRef(opt.model, common.dbPath, &description);
    if (!loaded.ok()) return fail(loaded.error().message);
    const int loraRank = loaded->shape.loraRank;
    auto model = sample::prepareChatModel(std::move(loaded).value(), opt.chatTemplate);
    if (!model.ok()) {
        const bool lacksTokens =
            model.error().message.find("needs the special token") != std::string::npos;
        return fail(opt.model + ": " + model.error().message +
                    (lacksTokens
                         ? fmt::format(" (here: --chat-template {})", sample::kPlainTemplateName)
                         : std::string()));
    }
    sample::ChatSession chat(*model, !opt.noAdapters);
    if (!common.json) {
        std::cerr << fmt::format("Chatting with {} · template {} ({})",
                                 description.empty() ? opt.model : description,
                                 (*model)->chatTemplate.name(), (*model)->templateWhy);
        if (loraRank > 0)
            std::cerr << fmt::format(" · LoRA adapters (rank {}) {}", loraRank,
                                     opt.noAdapters ? "off" : "on");
        std::cerr << "\n";
    }
    if (!opt.messagesFile.empty()) return answerOnce(chat, opt, common.json);
    if (opt.systemGiven) chat.setSystemPrompt(opt.system);
    return interactive(chat, opt);
}

}  // namespace

void addChatCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<ChatOptions>();
    opt->sampling.maxTokens = 256;
    CLI::App* cmd = app.add_subcommand(
        "chat", "Chat with a model, rendered with its chat template (interactive, or --messages)");
    cmd->add_option("model", opt->model,
                    "Run id, run or checkpoint folder, Hugging Face folder or cached model id "
                    "(org/name), or `base` (the shipped base model)")
        ->required();
    cmd->add_option("--system", opt->system, "System prompt (the conversation's first message)")
        ->each([opt](const std::string&) { opt->systemGiven = true; });
    cmd->add_option("--chat-template", opt->chatTemplate,
                    "auto (the run's, else the model's own, else chatml), chatml, plain (no "
                    "special tokens: for models not fine-tuned on chat), or a .jinja file")
        ->capture_default_str();
    cmd->add_option("--messages", opt->messagesFile,
                    "Answer this conversation once and exit: a JSON object with \"messages\", "
                    "or an array of {\"role\", \"content\"}; its last message is the user's");
    cmd->add_option("--save", opt->saveFile,
                    "Write the conversation to this file (messages JSON Lines) after each reply");
    addSamplingFlags(cmd, opt->sampling,
                     "Most tokens in one reply (it ends sooner at the template's end of turn)");
    cmd->add_flag("--no-adapters", opt->noAdapters,
                  "A model with LoRA adapters: chat with its base model without them");
    cmd->add_option("--threads", opt->threads, "CPU threads (0 = all)")
        ->check(CLI::NonNegativeNumber);
    cmd->add_option("--db", common.dbPath, "Run store (SQLite file) that resolves run ids");
    cmd->add_flag("--json", common.json,
                  "With --messages: print one JSON object (reply, stop_reason, tokens, messages)");
    cmd->callback([opt, &common, &exitCode] { exitCode = runChat(*opt, common); });
}

}  // namespace ws::cli
