// SPDX-License-Identifier: GPL-3.0-or-later
// The simulate phase of the cycle model (step_simulation.h).
#include "engine/wafer/step_simulation.h"

#include <algorithm>
#include <utility>

namespace ws::wafer {

void scheduleOps(std::vector<OpTiming>& ops, double clock) {
    double opStart = 0, runStart = 0;
    std::vector<double> chainEnd;
    auto endRun = [&] {
        for (double e : chainEnd) opStart = std::max(opStart, e);
        chainEnd.clear();
    };
    for (auto& op : ops) {
        op.timeS = opBusyCycles(op) / clock;
        if (op.expert < 0) {
            endRun();
            op.startS = opStart;
            opStart += op.timeS;
            continue;
        }
        if (chainEnd.empty()) runStart = opStart;
        if (chainEnd.size() <= size_t(op.expert)) chainEnd.resize(size_t(op.expert) + 1, runStart);
        op.startS = chainEnd[size_t(op.expert)];
        chainEnd[size_t(op.expert)] += op.timeS;
    }
    endRun();
}

namespace {

using streaming::SpanKind;

// Walks the schedule once, placing each phase's streams, compute, gradients and update.
class Simulator {
public:
    Simulator(const WaferSpec& spec, const StepInput& in, const StepPlan& plan,
              const std::vector<PhaseVisit>& order, const ClusterRates& rates)
        : m_spec(spec),
          m_in(in),
          m_plan(plan),
          m_order(order),
          m_clock(spec.clockHz()),
          m_io(rates.swarmxBytesPerS),
          m_offloadRate(rates.offloadBytesPerS),
          m_updateRate(spec.cluster.memoryxUpdateGparamsPerS * 1e9) {
        m_out.rates = rates;
        m_out.treeDepth = spec.cluster.treeDepth(in.numSystems);
        const double bpv = spec.streamBytesPerValue;
        m_gradientBpv = bpv;
        m_weightBpv = in.weightBytesPerValue > 0 ? in.weightBytesPerValue : bpv;
        m_treeLatency = m_out.treeDepth * spec.cluster.swarmxHopLatencyUs * 1e-6;
        const auto& S = in.shape;
        const int mb = plan.microBatch, T = plan.seqLen;
        const auto& acts = plan.blockActivations;
        m_storedPerCore =
            (acts.empty() ? activationFit(spec, S, mb, T).storedBytes
                          : residentActivationBytes(S, double(mb) * T, countsOf(acts))) /
            double(spec.cores());
        m_expertValues = 2.0 * S.channels * S.ffn + S.ffn + S.channels;
        m_out.phases.resize(order.size());
    }

    StepTimeline run() {
        for (size_t i = 0; i < m_order.size(); ++i) simulatePhase(i);
        applyDeferredUpdates();
        const size_t n = m_order.size();
        const auto& ph = m_out.phases;
        m_out.stepS = std::max(m_updEnd, ph[n - 1].computeEnd);
        // Wafer time per pass: each phase from the end of the one before (its wait included).
        for (size_t i = 0; i < n; ++i) {
            const double d = ph[i].computeEnd - (i ? ph[i - 1].computeEnd : ph[0].computeStart);
            (kindOf(i).ops.pass == Pass::Forward ? m_out.forwardS : m_out.backwardS) += d;
        }
        m_out.lastReduceEnd = m_lastReduceEnd;
        return std::move(m_out);
    }

private:
    const PlannedLayer& kindOf(size_t i) const { return m_plan.kinds[size_t(m_order[i].kind)]; }
    bool oneSlot() const { return m_in.weightBufferLayers == 1; }

