// SPDX-License-Identifier: GPL-3.0-or-later
// The emulator beside a session: every step publishes its emulated view (EmulatedStep: the
// prediction with per-core frames), every streamed span gets its emulated time, static sparsity
// keeps pruned weights at zero through training, and the emulator can be switched off.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "engine/model/parameters.h"
#include "engine/modelio/weights_io.h"
#include "engine/session/emulation.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
using namespace ws::modelio;  // loadWeights
using streaming::SpanKind;

// How far below its first step's loss a run that learns must end. The sparse run below goes from
// 5.56 to 5.12 nats in its 4 steps; with learning_rate 1e-12 it ends at 5.57, within batch noise
// of its first loss.
constexpr double kLearnedNats = 0.2;

TEST(SessionEmulation, EveryStepAndSpanCarriesEmulatedTime) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(
        tinyConfig(dir.path(), 3, {"wafer.spec=teaching-16x16", "runconfig.num_csx=2"}), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto events = runToEnd(**session);
    ASSERT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;

    std::vector<const EmulatedStep*> steps;
    std::map<std::tuple<int64_t, int, int, SpanKind, bool>, std::pair<double, double>> timed;
    int untimed = 0;
    for (const auto& e : events) {
        if (const auto* es = std::get_if<EmulatedStep>(&e)) steps.push_back(es);
        if (const auto* sp = std::get_if<streaming::Span>(&e)) {
            if (sp->emuStart < 0) {
                ++untimed;
                continue;
            }
            EXPECT_LE(sp->emuStart, sp->emuEnd);
            timed[{sp->step, sp->system, sp->layer, sp->kind, sp->backwardPass}] = {sp->emuStart,
                                                                                    sp->emuEnd};
        }
    }
    ASSERT_EQ(steps.size(), 3u);
    const auto& p = *steps[0]->prediction;
    EXPECT_EQ(p.waferName, "teaching-16x16");
    EXPECT_EQ(p.numSystems, 2);
    EXPECT_GT(p.stepS, 0);
    for (size_t i = 0; i < steps.size(); ++i) {
        EXPECT_EQ(steps[i]->step, int64_t(i));
        EXPECT_DOUBLE_EQ(steps[i]->emulatedStart, double(i) * p.stepS);
        EXPECT_EQ(steps[i]->prediction.get(), &p);  // a static config: one shared schedule
    }
    // Frames: one per layer phase and one for the step, each 16 x 16 busy fractions.
    ASSERT_NE(p.frameFor(1, false), nullptr);
    EXPECT_EQ(p.frameFor(1, false)->busy.size(), 256u);
    EXPECT_EQ(p.frameFor(-1, false)->label, "step");
    EXPECT_EQ(untimed, 0);  // two systems: SwarmX really reduces, so every span has a twin

    // Every (step, system, layer, kind) ran on the emulated machine; step 1 is step 0 shifted.
    const auto forward0 = timed.at({0, 0, 1, SpanKind::Forward, false});
    const auto forward1 = timed.at({1, 0, 1, SpanKind::Forward, false});
    EXPECT_NEAR(forward1.first - forward0.first, p.stepS, 1e-12);
    // Inside a step the emulated order is the execution order: forward before backward,
    // stream-in of a layer before its compute, the update after the layer's backward.
    const auto backward0 = timed.at({0, 0, 1, SpanKind::Backward, false});
    EXPECT_LT(forward0.second, backward0.first + 1e-15);
    EXPECT_LE(timed.at({0, 0, 1, SpanKind::StreamIn, false}).first, forward0.first);
    EXPECT_GE(timed.at({0, -1, 1, SpanKind::Update, false}).first, backward0.first);
    EXPECT_LE(timed.at({0, -1, 1, SpanKind::Update, false}).second, p.stepS + 1e-15);
}

