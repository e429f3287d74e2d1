// SPDX-License-Identifier: GPL-3.0-or-later
// Scoring a text under a model (`wafer eval`): the mean loss per token, perplexity, bits per byte
// and the token count, through the same Gpt forward the trainer uses (in the model's precision:
// fp32, or bf16 when its config computes in bf16), so it scores every family the engine computes.
//
// Windows, exactly: the text is encoded as the model's tokenizer encodes it, t_0 .. t_{n-1}
// (cut to the first maxTokens + 1 tokens when maxTokens > 0). With context T (the model's
// max_position_embeddings, or a smaller seqLen), window k feeds t_{kT} .. t_{kT+T-1} and scores
// the next token at each position, t_{kT+1} .. t_{kT+T}; the last window is shorter when n - 1 is
// not a multiple of T. The windows do not overlap in what they score: every token but the first
// (context only) is scored exactly once, with the tokens since its window's start as context
// (between 0 and T-1 of them). Full windows run B at a time (batch): faster, and the same figures
// up to float rounding (a matrix kernel may sum in another order for another batch size).
//   loss        = total nats / scored tokens        (scored tokens = n - 1)
//   perplexity  = exp(loss)
//   bits/byte   = total nats / ln 2 / scored bytes  (the bytes the scored tokens decode to: the
//                                                    text's bytes but the first token's)
// Failure contract: an empty text, a text of one token, a token the model's vocabulary lacks
// and bad options are Errors saying so. Thread-safety: a free function; it owns its Gpt objects
// (kernels use tensor::computeThreads()).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/model/parameters.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::sample {

struct TextEvalOptions {
    int seqLen = 0;         // context T; 0: the model's max_position_embeddings
    int batch = 1;          // full windows per forward pass
    int64_t maxTokens = 0;  // > 0: score only the first maxTokens tokens after t_0
    const std::atomic<bool>* cancel = nullptr;  // set: stop after the current forward pass
};

// One window: it feeds tokens [start, start + length) and scores [start + 1, start + length].
struct EvalWindow {
    int64_t start = 0;
    int length = 0;
};

// The windows above for a text of `tokens` tokens and context T (empty when tokens < 2).
std::vector<EvalWindow> evalWindows(int64_t tokens, int T);

struct TextEvalResult {
    int64_t textBytes = 0;     // the text given
    int64_t textTokens = 0;    // the whole text's
    int64_t tokens = 0;        // n, after the maxTokens cut
    int64_t scoredTokens = 0;  // n - 1
    int64_t scoredBytes = 0;   // what the scored tokens decode to
    int64_t windows = 0;
    int seqLen = 0;  // T
    int batch = 0;
    bool bf16 = false;
    bool cancelled = false;  // stopped early: the figures cover the windows done
    double totalNats = 0.0;
    double loss = 0.0;  // nats per scored token
    double perplexity = 0.0;
    double bitsPerByte = 0.0;
};

// params: (P) in ParameterTable(shape) layout, fp32.
Result<TextEvalResult> evaluateText(const model::GptShape& shape, const float* params,
                                    const tokenizer::Tokenizer& tokenizer, std::string_view text,
                                    const TextEvalOptions& options);

}  // namespace ws::sample