    void simulatePhase(size_t i) {
        const PlannedLayer& p = kindOf(i);
        const Pass pass = p.ops.pass;
        const double streamS = p.ops.weightValues * m_weightBpv / io();
        m_out.weightBytesIn += p.ops.weightValues * m_weightBpv;
        m_out.lockstepWaitS += streamS * m_out.rates.waitFraction;
        // Offloaded activations (activation_memory.h): back in ahead of a backward phase's
        // weights, out behind a forward phase on the outbound link.
        const double actS = m_order[i].offloadBytes / m_offloadRate;
        const double actInS = pass == Pass::Backward ? actS : 0.0;
        const double actOutS = pass == Pass::Forward ? actS : 0.0;
        if (pass == Pass::Forward) m_out.offloadBytes += m_order[i].offloadBytes;
        const double inputReady = inputReadyFor(i);
        placePhase(i, p.busyCycles / clock(), streamS, actInS, inputReady);
        PhaseWindow& w = m_out.phases[i];
        const PhaseVisit& st = m_order[i];
        if (st.layerIndex == 0 && pass == Pass::Forward) m_microStarts.push_back(w.computeStart);
        if (actInS > 0)
            m_out.activationSpans.push_back({0, st.micro, st.layerIndex, false, st.offloadBytes,
                                             w.inStart, w.inStart + actInS});
        if (actOutS > 0) {
            // Streams out as the forward produces it, behind what the outbound link carries.
            const double oStart = std::max(m_outEnd, w.computeStart);
            m_outEnd = std::max(oStart + actOutS, w.computeEnd);
            w.drainEnd = m_outEnd;
            m_out.activationSpans.push_back(
                {0, st.micro, st.layerIndex, true, st.offloadBytes, oStart, m_outEnd});
        }
        if (streamS > 0)
            transferSpans(SpanKind::StreamIn, st, pass, w.inStart + actInS, w.inEnd,
                          streamS * m_out.rates.waitFraction);
        span(pass == Pass::Forward ? SpanKind::Forward : SpanKind::Backward, st, pass,
             w.computeStart, w.computeEnd);
        LayerTiming t = layerTiming(i, streamS);
        streamGradientsOut(i, t);
        m_out.layers.push_back(std::move(t));
    }

    // Host input (cluster_links.h): a micro-batch's tokens stream from the input servers while
    // the micro-batch before it computes (the first one's during the step before), so the
    // embeddings' forward of micro-batch k > 0 cannot start before micro-batch k - 1 started
    // plus their transfer. Returns that earliest start (0: no constraint).
    double inputReadyFor(size_t i) {
        const PhaseVisit& st = m_order[i];
        if (st.layerIndex != 0 || kindOf(i).ops.pass != Pass::Forward) return 0;
        const double bytes = double(m_plan.microBatch) * m_plan.seqLen * kInputBytesPerToken;
        m_out.inputBytes += bytes;
        if (m_microStarts.empty()) return 0;
        return m_microStarts.back() + bytes / m_out.rates.inputBytesPerS;
    }

    // The phase's inbound stream and compute window (PhaseWindow), from the phases before it;
    // its compute starts no earlier than `inputReady` (its tokens, inputReadyFor).
    void placePhase(size_t i, double busyS, double streamS, double actInS, double inputReady) {
        auto& ph = m_out.phases;
        PhaseWindow& w = ph[i];
        const double fillS = fillCycles(m_spec) / clock();
        const double prevEnd = i ? ph[i - 1].computeEnd : 0.0;
        if (!oneSlot()) {
            // Two weight buffers: layer i streams once layer i-1's stream ended and layer i-2's
            // compute freed its buffer; it computes as its weights arrive.
            w.inStart = std::max(i ? ph[i - 1].inEnd : 0.0, i >= 2 ? ph[i - 2].computeEnd : 0.0);
            if (actInS > 0) {
                w.inEnd = w.inStart + actInS + streamS + m_treeLatency;
                w.computeStart = std::max(prevEnd, w.inStart + actInS + m_treeLatency);
            } else {
                w.inEnd = w.inStart + (streamS > 0 ? streamS + m_treeLatency : 0);
                w.computeStart = std::max(prevEnd, w.inStart + (streamS > 0 ? m_treeLatency : 0));
            }
            if (i >= 2 && ph[i - 2].drainEnd > 0)
                w.computeStart = std::max(w.computeStart, ph[i - 2].drainEnd);
            holdForInput(w, inputReady);
            w.computeEnd = std::max(w.computeStart + busyS, streamS > 0 ? w.inEnd + fillS : 0.0);
        } else {
            // One buffer: the slot is free once layer i-1 has computed; layer i computes once
            // its weights are all in.
            w.inStart = i ? std::max(ph[i - 1].inEnd, ph[i - 1].computeEnd) : 0.0;
            w.inEnd =
                w.inStart + (streamS > 0 || actInS > 0 ? actInS + streamS + m_treeLatency : 0);
            w.computeStart = std::max(prevEnd, w.inEnd);
            if (i >= 2 && ph[i - 2].drainEnd > 0)
                w.computeStart = std::max(w.computeStart, ph[i - 2].drainEnd);
            holdForInput(w, inputReady);
            w.computeEnd = w.computeStart + busyS;
        }
    }

