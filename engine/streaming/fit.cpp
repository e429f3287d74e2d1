#include "engine/streaming/fit.h"

#include <fmt/format.h>

#include "engine/streaming/executor.h"

namespace ws::streaming {
namespace {

std::string mib(int64_t bytes) {
    return fmt::format("{:.1f} MiB", double(bytes) / (1 << 20));
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
    const int64_t T = in.seqLen;
    auto notEvenOne = [&]() -> Error {
        // Which layer needs the most: a block (its MLP grows with the filter size) or the head
        // (logits grow with the vocabulary).
        const int64_t C = in.shape.channels, F = in.shape.ffn;
        const int64_t block = (C + 2 + 3 * C + 2 * in.shape.heads + 3 * C + 2 + 2 * F + C) * T * 4;
        const int64_t head = (C + 2 + in.shape.vocab + 2) * T * 4;
        const bool blockWorst = block >= head;
        const int fits = longestFittingSequence(in.shape, available, in.seqLen);
        return Error{fmt::format(
            "the activations of one sequence of {} tokens need {} on the wafer; the largest layer "
            "is {} ({}). After the weight buffer ({}) only {} of the wafer's {} SRAM remains, so "
            "even micro_batch_size 1 does not fit: use max_sequence_length {} or less, a smaller "
            "model, wafer.weight_buffer_layers 1, or a bigger wafer (wafer.spec)",
            in.seqLen, mib(r.bytesPerSequence),
            blockWorst ? "each transformer block" : "the head (logits grow with the vocabulary)",
            mib(blockWorst ? block : head), mib(in.weightBufferBytes),
            mib(std::max<int64_t>(available, 0)), mib(in.sramBytes), fits)};
    };
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
