// SPDX-License-Identifier: GPL-3.0-or-later
// `wafer coord-check CONFIG`: the μP coord check (engine/mup/coord_check.h). Trains the config at
// several widths for a few steps under SP and μP, prints mean |activation| per layer type, width
// and step with the fitted slope, and the verdict. Exit 0 when μP passes, 4 when it does not.
#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "engine/config/config_yaml.h"
#include "engine/config/validate.h"
#include "engine/mup/coord_check.h"

namespace ws::cli {
namespace {

struct CoordCheckCliOptions {
    std::string configPath;
    std::vector<std::string> overrides;
    std::string widths = "32,64,128,256";
    int steps = 10;
    double threshold = mup::CoordCheckOptions{}.threshold;  // the engine's default
    std::string outPath;
};

constexpr int kVerdictFailed = 4;

int usage(const std::string& message) {
    std::cerr << "wafer: error: " << message << "\n";
    return 2;
}

// "32,64,128" -> widths; an empty optional on anything else.
std::optional<std::vector<int>> parseWidths(const std::string& text) {
    std::vector<int> widths;
    std::stringstream in(text);
    std::string item;
    while (std::getline(in, item, ',')) {
        size_t used = 0;
        int value = 0;
        try {
            value = std::stoi(item, &used);
        } catch (const std::exception&) {
            return std::nullopt;
        }
        if (used != item.size() || value <= 0) return std::nullopt;
        widths.push_back(value);
    }
    if (widths.empty()) return std::nullopt;
    return widths;
}

// JSON rows keep their keys in this order (event first), unlike nlohmann::json's sorted keys.
nlohmann::ordered_json orderedNumber(double value) {
    return std::isfinite(value) ? nlohmann::ordered_json(value) : nlohmann::ordered_json(nullptr);
}

std::string slopeText(double slope) {
    return std::isfinite(slope) ? fmt::format("{:+.2f}", slope) : std::string("nan");
}

void printTable(const mup::CoordCheckResult& r, const std::vector<int>& widths) {
    std::map<std::tuple<int, int, std::string_view, int>, double> value;
    for (const auto& p : r.points)
        value[{int(p.parametrization), p.step, p.layer, p.width}] = p.meanAbs;
    std::map<std::tuple<int, int, std::string_view>, double> slope;
    for (const auto& s : r.slopes) slope[{int(s.parametrization), s.step, s.layer}] = s.slope;
    int steps = 0;
    for (const auto& p : r.points) steps = std::max(steps, p.step);
    for (mup::Parametrization par : {mup::Parametrization::Standard, mup::Parametrization::Mup}) {
        std::cout << (par == mup::Parametrization::Mup ? "\nmuP" : "\nSP")
                  << ": mean |activation| by width\n";
        std::string header = fmt::format("  {:<14}{:>5}", "layer", "step");
        for (int w : widths) header += fmt::format("{:>11}", w);
        std::cout << header << fmt::format("{:>8}\n", "slope");
        for (std::string_view layer : mup::kLayerTypes) {
            for (int step = 1; step <= steps; ++step) {
                std::string line = fmt::format("  {:<14}{:>5}", layer, step);
                for (int w : widths)
                    line += fmt::format("{:>11.4g}", value[{int(par), step, layer, w}]);
                std::cout << line
                          << fmt::format("{:>8}\n", slopeText(slope[{int(par), step, layer}]));
            }
        }
    }
}

int runCoordCheck(const CoordCheckCliOptions& opt, const CommonOptions& common) {
    const auto widths = parseWidths(opt.widths);
    if (!widths)
        return usage("--widths \"" + opt.widths +
                     "\": give positive integers separated by commas, e.g. 32,64,128,256");
    auto loaded = config::loadConfigFile(opt.configPath, opt.overrides);
    if (!loaded.ok()) return fail(loaded.error().message);
    const config::Config& cfg = loaded->config;
    if (!common.json)
        for (const auto& w : loaded->warnings) std::cerr << "warning: " << w << "\n";
    if (const auto problems = config::validate(cfg); !problems.empty()) {
        std::cerr << "wafer: error: " << opt.configPath << " has " << problems.size()
                  << " problem(s):\n";
        for (const auto& p : problems) std::cerr << "  - " << p << "\n";
        return 1;
    }
    mup::CoordCheckOptions options;
    options.widths = *widths;
    options.steps = opt.steps;
    options.threshold = opt.threshold;
    if (Status st = mup::checkCoordCheck(cfg, options); !st.ok()) return usage(st.error().message);

    const bool tty = !common.json && isatty(STDERR_FILENO);
    auto progress = [&](int done, int total, const std::string& what) {
        if (common.json) return;
        std::cerr << (tty ? "\r" : "")
                  << fmt::format("coord check: {}/{} runs ({})", done, total, what)
                  << (tty && done < total ? "" : "\n") << std::flush;
    };
    auto result = mup::runCoordCheck(cfg, options, progress);
    if (!result.ok()) return fail(result.error().message);
    const mup::CoordCheckResult& r = *result;

    if (!opt.outPath.empty()) {
        std::ofstream out(opt.outPath);
        out << "parametrization,width,step,layer,mean_abs\n";
        for (const auto& p : r.points)
            out << fmt::format("{},{},{},{},{:.9g}\n", mup::parametrizationName(p.parametrization),
                               p.width, p.step, p.layer, p.meanAbs);
        if (!out) return fail("cannot write " + opt.outPath);
    }
    if (common.json) {
        for (const auto& p : r.points)
            std::cout
                << nlohmann::
                       ordered_json{{"event", "coord"},
                                    {"parametrization", mup::parametrizationName(p.parametrization)},
                                    {"width", p.width},
                                    {"step", p.step},
                                    {"layer", p.layer},
                                    {"mean_abs", orderedNumber(p.meanAbs)}}
                           .dump()
                << "\n";
        for (const auto& s : r.slopes)
            std::cout << nlohmann::ordered_json{{"event", "slope"},
                                                {"parametrization",
                                                 mup::parametrizationName(s.parametrization)},
                                                {"step", s.step},
                                                {"layer", s.layer},
                                                {"slope", orderedNumber(s.slope)}}
                             .dump()
                      << "\n";
        std::cout << nlohmann::ordered_json{{"event", "verdict"},
                                            {"pass", r.pass},
                                            {"threshold", r.threshold},
                                            {"worst_mup_slope", orderedNumber(r.worstMupSlope)},
                                            {"worst_mup_layer", r.worstMupLayer},
                                            {"worst_mup_step", r.worstMupStep},
                                            {"worst_sp_slope", orderedNumber(r.worstSpSlope)},
                                            {"worst_sp_layer", r.worstSpLayer},
                                            {"worst_sp_step", r.worstSpStep}}
                         .dump()
                  << std::endl;
    } else {
        std::cout << fmt::format(
            "coord check of {}: widths {}, {} training steps each; slope = d log2(mean |act|) / "
            "d log2(width) (0: flat, 0.5: grows like sqrt(width), 1: like width)\n",
            opt.configPath, opt.widths, opt.steps);
        printTable(r, *widths);
        std::cout << fmt::format(
            "\nverdict: {}: muP's worst slope is {} ({}, step {}), {} the threshold {}; SP's "
            "is {} ({}, step {})\n"
            "(judged: |slope|; for output logits only growth, since muP's logits start small "
            "at large widths by design, about width^-0.5, and flatten as the readout trains)\n",
            r.pass ? "PASS" : "FAIL", slopeText(r.worstMupSlope), r.worstMupLayer, r.worstMupStep,
            r.pass ? "within" : "beyond", opt.threshold, slopeText(r.worstSpSlope), r.worstSpLayer,
            r.worstSpStep);
    }
    return r.pass ? 0 : kVerdictFailed;
}

}  // namespace

void addCoordCheckCommand(CLI::App& app, CommonOptions& common, int& exitCode) {
    auto opt = std::make_shared<CoordCheckCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "coord-check",
        "muP coord check: train a few steps at several widths under SP and muP and judge how "
        "activations scale with width");
    cmd->add_option("config", opt->configPath, "YAML config with muP on (mup_base_hidden_size)")
        ->required()
        ->check(CLI::ExistingFile);
    cmd->add_option("--widths", opt->widths, "Widths (hidden_size) to train, comma-separated")
        ->capture_default_str();
    cmd->add_option("--steps", opt->steps, "Training steps per width")
        ->capture_default_str()
        ->check(CLI::Range(1, 100000));
    cmd->add_option("--threshold", opt->threshold, "muP passes when every |slope| is below this")
        ->capture_default_str();
    cmd->add_option("--set", opt->overrides, "Override a config value (repeatable)");
    cmd->add_option("--out", opt->outPath, "Also write every measurement to this CSV file");
    cmd->add_flag("--json", common.json, "Print one JSON object per line");
    cmd->callback([opt, &common, &exitCode] { exitCode = runCoordCheck(*opt, common); });
}

}  // namespace ws::cli