// Issue 16: a LoRA run's emulated step counts the adapter products; the real spans of work the
// emulated machine does not do with a frozen base (the embeddings' backward, the frozen layers'
// gradient stream-outs and updates) get no emulated time, every other span does.
TEST(SessionEmulation, LoraRunEmulatesTheAdaptersAndNotTheFrozenGradients) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(
        tinyConfig(dir.path(), 2, {"wafer.spec=teaching-16x16", "lora.rank=4"}), options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto events = runToEnd(**session);
    ASSERT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    const wafer::StepPrediction* p = nullptr;
    for (const auto& e : events)
        if (const auto* es = std::get_if<EmulatedStep>(&e)) p = es->prediction.get();
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->loraRank, 4);
    EXPECT_GT(p->adapterS, 0);
    const int L = 2;
    for (const auto& e : events) {
        const auto* sp = std::get_if<streaming::Span>(&e);
        if (!sp || sp->system > 0) continue;
        const bool frozenLayer = sp->layer == 0 || sp->layer == L + 1;
        const bool notEmulated =
            (sp->layer == 0 && sp->kind == SpanKind::Backward) ||
            (frozenLayer && (sp->kind == SpanKind::StreamOut || sp->kind == SpanKind::Update)) ||
            sp->kind == SpanKind::Reduce;  // one system: no SwarmX reduce
        EXPECT_EQ(sp->emuStart < 0, notEmulated)
            << "layer " << sp->layer << " " << streaming::spanKindName(sp->kind);
    }
}

// Issue 14, bf16 streaming: a bf16 run publishes half the stream-in bytes of the same fp32 run
// (every StreamIn span, so the Wafer tab's "weights ↓" and the timeline's "moved" halve), says so
// in its streaming summary, and its emulated weight streams take half the time; gradients
// (fp32) and the emulated gradient streams are unchanged.
TEST(SessionEmulation, Bf16RunStreamsHalfTheWeightBytesAndTime) {
    struct Seen {
        int64_t streamedIn = 0, streamedOut = 0;
        double weightStreamS = 0, gradStreamS = 0;
        std::string summary;
    };
    auto run = [](const std::vector<std::string>& overrides) {
        TempDir dir;
        writeTinyCorpus(dir.path());
        auto options = sessionOptionsIn(dir);
        options.recordInStore = false;
        auto session = Session::create(tinyConfig(dir.path(), 2, overrides), options);
        EXPECT_TRUE(session.ok()) << session.error().message;
        Seen seen;
        for (const auto& e : runToEnd(**session)) {
            if (const auto* sp = std::get_if<streaming::Span>(&e)) {
                if (sp->step != 0) continue;
                if (sp->kind == SpanKind::StreamIn) seen.streamedIn += sp->bytes;
                if (sp->kind == SpanKind::StreamOut) seen.streamedOut += sp->bytes;
            }
            if (const auto* es = std::get_if<EmulatedStep>(&e); es && es->step == 0) {
                for (const auto& l : es->prediction->layers) {
                    seen.weightStreamS += l.weightStreamS;
                    seen.gradStreamS += l.gradStreamS;
                }
            }
            if (const auto* line = std::get_if<LogLine>(&e);
                line && line->message.find("weights streamed in") != std::string::npos)
                seen.summary = line->message;
        }
        EXPECT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
        return seen;
    };
    const Seen fp32 = run({"wafer.spec=teaching-16x16"});
    const Seen bf16 = run(
        {"wafer.spec=teaching-16x16", "model.mixed_precision=true", "model.fp16_type=bfloat16"});
    ASSERT_GT(bf16.streamedIn, 0);
    EXPECT_EQ(fp32.streamedIn, 2 * bf16.streamedIn);
    EXPECT_EQ(fp32.streamedOut, bf16.streamedOut);
    ASSERT_GT(bf16.weightStreamS, 0);
    EXPECT_DOUBLE_EQ(fp32.weightStreamS, 2 * bf16.weightStreamS);
    EXPECT_DOUBLE_EQ(fp32.gradStreamS, bf16.gradStreamS);
    EXPECT_NE(fp32.summary.find("of fp32 weights streamed in"), std::string::npos) << fp32.summary;
    EXPECT_NE(bf16.summary.find("of bf16 weights streamed in"), std::string::npos) << bf16.summary;
}

