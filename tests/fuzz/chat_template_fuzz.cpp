// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for the chat template interpreter (engine/chat: jinja lexer -> parser ->
// renderer, ChatTemplate). Chat templates come from downloaded model folders, so any text must
// parse and render or come back as an Error, never crash, throw, hang or hit undefined behaviour
// (ASan + UBSan). The input is the template's text, rendered against a fixed conversation (a
// system prompt, two user/assistant turns with unicode and braces) with add_generation_prompt off
// and on. What renders must keep the interpreter's promises: the same input renders the same text
// twice, and the training render (ChatTemplate::renderForTraining) either refuses or gives spans
// that lie inside its text, in order. Tight limits keep each input quick.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja.h"
#include "fuzz_support.h"

namespace {

using namespace ws::chat;

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "chat_template_fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
}

const Conversation& conversation() {
    static const Conversation c{
        {{"system", "Be brief {{ and }} {% raw %}."},
         {"user", "Hi \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82"},
         {"assistant", "Hello<|im_end|>"},
         {"user", "  'quoted' \"twice\"\n"},
         {"assistant", "Bye"}},
        "fuzz"};
    return c;
}

jinja::ValueDict context(bool addGenerationPrompt) {
    jinja::ValueList messages;
    for (const auto& m : conversation().messages) {
        jinja::ValueDict message;
        message.set("role", jinja::Value::string(m.role));
        message.set("content", jinja::Value::string(m.content));
        messages.push_back(jinja::Value::dict(std::move(message)));
    }
    jinja::ValueDict c;
    c.set("messages", jinja::Value::list(std::move(messages)));
    c.set("bos_token", jinja::Value::string("<s>"));
    c.set("eos_token", jinja::Value::string("</s>"));
    c.set("add_generation_prompt", jinja::Value::boolean(addGenerationPrompt));
    return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const std::string source(ws::fuzz::asText(data, size));
        auto parsed = jinja::Template::parse(source);
        if (!parsed.ok()) {
            ws::fuzz::note("refused: " + parsed.error().message.substr(0, 300));
            return 0;
        }
        jinja::RenderOptions limits;
        limits.maxOutputBytes = 1 << 16;
        limits.maxSteps = 20'000;
        limits.now = 1721952000;
        bool rendered = false;
        for (bool prompt : {false, true}) {
            auto first = parsed->render(context(prompt), limits);
            auto second = parsed->render(context(prompt), limits);
            if (first.ok() != second.ok() || (first.ok() && *first != *second))
                fail("the same template rendered two ways", source);
            if (!first.ok()) {
                ws::fuzz::note("render refused: " + first.error().message.substr(0, 300));
                continue;
            }
            rendered = true;
        }
        if (!rendered) return 0;
        auto chat = ChatTemplate::fromSource("fuzz.jinja", source, "<s>", "</s>");
        if (!chat.ok()) fail("a template that parses does not load", chat.error().message);
        auto training = chat->renderForTraining(conversation());
        if (!training.ok()) {
            ws::fuzz::note("training refused: " + training.error().message.substr(0, 300));
            return 0;
        }
        size_t last = 0;
        for (const auto& span : training->spans) {
            if (span.begin < last || span.end < span.begin || span.end > training->text.size())
                fail("an assistant span lies outside its text or out of order", source);
            last = span.end;
        }
    } catch (const std::exception& e) {
        fail("an exception escaped the chat template interpreter", e.what());
    }
    return 0;
}
