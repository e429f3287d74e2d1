// SPDX-License-Identifier: GPL-3.0-or-later
// Slow-motion replay of one emulated step (replay.h).
#include "engine/wafer/replay.h"

#include "engine/wafer/narration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace ws::wafer {

using streaming::SpanKind;

namespace {

bool isCompute(const TimelineSpan& s) {
    return s.kind == SpanKind::Forward || s.kind == SpanKind::Backward;
}

// Which recorded span is the same work as a planned one. The pass only tells stream-ins apart
// (the executor leaves it false on its other spans).
using SpanKey = std::tuple<int, int, int, int, bool, int>;
template <class S>
SpanKey keyOf(const S& s) {
    return {s.system,
            s.micro,
            s.layer,
            int(s.kind),
            s.kind == SpanKind::StreamIn ? s.backwardPass : false,
            s.expert};
}

double fraction(double t, double a, double b) {
    if (b <= a) return t >= b ? 1.0 : 0.0;
    return std::clamp((t - a) / (b - a), 0.0, 1.0);
}

// Adds a span's traffic at t to a link: its bytes so far, its rate while it runs.
void addFlow(LinkFlow& link, const TimelineSpan& s, double t, double bytes, double& latestStart) {
    link.totalBytes += bytes;
    link.bytesSoFar += bytes * fraction(t, s.startS, s.endS);
    if (s.endS > s.startS)
        link.peakBytesPerS = std::max(link.peakBytesPerS, bytes / (s.endS - s.startS));
    if (s.endS > s.startS && t >= s.startS && t < s.endS) {
        link.bytesPerS += bytes / (s.endS - s.startS);
        if (s.startS >= latestStart && bytes > 0) {
            latestStart = s.startS;
            link.layer = s.layer;
            link.backwardPass = s.backwardPass;
        }
    }
}

}  // namespace

StepReplay::StepReplay(std::shared_ptr<const StepPrediction> prediction, double ioBytesPerS,
                       const std::vector<SpanBytes>& recorded)
    : m_prediction(std::move(prediction)) {
    if (!m_prediction) return;
    m_spans = m_prediction->spans;
    m_durationS = std::max(0.0, m_prediction->stepS);
    m_numSystems = std::max(1, m_prediction->numSystems);
    int maxLayer = 1;
    for (const auto& s : m_spans) {
        maxLayer = std::max(maxLayer, s.layer);
        m_durationS = std::max(m_durationS, s.endS);
        m_hasReduce = m_hasReduce || s.kind == SpanKind::Reduce;
    }
    m_numBlocks = m_prediction->forwardFrame.empty() ? maxLayer - 1
                                                     : int(m_prediction->forwardFrame.size()) - 2;
    // Planned bytes: each layer phase's stream times x the I/O bandwidth (every micro-batch's
    // visit of a phase moves the same bytes).
    std::map<std::pair<std::string, bool>, const LayerTiming*> phases;
    for (const auto& l : m_prediction->layers)
        phases.emplace(std::pair{l.layer, l.pass == Pass::Backward}, &l);
    m_bytes.assign(m_spans.size(), 0.0);
    for (size_t i = 0; i < m_spans.size(); ++i) {
        const TimelineSpan& s = m_spans[i];
        const auto it = phases.find({layerName(s.layer, m_numBlocks), s.backwardPass});
        if (it == phases.end()) continue;
        // The rate the prediction timed its transfers at (cluster_links.h: on more than one
        // system SwarmX's lockstep rate, below the spec's I/O).
        const double io = ioBytesPerS > 0 && m_prediction->swarmxBytesPerS > 0
                              ? m_prediction->swarmxBytesPerS
                              : std::max(0.0, ioBytesPerS);
        // (An MoE block's stream unit moves its share of the layer's bytes.)
        if (s.kind == SpanKind::StreamIn) m_bytes[i] = it->second->weightStreamS * io * s.share;
        if (s.kind == SpanKind::StreamOut) m_bytes[i] = it->second->gradStreamS * io * s.share;
        if (s.kind == SpanKind::Reduce)
            m_bytes[i] = it->second->gradStreamS * io * m_numSystems * s.share;
    }
    if (!recorded.empty()) {
        std::map<SpanKey, double> bytes;
        for (const auto& r : recorded) bytes[keyOf(r)] = r.bytes;
        for (size_t i = 0; i < m_spans.size(); ++i) {
            const auto it = bytes.find(keyOf(m_spans[i]));
            if (it != bytes.end() && it->second > 0) m_bytes[i] = it->second;
        }
    }
    for (size_t i = 0; i < m_spans.size(); ++i)
        if (m_spans[i].system == 0 && isCompute(m_spans[i])) m_compute.push_back(i);
    std::stable_sort(m_compute.begin(), m_compute.end(),
                     [&](size_t a, size_t b) { return m_spans[a].startS < m_spans[b].startS; });
}

