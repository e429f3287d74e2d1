// SPDX-License-Identifier: GPL-3.0-or-later
// Held-out answers: a reply per case (ChatSession) and the teacher-forced loss of the record's
// answer (Generator::tokenLogProbs over renderExample's ids and mask_history mask).
#include "engine/sample/answer_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/data/chat_examples.h"
#include "engine/session/chat_run_data.h"

namespace ws::sample {

namespace {

std::string trimmed(std::string_view text) {
    const auto space = [](char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    return std::string(text);
}

bool endsWithAnswer(const chat::Conversation& c) {
    return c.messages.size() >= 2 && c.messages.back().role == chat::kAssistantRole &&
           c.messages[c.messages.size() - 2].role == chat::kUserRole;
}

}  // namespace

std::vector<AnswerCase> answerCases(const std::vector<chat::Conversation>& conversations,
                                    size_t limit) {
    std::vector<AnswerCase> cases;
    for (const chat::Conversation& c : conversations) {
        if (limit > 0 && cases.size() >= limit) break;
        if (endsWithAnswer(c)) cases.push_back({c, c.origin});
    }
    return cases;
}

Result<std::vector<chat::Conversation>> runHeldOutConversations(const config::Config& runConfig,
                                                                std::string* source) {
    if (!session::readsRecords(runConfig.trainInput))
        return Error{
            "the model's run did not train on chat or instruction records, so it has no held-out "
            "records: choose a records file"};
    auto run = session::readRunRecords(runConfig);
    if (!run.ok()) return Error{"the run's held-out records: " + run.error().message};
    if (source)
        *source = fmt::format("the run's held-out records ({} conversations it never trained on)",
                              run->heldOut.conversations.size());
    return std::move(run->heldOut.conversations);
}

AnswerSummary summarize(const std::vector<AnswerOutcome>& outcomes) {
    AnswerSummary s;
    double nats = 0.0;
    int64_t tokens = 0;
    for (const AnswerOutcome& o : outcomes) {
        ++s.cases;
        s.exact += o.exact ? 1 : 0;
        nats += o.answerLoss * o.answerTokens;
        tokens += o.answerTokens;
    }
    s.meanAnswerLoss = tokens > 0 ? nats / double(tokens) : 0.0;
    return s;
}

std::vector<AnswerOutcome> byAnswerLoss(std::vector<AnswerOutcome> outcomes) {
    std::stable_sort(
        outcomes.begin(), outcomes.end(),
        [](const AnswerOutcome& a, const AnswerOutcome& b) { return a.answerLoss < b.answerLoss; });
    return outcomes;
}

SamplingOptions greedyAnswerOptions(int maxTokens) {
    SamplingOptions o;
    o.temperature = 0.0;
    o.maxTokens = maxTokens;
    return o;
}

AnswerChecker::AnswerChecker(std::shared_ptr<const ChatModel> model, bool adapters)
    : m_model(model), m_session(model, adapters), m_scorer(model->model, adapters) {}

Result<std::pair<double, int>> AnswerChecker::answerLoss(const chat::Conversation& conversation,
                                                         const std::atomic<bool>* cancel) {
    auto rendered = data::renderExample(conversation, m_model->chatTemplate,
                                        *m_model->model.tokenizer, {.maskHistory = true});
    if (!rendered.ok()) return rendered.error();
    const data::Example& ex = rendered->example;
    auto logProbs = m_scorer.tokenLogProbs(ex.ids, cancel);
    if (!logProbs.ok()) return logProbs.error();
    double nats = 0.0;
    int count = 0;
    for (size_t i = 1; i < ex.ids.size(); ++i) {
        if (!ex.mask[i]) continue;
        nats -= (*logProbs)[i - 1];  // token i predicted from the tokens before it
        ++count;
    }
    if (count == 0) return Error{"the answer has no tokens to score"};
    return std::pair<double, int>{nats / count, count};
}

Result<AnswerOutcome> AnswerChecker::check(const AnswerCase& answerCase,
                                           const SamplingOptions& options,
                                           const std::atomic<bool>* cancel) {
    const chat::Conversation& full = answerCase.conversation;
    if (!endsWithAnswer(full))
        return Error{answerCase.origin +
                     ": the conversation does not end with an assistant's answer to a user's "
                     "message, so there is nothing to compare a reply with"};
    AnswerOutcome out;
    out.origin = answerCase.origin;
    out.question = full.messages[full.messages.size() - 2].content;
    out.reference = trimmed(full.messages.back().content);

    chat::Conversation prompt = full;
    prompt.messages.pop_back();
    m_session.setConversation(std::move(prompt));
    auto reply = m_session.answer(options, {}, cancel);
    if (!reply.ok()) return Error{answerCase.origin + ": " + reply.error().message};
    if (reply->stop == StopReason::Cancelled) return Error{"the check was cancelled"};
    out.reply = reply->text;
    out.stop = reply->stop;
    out.exact = out.reply == out.reference;

    auto loss = answerLoss(full, cancel);
    if (!loss.ok()) return Error{answerCase.origin + ": " + loss.error().message};
    out.answerLoss = loss->first;
    out.answerTokens = loss->second;
    return out;
}

Result<std::vector<AnswerOutcome>> checkAnswers(
    std::shared_ptr<const ChatModel> model, bool adapters, const std::vector<AnswerCase>& cases,
    const SamplingOptions& options, const std::function<void(const AnswerOutcome&)>& onOutcome,
    const std::atomic<bool>* cancel) {
    AnswerChecker checker(std::move(model), adapters);
    std::vector<AnswerOutcome> outcomes;
    outcomes.reserve(cases.size());
    for (const AnswerCase& c : cases) {
        if (cancel && cancel->load()) return Error{"the check was cancelled"};
        auto outcome = checker.check(c, options, cancel);
        if (!outcome.ok()) return outcome.error();
        if (onOutcome) onOutcome(*outcome);
        outcomes.push_back(std::move(outcome).value());
    }
    return outcomes;
}

}  // namespace ws::sample
