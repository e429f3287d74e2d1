// SPDX-License-Identifier: GPL-3.0-or-later
// Held-out answers: how a chat model answers the held-out conversations of a chat data set, the
// figure a fine-tune on instruction data is judged by (`wafer eval MODEL --data RECORDS`, the
// instruction set's exact match in the README).
//
// Each case is a conversation whose last message is the assistant's: the model is given the
// messages before it (ChatSession: the chat template with add_generation_prompt, greedy unless
// the options say otherwise, stopping at the template's end of turn) and its reply is compared
// with the record's answer:
//   exact       the reply equals the answer, both trimmed of surrounding whitespace (the reply
//               is already: chat_session.h);
//   answer loss the mean negative log-likelihood (nats per token) of the record's answer tokens
//               given the conversation before them, teacher-forced: exactly the tokens and mask a
//               fine-tune with mask_history trains on (data/chat_examples.h renderExample), so it
//               is the per-record figure behind a chat run's eval loss.
// Cases are ranked by their answer loss for a "best and worst" view.
// Thread-safety: an AnswerChecker is used by one thread at a time; cancel through the flag.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/sample/chat_session.h"

namespace ws::sample {

struct AnswerCase {
    chat::Conversation conversation;  // ends with the assistant's answer
    std::string origin;               // "held-out.jsonl:12"
};

// The conversations that end with an assistant's answer, the first `limit` of them (0: all);
// the others (a text record, a conversation ending with the user) cannot be scored and are left
// out.
std::vector<AnswerCase> answerCases(const std::vector<chat::Conversation>& conversations,
                                    size_t limit = 0);

// The held-out records of the run a model belongs to (the split its training made:
// session::readRunRecords of the run's config), as conversations; `source` (when given) says so
// ("the run's held-out records (200 conversations it never trained on)"). An error when the run
// did not train on chat or instruction records.
Result<std::vector<chat::Conversation>> runHeldOutConversations(const config::Config& runConfig,
                                                                std::string* source = nullptr);

struct AnswerOutcome {
    std::string origin;
    std::string question;   // the last user message before the answer
    std::string reference;  // the record's answer, trimmed
    std::string reply;      // the model's, trimmed
    bool exact = false;
    StopReason stop = StopReason::MaxTokens;
    double answerLoss = 0.0;  // nats per answer token (see above)
    int answerTokens = 0;     // the tokens it counts (the answer and its end-of-turn marker)
};

struct AnswerSummary {
    int cases = 0;
    int exact = 0;
    double meanAnswerLoss = 0.0;  // over all answer tokens of all cases (token-weighted)
    double exactFraction() const { return cases > 0 ? double(exact) / cases : 0.0; }
};
AnswerSummary summarize(const std::vector<AnswerOutcome>& outcomes);

// The outcomes ordered from the lowest answer loss to the highest (ties: input order).
std::vector<AnswerOutcome> byAnswerLoss(std::vector<AnswerOutcome> outcomes);

class AnswerChecker {
public:
    // adapters: for a model with LoRA adapters, false checks its base (generator.h).
    explicit AnswerChecker(std::shared_ptr<const ChatModel> model, bool adapters = true);

    // One case. `options` as for a chat reply (greedy by default: greedyAnswerOptions). Fails on a
    // case whose conversation does not end with an assistant's answer after a user's message, or
    // whose rendering the template refuses; a cancelled case is an error saying so.
    Result<AnswerOutcome> check(const AnswerCase& answerCase, const SamplingOptions& options,
                                const std::atomic<bool>* cancel = nullptr);

private:
    Result<std::pair<double, int>> answerLoss(const chat::Conversation& conversation,
                                              const std::atomic<bool>* cancel);

    std::shared_ptr<const ChatModel> m_model;
    ChatSession m_session;  // replies
    Generator m_scorer;     // teacher-forced answer loss
};

// Greedy decoding with room for a short answer: the options an exact-match check uses.
SamplingOptions greedyAnswerOptions(int maxTokens = 64);

// Every case in order; `onOutcome` sees each as it is done (progress). Stops at the first error
// (naming the case's origin) or when cancelled (an error).
Result<std::vector<AnswerOutcome>> checkAnswers(
    std::shared_ptr<const ChatModel> model, bool adapters, const std::vector<AnswerCase>& cases,
    const SamplingOptions& options, const std::function<void(const AnswerOutcome&)>& onOutcome = {},
    const std::atomic<bool>* cancel = nullptr);

}  // namespace ws::sample
