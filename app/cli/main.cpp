// wafer: the command-line front end of Wafer Studio. Thin: parses arguments and hands over to
// the engine through the subcommands in commands.h.
#include <iostream>

#include "app/cli/commands.h"
#include "wafer/version.h"

int main(int argc, char** argv) {
    CLI::App app{
        "wafer: train GPT models on an emulated wafer-scale machine with weight streaming"};
    app.set_version_flag("--version",
                         std::string("wafer ") + WAFER_VERSION + " (" + WAFER_GIT_REVISION + ")");
    app.require_subcommand(1);
    ws::cli::CommonOptions common;
    int exitCode = 0;
    ws::cli::addTrainCommand(app, common, exitCode);
    ws::cli::addValidateCommand(app, common, exitCode);
    ws::cli::addRunsCommand(app, common, exitCode);
    ws::cli::addFieldsCommand(app, common, exitCode);
    ws::cli::addSampleCommand(app, common, exitCode);
    ws::cli::addSweepCommand(app, common, exitCode);
    ws::cli::addPredictCommands(app, common, exitCode);
    ws::cli::addCoordCheckCommand(app, common, exitCode);
    ws::cli::addInteropCommands(app, common, exitCode);
    ws::cli::addFinetuneCommand(app, common, exitCode);
    ws::cli::addStoreCommand(app, common, exitCode);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }
    return exitCode;
}
