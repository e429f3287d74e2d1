// SPDX-License-Identifier: GPL-3.0-or-later
// Conversations as files in OpenAI's `messages` shape, for chats saved from `wafer chat` and the
// Chat tab and for a conversation given to `wafer chat --messages`: JSON Lines with one
// {"messages": [{"role": ..., "content": ...}, ...]} object per line, the shape the data readers
// (data/chat_records.h) detect as `messages`, so a saved chat can become training data as it is.
//
// Reading (parseMessagesJson) takes one JSON value: an object with a "messages" array, or the
// array of messages itself; each message an object with a string "role" and a "content" that is
// a string or a list of {"type": "text", "text": ...} parts (joined). Errors name the origin
// (file, or file:line), the message and what is wrong. Text that is not valid UTF-8 (a model
// can generate any bytes) is written with U+FFFD in its place, so every file written is JSON.
// Thread-safety: pure functions (they read and write the files named).
#pragma once

#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/chat/conversation.h"
#include "engine/core/result.h"

namespace ws::chat {

// One line, without its newline: {"messages":[{"role":"user","content":"..."}, ...]}.
std::string messagesJsonLine(const Conversation& conversation);
// The messages alone as a JSON array value (for `wafer chat --json`).
std::string messagesJsonArray(const Conversation& conversation);

// Writes the conversations, one line each, replacing the file (atomically).
Status saveConversations(const std::filesystem::path& file,
                         std::span<const Conversation> conversations);

// One conversation from one JSON value (see above); `origin` names it in errors and becomes the
// conversation's origin.
Result<Conversation> parseMessagesJson(std::string_view json, std::string_view origin);

// A file holding one JSON value (a .json file: an object with messages, or an array of
// messages) or JSON Lines (one conversation per non-blank line). At least one conversation.
Result<std::vector<Conversation>> loadConversations(const std::filesystem::path& file);

}  // namespace ws::chat
