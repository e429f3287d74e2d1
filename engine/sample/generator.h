// SPDX-License-Identifier: GPL-3.0-or-later
// Generator: text generation from a LoadedModel, token by token, for the CLI (`wafer sample`)
// and the GUI's Samples tab alike. The prompt is encoded and prefilled into a KvDecoder in one
// batched pass, then each new token is sampled (sampler.h), reported through the callback with
// its text piece (cut on UTF-8 character boundaries, utf8_stream.h) and fed back, one position
// at a time, so generation cost grows linearly with length.
//
// Context longer than the model's max_position_embeddings (maxT): a prompt longer than maxT keeps
// its last maxT tokens. When generation fills all maxT positions, the cache is rebuilt from the
// last maxT - 1 tokens (a sliding window: positions restart at 0, as the model was trained) and
// generation continues; the next token then fills position maxT - 1 again. So past the window
// every second token pays one prefill of maxT - 1 tokens, and every token is predicted from at
// least maxT - 1 tokens of context.
//
// Tokens are only sampled among the ids the tokenizer knows (a model's vocabulary may be padded
// with rows no text maps to).
//
// Stops (a chat's end of turn): a sampled stop token ends generation and is left out of the
// tokens and the text; a stop string ends the text before it, and no part of it is ever reported
// through the callback (stop_matcher.h holds back a tail that could start one).
//
// A model with LoRA adapters (a LoRA run) is sampled through its merged weights
// (model/lora_merge.h: W + scale · A · B, made once at construction, one extra copy of the base's
// weights): the KV decoder computes a plain GPT-2, and the merged one is the adapted model. With
// `adapters` false the adapters are left out instead: the base model the run started from (the
// Samples tab's side-by-side column).
//
// Thread-safety: a Generator is used by one thread at a time (typically a worker thread; the
// callback runs on that thread, it must not block for long). Cancellation: set the atomic flag
// from any thread; it is checked between layers, so generation stops within one layer's work and
// returns what was generated so far. Nothing blocks except on compute.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/result.h"
#include "engine/modelio/load_model.h"
#include "engine/sample/kv_decoder.h"
#include "engine/sample/sampler.h"

namespace ws::sample {

struct TokenEvent {
    int index = 0;       // 0-based among the generated tokens; -1 for the final tail (below)
    int32_t token = -1;  // the generated id (-1 for the tail)
    // Text that can be shown now: this token's bytes plus any held back before, minus an
    // incomplete character at the end (held back for the next token). Often empty for BPE pieces
    // of multi-byte characters. If generation ends while bytes are held back, one last event with
    // index and token -1 carries them.
    std::string text;
};
using TokenCallback = std::function<void(const TokenEvent&)>;

// Why generation ended: max_tokens reached, cancelled, a stop token sampled or a stop string
// generated (SamplingOptions::stopTokens / stopStrings).
enum class StopReason { MaxTokens, Cancelled, StopToken, StopString };
const char* stopReasonName(StopReason reason);  // "max_tokens", "cancelled", "stop_token", ...

struct GenerationResult {
    std::vector<int32_t> promptTokens;  // as encoded (before truncation to the window)
    std::vector<int32_t> tokens;        // generated ids
    std::string text;                   // the generated text (concatenation of all event texts)
    StopReason stop = StopReason::MaxTokens;
    std::string stoppedAt;         // StopToken: the token's spelling; StopString: the string
    int promptTokensUsed = 0;      // prompt tokens in the first window (<= maxT)
    int windowShifts = 0;          // times the context slid (see above)
    double prefillSeconds = 0.0;   // encoding + the prompt's forward pass
    double generateSeconds = 0.0;  // from the first sampled token to the last
    double tokensPerSecond() const {
        return generateSeconds > 0 ? double(tokens.size()) / generateSeconds : 0.0;
    }
};

// The longest context a Generator keeps (its KV cache's positions): prompts are cut to their last
// tokens beyond it, as they are beyond a model's own max_position_embeddings. 4096 positions keep
// Llama 3.2 1B's cache at 256 MiB instead of 8 GiB for its 131,072.
inline constexpr int kMaxSamplingContext = 4096;

class Generator {
public:
    // model must outlive the generator. adapters: for a model with LoRA adapters, false samples
    // its base model (no effect without adapters).
    explicit Generator(const modelio::LoadedModel& model, bool adapters = true);

    // Fails (before any callback) on bad options or an empty prompt; otherwise returns what was
    // generated, with stop == Cancelled if the flag was set.
    Result<GenerationResult> generate(std::string_view prompt, const SamplingOptions& options,
                                      const TokenCallback& onToken = {},
                                      const std::atomic<bool>* cancel = nullptr);
    // The same from token ids (tests, benchmarks). Fails on ids outside the model's vocabulary.
    Result<GenerationResult> generateTokens(std::span<const int32_t> prompt,
                                            const SamplingOptions& options,
                                            const TokenCallback& onToken = {},
                                            const std::atomic<bool>* cancel = nullptr);

    // Teacher forcing: the natural log-probability of each of tokens[1 .. n-1] given the tokens
    // before it, over the model's whole vocabulary (as the training loss counts), in one forward
    // pass; (n - 1) values. Fails on fewer than two tokens, more than the context the generator
    // keeps (min(max_position_embeddings, kMaxSamplingContext)) or ids outside the vocabulary;
    // cancelled: an error saying so.
    Result<std::vector<double>> tokenLogProbs(std::span<const int32_t> tokens,
                                              const std::atomic<bool>* cancel = nullptr);

private:
    const modelio::LoadedModel& m_model;
    std::vector<float> m_ownWeights;  // LoRA: merged (or base-only) weights; empty otherwise
    KvDecoder m_decoder;
};

}  // namespace ws::sample