ReplayState StepReplay::stateAt(double timeS) const {
    ReplayState out;
    const double t = std::clamp(std::isfinite(timeS) ? timeS : 0.0, 0.0, m_durationS);
    out.timeS = t;
    out.broadcast.assign(size_t(m_numSystems), LinkFlow{});
    out.gradientsOut.assign(size_t(m_numSystems), LinkFlow{});
    if (!m_prediction) return out;
    out.buffer = bufferStateAt(*m_prediction, t);

    // Links, updates and the spans running now.
    double inLatest = -1, outLatest = -1;
    std::vector<double> bcLatest(size_t(m_numSystems), -1), upLatest(size_t(m_numSystems), -1);
    for (size_t i = 0; i < m_spans.size(); ++i) {
        const TimelineSpan& s = m_spans[i];
        const double bytes = m_bytes[i];
        if (s.endS > s.startS && t >= s.startS && t < s.endS) out.activeSpans.push_back(i);
        const bool onSystem = s.system >= 0 && s.system < m_numSystems;
        switch (s.kind) {
            case SpanKind::StreamIn:
                if (s.system == 0) addFlow(out.weightsIn, s, t, bytes, inLatest);
                if (onSystem)
                    addFlow(out.broadcast[size_t(s.system)], s, t, bytes,
                            bcLatest[size_t(s.system)]);
                break;
            case SpanKind::StreamOut:
                if (onSystem)
                    addFlow(out.gradientsOut[size_t(s.system)], s, t, bytes,
                            upLatest[size_t(s.system)]);
                if (!m_hasReduce && s.system == 0) addFlow(out.reducedOut, s, t, bytes, outLatest);
                break;
            case SpanKind::Reduce:
                addFlow(out.reducedOut, s, t, bytes / m_numSystems, outLatest);
                break;
            case SpanKind::Update:
                ++out.updatesPlanned;
                if (t >= s.endS) ++out.updatesDone;
                if (s.endS > s.startS && t >= s.startS && t < s.endS)
                    out.updating.push_back(s.layer);
                break;
            default:
                break;
        }
    }

    // The phase on the wafer: the compute span under t, else the last one before it.
    PhaseAtTime& ph = out.phase;
    auto streamedOf = [&](const TimelineSpan& c) {
        for (const auto& s : m_spans)
            if (s.system == 0 && s.kind == SpanKind::StreamIn && s.layer == c.layer &&
                s.micro == c.micro && s.backwardPass == (c.kind == SpanKind::Backward))
                return fraction(t, s.startS, s.endS);
        return 1.0;  // no stream-in planned (nothing to wait for)
    };
    const TimelineSpan* current = nullptr;
    const TimelineSpan* last = nullptr;
    const TimelineSpan* next = nullptr;
    for (size_t i : m_compute) {
        const TimelineSpan& c = m_spans[i];
        if (t >= c.startS && t < c.endS) {
            current = &c;
        } else if (c.endS <= t) {
            last = &c;
        } else if (c.startS > t && !next) {
            next = &c;
        }
    }
    if (current) {
        // The next phase after the one computing now.
        next = nullptr;
        for (size_t i : m_compute)
            if (m_spans[i].startS >= current->endS) {
                next = &m_spans[i];
                break;
            }
    }
    const TimelineSpan* shown = current ? current : last;
    if (shown) {
        ph.layer = shown->layer;
        ph.backward = shown->kind == SpanKind::Backward;
        ph.micro = shown->micro;
        ph.computedFraction = fraction(t, shown->startS, shown->endS);
        ph.streamedFraction = streamedOf(*shown);
        const auto& frames = ph.backward ? m_prediction->backwardFrame : m_prediction->forwardFrame;
        if (size_t(ph.layer) < frames.size()) ph.frame = frames[size_t(ph.layer)];
    }
    if (next) {
        ph.nextLayer = next->layer;
        ph.nextBackward = next->kind == SpanKind::Backward;
        ph.nextMicro = next->micro;
        ph.nextStreamedFraction = streamedOf(*next);
    }
    ph.activity = current ? WaferActivity::Computing
                  : next  ? WaferActivity::WaitingForWeights
                          : WaferActivity::Idle;
    return out;
}