// MoE: a step's routing over the whole batch becomes one wafer pass's (the emulator maps one):
// each count divided by the passes, the block's total kept by largest remainder (ties to the
// lower expert), an idle expert idle, a dense block's empty entry left empty.
TEST(SessionEmulation, PerPassExpertTokensKeepTheBlocksShare) {
    const auto out = perPassExpertTokens({{10, 7, 0, 3}, {}, {8, 8, 8, 8}}, 4);
    ASSERT_EQ(out.size(), 3u);
    EXPECT_EQ(out[0], (std::vector<int64_t>{2, 2, 0, 1}));  // 20 / 4 = 5
    EXPECT_TRUE(out[1].empty());
    EXPECT_EQ(out[2], (std::vector<int64_t>{2, 2, 2, 2}));
    EXPECT_EQ(perPassExpertTokens({{5, 3}}, 1)[0], (std::vector<int64_t>{5, 3}));
}

// MoE: each step is published again once it has run, planned with the tokens its experts really
// computed (one wafer pass's: the step's counts over systems x micro-batches), and the next step
// starts where it ended on the emulated clock; every expert's stream unit has its own emulated
// span.
TEST(SessionEmulation, MoeStepsAreReplannedWithTheirRealRouting) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 3,
                                              {"wafer.spec=teaching-16x16", "runconfig.num_csx=2",
                                               "model.moe.num_experts=4", "model.moe.top_k=2"}),
                                   options);
    ASSERT_TRUE(session.ok()) << session.error().message;
    const auto events = runToEnd(**session);
    ASSERT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    std::vector<const EmulatedStep*> published;
    int expertSpans = 0, untimedExpertSpans = 0;
    for (const auto& e : events) {
        if (const auto* es = std::get_if<EmulatedStep>(&e)) published.push_back(es);
        if (const auto* sp = std::get_if<streaming::Span>(&e); sp && sp->expert >= 0) {
            ++expertSpans;
            untimedExpertSpans += sp->emuStart < 0;
        }
    }
    EXPECT_GT(expertSpans, 0);
    EXPECT_EQ(untimedExpertSpans, 0);
    // Per step: the provisional plan as it starts, then the plan of its real routing.
    ASSERT_EQ(published.size(), 6u);
    EXPECT_TRUE(published[0]->prediction->uniformRouting);
    for (size_t i = 0; i < published.size(); ++i) EXPECT_EQ(published[i]->step, int64_t(i / 2));
    for (size_t k = 0; k < 3; ++k) {
        const EmulatedStep& provisional = *published[2 * k];
        const EmulatedStep& routed = *published[2 * k + 1];
        EXPECT_DOUBLE_EQ(provisional.emulatedStart, routed.emulatedStart);
        const auto& p = *routed.prediction;
        EXPECT_FALSE(p.uniformRouting);
        ASSERT_EQ(p.expertTokens.size(), 2u);  // both blocks are MoE (moe_layer_frequency 1)
        for (const auto& block : p.expertTokens) {
            ASSERT_EQ(block.size(), 4u);
            int64_t sum = 0;
            for (int64_t n : block) sum += n;
            EXPECT_EQ(sum, int64_t(p.microBatch) * p.seqLen * 2);  // M x top_k, none dropped
        }
        if (k + 1 < 3) {
            EXPECT_DOUBLE_EQ(published[2 * k + 2]->emulatedStart, routed.emulatedStart + p.stepS);
            // The next step starts with this step's routing.
            EXPECT_EQ(published[2 * k + 2]->prediction->expertTokens, p.expertTokens);
        }
    }
}

