// SPDX-License-Identifier: GPL-3.0-or-later
// Generator (see generator.h): prefill, then sample / report / feed back one token at a time.
#include "engine/sample/generator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "engine/model/gpt.h"
#include "engine/model/lora_merge.h"
#include "engine/sample/stop_matcher.h"
#include "engine/sample/utf8_stream.h"

namespace ws::sample {

const char* stopReasonName(StopReason reason) {
    switch (reason) {
        case StopReason::MaxTokens:
            return "max_tokens";
        case StopReason::Cancelled:
            return "cancelled";
        case StopReason::StopToken:
            return "stop_token";
        case StopReason::StopString:
            return "stop_string";
    }
    return "max_tokens";
}

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}
bool isSet(const std::atomic<bool>* flag) {
    return flag && flag->load(std::memory_order_relaxed);
}
}  // namespace

namespace {
std::vector<float> plainWeights(const modelio::LoadedModel& model, bool adapters) {
    if (!model.shape.hasLora()) return {};
    return adapters ? model::lora::mergeAdapters(model.shape, model.params.data())
                    : model::lora::baseWeights(model.shape, model.params.data());
}
}  // namespace

Generator::Generator(const modelio::LoadedModel& model, bool adapters)
    : m_model(model),
      m_ownWeights(plainWeights(model, adapters)),
      m_decoder(model::lora::baseShape(model.shape),
                model.shape.hasLora() ? m_ownWeights.data() : model.params.data(),
                kMaxSamplingContext) {}

Result<GenerationResult> Generator::generate(std::string_view prompt,
                                             const SamplingOptions& options,
                                             const TokenCallback& onToken,
                                             const std::atomic<bool>* cancel) {
    if (prompt.empty()) {
        return Error{"the prompt is empty: give at least one character to continue from"};
    }
    const auto start = Clock::now();
    const std::vector<int32_t> tokens = m_model.tokenizer->encode(prompt);
    auto result = generateTokens(tokens, options, onToken, cancel);
    // Encoding counts as part of the prefill.
    if (result.ok()) result->prefillSeconds = secondsSince(start) - result->generateSeconds;
    return result;
}

Result<std::vector<double>> Generator::tokenLogProbs(std::span<const int32_t> tokens,
                                                     const std::atomic<bool>* cancel) {
    const int V = m_model.shape.vocab, maxT = m_decoder.capacity();
    if (tokens.size() < 2) return Error{"scoring needs at least two tokens"};
    if (tokens.size() > size_t(maxT))
        return Error{fmt::format("{} tokens do not fit the model's context of {} positions",
                                 tokens.size(), maxT)};
    if (Status st = model::checkTokens(tokens.data(), tokens.size(), V); !st.ok())
        return st.error();
    m_decoder.reset();
    if (!m_decoder.append(tokens, /*allLogits=*/true, cancel))
        return Error{"scoring was cancelled"};
    std::vector<double> out(tokens.size() - 1);
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        const float* logits = m_decoder.logits(int(i));  // (V) predicting tokens[i + 1]
        double top = logits[0];
        for (int v = 1; v < V; ++v) top = std::max(top, double(logits[v]));
        double sum = 0.0;
        for (int v = 0; v < V; ++v) sum += std::exp(double(logits[v]) - top);
        out[i] = double(logits[tokens[i + 1]]) - top - std::log(sum);
    }
    m_decoder.reset();
    return out;
}

Result<GenerationResult> Generator::generateTokens(std::span<const int32_t> prompt,
                                                   const SamplingOptions& options,
                                                   const TokenCallback& onToken,
                                                   const std::atomic<bool>* cancel) {
    if (Status st = options.validate(); !st.ok()) return st.error();
    if (prompt.empty()) return Error{"the prompt has no tokens: give at least one"};
    const int V = m_model.shape.vocab, maxT = m_decoder.capacity();
    if (Status st = model::checkTokens(prompt.data(), prompt.size(), V); !st.ok()) {
        return st.error();
    }
    const int sampleVocab = std::min(V, m_model.tokenizer->vocabSize());

    GenerationResult r;
    r.promptTokens.assign(prompt.begin(), prompt.end());
    std::vector<int32_t> history = r.promptTokens;  // everything the model has seen or made
    const auto prefillStart = Clock::now();
    r.promptTokensUsed = std::min(int(prompt.size()), maxT);
    m_decoder.reset();
    const std::span<const int32_t> window = prompt.last(size_t(r.promptTokensUsed));
    if (!m_decoder.append(window, false, cancel)) {
        r.stop = StopReason::Cancelled;
        r.prefillSeconds = secondsSince(prefillStart);
        return r;
    }
    r.prefillSeconds = secondsSince(prefillStart);

    const auto genStart = Clock::now();
    TokenSampler sampler(options);
    Utf8Stream utf8;
    StopMatcher stops(options.stopStrings);
    std::vector<int32_t> one(1);
    bool ended = false;  // by max_tokens or a stop
    for (int i = 0; i < options.maxTokens && !ended; ++i) {
        const int32_t token = sampler.pick(m_decoder.logits(), sampleVocab, uint64_t(i));
        std::string piece;
        if (std::find(options.stopTokens.begin(), options.stopTokens.end(), token) !=
            options.stopTokens.end()) {
            r.stop = StopReason::StopToken;
            r.stoppedAt = m_model.tokenizer->tokenName(token);
            piece = utf8.flush();
            ended = true;
        } else {
            r.tokens.push_back(token);
            history.push_back(token);
            one[0] = token;
            piece = utf8.push(m_model.tokenizer->decode(one));
            ended = i + 1 == options.maxTokens;
            if (ended || isSet(cancel)) piece += utf8.flush();
        }
        TokenEvent event{ended && r.stop == StopReason::StopToken ? -1 : i,
                         ended && r.stop == StopReason::StopToken ? -1 : token, stops.push(piece)};
        if (stops.stopped()) {
            r.stop = StopReason::StopString;
            r.stoppedAt = stops.matched();
            ended = true;
        } else if (ended || isSet(cancel)) {
            event.text += stops.finish();
        }
        r.text += event.text;
        if (onToken && (event.token >= 0 || !event.text.empty())) onToken(event);
        if (ended) break;
        if (isSet(cancel)) {
            r.stop = StopReason::Cancelled;
            break;
        }
        // Feed the token back; slide the window when every position is taken.
        bool ok;
        if (m_decoder.position() < maxT) {
            ok = m_decoder.append(one, false, cancel);
        } else {
            m_decoder.reset();
            ++r.windowShifts;
            const size_t keep = size_t(std::max(1, maxT - 1));
            ok = m_decoder.append(std::span<const int32_t>(history).last(keep), false, cancel);
        }
        if (!ok) {
            r.stop = StopReason::Cancelled;
            break;
        }
    }
    // A cancelled append may leave text held back: it belongs to the result.
    if (r.stop == StopReason::Cancelled) {
        TokenEvent tail{-1, -1, stops.push(utf8.flush())};
        tail.text += stops.finish();
        r.text += tail.text;
        if (onToken && !tail.text.empty()) onToken(tail);
    }
    r.generateSeconds = secondsSince(genStart);
    return r;
}

}  // namespace ws::sample