ReplayPace ReplayPace::of(double emulatedS, double wallS) {
    ReplayPace pace;
    if (emulatedS > 0 && wallS > 0 && std::isfinite(emulatedS / wallS))
        pace.m_factor = emulatedS / wallS;
    return pace;
}

double ReplayPace::advance(double timeS, double wallS, double endS) const {
    return std::clamp(timeS + std::max(0.0, wallS) * m_factor, 0.0, std::max(0.0, endS));
}

double ReplayPace::wallSeconds(double emulatedS) const {
    if (m_factor <= 0) return std::numeric_limits<double>::infinity();
    return std::max(0.0, emulatedS) / m_factor;
}

int ReplayPace::frameCount(double stepS, double fps) const {
    if (m_factor <= 0 || fps <= 0 || stepS <= 0) return 1;
    // Frames at 0, 1/fps, ... up to the last one before the end, then the end itself.
    const double frames = std::ceil(wallSeconds(stepS) * fps - 1e-9);
    return int(std::min(frames, double(std::numeric_limits<int>::max() - 1))) + 1;
}

double ReplayPace::frameTime(int frame, double stepS, double fps) const {
    if (frame <= 0 || fps <= 0) return 0;
    return std::min(std::max(0.0, stepS), double(frame) / fps * m_factor);
}

std::string describeReplayState(const ReplayState& st, int numSystems, int numBlocks) {
    const PhaseAtTime& ph = st.phase;
    auto name = [&](int layer) { return layerName(layer, numBlocks); };
    auto pass = [](bool backward) { return backward ? "backward" : "forward"; };
    const std::string where =
        numSystems > 1 ? fmt::format("on all {} systems", numSystems) : std::string("on system 0");
    std::string line;
    if (ph.activity == WaferActivity::Computing) {
        line = fmt::format("{} {} {}", name(ph.layer), pass(ph.backward), where);
        if (ph.streamedFraction < 1)
            line += fmt::format(" as its own weights arrive ({:.0f} % in)",
                                100.0 * ph.streamedFraction);
    } else if (ph.activity == WaferActivity::WaitingForWeights) {
        line =
            fmt::format("the wafer waits for the weights of {} ({}): {:.0f} % in",
                        name(ph.nextLayer), pass(ph.nextBackward), 100.0 * ph.nextStreamedFraction);
    } else if (ph.layer >= 0) {
        line = "the wafer is idle (its work for this step is done)";
    } else {
        line = "nothing scheduled";
    }
    // What else moves now: the next layer's weights, gradients out, updates in MemoryX.
    std::vector<std::string> beside;
    const LinkFlow& in = st.weightsIn;
    const bool waitedFor = ph.activity == WaferActivity::WaitingForWeights &&
                           in.layer == ph.nextLayer && in.backwardPass == ph.nextBackward;
    const bool ownWeights = ph.activity == WaferActivity::Computing && in.layer == ph.layer &&
                            in.backwardPass == ph.backward;
    if (in.active() && !waitedFor && !ownWeights)
        beside.push_back(fmt::format("{}'s weights stream in", name(in.layer)));
    if (!st.gradientsOut.empty() && st.gradientsOut[0].active())
        beside.push_back(fmt::format("{}'s gradients stream out", name(st.gradientsOut[0].layer)));
    if (numSystems > 1 && st.reducedOut.active())
        beside.push_back(fmt::format("SwarmX reduces {}", name(st.reducedOut.layer)));
    for (int layer : st.updating) beside.push_back(fmt::format("MemoryX updates {}", name(layer)));
    for (size_t i = 0; i < beside.size(); ++i)
        line += (i == 0 ? " while " : i + 1 == beside.size() ? " and " : ", ") + beside[i];
    return line;
}

}  // namespace ws::wafer
