// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer lesson list|check|run`: the teaching lessons (engine/lesson) from the command line.
// `run` performs a lesson headless on a real training session in a throwaway folder and prints
// each step's title, its action and every check; it exits 1 when a step fails.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <random>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/lesson/lesson_runner.h"

namespace ws::cli {
namespace {
namespace fs = std::filesystem;

struct LessonOptions {
    std::string dir;
    std::vector<std::string> files;
    std::string file;
    bool keep = false;
};

// The first sentence of a step's text (its lines joined), for a one-line summary.
std::string brief(const std::string& text) {
    std::string paragraph = text.substr(0, text.find("\n\n"));
    std::replace(paragraph.begin(), paragraph.end(), '\n', ' ');
    const size_t stop = paragraph.find(". ");
    if (stop != std::string::npos) paragraph.resize(stop + 1);
    while (!paragraph.empty() && paragraph.back() == ' ') paragraph.pop_back();
    if (paragraph.size() > 110) paragraph = paragraph.substr(0, 107) + "...";
    return paragraph;
}

int runList(const LessonOptions& opt) {
    const fs::path dir = opt.dir.empty() ? lesson::defaultLessonDir() : fs::path(opt.dir);
    const auto lessons = lesson::listLessons(dir);
    if (lessons.empty()) return fail("no lessons (*.yaml) in " + dir.string());
    int broken = 0;
    for (const auto& l : lessons) {
        if (l.error.empty()) {
            fmt::print("{:<32} {}\n", l.file.filename().string(), l.title);
        } else {
            ++broken;
            fmt::print("{:<32} (does not load: `wafer lesson check {}`)\n",
                       l.file.filename().string(), l.file.string());
            // Why, in its first lines: a long message (every problem of the file) is for check.
            size_t at = 0;
            for (int line = 0; line < 3 && at < l.error.size(); ++line) {
                const size_t end = std::min(l.error.find('\n', at), l.error.size());
                fmt::print("    {}\n", l.error.substr(at, end - at));
                at = end + 1;
            }
            if (at < l.error.size()) fmt::print("    ...\n");
        }
    }
    return broken ? 1 : 0;
}

int runCheck(const LessonOptions& opt) {
    int failed = 0;
    for (const std::string& file : opt.files) {
        auto l = lesson::loadLesson(file);
        if (!l.ok()) {
            std::cerr << l.error().message << "\n";
            ++failed;
            continue;
        }
        fmt::print("{}: ok: \"{}\", {} steps, from {}\n", file, l->title, l->steps.size(),
                   l->preset.filename().string());
    }
    return failed ? 1 : 0;
}

// What a coord_check or sweep action found, in a line or two (the figures checks read).
void printStudy(lesson::Action::Kind kind, const lesson::StudyObservation& studies) {
    if (kind == lesson::Action::Kind::CoordCheck && studies.coordCheck) {
        const auto& r = *studies.coordCheck;
        fmt::print(
            "    coord check: worst slope SP {:+.2f} ({}, step {}), muP {:+.2f} ({}, step {}): "
            "{}\n",
            r.worstSpSlope, r.worstSpLayer, r.worstSpStep, r.worstMupSlope, r.worstMupLayer,
            r.worstMupStep, r.pass ? "pass" : "FAIL");
    }
    if (kind == lesson::Action::Kind::Sweep && studies.sweepTransfer) {
        for (const auto& t : *studies.sweepTransfer) {
            std::string widths;
            for (const auto& w : t.widths) widths += fmt::format(" {}:2^{}", w.width, w.bestLog2Lr);
            fmt::print("    sweep {}: best LR per width{}; drift {} grid steps, regret {:.3f}\n",
                       t.parametrization, widths, t.driftSteps, t.regret);
        }
    }
}

void printChecks(const char* label, const std::vector<lesson::CheckOutcome>& checks) {
    for (const auto& c : checks)
        fmt::print("    {} {} {}  ({})\n", c.passed ? "ok  " : "FAIL", label, c.text, c.detail);
}

int runLesson(const LessonOptions& opt) {
    auto l = lesson::loadLesson(opt.file);
    if (!l.ok()) return fail(l.error().message);
    std::random_device random;
    std::error_code ec;
    const fs::path work =
        fs::temp_directory_path(ec) / fmt::format("wafer-lesson-{:08x}", random());
    fs::create_directories(work, ec);
    if (ec)
        return fail(
            fmt::format("cannot create the lesson's work folder {}: {} (set TMPDIR to a "
                        "writable folder)",
                        work.string(), ec.message()));
    lesson::RunnerOptions options;
    options.workDir = work;
    int failedSteps = 0;
    fmt::print("lesson: {}\n", l->title);
    {
        lesson::LessonRunner runner(*l, options);
        for (size_t k = 0; k < l->steps.size(); ++k) {
            const auto& step = l->steps[k];
            fmt::print("[{}/{}] {}\n", k + 1, l->steps.size(),
                       step.title.empty() ? brief(step.text) : step.title);
            if (!step.title.empty()) fmt::print("    {}\n", brief(step.text));
            if (step.action.kind != lesson::Action::Kind::None)
                fmt::print("    action: {}\n", lesson::describeAction(step.action));
            std::fflush(stdout);  // studies take a while: show what runs
            const auto outcome = runner.runStep(k);
            if (!outcome.error.empty()) fmt::print("    FAIL {}\n", outcome.error);
            if (outcome.error.empty()) printStudy(step.action.kind, runner.studies());
            if (outcome.error.empty() && step.action.kind == lesson::Action::Kind::CheckAnswers &&
                runner.current().answers) {
                const auto& a = *runner.current().answers;
                fmt::print(
                    "    answers: {}/{} held-out records answered exactly, answer loss "
                    "{:.3f} nats/token\n",
                    a.exact, a.cases, a.answerLoss);
            }
            printChecks("expect", outcome.expect);
            if (step.tryIt) {
                fmt::print("    try: {}\n", brief(step.tryIt->task));
                if (outcome.tryPassedBefore)
                    fmt::print("    note: the try-it check passed before the learner acted\n");
                printChecks("check", outcome.tryCheck);
            }
            if (!outcome.passed()) ++failedSteps;
        }
    }
    if (opt.keep) {
        fmt::print("run folders kept in {}\n", work.string());
    } else {
        fs::remove_all(work, ec);
    }
    if (failedSteps) {
        fmt::print("{} of {} steps failed\n", failedSteps, l->steps.size());
        return 1;
    }
    fmt::print("all {} steps passed\n", l->steps.size());
    return 0;
}

}  // namespace

void addLessonCommand(CLI::App& app, CommonOptions& /*common*/, int& exitCode) {
    auto opt = std::make_shared<LessonOptions>();
    CLI::App* cmd = app.add_subcommand("lesson", "Teaching lessons: list, check, run headless");
    cmd->require_subcommand(1);
    CLI::App* list = cmd->add_subcommand("list", "List the lessons (resources/lessons/)");
    list->add_option("dir", opt->dir, "Folder of lesson files (default: the bundled lessons)");
    list->callback([opt, &exitCode] { exitCode = runList(*opt); });
    CLI::App* check = cmd->add_subcommand("check", "Check lesson files without running them");
    check->add_option("files", opt->files, "Lesson YAML files")
        ->required()
        ->check(CLI::ExistingFile);
    check->callback([opt, &exitCode] { exitCode = runCheck(*opt); });
    CLI::App* run = cmd->add_subcommand(
        "run", "Perform a lesson end to end on real training runs and check every step");
    run->add_option("file", opt->file, "Lesson YAML file")->required()->check(CLI::ExistingFile);
    run->add_flag("--keep", opt->keep, "Keep the runs' folders (printed at the end)");
    run->callback([opt, &exitCode] { exitCode = runLesson(*opt); });
}

}  // namespace ws::cli
