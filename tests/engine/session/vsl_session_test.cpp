// SPDX-License-Identifier: GPL-3.0-or-later
// Variable sequence length in a training run (session/vsl.h): a two-stage schedule with packed
// documents trains, switches sequence length at the given step, resumes across the switch bit for
// bit (weights, optimizer state and the emulated clock), times each step on the emulated wafer at
// its own length, and refuses a corpus without document boundaries by naming the key.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "engine/fileio/safetensors.h"
#include "engine/modelio/checkpoints.h"
#include "engine/session/resume.h"
#include "session_test_util.h"

namespace ws::session {
namespace {
using namespace testing;
namespace fs = std::filesystem;

// Three documents (files) of different text.
void writeDocuments(const fs::path& dir) {
    fs::create_directories(dir / "docs");
    const char* lines[] = {"the quick brown fox jumps over the lazy dog ",
                           "a stitch in time saves nine, said the tailor ",
                           "all that glitters is not gold, nor silver "};
    for (int f = 0; f < 3; ++f) {
        std::ofstream out(dir / "docs" / ("doc" + std::to_string(f) + ".txt"));
        for (int i = 0; i < 40 + 30 * f; ++i) out << lines[f] << (i % 5) << ".\n";
    }
}

const std::vector<std::string> kVsl = {
    "train_input.use_vsl=true",
    "eval_input.use_vsl=true",
    "train_input.short_sequence_length=8",
    "train_input.short_sequence_steps=5",
    "train_input.shuffle=true",
    "train_input.shuffle_seed=3",
    "runconfig.checkpoint_steps=3",
    // Compute sets the emulated step time (presets/teaching-sparsity.yaml's fast links).
    "wafer.spec=teaching-16x16",
    "wafer.overrides=[io_gb_per_s=5.15]",
    "cluster.overrides=[memoryx_update_gparams_per_s=2.58]",
};

config::LoadedConfig vslConfig(const TempDir& dir, const std::string& modelDir,
                               std::vector<std::string> extra = {}) {
    std::vector<std::string> overrides = kVsl;
    overrides.push_back("train_input.data_dir=" + (dir.path() / "docs").string());
    overrides.insert(overrides.end(), extra.begin(), extra.end());
    auto c = tinyConfig(dir.path(), 10, overrides);
    c.config.runconfig.modelDir = (dir.path() / modelDir).string();
    return c;
}

struct Trained {
    RunSummary summary;
    std::vector<Event> events;
};

Trained trainWithEvents(config::LoadedConfig config, SessionOptions options) {
    Trained t;
    t.summary = train(std::move(config), std::move(options), &t.events);
    return t;
}

std::vector<const EmulatedStep*> emulatedSteps(const std::vector<Event>& events) {
    std::vector<const EmulatedStep*> steps;
    for (const auto& e : events)
        if (const auto* s = std::get_if<EmulatedStep>(&e)) steps.push_back(s);
    return steps;
}

// The problem length the emulated step's attention ops were planned with (their columns).
int64_t attentionLength(const wafer::StepPrediction& p) {
    for (const auto& layer : p.layers)
        for (const auto& op : layer.ops)
            if (op.name == "attention") return op.n;
    return -1;
}

bool logged(const std::vector<Event>& events, const std::string& part) {
    for (const auto& e : events)
        if (const auto* l = std::get_if<LogLine>(&e))
            if (l->message.find(part) != std::string::npos) return true;
    return false;
}

TEST(VslSession, TwoStageRunSwitchesAndResumesAcrossTheSwitchBitForBit) {
    TempDir dir("vsl_resume");
    writeDocuments(dir.path());
    const Trained whole = trainWithEvents(vslConfig(dir, "whole"), sessionOptionsIn(dir));
    ASSERT_EQ(whole.summary.state, RunState::Finished) << whole.summary.detail;
    EXPECT_TRUE(logged(whole.events, "step 6: sequence length 8 -> 32"));
    EXPECT_TRUE(logged(whole.events, "variable sequence length: 3 documents"));
    EXPECT_TRUE(std::isfinite(whole.summary.finalEvalLoss));

    // Each step on the emulated clock at its own length, and the steps follow each other (step k
    // starts where step k - 1 ended).
    const auto steps = emulatedSteps(whole.events);
    ASSERT_EQ(steps.size(), 10u);
    // (The toy model's step is bound by latencies, so only the attention ops show the length:
    // 8 for four short sequences per row, less where a document ends inside one; 32 for whole
    // rows after the switch, less where a document ends inside a row.)
    for (size_t k = 0; k < 10; ++k) {
        const int64_t length = attentionLength(*steps[k]->prediction);
        EXPECT_LE(length, k < 5 ? 8 : 32) << "step " << k;
        EXPECT_GT(length, k < 5 ? 4 : 16) << "step " << k;
    }
    double clock = 0.0;
    for (const auto* s : steps) {
        EXPECT_DOUBLE_EQ(s->emulatedStart, clock) << "step " << s->step;
        clock += s->prediction->stepS;
    }
    EXPECT_DOUBLE_EQ(whole.summary.emulatedSec, clock);

    // Stop before the switch, resume past it: the same weights, optimizer state and clock.
    auto stopping = sessionOptionsIn(dir);
    stopping.stopAfterStep = 3;
    const Trained first = trainWithEvents(vslConfig(dir, "split"), stopping);
    ASSERT_EQ(first.summary.state, RunState::Stopped) << first.summary.detail;
    auto resuming = sessionOptionsIn(dir);
    resuming.resumeFrom = dir.path() / "split" / "checkpoint-3";
    auto config = resumeConfig(resuming.resumeFrom);
    ASSERT_TRUE(config.ok()) << config.error().message;
    const Trained second = trainWithEvents(std::move(config).value(), resuming);
    ASSERT_EQ(second.summary.state, RunState::Finished) << second.summary.detail;
    expectSameTensors(dir.path() / "whole" / modelio::kModelFile,
                      dir.path() / "split" / modelio::kModelFile);
    expectSameTensors(dir.path() / "whole" / "checkpoint-10" / modelio::kOptimizerFile,
                      dir.path() / "split" / "checkpoint-10" / modelio::kOptimizerFile);
    EXPECT_EQ(second.summary.emulatedSec, whole.summary.emulatedSec);
    EXPECT_EQ(second.summary.finalEvalLoss, whole.summary.finalEvalLoss);
    const auto resumedSteps = emulatedSteps(second.events);
    ASSERT_FALSE(resumedSteps.empty());
    EXPECT_EQ(resumedSteps.front()->step, 3);
    EXPECT_EQ(resumedSteps.front()->emulatedStart, steps[3]->emulatedStart);
}

TEST(VslSession, OneStageRunsAreUnchangedByTheNewKeys) {
    // use_vsl off and no schedule: the run is the plain one, emulated steps all alike.
    TempDir dir("vsl_plain");
    writeDocuments(dir.path());
    const Trained plain = trainWithEvents(
        tinyConfig(dir.path(), 4, {"train_input.data_dir=" + (dir.path() / "docs").string()}),
        sessionOptionsIn(dir));
    ASSERT_EQ(plain.summary.state, RunState::Finished) << plain.summary.detail;
    const auto steps = emulatedSteps(plain.events);
    ASSERT_EQ(steps.size(), 4u);
    EXPECT_EQ(steps[0]->prediction, steps[3]->prediction);
    EXPECT_DOUBLE_EQ(plain.summary.emulatedSec, 4 * steps[0]->prediction->stepS);
}

TEST(VslSession, PackingACorpusWithoutDocumentBoundariesIsRefused) {
    TempDir dir("vsl_one_doc");
    writeTinyCorpus(dir.path());  // one file: one document
    const Trained t = trainWithEvents(tinyConfig(dir.path(), 4, {"train_input.use_vsl=true"}),
                                      sessionOptionsIn(dir));
    ASSERT_EQ(t.summary.state, RunState::Failed);
    EXPECT_NE(t.summary.detail.find("train_input.use_vsl: the corpus is a single document"),
              std::string::npos)
        << t.summary.detail;
    EXPECT_NE(t.summary.detail.find("list two or more text files"), std::string::npos);
    // Only evaluation packs (train_input.use_vsl is false): the error names eval_input.use_vsl,
    // and the corpus it shares, train_input.data_dir.
    const Trained e = trainWithEvents(tinyConfig(dir.path(), 4, {"eval_input.use_vsl=true"}),
                                      sessionOptionsIn(dir));
    ASSERT_EQ(e.summary.state, RunState::Failed);
    EXPECT_NE(e.summary.detail.find("eval_input.use_vsl: the corpus is a single document"),
              std::string::npos)
        << e.summary.detail;
    EXPECT_NE(e.summary.detail.find("in train_input.data_dir"), std::string::npos)
        << e.summary.detail;
    EXPECT_NE(e.summary.detail.find("set eval_input.use_vsl: false"), std::string::npos)
        << e.summary.detail;
}

TEST(VslSession, ASwitchAfterTheLastStepIsRefusedBeforeTraining) {
    TempDir dir("vsl_bad_switch");
    writeDocuments(dir.path());
    auto session = Session::create(vslConfig(dir, "m", {"train_input.short_sequence_steps=10"}),
                                   sessionOptionsIn(dir));
    ASSERT_FALSE(session.ok());
    EXPECT_NE(session.error().message.find("train_input.short_sequence_steps (10) is not below "
                                           "runconfig.max_steps (10)"),
              std::string::npos)
        << session.error().message;
}

}  // namespace
}  // namespace ws::session
