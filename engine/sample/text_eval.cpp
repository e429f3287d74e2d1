// SPDX-License-Identifier: GPL-3.0-or-later
// evaluateText (see text_eval.h): tokenize -> plan the windows -> score them -> summarise.
#include "engine/sample/text_eval.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <numbers>
#include <utility>

#include "engine/model/gpt.h"

namespace ws::sample {

std::vector<EvalWindow> evalWindows(int64_t tokens, int T) {
    std::vector<EvalWindow> windows;
    if (tokens < 2 || T < 1) return windows;
    for (int64_t start = 0; start + 1 < tokens; start += T)
        windows.push_back({start, int(std::min<int64_t>(T, tokens - 1 - start))});
    return windows;
}

namespace {

// Phase 1: the tokens scored, after the maxTokens cut, checked against the model.
Result<std::vector<int32_t>> tokenizeForEval(const model::GptShape& shape,
                                             const tokenizer::Tokenizer& tokenizer,
                                             std::string_view text, int64_t maxTokens,
                                             int64_t& textTokens) {
    if (text.empty()) return Error{"the text is empty: there is nothing to score"};
    std::vector<int32_t> tokens = tokenizer.encode(text);
    textTokens = int64_t(tokens.size());
    if (maxTokens > 0 && int64_t(tokens.size()) > maxTokens + 1)
        tokens.resize(size_t(maxTokens) + 1);
    if (tokens.size() < 2) {
        return Error{fmt::format(
            "the text is {} token(s) long; scoring needs at least 2 (the first is only context "
            "for the second)",
            tokens.size())};
    }
    if (Status st = model::checkTokens(tokens.data(), tokens.size(), shape.vocab); !st.ok())
        return st.error();
    return tokens;
}

// Phase 2: which windows run together: full windows `batch` at a time, the rest alone.
struct WindowGroup {
    size_t first = 0;  // index into the windows
    int count = 0;
    int length = 0;
};

std::vector<WindowGroup> groupWindows(const std::vector<EvalWindow>& windows, int T, int batch) {
    std::vector<WindowGroup> groups;
    for (size_t i = 0; i < windows.size();) {
        WindowGroup g{i, 0, windows[i].length};
        while (i < windows.size() && g.count < (windows[i].length == T ? batch : 1) &&
               windows[i].length == g.length) {
            ++g.count;
            ++i;
        }
        groups.push_back(g);
    }
    return groups;
}

// Phase 3: the sum of the per-token losses (nats) of every window, in window order.
class WindowScorer {
public:
    WindowScorer(const model::GptShape& shape, const float* params,
                 const std::vector<int32_t>& tokens)
        : m_shape(shape), m_params(params), m_tokens(tokens) {}

    double score(const std::vector<EvalWindow>& windows, const WindowGroup& g) {
        model::Gpt<float>& gpt = gptFor(g.count, g.length);
        const size_t L = size_t(g.length);
        m_inputs.resize(size_t(g.count) * L);
        m_targets.resize(size_t(g.count) * L);
        for (int b = 0; b < g.count; ++b) {
            const EvalWindow& w = windows[g.first + size_t(b)];
            for (size_t j = 0; j < L; ++j) {
                m_inputs[size_t(b) * L + j] = m_tokens[size_t(w.start) + j];
                m_targets[size_t(b) * L + j] = m_tokens[size_t(w.start) + j + 1];
            }
        }
        gpt.forward(m_params, m_inputs.data(), m_targets.data(), /*training=*/false, 0);
        // The per-token losses summed in double in a fixed order (the forward's own mean is
        // this sum over the window's tokens).
        const float* losses = gpt.activation("losses");
        double sum = 0.0;
        for (size_t n = 0; n < m_inputs.size(); ++n) sum += double(losses[n]);
        return sum;
    }

private:
    model::Gpt<float>& gptFor(int batch, int length) {
        auto& slot = m_gpts[{batch, length}];
        if (!slot) slot = std::make_unique<model::Gpt<float>>(m_shape, batch, length);
        return *slot;
    }

    const model::GptShape& m_shape;
    const float* m_params;
    const std::vector<int32_t>& m_tokens;
    std::map<std::pair<int, int>, std::unique_ptr<model::Gpt<float>>> m_gpts;
    std::vector<int32_t> m_inputs, m_targets;  // (count, length)
};

}  // namespace

Result<TextEvalResult> evaluateText(const model::GptShape& shape, const float* params,
                                    const tokenizer::Tokenizer& tokenizer, std::string_view text,
                                    const TextEvalOptions& options) {
    const int T = options.seqLen > 0 ? options.seqLen : shape.maxPositions;
    if (T > shape.maxPositions) {
        return Error{fmt::format(
            "the context asked for ({} tokens) is longer than the model's ({} positions, "
            "max_position_embeddings); use at most {}",
            T, shape.maxPositions, shape.maxPositions)};
    }
    if (options.batch < 1) return Error{fmt::format("batch {} must be at least 1", options.batch)};
    if (Status st = shape.validate(options.batch, T); !st.ok()) return st.error();

    TextEvalResult r;
    auto tokens = tokenizeForEval(shape, tokenizer, text, options.maxTokens, r.textTokens);
    if (!tokens.ok()) return tokens.error();
    const std::vector<EvalWindow> windows = evalWindows(int64_t(tokens->size()), T);
    const std::vector<WindowGroup> groups = groupWindows(windows, T, options.batch);

    r.textBytes = int64_t(text.size());
    r.tokens = int64_t(tokens->size());
    r.seqLen = T;
    r.batch = options.batch;
    r.bf16 = shape.bf16;
    const std::vector<int32_t> tokenBytes = tokenizer::tokenByteCounts(tokenizer);
    WindowScorer scorer(shape, params, *tokens);
    for (const WindowGroup& g : groups) {
        if (options.cancel && options.cancel->load()) {
            r.cancelled = true;
            break;
        }
        r.totalNats += scorer.score(windows, g);
        for (int b = 0; b < g.count; ++b) {
            const EvalWindow& w = windows[g.first + size_t(b)];
            for (int j = 1; j <= w.length; ++j) {
                const int32_t t = (*tokens)[size_t(w.start + j)];
                r.scoredBytes += tokenBytes[size_t(t)];  // t < the tokenizer's vocabulary
            }
            r.scoredTokens += w.length;
            ++r.windows;
        }
    }
    // Phase 4: the figures.
    if (r.scoredTokens > 0) {
        r.loss = r.totalNats / double(r.scoredTokens);
        r.perplexity = std::exp(r.loss);
    }
    if (r.scoredBytes > 0) r.bitsPerByte = r.totalNats / std::numbers::ln2 / double(r.scoredBytes);
    return r;
}

}  // namespace ws::sample
