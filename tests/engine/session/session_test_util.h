// SPDX-License-Identifier: GPL-3.0-or-later
// Helpers for session tests: a temporary folder with a small corpus and a tiny config.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "engine/config/config_yaml.h"
#include "engine/fileio/safetensors.h"
#include "engine/session/session.h"
#include "support/temp_dir.h"
#include "support/test_shapes.h"

namespace ws::session::testing {

using ws::testing::TempDir;

using ws::testing::writeTinyCorpus;

inline std::string tinyConfigYaml(int maxSteps) {
    return "model:\n"
           "  hidden_size: 32\n"
           "  num_hidden_layers: 2\n"
           "  num_heads: 2\n"
           "  filter_size: 64\n"
           "  vocab_size: 256\n"
           "  max_position_embeddings: 64\n"
           "optimizer:\n"
           "  optimizer_type: adamw\n"
           "  betas: [0.9, 0.95]\n"
           "  learning_rate: 0.003\n"
           "  max_gradient_norm: 1.0\n"
           "train_input:\n"
           "  data_dir: corpus\n"
           "  batch_size: 4\n"
           "  max_sequence_length: 32\n"
           "  tokenizer: {type: byte}\n"
           "eval_input:\n"
           "  batch_size: 4\n"
           "runconfig:\n"
           "  max_steps: " +
           std::to_string(maxSteps) +
           "\n"
           "  eval_frequency: 5\n"
           "  eval_steps: 2\n"
           "  log_steps: 1\n"
           "  seed: 7\n"
           "  num_threads: 1\n";
}

inline config::LoadedConfig tinyConfig(const std::filesystem::path& dir, int maxSteps,
                                       const std::vector<std::string>& overrides = {}) {
    auto loaded = config::parseConfig(tinyConfigYaml(maxSteps), "tiny.yaml", dir, overrides);
    EXPECT_TRUE(loaded.ok()) << (loaded.ok() ? "" : loaded.error().message);
    auto c = std::move(loaded).value();
    c.config.runconfig.modelDir = (dir / "model").string();
    return c;
}

// A base model for fine-tune tests: tinyConfig over writeTinyCorpus trained `steps` steps by a
// real session (no run store) into `dir` / "model". Fails the calling test if it does not finish.
inline void trainTinyBase(const std::filesystem::path& dir, int steps) {
    writeTinyCorpus(dir);
    SessionOptions o;
    o.recordInStore = false;
    o.cacheDir = dir / "cache";
    auto s = Session::create(tinyConfig(dir, steps), o);
    ASSERT_TRUE(s.ok()) << s.error().message;
    (*s)->run();
    ASSERT_EQ((*s)->summary().state, RunState::Finished) << (*s)->summary().detail;
}

// Options that keep the run store, its run folders and the token cache inside `dir`.
inline SessionOptions sessionOptionsIn(const TempDir& dir) {
    SessionOptions o;
    o.dbPath = dir.path() / "runs.sqlite";
    o.cacheDir = dir.path() / "cache";
    o.runName = "test run";
    return o;
}

// Runs a session to the end on the calling thread and returns every event it published.
inline std::vector<Event> runToEnd(Session& session) {
    session.run();
    std::vector<Event> events;
    session.events().drain(events);
    return events;
}

inline std::vector<StepMetrics> stepsOf(const std::vector<Event>& events) {
    std::vector<StepMetrics> steps;
    for (const auto& e : events) {
        if (const auto* m = std::get_if<StepMetrics>(&e)) steps.push_back(*m);
    }
    return steps;
}

// sessionOptionsIn, but runs keep the session's own names ("<model name> <date time>").
inline SessionOptions unnamedOptionsIn(const TempDir& dir) {
    SessionOptions o = sessionOptionsIn(dir);
    o.runName.clear();
    return o;
}

// Creates the session and runs it to the end: its summary (and, when asked, its events); an
// empty summary, with the failure recorded, when it cannot be created.
inline RunSummary train(config::LoadedConfig config, SessionOptions options,
                        std::vector<Event>* events = nullptr) {
    auto session = Session::create(std::move(config), std::move(options));
    EXPECT_TRUE(session.ok()) << session.error().message;
    if (!session.ok()) return {};
    auto all = runToEnd(**session);
    if (events) *events = std::move(all);
    return (*session)->summary();
}

// Every tensor of two safetensors files, byte for byte (metadata may differ: it holds model_dir).
inline void expectSameTensors(const std::filesystem::path& a, const std::filesystem::path& b) {
    auto fa = fileio::SafetensorsFile::open(a);
    auto fb = fileio::SafetensorsFile::open(b);
    ASSERT_TRUE(fa.ok()) << fa.error().message;
    ASSERT_TRUE(fb.ok()) << fb.error().message;
    ASSERT_EQ(fa->names(), fb->names());
    for (const auto& name : fa->names()) {
        const auto* ta = fa->find(name);
        const auto* tb = fb->find(name);
        ASSERT_EQ(ta->bytes, tb->bytes) << name;
        EXPECT_EQ(std::memcmp(ta->data, tb->data, ta->bytes), 0) << name << " differs";
    }
}

}  // namespace ws::session::testing
