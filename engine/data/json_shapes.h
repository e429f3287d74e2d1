// SPDX-License-Identifier: GPL-3.0-or-later
// One JSON record read in a given format, into a conversation or a text record:
// - messages:  {"messages": [{"role", "content"}, ...]}. `content` is text or a list of parts
//   {"type": "text", "text": ...}, joined with "\n" (as vLLM joins them); an image, audio or
//   file part is refused naming the record and message. "developer" (OpenAI's newer name) is
//   the system role. Items may also be ShareGPT's {"from", "value"}.
// - sharegpt:  {"conversations": [{"from", "value"}, ...], "system"?}: human/user -> user,
//   gpt/assistant/model -> assistant, system -> system; a top-level `system` string becomes the
//   first message. Items may also be {"role", "content"}.
// - alpaca:    system?, history [[prompt, answer], ...] as earlier turns, then the user's
//   instruction and input joined with "\n" (as LLaMA-Factory joins them; an empty input adds
//   nothing), then the assistant's output.
// - prompt_completion: user `prompt`, assistant `completion`; each may also be a list of
//   messages (TRL's conversational prompt/completion).
// - text_records: `text`, trained on whole; blank text is an error.
// Other roles (tool, function, observation) are kept as written, so the turn rules
// (chat::checkTrainingTurns, applied by the caller) name them. Errors name the record's origin,
// the key or message, what was found (the record's keys) and the fix.
// Internal to the data module. Thread-safety: pure functions.
#pragma once

#include "engine/chat/conversation.h"
#include "engine/core/result.h"
#include "engine/data/json_records.h"
#include "engine/data/record_format.h"

namespace ws::data {

// `format` is one of Messages, ShareGpt, Alpaca, PromptCompletion.
Result<chat::Conversation> conversationFromJson(const JsonRecord& record, RecordFormat format);

Result<TextRecord> textFromJson(const JsonRecord& record);

}  // namespace ws::data
