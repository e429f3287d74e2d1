// SPDX-License-Identifier: GPL-3.0-or-later
// ExampleDataset (example_dataset.h): the create() pipeline, the batch formulas implemented
// literally, and the warnings shown before training.
#include "engine/data/example_dataset.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <mutex>

namespace ws::data {
namespace {

constexpr uint64_t kTrainPackStream = 2;
constexpr uint64_t kHeldOutPackStream = 3;
constexpr uint64_t kFirstEpochStream = 4;

std::string originList(const std::vector<std::string>& origins, int64_t total) {
    std::string out;
    for (size_t k = 0; k < origins.size(); ++k) out += (k ? ", " : "") + origins[k];
    if (total > int64_t(origins.size())) out += ", ...";
    return out;
}

// The origins of both splits, up to the few kept per split.
std::vector<std::string> joined(const std::vector<std::string>& a,
                                const std::vector<std::string>& b) {
    std::vector<std::string> out = a;
    out.insert(out.end(), b.begin(), b.end());
    if (out.size() > 5) out.resize(5);
    return out;
}

}  // namespace

struct ExampleDataset::EpochCache {
    std::mutex mutex;
    int64_t epoch = -1;
    uint64_t seed = 0;
    std::shared_ptr<const std::vector<int64_t>> order;
};

ExampleDataset::ExampleDataset(ExampleRows train, ExampleRows heldOut, ExampleStats trainStats,
                               ExampleStats heldOutStats, const ExampleOptions& options)
    : m_train(std::move(train)),
      m_heldOut(std::move(heldOut)),
      m_trainStats(std::move(trainStats)),
      m_heldOutStats(std::move(heldOutStats)),
      m_options(options),
      m_cache(std::make_shared<EpochCache>()) {}

Result<ExampleDataset> ExampleDataset::create(std::vector<Example> examples,
                                              const ExampleOptions& options) {
    if (Status s = checkExamples(examples, options); !s.ok()) return s.error();
    auto split = splitExamples(std::move(examples), options.heldOutFraction, options.heldOutCount,
                               options.seed);
    if (!split.ok()) return split.error();
    return build(std::move(*split), options);
}

Result<ExampleDataset> ExampleDataset::create(std::vector<Example> train,
                                              std::vector<Example> heldOut,
                                              const ExampleOptions& options) {
    if (Status s = checkExamples(train, options); !s.ok()) return s.error();
    if (Status s = checkExamples(heldOut, options); !s.ok()) return s.error();
    return build(ExampleSplit{std::move(train), std::move(heldOut)}, options);
}

// Prepare each split, refuse splits left empty, pack each into rows.
Result<ExampleDataset> ExampleDataset::build(ExampleSplit split, const ExampleOptions& options) {
    const bool hadHeldOut = !split.heldOut.empty();
    PreparedExamples train = prepareExamples(std::move(split.train), options.T);
    PreparedExamples heldOut = prepareExamples(std::move(split.heldOut), options.T);
    const auto emptied = [](const char* what, const ExampleStats& s) {
        return Error{fmt::format(
            "none of the {} {} examples has a token to train on ({} have no trained token, {} "
            "lost theirs to truncation; e.g. {}): check the answer mask (the data's "
            "assistant/answer parts) or raise max_sequence_length",
            s.given, what, s.untrained, s.droppedByTruncation,
            originList(joined(s.untrainedOrigins, s.droppedOrigins),
                       s.untrained + s.droppedByTruncation))};
    };
    if (train.examples.empty()) {
        if (train.stats.given == 0) return Error{"there are no training examples"};
        return emptied("training", train.stats);
    }
    if (hadHeldOut && heldOut.examples.empty()) return emptied("held-out", heldOut.stats);
    ExampleRows trainRows(std::move(train.examples), options.T, options.pack, options.packShuffled,
                          streamKey(options.seed, kTrainPackStream), options.padId);
    ExampleRows heldOutRows(std::move(heldOut.examples), options.T, options.pack,
                            options.packShuffled, streamKey(options.seed, kHeldOutPackStream),
                            options.padId);
    return ExampleDataset(std::move(trainRows), std::move(heldOutRows), std::move(train.stats),
                          std::move(heldOut.stats), options);
}

Status ExampleDataset::checkBatch(int B) const {
    if (B < 1) return Error{fmt::format("batch_size {} must be at least 1", B)};
    const int64_t rows = m_train.rows();
    if (rows >= B) return {};
    const std::string unpack =
        m_options.pack && int64_t(m_train.examples().size()) >= B
            ? fmt::format(", or turn packing off (one example per row gives {} rows)",
                          m_train.examples().size())
            : "";
    return Error{fmt::format(
        "the {} training examples fill {} rows of {} tokens but batch_size is {}: every step "
        "would train on some rows twice. Lower batch_size to {} or less, or add examples{}",
        m_train.examples().size(), rows, m_options.T, B, rows, unpack)};
}

std::shared_ptr<const std::vector<int64_t>> ExampleDataset::epochOrder(int64_t epoch,
                                                                       uint64_t seed) const {
    std::lock_guard lock(m_cache->mutex);
    if (m_cache->order && m_cache->epoch == epoch && m_cache->seed == seed) return m_cache->order;
    m_cache->order = std::make_shared<const std::vector<int64_t>>(
        seededPermutation(m_train.rows(), streamKey(seed, kFirstEpochStream + uint64_t(epoch))));
    m_cache->epoch = epoch;
    m_cache->seed = seed;
    return m_cache->order;
}

int64_t ExampleDataset::trainRow(int64_t step, int B, int i, bool shuffle, uint64_t seed) const {
    assert(step >= 0 && B > 0 && i >= 0 && i < B && m_train.rows() > 0);
    const auto rows = uint64_t(m_train.rows());
    const uint64_t g = uint64_t(step) * uint64_t(B) + uint64_t(i);
    const auto k = int64_t(g % rows);
    if (!shuffle) return k;
    return (*epochOrder(int64_t(g / rows), seed))[size_t(k)];
}

int64_t ExampleDataset::trainBatch(int64_t step, int B, int T, bool shuffle, uint64_t seed,
                                   int32_t* inputs, int32_t* targets, int32_t* positionIds) const {
    assert(T == m_options.T && m_train.rows() >= B && "call checkBatch(B) first");
    int64_t trained = 0;
    for (int i = 0; i < B; ++i) {
        const size_t at = size_t(i) * size_t(T);
        trained += m_train.writeRow(trainRow(step, B, i, shuffle, seed), inputs + at, targets + at,
                                    positionIds + at);
    }
    return trained;
}

int64_t ExampleDataset::validationBatches(int B) const {
    assert(B > 0);
    return (m_heldOut.rows() + B - 1) / B;
}

int64_t ExampleDataset::validationBatch(int64_t index, int B, int T, int32_t* inputs,
                                        int32_t* targets, int32_t* positionIds) const {
    assert(T == m_options.T && index >= 0 && index < validationBatches(B));
    int64_t trained = 0;
    for (int i = 0; i < B; ++i) {
        const size_t at = size_t(i) * size_t(T);
        const int64_t row = index * B + i;
        if (row < m_heldOut.rows()) {
            trained += m_heldOut.writeRow(row, inputs + at, targets + at, positionIds + at);
        } else {
            m_heldOut.writePaddingRow(inputs + at, targets + at, positionIds + at);
        }
    }
    return trained;
}

std::string ExampleDataset::describe() const {
    const ExampleStats& a = m_trainStats;
    const auto percent = [](int64_t part, int64_t whole) {
        return whole > 0 ? int(std::lround(100.0 * double(part) / double(whole))) : 0;
    };
    std::string line = fmt::format(
        "{} training examples ({} tokens, {} trained on: {}%) {} {} rows of {} tokens ({}% "
        "filled)",
        a.examples, a.tokens, a.trainedTokens, percent(a.trainedTokens, a.tokens),
        m_options.pack ? "packed into" : "in", m_train.rows(), m_options.T,
        percent(m_train.usedSlots(), m_train.rows() * m_options.T));
    if (m_heldOut.rows() > 0) {
        line += fmt::format("; {} held out in {} rows", m_heldOutStats.examples, m_heldOut.rows());
    }
    return line;
}

double ExampleDataset::epochs(int64_t steps, int B) const {
    return double(steps) * double(B) / double(m_train.rows());
}

std::vector<DataWarning> ExampleDataset::warnings(int64_t steps, int B) const {
    std::vector<DataWarning> out;
    const ExampleStats& a = m_trainStats;
    const ExampleStats& b = m_heldOutStats;
    const int64_t limit = int64_t(m_options.T) + 1;
    if (const double e = epochs(steps, B); e > kManyEpochs) {
        const auto steps20 = int64_t(std::floor(kManyEpochs * double(m_train.rows()) / B));
        out.push_back({DataWarning::Kind::ManyEpochs,
                       fmt::format("{} steps of {} rows go over the {} training rows {:.1f} "
                                   "times (more than {:g} epochs): the model is likely to "
                                   "learn them by heart. Add examples or train at most {} steps",
                                   steps, B, m_train.rows(), e, kManyEpochs, steps20)});
    }
    if (const int64_t n = a.truncated + b.truncated; n > 0) {
        out.push_back({DataWarning::Kind::Truncated,
                       fmt::format("{} examples are longer than the {} tokens a row of "
                                   "max_sequence_length {} holds and were truncated to their "
                                   "first {} ({} tokens cut), e.g. {}",
                                   n, limit, m_options.T, limit, a.tokensCut + b.tokensCut,
                                   originList(joined(a.truncatedOrigins, b.truncatedOrigins), n))});
    }
    if (const int64_t n = a.droppedByTruncation + b.droppedByTruncation; n > 0) {
        out.push_back(
            {DataWarning::Kind::DroppedByTruncation,
             fmt::format("{} long examples had every trained token past the first {} "
                         "tokens and were left out, e.g. {}: raise "
                         "max_sequence_length to train on them",
                         n, limit, originList(joined(a.droppedOrigins, b.droppedOrigins), n))});
    }
    if (const int64_t n = a.untrained + b.untrained; n > 0) {
        out.push_back(
            {DataWarning::Kind::Untrained,
             fmt::format("{} examples have no token to train on (nothing after their "
                         "first token is in the answer mask) and were left out, e.g. {}",
                         n, originList(joined(a.untrainedOrigins, b.untrainedOrigins), n))});
    }
    return out;
}

}  // namespace ws::data