TEST(SessionEmulation, SwitchedOffPublishesNoEmulatedTime) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto session = Session::create(tinyConfig(dir.path(), 2, {"wafer.emulate=false"}), options);
    ASSERT_TRUE(session.ok());
    int emulatedSteps = 0, spans = 0;
    for (const auto& e : runToEnd(**session)) {
        emulatedSteps += std::holds_alternative<EmulatedStep>(e);
        if (const auto* sp = std::get_if<streaming::Span>(&e)) {
            ++spans;
            EXPECT_LT(sp->emuStart, 0);
        }
    }
    EXPECT_EQ((*session)->summary().state, RunState::Finished);
    EXPECT_EQ(emulatedSteps, 0);
    EXPECT_GT(spans, 0);
}

TEST(SessionEmulation, StaticSparsityStaysZeroAndShowsAsImbalancePerBlock) {
    TempDir dir;
    writeTinyCorpus(dir.path());
    auto options = sessionOptionsIn(dir);
    options.recordInStore = false;
    auto cfg = tinyConfig(dir.path(), 4,
                          {"wafer.spec=teaching-16x16", "model.sparsity.level=0.5",
                           "model.sparsity.targets=[fc, fc_proj]"});
    auto session = Session::create(cfg, options);
    ASSERT_TRUE(session.ok());
    std::shared_ptr<const wafer::StepPrediction> prediction;
    const std::vector<Event> events = runToEnd(**session);
    for (const auto& e : events)
        if (const auto* es = std::get_if<EmulatedStep>(&e)) prediction = es->prediction;
    ASSERT_EQ((*session)->summary().state, RunState::Finished) << (*session)->summary().detail;
    // Still learns: the last steps' loss well below the run's own first step (a model that
    // learned nothing stays near its first loss, about ln 256 = 5.55, whatever the batch).
    const std::vector<StepMetrics> steps = stepsOf(events);
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_LT((*session)->summary().finalLoss, steps.front().loss - kLearnedNats)
        << "first step " << steps.front().loss;

    // The trained weights: half of every fc / fc_proj matrix is exactly zero, qkv is dense.
    const auto shape = model::GptShape::fromConfig(cfg.config.model);
    const model::ParameterTable table(shape);
    std::vector<float> w(table.totalSize());
    ASSERT_TRUE(
        loadWeights((*session)->summary().modelDir / "model.safetensors", table, w.data()).ok());
    auto zerosIn = [&](const std::string& name) {
        const auto* t = table.find(name);
        int64_t zeros = 0;
        for (size_t i = 0; i < t->size; ++i) zeros += w[t->offset + i] == 0.0f;
        return std::pair{zeros, int64_t(t->size)};
    };
    for (int b = 0; b < 2; ++b) {
        const std::string h = "h." + std::to_string(b) + ".";
        for (const char* m : {"mlp.c_fc.weight", "mlp.c_proj.weight"}) {
            const auto [zeros, size] = zerosIn(h + m);
            EXPECT_EQ(zeros, size / 2) << h << m;
        }
        EXPECT_LT(zerosIn(h + "attn.c_attn.weight").first, 10);
    }
    // Each block planned on its own: its own frame, fewer busy cycles than a dense block.
    ASSERT_TRUE(prediction);
    EXPECT_EQ(prediction->frameFor(1, false)->label, "h.0 forward");
    EXPECT_EQ(prediction->frameFor(2, true)->label, "h.1 backward");
}

TEST(SessionEmulation, UnknownSparsityTargetIsRefusedWithTheChoices) {
    TempDir dir;
    auto cfg = tinyConfig(dir.path(), 1, {"model.sparsity.targets=[fc, mlp]"});
    auto session = Session::create(cfg, sessionOptionsIn(dir));
    ASSERT_FALSE(session.ok());
    EXPECT_NE(session.error().message.find("model.sparsity.targets[1] = \"mlp\""),
              std::string::npos)
        << session.error().message;
    EXPECT_NE(session.error().message.find("qkv, attn_proj, fc, fc_proj"), std::string::npos);
}

}  // namespace
}  // namespace ws::session
