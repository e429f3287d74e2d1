// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/streaming/fit.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/core/units.h"
#include "engine/model/gpt.h"
#include "engine/streaming/executor.h"

namespace ws::streaming {
namespace {

// Binary units throughout, as every front end writes them (engine/core/units.h): "12.0 MiB".
std::string mib(int64_t bytes) {
    return formatBytes(double(bytes));
}

// The longest sequence whose activations fit `available` bytes (binary search; 0 if none).
int longestFittingSequence(const model::GptShape& shape, int64_t available, int upTo) {
    int lo = 0, hi = upTo;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (activationBytesPerSequence(shape, mid) <= available)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

}  // namespace

Result<FitResult> chooseMicroBatch(const FitInput& in) {
    FitResult r;
    r.bytesPerSequence = activationBytesPerSequence(in.shape, in.seqLen);
    const int64_t available = in.sramBytes - in.weightBufferBytes;
    // The weight buffer alone leaves no room for one sequence: fewer slots, or a smaller model.
    auto bufferTooBig = [&]() -> Error {
        const int slots = in.weightBufferLayers;
        std::string what = mib(in.weightBufferBytes);
        std::string fix = "a smaller model or a bigger wafer (wafer.spec)";
        if (slots > 0) {
            const int64_t perSlot = in.weightBufferBytes / slots;
            what = fmt::format(
                "{} (wafer.weight_buffer_layers {} x {} of the largest layer's "
                "weights)",
                what, slots, mib(perSlot));
            const int64_t room = in.sramBytes - r.bytesPerSequence;
            const int64_t fitting = perSlot > 0 && room > 0 ? room / perSlot : 0;
            if (fitting >= 1 && fitting < slots)
                fix = fmt::format("wafer.weight_buffer_layers {} or fewer, {}", fitting, fix);
        }
        return Error{fmt::format(
            "the weight buffer alone needs {}, leaving {} of the wafer's {} SRAM for the "
            "activations, and one sequence of {} tokens needs {}: even micro_batch_size 1 does "
            "not fit; use {}",
            what, mib(std::max<int64_t>(available, 0)), mib(in.sramBytes), in.seqLen,
            mib(r.bytesPerSequence), fix)};
    };
    auto notEvenOne = [&]() -> Error {
        // Which layer's activations need the most: a block's (its MLP grows with the filter
        // size) or the head's (logits grow with the vocabulary).
        const model::ActivationLayout layout = model::activationLayout(in.shape, 1, in.seqLen);
        size_t largestBlock = 0;
        for (int l = 0; l < in.shape.layers; ++l)
            largestBlock = std::max(largestBlock, layout.blockSize(l));
        const int64_t block = int64_t(largestBlock * sizeof(float));
        const int64_t head = int64_t(layout.headSize() * sizeof(float));
        const bool blockWorst = block >= head;
        const int fits = longestFittingSequence(in.shape, available, in.seqLen);
        const std::string shorter =
            fits > 0 ? fmt::format("max_sequence_length {} or less, ", fits) : std::string();
        return Error{fmt::format(
            "the activations of one sequence of {} tokens need {} on the wafer; the largest layer "
            "is {} ({} of activations a sequence). After the weight buffer ({}) only {} of the "
            "wafer's {} SRAM remains, so even micro_batch_size 1 does not fit: use {}a smaller "
            "model, wafer.weight_buffer_layers 1, or a bigger wafer (wafer.spec)",
            in.seqLen, mib(r.bytesPerSequence),
            blockWorst ? "each transformer block" : "the head (logits grow with the vocabulary)",
            mib(blockWorst ? block : head), mib(in.weightBufferBytes),
            mib(std::max<int64_t>(available, 0)), mib(in.sramBytes), shorter)};
    };
    // Not even the shortest sequence fits beside the buffer: the buffer is the problem.
    if (r.bytesPerSequence > available &&
        activationBytesPerSequence(in.shape, 1) > std::max<int64_t>(available, 0))
        return bufferTooBig();
    if (r.bytesPerSequence > available) return notEvenOne();

    if (in.microBatchSetting == "auto") {
        for (int m = in.perSystemBatch; m >= 1; --m) {
            if (in.perSystemBatch % m == 0 && int64_t(m) * r.bytesPerSequence <= available) {
                r.microBatch = m;
                break;
            }
        }
    } else {
        r.microBatch =
            in.microBatchSetting == "none" ? in.perSystemBatch : std::stoi(in.microBatchSetting);
        if (int64_t(r.microBatch) * r.bytesPerSequence > available) {
            const int64_t fitting = available / r.bytesPerSequence;
            return Error{fmt::format(
                "train_input.micro_batch_size {} needs {} of activations per system but the wafer "
                "has {} after the weight buffer; at most {} sequences fit: set micro_batch_size to "
                "auto or to a divisor of {} up to {}",
                r.microBatch, mib(int64_t(r.microBatch) * r.bytesPerSequence), mib(available),
                fitting, in.perSystemBatch, fitting)};
        }
    }
    r.activationBytes = int64_t(r.microBatch) * r.bytesPerSequence;
    return r;
}

}  // namespace ws::streaming
