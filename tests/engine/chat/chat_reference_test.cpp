// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's chat templates against @huggingface/jinja (the Jinja implementation
// transformers.js renders chat templates with), byte for byte: fixtures/expected.json was
// written by scripts/make_chat_template_fixtures.mjs from the real templates (see LICENSES.md)
// over conversations with and without system prompts, several turns, unicode, quotes and braces,
// add_generation_prompt off and on; a template that raised there must fail here with the same
// message. Then the assistant spans of every real template: the incremental-render property
// holds and each span holds its answer and an end-of-turn marker. WAFER_CHAT_EXPECTED names
// another expected.json (the live test writes one with the Llama templates and random
// conversations added).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/chat/chat_template.h"

namespace {

using ws::chat::ChatTemplate;
using ws::chat::Conversation;

struct Reference {
    nlohmann::json json;
    std::map<std::string, ChatTemplate> templates;
    std::map<std::string, Conversation> conversations;
};

const Reference& reference() {
    static const Reference ref = [] {
        Reference r;
        const char* env = std::getenv("WAFER_CHAT_EXPECTED");
        const std::string path =
            env && *env ? env : std::string(WAFER_CHAT_FIXTURES) + "/expected.json";
        std::ifstream in(path, std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        r.json = nlohmann::json::parse(text.str(), nullptr, false);
        if (r.json.is_discarded()) {
            ADD_FAILURE() << "cannot read " << path;
            return r;
        }
        for (const auto& t : r.json["templates"]) {
            auto loaded =
                ChatTemplate::fromSource(t["name"], t["source"], t["bos_token"], t["eos_token"]);
            if (!loaded) {
                ADD_FAILURE() << loaded.error().message;
                continue;
            }
            r.templates.emplace(t["name"].get<std::string>(), std::move(*loaded));
        }
        for (const auto& c : r.json["conversations"]) {
            Conversation conversation;
            conversation.origin = c["name"].get<std::string>();
            for (const auto& m : c["messages"])
                conversation.messages.push_back({m["role"], m["content"]});
            r.conversations.emplace(conversation.origin, std::move(conversation));
        }
        return r;
    }();
    return ref;
}

TEST(ChatReference, RendersAsHuggingFaceJinjaDoes) {
    const Reference& ref = reference();
    ASSERT_GE(ref.templates.size(), 8u);
    ASSERT_GE(ref.conversations.size(), 10u);
    size_t compared = 0;
    size_t raised = 0;
    for (const auto& c : ref.json["cases"]) {
        const std::string name = c["template"];
        const std::string conversation = c["conversation"];
        const bool prompt = c["add_generation_prompt"];
        ASSERT_TRUE(ref.templates.count(name) && ref.conversations.count(conversation));
        auto text = ref.templates.at(name).render(ref.conversations.at(conversation), prompt);
        const std::string where = name + " / " + conversation + (prompt ? " / prompt" : "");
        if (c.contains("error")) {
            ++raised;
            ASSERT_FALSE(text.ok())
                << where << " rendered where the reference raised " << c["error"];
            EXPECT_NE(text.error().message.find(c["error"].get<std::string>()), std::string::npos)
                << where << ": " << text.error().message;
        } else {
            ASSERT_TRUE(text.ok()) << where << ": " << text.error().message;
            EXPECT_EQ(*text, c["text"].get<std::string>()) << where;
        }
        ++compared;
    }
    EXPECT_EQ(compared, ref.json["cases"].size());
    EXPECT_GT(raised, 0u);  // Mistral's template refuses system messages; the check must see it
    std::cout << "compared " << compared << " renders (" << raised << " raised) of "
              << ref.templates.size() << " templates with " << ref.json["library"] << "\n";
}

std::string stripped(const std::string& s) {
    const size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

// The spans the engine finds equal those computed from the reference library's renders (the
// same definition, in bytes), a template that does not render incrementally is refused at the
// same message, and each span holds its answer and then an end-of-turn marker.
TEST(ChatReference, AssistantSpansOnEveryRealTemplate) {
    const Reference& ref = reference();
    size_t spans = 0;
    size_t refused = 0;
    for (const auto& c : ref.json["cases"]) {
        if (!c.contains("training")) continue;
        const ChatTemplate& tmpl = ref.templates.at(c["template"].get<std::string>());
        const Conversation& conversation =
            ref.conversations.at(c["conversation"].get<std::string>());
        const std::string where =
            c["template"].get<std::string>() + " / " + c["conversation"].get<std::string>();
        auto r = tmpl.renderForTraining(conversation);
        const auto& expected = c["training"];
        if (expected.contains("refused_at_message")) {
            ++refused;
            ASSERT_FALSE(r.ok()) << where << " was not refused";
            const std::string message = "message " +
                                        std::to_string(expected["refused_at_message"].get<int>()) +
                                        " cannot be found exactly";
            EXPECT_NE(r.error().message.find(message), std::string::npos)
                << where << ": " << r.error().message;
            continue;
        }
        ASSERT_TRUE(r.ok()) << where << ": " << r.error().message;
        ASSERT_EQ(r->spans.size(), expected["spans"].size()) << where;
        for (size_t k = 0; k < r->spans.size(); ++k) {
            const auto& span = r->spans[k];
            EXPECT_EQ(span.messageIndex, expected["spans"][k][0].get<size_t>()) << where;
            EXPECT_EQ(span.begin, expected["spans"][k][1].get<size_t>()) << where;
            EXPECT_EQ(span.end, expected["spans"][k][2].get<size_t>()) << where;
            ASSERT_LE(span.begin, span.end);
            ASSERT_LE(span.end, r->text.size());
            const std::string text = r->text.substr(span.begin, span.end - span.begin);
            const std::string answer = stripped(conversation.messages[span.messageIndex].content);
            const size_t at = text.find(answer);
            EXPECT_NE(at, std::string::npos) << where << ": " << text;
            bool stops = false;
            for (const auto& stop : tmpl.stopStrings())
                stops = stops || text.find(stop, at + answer.size()) != std::string::npos;
            EXPECT_TRUE(stops) << where << ": no end-of-turn in " << text;
            ++spans;
        }
    }
    EXPECT_GT(spans, 50u);
    EXPECT_GT(refused, 0u);  // Mixtral 8x22B's template moves the system prompt to the last turn
    std::cout << "compared " << spans << " assistant spans and " << refused
              << " refusals with the reference's\n";
}

}  // namespace
