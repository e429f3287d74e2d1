// SPDX-License-Identifier: GPL-3.0-or-later
// Held-out answers (sample/answer_check.h): teacher-forced log-probabilities equal the trainer's
// forward (text_eval's Gpt path) on the same tokens; a case's reply, exact match and answer loss
// on a model whose logits are known exactly; the cases a record set gives; ranking and summary.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "engine/sample/answer_check.h"
#include "engine/sample/text_eval.h"
#include "sample_test_util.h"

namespace ws::sample {
namespace {

using testing::alwaysPredict;
using testing::samplingShape;
using testing::tinyModel;

chat::Conversation qa(const std::string& question, const std::string& answer,
                      const std::string& origin = "held-out.jsonl:1") {
    return {{{"user", question}, {"assistant", answer}}, origin};
}

std::shared_ptr<const ChatModel> chatml(modelio::LoadedModel model) {
    auto made = prepareChatModel(std::move(model), "chatml");
    EXPECT_TRUE(made.ok()) << made.error().message;
    return made.ok() ? *made : nullptr;
}

TEST(TokenLogProbs, EqualTheTrainersForwardOnTheSameTokens) {
    const modelio::LoadedModel m = tinyModel(samplingShape(256, 24, /*tied=*/false), 3);
    const std::string text = "the cat sat on the mat";
    const std::vector<int32_t> ids = m.tokenizer->encode(text);
    Generator generator(m);
    auto lp = generator.tokenLogProbs(ids);
    ASSERT_TRUE(lp.ok()) << lp.error().message;
    ASSERT_EQ(lp->size(), ids.size() - 1);
    const double nats = -std::accumulate(lp->begin(), lp->end(), 0.0);
    auto reference = evaluateText(m.shape, m.params.data(), *m.tokenizer, text, {});
    ASSERT_TRUE(reference.ok()) << reference.error().message;
    ASSERT_EQ(reference->scoredTokens, int64_t(ids.size() - 1));
    EXPECT_NEAR(nats, reference->totalNats, 1e-4 * reference->totalNats);
    for (double v : *lp) EXPECT_LT(v, 0.0);
}

TEST(TokenLogProbs, RefuseTooFewTooManyAndUnknownIds) {
    const modelio::LoadedModel m = tinyModel(samplingShape(256, 24), 3);
    Generator generator(m);
    EXPECT_FALSE(generator.tokenLogProbs(std::vector<int32_t>{5}).ok());
    const auto tooMany = generator.tokenLogProbs(std::vector<int32_t>(25, 5));
    ASSERT_FALSE(tooMany.ok());
    EXPECT_NE(tooMany.error().message.find("24 positions"), std::string::npos)
        << tooMany.error().message;
    EXPECT_FALSE(generator.tokenLogProbs(std::vector<int32_t>{5, 300}).ok());
}

// The model always says 'A': a reply of "A" matches the answer "A" and not "AB"; the answer loss
// counts the answer's tokens and its end-of-turn marker, each at the exactly known log-softmax.
TEST(AnswerChecker, ComparesTheReplyAndScoresTheAnswerTokensExactly) {
    modelio::LoadedModel m = tinyModel(samplingShape(258, 64, /*tied=*/false), 1);
    alwaysPredict(m, 'A');
    const int C = m.shape.channels, V = m.shape.vocab;
    const double logZ = std::log(std::exp(double(C)) + (V - 1));
    const double natsRight = logZ - C, natsWrong = logZ;  // -log p of 'A', of anything else

    AnswerChecker checker(chatml(std::move(m)));
    auto right = checker.check({qa("Say A", "A"), "held-out.jsonl:1"}, greedyAnswerOptions(1));
    ASSERT_TRUE(right.ok()) << right.error().message;
    EXPECT_EQ(right->reply, "A");
    EXPECT_EQ(right->reference, "A");
    EXPECT_TRUE(right->exact);
    EXPECT_EQ(right->question, "Say A");
    EXPECT_EQ(right->origin, "held-out.jsonl:1");
    // Trained: "A", "<|im_end|>" and ChatML's "\n" after it: one right, two wrong.
    ASSERT_EQ(right->answerTokens, 3);
    EXPECT_NEAR(right->answerLoss, (natsRight + 2 * natsWrong) / 3, 1e-4);

    auto wrong =
        checker.check({qa("Say AB", " AB \n"), "held-out.jsonl:2"}, greedyAnswerOptions(2));
    ASSERT_TRUE(wrong.ok()) << wrong.error().message;
    EXPECT_EQ(wrong->reply, "AA");
    EXPECT_EQ(wrong->reference, "AB");  // trimmed
    EXPECT_FALSE(wrong->exact);
    EXPECT_GT(wrong->answerLoss, right->answerLoss);

    const AnswerSummary s = summarize({*right, *wrong});
    EXPECT_EQ(s.cases, 2);
    EXPECT_EQ(s.exact, 1);
    EXPECT_DOUBLE_EQ(s.exactFraction(), 0.5);
    EXPECT_NEAR(
        s.meanAnswerLoss,
        (right->answerLoss * right->answerTokens + wrong->answerLoss * wrong->answerTokens) /
            (right->answerTokens + wrong->answerTokens),
        1e-12);
    const auto ranked = byAnswerLoss({*wrong, *right});
    EXPECT_EQ(ranked.front().origin, "held-out.jsonl:1");
    EXPECT_EQ(ranked.back().origin, "held-out.jsonl:2");
}

TEST(AnswerChecker, TheCasesAreConversationsEndingWithAnAnswer) {
    const std::vector<chat::Conversation> records = {
        qa("a", "b", "r:1"),
        {{{"user", "no answer"}}, "r:2"},
        {{{"system", "S"}, {"user", "q"}, {"assistant", "x"}, {"user", "q2"}, {"assistant", "y"}},
         "r:3"},
        qa("c", "d", "r:4")};
    const auto all = answerCases(records);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].origin, "r:1");
    EXPECT_EQ(all[1].origin, "r:3");
    EXPECT_EQ(answerCases(records, 2).size(), 2u);

    // A multi-turn case is answered from everything before its last answer.
    modelio::LoadedModel m = tinyModel(samplingShape(258, 96, false), 1);
    alwaysPredict(m, 'y');
    auto outcomes = checkAnswers(chatml(std::move(m)), true, {all[1]}, greedyAnswerOptions(1));
    ASSERT_TRUE(outcomes.ok()) << outcomes.error().message;
    ASSERT_EQ(outcomes->size(), 1u);
    EXPECT_EQ((*outcomes)[0].question, "q2");
    EXPECT_TRUE((*outcomes)[0].exact);
}

TEST(AnswerChecker, ACaseWithoutAnAnswerIsRefusedNamingIt) {
    modelio::LoadedModel m = tinyModel(samplingShape(258, 64, false), 1);
    AnswerChecker checker(chatml(std::move(m)));
    auto refused = checker.check({{{{"user", "q"}}, "r:9"}, "r:9"}, greedyAnswerOptions());
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.error().message.find("r:9"), std::string::npos);
    EXPECT_NE(refused.error().message.find("does not end with an assistant's answer"),
              std::string::npos);
}

}  // namespace
}  // namespace ws::sample
