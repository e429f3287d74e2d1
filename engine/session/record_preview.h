// SPDX-License-Identifier: GPL-3.0-or-later
// What a run on instruction or chat records will train on, shown before it trains (the fine-tune
// wizard's Data page): the detected format and its evidence, the CSV/TSV columns found and the
// mapping used, the chat template and why, the counts, the first few examples as text segments
// each trained on or not (from the token mask the run uses), a histogram of example lengths
// against the sequence length, and the warnings (truncated examples, too few examples for the
// planned steps, examples with nothing to train on).
//
// It runs openChatRunData's own phases (chat_run_data.h: readRunRecords, chatTemplateFor,
// templateTokenizer, data::makeExamples / renderExample, exampleOptions, ExampleDataset), on the
// same config, so the preview is what the run trains on. It does not check model.vocab_size
// against the template's special tokens: the fine-tune plan sizes the vocabulary.
//
// Notation: T the sequence length (max_sequence_length), an example fits a row with T + 1 tokens
// (data/examples.h), B rows per step.
// Thread-safety: a pure function of its arguments (it reads the files named).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/config.h"
#include "engine/core/result.h"
#include "engine/data/examples.h"
#include "engine/data/record_format.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::session {

struct RecordPreviewRequest {
    // The run's config: train_input's data_dir (record files), format, column keys,
    // chat_template, train_on_inputs, mask_history, max_sequence_length (T), batch_size (B),
    // pack_examples, long_examples, the held-out split and the seed; eval_input.data_dir.
    config::Config config;
    // The base's tokenizer, before the template's special tokens (chat_template auto looks for
    // a template beside its files: tokenizerFolder(config.trainInput.tokenizer)).
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    // The planned steps; 0: unknown, then epochs x the steps of one epoch (ceil(rows / B)), at
    // least minSteps and at most maxSteps (0: no bound), as a plan would count them.
    int64_t steps = 0;
    int epochs = 1;
    int64_t minSteps = 0;
    int64_t maxSteps = 0;
    size_t examplesShown = 3;  // the first training examples rendered as segments
};

// A piece of a rendered example: Trained (its tokens are targets with a loss), Context (seen,
// not trained on: system and user turns, the template's headers), Cut (past the T + 1 tokens a
// row holds: truncated away).
struct PreviewSegment {
    enum class Kind { Trained, Context, Cut };
    std::string text;
    Kind kind = Kind::Context;
    bool operator==(const PreviewSegment&) const = default;
};

struct PreviewExample {
    std::string origin;  // "chat.jsonl:3"
    int64_t tokens = 0;
    int64_t trainedTokens = 0;  // within the first T + 1 tokens
    std::vector<PreviewSegment> segments;
};

struct RecordPreview {
    // Filled as far as the chain got: `error` says where it stopped (the readers' message with
    // file:line, a missing column listing the columns found, a template the engine cannot
    // render), and what comes before it stays (e.g. `columns` for a mapping to fix).
    std::string error;
    std::vector<std::string> columns;  // CSV/TSV: the first table's header (empty for JSON)
    data::RecordOptions options;       // the format asked for and the column mapping
    data::RecordReport report;         // the format read, its evidence, reader warnings
    std::string templateName;          // "chatml", "<folder>/tokenizer_config.json"
    std::string templateReason;        // why that template
    bool trainOnInputs = false;
    bool maskHistory = false;
    size_t trainRecords = 0;
    size_t heldOutRecords = 0;
    data::ExampleStats stats;  // the training examples (lengths: the histogram against T + 1)
    int T = 0;
    int batchSize = 0;
    int64_t rows = 0;   // training rows of T slots (0 when the data set was not built)
    int64_t steps = 0;  // as planned, or counted (stepsCounted)
    bool stepsCounted = false;
    double epochs = 0.0;  // steps x B / rows
    std::vector<PreviewExample> examples;
    std::vector<std::string> warnings;  // the readers' and the data set's (data::DataWarning)
    // What stops a run on this data although it reads (long examples refused, fewer rows than
    // a batch): the engine's message.
    std::string blocking;
};

RecordPreview previewRecords(const RecordPreviewRequest& request);

// The columns of a CSV/TSV record file (for a .zip, of its first CSV/TSV file); empty for other
// files. Errors: the file cannot be read, its header is malformed (file:line).
Result<std::vector<std::string>> recordColumns(const std::filesystem::path& file);

// An example's text split at its tokens' byte ranges into runs of trained, context and cut
// tokens (the token at index >= T + 1 is cut; mask[0] never counts: the first token is never
// predicted). `offsets`: one per id, as Tokenizer::encodeWithOffsets gives; boundaries move
// forward to whole UTF-8 characters.
std::vector<PreviewSegment> previewSegments(const std::string& text,
                                            const std::vector<tokenizer::ByteSpan>& offsets,
                                            const std::vector<uint8_t>& mask, int T);

}  // namespace ws::session