    void holdForInput(PhaseWindow& w, double inputReady) {
        if (inputReady <= w.computeStart) return;
        m_out.inputWaitS += inputReady - w.computeStart;
        w.computeStart = inputReady;
    }

    LayerTiming layerTiming(size_t i, double streamS) const {
        const PlannedLayer& p = kindOf(i);
        const auto& ph = m_out.phases;
        const double busyS = p.busyCycles / clock();
        LayerTiming t;
        t.layer = m_order[i].layer;
        t.pass = p.ops.pass;
        t.computeS = p.computeCycles / clock();
        t.fabricS = (p.busyCycles - p.computeCycles) / clock();
        for (const auto& op : p.timings) t.fillS += op.fillCycles / clock();
        t.weightStreamS = streamS;
        t.timeS = ph[i].computeEnd - ph[i].computeStart;
        // One slot: the layer waited out its whole stream before computing.
        const double waitedS =
            oneSlot() ? ph[i].computeStart - (i ? ph[i - 1].computeEnd : 0.0) : 0.0;
        t.binding = ph[i].computeEnd > ph[i].computeStart + busyS + 1e-15 || waitedS > 0
                        ? Binding::WeightStream
                        : (t.fabricS > t.computeS ? Binding::Fabric : Binding::Compute);
        t.tileSramBytes = p.tileSram;
        t.sramBytesPerCore = p.tileSram + m_storedPerCore;
        t.waitFabricS = t.fabricS;
        t.waitWeightsS = std::max(0.0, t.timeS - busyS);  // one slot: the wait is before
        t.rowLinkBytes = p.rowLinkBytes;
        t.colLinkBytes = p.colLinkBytes;
        t.ops = p.timings;
        scheduleOps(t.ops, clock());
        return t;
    }

    // A trained layer's gradients stream out, SwarmX reduces them (more than one system) and,
    // after its last micro-batch, MemoryX updates the layer.
    void streamGradientsOut(size_t i, LayerTiming& t) {
        const PlannedLayer& p = kindOf(i);
        const PhaseVisit& st = m_order[i];
        const bool frozen = size_t(st.layerIndex) < m_in.frozenLayers.size() &&
                            m_in.frozenLayers[size_t(st.layerIndex)];
        if (p.ops.gradientValues <= 0 || frozen) return;
        const Pass pass = p.ops.pass;
        const PhaseWindow& w = m_out.phases[i];
        const double gradS = p.ops.gradientValues * m_gradientBpv / io();
        const double waitS = gradS * m_out.rates.waitFraction;
        t.gradStreamS = gradS;
        m_out.gradientBytesOut += p.ops.gradientValues * m_gradientBpv;
        m_out.lockstepWaitS += waitS;
        const double oStart = std::max(m_outEnd, w.computeStart);
        m_outEnd = std::max(oStart + gradS, w.computeEnd);
        transferSpans(SpanKind::StreamOut, st, pass, oStart, m_outEnd, waitS);
        const double reduceEnd = m_outEnd + m_treeLatency;
        if (m_in.numSystems > 1)
            transferSpans(SpanKind::Reduce, st, pass, oStart, reduceEnd, waitS);
        m_lastReduceEnd = reduceEnd;
        m_out.gradientStreamS += gradS;
        m_out.reduceS += m_treeLatency;
        if (!st.lastMicro) return;
        const double uS = p.ops.gradientValues / updateRate();
        m_out.optimizerS += uS;
        if (m_in.updatesAfterNorm) {
            m_deferredUpdates.push_back({i, uS});
        } else {
            const double uStart = std::max(m_updEnd, oStart + m_treeLatency);
            m_updEnd = std::max(uStart + uS, reduceEnd);
            span(SpanKind::Update, st, pass, uStart, m_updEnd);
        }
    }

