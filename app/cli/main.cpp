// wafer: the command-line front end of Wafer Studio. Thin: parses arguments, runs the engine.
#include <CLI/CLI.hpp>
#include <iostream>

#include "wafer/version.h"

int main(int argc, char** argv) {
    CLI::App app{"wafer: train GPT models on an emulated wafer-scale machine"};
    app.set_version_flag("--version", std::string("wafer ") + WAFER_VERSION + " (" +
                                          WAFER_GIT_REVISION + ")");
    CLI11_PARSE(app, argc, argv);
    return 0;
}
