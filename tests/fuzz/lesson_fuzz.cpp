// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for lesson files (engine/lesson: parseLesson, saveLessonYaml, configAtStep).
// Lessons are written by hand and the studio reads every file of its lessons folder at start, so
// any input must load or come back as an Error, never crash, throw, hang or hit undefined
// behaviour (ASan + UBSan). The input is the lesson's YAML, read as if it sat in the shipped
// lessons folder (resources/lessons/ of the source tree): relative presets and figures resolve
// there, so the shipped lessons in the seed corpus load in full (preset, every change applied,
// every step checked). What loads must keep the loader's promises: saveLessonYaml() of it loads
// back and saves to the same text, and configAtStep() gives a config for every step.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>

#include "engine/lesson/lesson.h"
#include "fuzz_support.h"

#ifndef WAFER_SOURCE_DIR
#error "WAFER_SOURCE_DIR (the source tree, for its lessons folder) comes from tests/fuzz/*.cmake"
#endif

namespace {

using namespace ws::lesson;

[[noreturn]] void fail(const char* what, const std::string& detail) {
    std::fprintf(stderr, "lesson_fuzz: %s\n%s\n", what, detail.c_str());
    std::abort();
}

const std::filesystem::path& lessonDir() {
    static const std::filesystem::path dir =
        std::filesystem::path(WAFER_SOURCE_DIR) / "resources" / "lessons";
    return dir;
}

void checkPromises(const Lesson& lesson) {
    for (size_t k = 0; k < lesson.steps.size(); ++k) {
        (void)describeAction(lesson.steps[k].action);
        auto cfg = configAtStep(lesson, k, true);
        if (!cfg.ok())
            fail("a lesson that loads has a step without a config",
                 "step " + std::to_string(k) + ": " + cfg.error().message);
    }
    const std::string saved = saveLessonYaml(lesson, lessonDir());
    auto again = parseLesson(saved, "fuzz-saved.yaml", lessonDir());
    if (!again.ok())
        fail("saveLessonYaml's text does not load back",
             again.error().message + "\n--- text:\n" + saved);
    const std::string savedAgain = saveLessonYaml(*again, lessonDir());
    if (savedAgain != saved)
        fail("saveLessonYaml's text loads back as another lesson",
             "--- first:\n" + saved + "\n--- then:\n" + savedAgain);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // A reader below that throws is a finding too (the studio would abort at start): report it
    // as one rather than as libFuzzer's generic "deadly signal".
    try {
        auto lesson = parseLesson(ws::fuzz::asText(data, size), "fuzz.yaml", lessonDir());
        if (!lesson.ok()) {
            ws::fuzz::note("refused: " + lesson.error().message.substr(0, 300));
            return 0;
        }
        ws::fuzz::note("loaded: " + lesson->title);
        checkPromises(*lesson);
    } catch (const std::exception& e) {
        fail("an exception escaped the lesson reader", e.what());
    }
    return 0;
}
