// SPDX-License-Identifier: GPL-3.0-or-later
// A run's instruction or chat data (train_input.format other than text, or auto on record files):
// the config keys mapped onto the record readers (data/chat_records.h), the chat template
// (chat/chat_template.h), the masked encoding and the example batches (data/example_dataset.h),
// so the session and `wafer validate` read the same data with the same checks. Not a public
// header (it exposes the data module, a private dependency of the session).
//
// The mapping:
//   train_input.data_dir        record files (.jsonl .json .csv .tsv .zip), read in order and
//                               joined; with format auto a run reads records when every entry
//                               is such a file (a folder or a .txt keeps the text path)
//   format, *_column            data::RecordOptions
//   validation_records / validation_fraction
//                               the held-out records (data/record_split.h; chains kept whole)
//   chat_template               auto: the template beside the tokenizer's files (its
//                               tokenizer_config.json or chat_template.jinja), else ChatML;
//                               chatml; or a .jinja file
//   train_on_inputs, mask_history  what is trained on (data/chat_examples.h)
//   max_sequence_length, pack_examples, long_examples, shuffle_seed  data::ExampleOptions
// A built-in template's special tokens (ChatML's <|im_start|>, <|im_end|>) join the tokenizer
// (tokenizer/special_tokens.h); model.vocab_size must then cover them (a fine-tune grows it:
// finetune/finetune_plan.h, and the base's embedding grows when the run loads it).
//
// Thread-safety: pure functions of their arguments (they read the files named).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/data/chat_examples.h"
#include "engine/data/example_dataset.h"
#include "engine/data/record_format.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::session {

// True when train_input reads instruction or chat records rather than plain text.
bool readsRecords(const config::InputConfig& input);
// What the loss of a run on this input counts, for charts and logs: "answer tokens" (chat data,
// the assistant's answers only), "last answer tokens" (mask_history), or empty when every token
// counts (plain text, train_on_inputs).
std::string lossCountsLabel(const config::InputConfig& input);

struct ChatRunData {
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;  // with the template's special tokens
    std::string templateName;              // "chatml", "<folder>/tokenizer_config.json"
    std::vector<std::string> stopStrings;  // the template's end-of-turn markers
    // The tokenizer's size before the template's special tokens, and the tokens that got new ids
    // at or after it ("chatml's <|im_start|>, <|im_end|>"; empty when none did): the rows a
    // fine-tune's vocabulary grows by (session/run_weights.h).
    int baseVocab = 0;
    std::string addedTokens;
    data::RecordReport report;  // the first file's, counts summed
    size_t trainRecords = 0, heldOutRecords = 0;
    // The first held-out conversation's first user turn (or text record's text): a prompt that
    // shows what the fine-tune learned on a record it never trained on; empty without one.
    std::string heldOutPrompt;
    std::unique_ptr<data::ExampleDataset> dataset;
};

// `tokenizer`: the run's tokenizer before special tokens (train_input.tokenizer).
// VocabCheck::Model refuses a tokenizer (with the template's tokens) larger than
// model.vocab_size; VocabCheck::Grow leaves that to the caller (a fine-tune plan, which grows
// model.vocab_size to the tokenizer's size).
enum class VocabCheck { Model, Grow };
Result<ChatRunData> openChatRunData(const config::Config& cfg,
                                    std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                                    VocabCheck vocabCheck = VocabCheck::Model);

// The phases of openChatRunData, in its order; the wizard's preview of the data
// (record_preview.h) runs the same ones, so it shows what the run trains on.
//
// train_input's format and column keys as the readers' options.
data::RecordOptions recordOptions(const config::InputConfig& input);
// Every data_dir file of `input` read and joined (CSV chains keep their groups apart); errors
// start with `key` and carry the readers' file:line.
Result<data::RecordSet> readRecords(const config::InputConfig& input, const std::string& key);
// train_input's records split into training and held-out records (by validation_records /
// validation_fraction and the seed, chains kept whole), or eval_input's records held out when
// it names data. `report`: train_input's first file's, counts summed.
struct RunRecords {
    data::RecordSet train;
    data::RecordSet heldOut;
    data::RecordReport report;
};
Result<RunRecords> readRunRecords(const config::Config& cfg);
// train_input.chat_template resolved as the header comment says.
Result<chat::ChatTemplate> chatTemplateFor(const config::InputConfig& input);
// The tokenizer with the template's special tokens (model.vocab_size is not checked here).
Result<std::shared_ptr<const tokenizer::Tokenizer>> templateTokenizer(
    const chat::ChatTemplate& chatTemplate, std::shared_ptr<const tokenizer::Tokenizer> tokenizer);
// train_on_inputs and mask_history.
data::ChatMaskOptions chatMaskOptions(const config::InputConfig& input);
// max_sequence_length, pack_examples, long_examples, shuffle_seed; padding with the template's
// eos token when it is one token.
data::ExampleOptions exampleOptions(const config::InputConfig& input,
                                    const chat::ChatTemplate& chatTemplate,
                                    const tokenizer::Tokenizer& tokenizer);

// Where a run's chat template comes from with chat_template auto: the folder of the tokenizer's
// files (tokenizer_file or vocab_file), empty for the byte tokenizer.
std::filesystem::path tokenizerFolder(const config::TokenizerConfig& tokenizer);

}  // namespace ws::session
