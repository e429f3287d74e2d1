// SPDX-License-Identifier: GPL-3.0-or-later
// Shared by the data record fuzz targets (chat_json_records, csv_records, zip_records): what a
// successful read must hold whatever the input was, checked after every read, and the held-out
// split run over it. A broken promise aborts (a finding).
// Thread-safety: none needed; a fuzz target runs one input at a time.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/chat/conversation.h"
#include "engine/data/chat_records.h"
#include "engine/data/record_split.h"
#include "engine/data/record_text.h"
#include "fuzz_support.h"

namespace ws::fuzz {

[[noreturn]] inline void recordFail(const char* target, const std::string& what) {
    std::fprintf(stderr, "%s: %s\n", target, what.c_str());
    std::abort();
}

inline void checkUtf8(const char* target, const std::string& text, const std::string& what) {
    if (data::firstInvalidUtf8(text) != std::string::npos)
        recordFail(target, what + " holds bytes that are not UTF-8");
}

// A read either refused the input (an error that names something) or returned records that keep
// every promise of chat_records.h.
inline void checkRecordRead(const char* target, const Result<data::RecordSet>& read) {
    if (!read.ok()) {
        if (read.error().message.empty()) recordFail(target, "an error without a message");
        note("refused: " + read.error().message.substr(0, 200));
        return;
    }
    const data::RecordSet& set = *read;
    const data::RecordReport& report = set.report;
    if (report.format == data::RecordFormat::Auto)
        recordFail(target, "the report's format is auto");
    if (report.evidence.empty()) recordFail(target, "no evidence for the format");
    if (set.conversations.empty() == set.texts.empty())
        recordFail(target, "a read must give conversations or texts, not both or neither");
    if (set.conversationGroups.size() != set.conversations.size())
        recordFail(target, "one group per conversation");
    if (report.conversations != set.conversations.size())
        recordFail(target, "the report's conversation count differs");
    for (const auto& c : set.conversations) {
        if (!chat::checkTrainingTurns(c).ok())
            recordFail(target, "a conversation breaking the turn rules was returned: " + c.origin);
        for (const auto& m : c.messages) checkUtf8(target, m.content, c.origin);
    }
    for (const auto& t : set.texts) checkUtf8(target, t.text, t.origin);
    note(std::string(data::recordFormatKey(report.format)) + ": " + report.evidence);
    auto split = data::splitHeldOut(set, {.fraction = 0.25, .count = 0, .seed = 3});
    if (split.ok()) {
        const size_t n = set.conversations.empty() ? set.texts.size() : set.conversations.size();
        if (split->train.size() + split->heldOut.size() != n)
            recordFail(target, "the split loses or repeats records");
    }
}

}  // namespace ws::fuzz
