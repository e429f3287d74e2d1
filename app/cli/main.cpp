// SPDX-License-Identifier: GPL-3.0-or-later
// wafer: the command-line front end of Wafer Studio. Thin: parses arguments and hands over to
// the engine through the subcommands in commands.h.
#include <iostream>
#include <string>

#include "app/cli/commands.h"
#include "engine/core/paths.h"
#include "wafer/version.h"

namespace {
// `wafer --version`: the version, then where this program finds its data and keeps the user's.
std::string versionText() {
    const ws::AppDataLocation data = ws::locateAppData();
    return std::string("wafer ") + WAFER_VERSION + " (" + WAFER_GIT_REVISION + ")\n" +
           "presets and resources: " + data.dir.string() + " (" + data.foundBy + ")\n" +
           "run store: " + (ws::userDataDir() / "runs.sqlite").string();
}
}  // namespace

int main(int argc, char** argv) {
    // Under mpirun this joins the job (MPI_Init); its end (MPI_Finalize) is main's return.
    auto job = ws::comm::fromEnvironment(
        &argc, &argv, std::string("wafer ") + WAFER_VERSION + " (" + WAFER_GIT_REVISION + ")");
    if (!job.ok()) {
        if (ws::comm::rankFromEnvironment() == 0)
            std::cerr << "wafer: " << job.error().message << "\n";
        return 1;
    }
    ws::comm::Comm& comm = **job;
    const std::string command = argc >= 2 ? argv[1] : "";
    if (comm.size() > 1 && command != "train" && command != "sweep") {
        if (comm.rank() == 0) {
            std::cerr << "wafer: only `wafer train` and `wafer sweep` run across processes; run "
                         "other commands without mpirun\n";
        }
        return 2;
    }
    // The other ranks take everything from rank 0, so their machines need no copy of the files.
    if (comm.size() > 1 && comm.rank() != 0)
        return command == "sweep" ? ws::cli::runSweepWorker(comm) : ws::cli::runTrainWorker(comm);
    CLI::App app{
        "wafer: train GPT models on an emulated wafer-scale machine with weight streaming"};
    app.set_version_flag("--version", versionText());
    app.require_subcommand(1);
    ws::cli::CommonOptions common;
    common.comm = &comm;
    common.sweepJob = command == "sweep";
    int exitCode = 0;
    ws::cli::addTrainCommand(app, common, exitCode);
    ws::cli::addValidateCommand(app, common, exitCode);
    ws::cli::addRunsCommand(app, common, exitCode);
    ws::cli::addFieldsCommand(app, common, exitCode);
    ws::cli::addSampleCommand(app, common, exitCode);
    ws::cli::addChatCommand(app, common, exitCode);
    ws::cli::addSweepCommand(app, common, exitCode);
    ws::cli::addPredictCommand(app, common, exitCode);
    ws::cli::addValidateEmulatorCommand(app, common, exitCode);
    ws::cli::addCoordCheckCommand(app, common, exitCode);
    ws::cli::addInteropCommands(app, common, exitCode);
    ws::cli::addFinetuneCommand(app, common, exitCode);
    ws::cli::addEvalCommand(app, common, exitCode);
    ws::cli::addStoreCommand(app, common, exitCode);
    ws::cli::addLessonCommand(app, common, exitCode);
    ws::cli::addTokenizeCommand(app, common, exitCode);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        exitCode = app.exit(e) == 0 ? 0 : 2;
    }
    ws::cli::releaseIdleWorkers(common);
    return exitCode;
}
