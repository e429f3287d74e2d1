// SPDX-License-Identifier: GPL-3.0-or-later
// The Cerebras-GPT validation table (validation.h).
#include "engine/wafer/validation.h"

#include <algorithm>
#include <cmath>

#include "engine/wafer/activation_plan.h"
#include "engine/wafer/cycle_model.h"

namespace ws::wafer {

const std::vector<CerebrasGptModel>& cerebrasGptModels() {
    static const std::vector<CerebrasGptModel> models = {
        {"111M", 10, 768, 12, 3072, 120},   {"256M", 14, 1088, 17, 4352, 264},
        {"590M", 18, 1536, 12, 6144, 264},  {"1.3B", 24, 2048, 16, 8192, 528},
        {"2.7B", 32, 2560, 20, 10240, 528}, {"6.7B", 32, 4096, 32, 16384, 1040},
        {"13B", 40, 5120, 40, 20480, 720}};
    return models;
}

namespace {

// The paper's runs hid weight streaming at these batch sizes. Where SwarmX's lockstep rate on
// many systems would expose it under the planner's fastest plan (it trades a little exposure
// for less recompute), a run keeps it hidden with a larger micro-batch: the fastest plan the
// planner timed that hides it, if any.
void keepStreamingHidden(const ActivationPlan& plan, StepInput& in) {
    const ActivationCandidate* best = nullptr;
    for (const auto& c : plan.considered) {
        if (c.microBatch == plan.microBatch && c.counts == plan.counts && c.streamingHidden)
            return;  // the chosen plan hides it
        if (c.streamingHidden && (!best || c.stepS < best->stepS)) best = &c;
    }
    if (!best) return;
    in.microBatch = best->microBatch;
    in.blockActivations =
        best->counts.allKeep() ? std::vector<BlockActivation>{} : blockActivationsFor(best->counts);
}

}  // namespace

Result<ValidationReport> validateCerebrasGpt(const WaferSpec& spec) {
    ValidationReport rep;
    rep.waferName = spec.name;
    rep.computeEfficiency = spec.computeEfficiency;
    rep.portJitter = spec.cluster.swarmxPortJitter;
    rep.systems = {1, 2, 4, 8, 16};
    const PredictOptions noFrames{.frames = false};
    for (const auto& m : cerebrasGptModels()) {
        ValidationRow row;
        row.model = m.name;
        row.batch = m.batch;
        StepInput in;
        in.shape.vocab = 50257;
        in.shape.channels = m.dModel;
        in.shape.layers = m.layers;
        in.shape.heads = m.heads;
        in.shape.ffn = m.ffn;
        in.shape.maxPositions = 2048;
        in.batchPerSystem = m.batch;
        in.seqLen = 2048;
        in.updatesAfterNorm = true;  // Cerebras-GPT clipped the global gradient norm at 1.0
        row.streamingHidden = true;
        double tokensPerS1 = 0;
        for (int n : rep.systems) {
            // The plan for this system count (weak scaling keeps the per-system batch, but
            // SwarmX's lockstep rate falls with N, so the fastest plan may change), as
            // `wafer predict --weak-scaling` chooses it.
            in.numSystems = n;
            in.microBatch = 0;
            in.blockActivations.clear();
            auto plan = planActivations(spec, in);
            if (!plan.ok()) return Error{m.name + ": " + plan.error().message};
            applyActivationPlan(*plan, in);
            keepStreamingHidden(*plan, in);
            if (n == 1) {
                row.strategy = shortStrategy(*plan);
                row.planNote = plan->note;
                row.microBatch = plan->microBatch;
            }
            auto p = predictStep(spec, in, noFrames);
            if (!p.ok()) return Error{m.name + ": " + p.error().message};
            if (n == 1) {
                tokensPerS1 = p->tokensPerS;
                row.stepS1 = p->stepS;
                row.mfu1 = p->mfu;
                row.hfu1 = p->hfu;
                row.activationsFit = p->activations.fits;
            }
            const double eff = p->tokensPerS / (tokensPerS1 * n);
            row.efficiency.push_back(eff);
            row.worstEfficiency = std::min(row.worstEfficiency, eff);
            row.streamingHidden = row.streamingHidden && p->weightStreamingHidden;
        }
        rep.rows.push_back(std::move(row));
    }
    const double base = rep.rows.front().mfu1, hfuBase = rep.rows.front().hfu1;
    for (auto& r : rep.rows) {
        r.mfuDeviation = std::fabs(r.mfu1 / base - 1);
        r.hfuDeviation = std::fabs(r.hfu1 / hfuBase - 1);
        rep.worstMfuDeviation = std::max(rep.worstMfuDeviation, r.mfuDeviation);
        rep.worstHfuDeviation = std::max(rep.worstHfuDeviation, r.hfuDeviation);
        rep.worstScaling = std::min(rep.worstScaling, r.worstEfficiency);
        rep.bestScalingAtMost = std::max(rep.bestScalingAtMost, r.efficiency.back());
    }
    rep.scalingOk = rep.worstScaling >= 0.91 && rep.bestScalingAtMost < 0.99;
    rep.hfuOk = rep.worstHfuDeviation < 0.08;
    rep.streamingOk = std::all_of(rep.rows.begin(), rep.rows.end(),
                                  [](const ValidationRow& r) { return r.streamingHidden; });
    return rep;
}

model::GptShape llama70bClassShape() {
    model::GptShape s;
    s.vocab = 32000;
    s.channels = 8192;
    s.layers = 80;
    s.heads = 64;
    s.ffn = 43008;
    s.maxPositions = kLlama70bSeqLen;
    s.bf16 = true;  // mixed precision: bf16 weights on the wafer
    return s;
}

model::GptShape llama2_70bShape() {
    model::GptShape s;
    s.vocab = 32000;
    s.channels = 8192;
    s.layers = 80;
    s.heads = 64;
    s.kvHeads = 8;
    s.ffn = 28672;
    s.maxPositions = kLlama70bSeqLen;
    s.tiedEmbedding = false;
    s.position = model::GptShape::Position::Rotary;
    s.norm = model::GptShape::Norm::RmsNorm;
    s.mlp = model::GptShape::Mlp::SwiGlu;
    s.qkvBias = s.attnProjBias = s.mlpBias = false;
    s.bf16 = true;
    return s;
}

namespace {

// One system's prediction of `shape` at the deck's claim (see validation.h).
Result<AbsoluteCheck> checkAgainstTheDeck(const WaferSpec& spec, const model::GptShape& shape,
                                          std::string name) {
    AbsoluteCheck c;
    c.model = std::move(name);
    c.waferName = spec.name;
    c.batch = kLlama70bBatch;
    c.seqLen = kLlama70bSeqLen;
    StepInput in;
    in.shape = shape;
    in.batchPerSystem = c.batch;
    in.seqLen = c.seqLen;
    in.updatesAfterNorm = true;
    in.weightBytesPerValue = 2;  // bf16 weights, as a mixed-precision run streams them
    c.parameters = double(model::ParameterTable(in.shape).totalSize());
    auto plan = planActivations(spec, in);
    if (!plan.ok()) return plan.error();
    applyActivationPlan(*plan, in);
    c.strategy = shortStrategy(*plan);
    c.planNote = plan->note;
    auto p = predictStep(spec, in, {.frames = false});
    if (!p.ok()) return p.error();
    c.stepS = p->stepS;
    c.tokensPerS = p->tokensPerS;
    c.mfu = p->mfu;
    c.hfu = p->hfu;
    c.publishedTokensPerS = 1e9 / 86400.0;
    c.ratio = c.tokensPerS / c.publishedTokensPerS;
    c.withinBound = c.ratio >= 1 / 1.5 && c.ratio <= 1.5;
    return c;
}

}  // namespace

Result<AbsoluteCheck> validateLlama70bClass(const WaferSpec& spec) {
    return checkAgainstTheDeck(spec, llama70bClassShape(), "70B-class GPT");
}

Result<AbsoluteCheck> validateLlama2_70b(const WaferSpec& spec) {
    return checkAgainstTheDeck(spec, llama2_70bShape(), "Llama-2 70B");
}

}  // namespace ws::wafer
