// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/wafer/narration.h"

#include <fmt/format.h>

#include <algorithm>

namespace ws::wafer {
namespace {
using streaming::SpanKind;

bool isCompute(SpanKind k) {
    return k == SpanKind::Forward || k == SpanKind::Backward;
}

// "h.2's", "embeddings'" (layer names as the tabs show them).
std::string possessive(int layer, const NarrationContext& c) {
    const std::string name = layerName(layer, c.numBlocks);
    return name + (name.back() == 's' ? "'" : "'s");
}

// "h.2's", "h.2's and h.3's", "h.1's, h.2's and h.3's"
std::string possessiveList(const std::vector<int>& layers, const NarrationContext& c) {
    std::string out;
    for (size_t i = 0; i < layers.size(); ++i) {
        if (i > 0) out += i + 1 == layers.size() ? " and " : ", ";
        out += possessive(layers[i], c);
    }
    return out;
}

std::string nameList(const std::vector<int>& layers, const NarrationContext& c) {
    std::string out;
    for (size_t i = 0; i < layers.size(); ++i) {
        if (i > 0) out += i + 1 == layers.size() ? " and " : ", ";
        out += layerName(layers[i], c.numBlocks);
    }
    return out;
}

std::string cores(const NarrationContext& c) {
    const std::string who = c.cores > 0 ? fmt::format("the {} cores", c.cores) : "the cores";
    return c.numSystems > 1 ? fmt::format("on each of the {} systems, {}", c.numSystems, who) : who;
}

std::string phaseHeading(const TimelineSpan& s, const NarrationContext& c) {
    std::string h =
        layerName(s.layer, c.numBlocks) + (s.kind == SpanKind::Backward ? " backward" : " forward");
    if (c.microBatches > 1)
        h += fmt::format(" (micro-batch {} of {})", s.micro + 1, c.microBatches);
    return h;
}

std::string computeSentence(const TimelineSpan& s, const NarrationContext& c) {
    const std::string name = layerName(s.layer, c.numBlocks);
    const std::string batch = c.microBatches > 1 ? "this micro-batch's" : "the batch's";
    const std::string from =
        c.numSystems > 1 ? "broadcast from MemoryX by SwarmX" : "streamed in from MemoryX";
    if (s.kind == SpanKind::Backward) {
        const std::string to = c.numSystems > 1 ? "SwarmX" : "MemoryX";
        return fmt::format(
            "{}: gradients for {} computed{} and streamed out to {}", phaseHeading(s, c), name,
            c.numSystems > 1 ? fmt::format(" on each of the {} systems", c.numSystems) : "", to);
    }
    if (s.layer <= 0)
        return fmt::format("{}: {} look up {} tokens in the embeddings' weights, {}",
                           phaseHeading(s, c), cores(c), batch, from);
    if (s.layer > c.numBlocks)
        return fmt::format(
            "{}: {} multiply {} activations by the head's weights, {}, and score the next tokens",
            phaseHeading(s, c), cores(c), batch, from);
    return fmt::format("{}: {} multiply {} activations by {} weights, {}", phaseHeading(s, c),
                       cores(c), batch, possessive(s.layer, c), from);
}

void addUnique(std::vector<int>& v, int layer) {
    if (std::find(v.begin(), v.end(), layer) == v.end()) v.push_back(layer);
}

}  // namespace

std::string layerName(int layer, int numBlocks) {
    if (layer <= 0) return "embeddings";
    if (layer > numBlocks) return "head";
    return "h." + std::to_string(layer - 1);
}

NarrationContext narrationContext(const StepPrediction& p) {
    NarrationContext c;
    int lastLayer = 1;
    for (const TimelineSpan& s : p.spans) lastLayer = std::max(lastLayer, s.layer);
    c.numBlocks = lastLayer - 1;  // layers 0 (embeddings), 1..L, L + 1 (head)
    c.numSystems = p.numSystems;
    if (!p.frames.empty()) c.cores = int64_t(p.frames.front().gridRows) * p.frames.front().gridCols;
    c.microBatches = p.microBatch > 0 ? std::max(1, p.batchPerSystem / p.microBatch) : 1;
    c.bufferSlots = p.weightBufferLayers;
    return c;
}

const TimelineSpan* lastPhase(const StepPrediction& p) {
    const TimelineSpan* last = nullptr;
    for (const TimelineSpan& s : p.spans)
        if (s.system <= 0 && isCompute(s.kind) && (!last || s.startS >= last->startS)) last = &s;
    return last;
}

std::string narrateSpan(const TimelineSpan& s, const NarrationContext& c,
                        const InFlight& inFlight) {
    const std::string name = layerName(s.layer, c.numBlocks);
    switch (s.kind) {
        case SpanKind::Forward:
        case SpanKind::Backward: {
            std::string line = computeSentence(s, c);
            if (!inFlight.streamingIn.empty())
                line += fmt::format("; {} weights stream into {} buffer slot",
                                    possessiveList(inFlight.streamingIn, c),
                                    c.bufferSlots > 2 ? "another" : "the other");
            else if (c.bufferSlots <= 1)
                line += "; with one buffer slot, nothing streams in meanwhile";
            if (!inFlight.streamingOut.empty())
                line += fmt::format("; {} gradients stream out",
                                    possessiveList(inFlight.streamingOut, c));
            if (!inFlight.updating.empty())
                line += fmt::format("; MemoryX updates {}", nameList(inFlight.updating, c));
            if (inFlight.waitingForWeights >= 0.5)
                line += fmt::format("; the cores wait for the weights {:.0f}% of the phase",
                                    std::min(inFlight.waitingForWeights * 100, 99.0));
            return line;
        }
        case SpanKind::StreamIn: {
            const std::string why = s.backwardPass ? " for its backward pass" : "";
            if (c.numSystems > 1)
                return fmt::format("SwarmX broadcasts {} weights from MemoryX to the {} systems{}",
                                   possessive(s.layer, c), c.numSystems, why);
            return fmt::format("{} weights stream in from MemoryX{}", possessive(s.layer, c), why);
        }
        case SpanKind::StreamOut:
            return fmt::format("{} gradients stream out to {}", possessive(s.layer, c),
                               c.numSystems > 1 ? "SwarmX" : "MemoryX");
        case SpanKind::Reduce:
            if (c.numSystems > 1)
                return fmt::format("SwarmX sums the {} systems' gradients for {}", c.numSystems,
                                   name);
            return fmt::format("SwarmX passes {} gradients on to MemoryX", possessive(s.layer, c));
        case SpanKind::Update:
            return fmt::format("MemoryX updates {} with {}", name, c.optimizer);
    }
    return {};
}

InFlight inFlightDuring(const StepPrediction& p, const TimelineSpan& compute,
                        const NarrationContext& c) {
    InFlight f;
    const bool backward = compute.kind == SpanKind::Backward;
    const std::string name = layerName(compute.layer, c.numBlocks);
    for (const LayerTiming& t : p.layers)
        if (t.layer == name && (t.pass == Pass::Backward) == backward && t.timeS > 0)
            f.waitingForWeights = std::clamp(t.waitWeightsS / t.timeS, 0.0, 1.0);
    for (const TimelineSpan& s : p.spans) {
        if (s.system > 0 || isCompute(s.kind)) continue;
        // Spans that only touch the phase are not beside it: a stream-bound schedule starts
        // the next layer's stream as this layer's last weights arrive, a fill latency (ns)
        // before its phase ends.
        const double overlap = std::min(s.endS, compute.endS) - std::max(s.startS, compute.startS);
        if (overlap <= 0.01 * (compute.endS - compute.startS)) continue;
        const bool ownVisit = s.layer == compute.layer && s.micro == compute.micro;
        switch (s.kind) {
            case SpanKind::StreamIn:
                if (!(ownVisit && s.backwardPass == backward)) addUnique(f.streamingIn, s.layer);
                break;
            case SpanKind::StreamOut:
                if (!(ownVisit && backward)) addUnique(f.streamingOut, s.layer);
                break;
            case SpanKind::Update:
                addUnique(f.updating, s.layer);
                break;
            default:
                break;
        }
    }
    return f;
}

std::string narratePhase(const StepPrediction& p, int layer, bool backward, int micro,
                         const NarrationContext& c) {
    const SpanKind kind = backward ? SpanKind::Backward : SpanKind::Forward;
    for (const TimelineSpan& s : p.spans)
        if (s.system == 0 && s.kind == kind && s.layer == layer && s.micro == micro)
            return narrateSpan(s, c, inFlightDuring(p, s, c));
    return {};
}

std::string narrateMoment(const StepPrediction& p, double t, const NarrationContext& c) {
    const TimelineSpan* compute = nullptr;
    const TimelineSpan* streamIn = nullptr;  // the earliest-started: the one the wafer waits for
    const TimelineSpan* memoryX = nullptr;   // the latest-started reduce / update
    const TimelineSpan* streamOut = nullptr;
    for (const TimelineSpan& s : p.spans) {
        if (s.system > 0 || !(s.startS <= t && t < s.endS)) continue;
        if (isCompute(s.kind)) {
            compute = &s;
        } else if (s.kind == SpanKind::StreamIn) {
            if (!streamIn || s.startS < streamIn->startS) streamIn = &s;
        } else {
            const TimelineSpan** slot = s.kind == SpanKind::StreamOut ? &streamOut : &memoryX;
            if (!*slot || s.startS > (*slot)->startS) *slot = &s;
        }
    }
    const auto waiting = [&](const TimelineSpan& in, const std::string& beside) {
        return fmt::format("waiting: {} weights are still streaming in{}{}",
                           possessive(in.layer, c), in.backwardPass ? " for its backward pass" : "",
                           beside);
    };
    if (compute) {
        const InFlight f = inFlightDuring(p, *compute, c);
        // A phase bound by its own weight stream: the cores mostly wait for the next part.
        const bool ownStream = streamIn && streamIn->layer == compute->layer &&
                               streamIn->backwardPass == (compute->kind == SpanKind::Backward);
        if (ownStream && f.waitingForWeights >= 0.5)
            return waiting(
                *streamIn,
                fmt::format(" ({} {}: the cores compute each part as it arrives)",
                            layerName(compute->layer, c.numBlocks),
                            compute->kind == SpanKind::Backward ? "backward" : "forward"));
        return narrateSpan(*compute, c, f);
    }
    if (streamIn) return waiting(*streamIn, "");
    if (memoryX) return narrateSpan(*memoryX, c);
    if (streamOut) return narrateSpan(*streamOut, c);
    return {};
}

}  // namespace ws::wafer