    // Global-norm clipping: the norm needs every layer's gradient, so MemoryX updates the
    // layers one after another once the last reduce has landed.
    void applyDeferredUpdates() {
        for (const auto& [i, uS] : m_deferredUpdates) {
            const double uStart = std::max(m_updEnd, m_lastReduceEnd);
            m_updEnd = uStart + uS;
            span(SpanKind::Update, m_order[i], Pass::Backward, uStart, m_updEnd);
        }
    }

    void span(SpanKind k, const PhaseVisit& st, Pass pass, double a, double b, double waitS = 0) {
        const bool shared = k == SpanKind::Reduce || k == SpanKind::Update;
        auto& spans = shared ? m_out.sharedSpans : m_out.spans;
        spans.push_back(
            {shared ? -1 : 0, st.micro, st.layerIndex, k, pass == Pass::Backward, a, b});
        spans.back().waitS = waitS;
    }

    // A transfer of a layer's weights or gradients: an MoE block's moves as units, its shared
    // part then each expert, one after another, each taking its share of [a, b) (and of
    // `waitS`, the part of it spent on SwarmX's slowest link).
    void transferSpans(SpanKind k, const PhaseVisit& st, Pass pass, double a, double b,
                       double waitS) {
        const auto& S = m_in.shape;
        const int block = st.layerIndex - 1;
        const bool moe = block >= 0 && block < S.layers && S.isMoeBlock(block);
        if (!moe) return span(k, st, pass, a, b, waitS);
        const double total = moeBlockValues(S, S.numExperts);
        double at = a;
        for (int e = -1; e < S.numExperts; ++e) {
            const double share =
                (e < 0 ? total - S.numExperts * m_expertValues : m_expertValues) / total;
            const double end = e + 1 == S.numExperts ? b : at + share * (b - a);
            span(k, st, pass, at, end, share * waitS);
            auto& added = (k == SpanKind::Reduce ? m_out.sharedSpans : m_out.spans).back();
            added.expert = e;
            added.share = share;
            at = end;
        }
    }

    double clock() const { return m_clock; }
    double io() const { return m_io; }
    double updateRate() const { return m_updateRate; }

    const WaferSpec& m_spec;
    const StepInput& m_in;
    const StepPlan& m_plan;
    const std::vector<PhaseVisit>& m_order;
    // Hz; bytes per second each way between a system and MemoryX: weights and gradients
    // (cluster_links.h: SwarmX under lockstep), offloaded activations.
    const double m_clock, m_io, m_offloadRate;
    const double m_updateRate;                  // values MemoryX updates per second
    double m_gradientBpv = 0, m_weightBpv = 0;  // bytes per value: gradients out, weights in
    double m_treeLatency = 0;                   // SwarmX, seconds
    double m_storedPerCore = 0;                 // resident activations spread over the cores
    double m_expertValues = 0;                  // one expert's MLP parameters
    double m_outEnd = 0, m_updEnd = 0, m_lastReduceEnd = 0;    // outbound link, MemoryX, SwarmX
    std::vector<std::pair<size_t, double>> m_deferredUpdates;  // (order index, update seconds)
    std::vector<double> m_microStarts;  // each micro-batch's embeddings forward compute start
    StepTimeline m_out;
};

}  // namespace

StepTimeline simulateStep(const WaferSpec& spec, const StepInput& input, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order) {
    return simulateStep(spec, input, plan, order, clusterRates(spec, input.numSystems));
}

StepTimeline simulateStep(const WaferSpec& spec, const StepInput& input, const StepPlan& plan,
                          const std::vector<PhaseVisit>& order, const ClusterRates& rates) {
    return Simulator(spec, input, plan, order, rates).run();
}

}  // namespace ws::wafer
