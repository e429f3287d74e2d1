// SPDX-License-Identifier: GPL-3.0-or-later
// StudioOptions: see studio_options.h.
#include "app/studio/studio_options.h"

#include <QCommandLineParser>

#include "wafer/version.h"

namespace ws::ui {

bool parseStudioOptions(const QStringList& arguments, StudioOptions& options, QString& error,
                        QString& helpText) {
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("Wafer Studio: edit a training config, run it and watch it live."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(
        QStringLiteral("config"),
        QStringLiteral("YAML config to open (default: the gpt-nano preset)"),
        QStringLiteral("[CONFIG]"));
    const QCommandLineOption run(QStringLiteral("run"), QStringLiteral("Start training at once."));
    const QCommandLineOption runSweep(
        QStringLiteral("sweep"),
        QStringLiteral("Start the config's sweep at once; with --screenshot, save it and quit "
                       "when the sweep ends."));
    const QCommandLineOption quit(
        QStringLiteral("quit-after-steps"),
        QStringLiteral("After N steps: save the screenshot, stop and quit."), QStringLiteral("N"));
    const QCommandLineOption shot(QStringLiteral("screenshot"),
                                  QStringLiteral("PNG file for the window screenshot."),
                                  QStringLiteral("FILE.png"));
    const QCommandLineOption tab(
        QStringLiteral("tab"),
        QStringLiteral("Tab to show: config, training, wafer, samples, chat or sweeps."),
        QStringLiteral("NAME"));
    const QCommandLineOption db(QStringLiteral("db"), QStringLiteral("Run store (SQLite file)."),
                                QStringLiteral("PATH"));
    const QCommandLineOption set(QStringLiteral("set"),
                                 QStringLiteral("Override a config value (repeatable)."),
                                 QStringLiteral("key.path=value"));
    const QCommandLineOption openRun(
        QStringLiteral("open-run"),
        QStringLiteral("Select stored run ID as if clicked in Runs (a sweep shows in the Sweeps "
                       "tab); with --screenshot and without --run/--sweep, save it and quit."),
        QStringLiteral("ID"));
    parser.addOptions({run, runSweep, quit, shot, tab, db, openRun, set});
    if (!parser.parse(arguments)) {
        error = parser.errorText();
        return false;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        helpText = parser.helpText();
        return false;
    }
    if (parser.isSet(QStringLiteral("version"))) {
        helpText = QStringLiteral("wafer-studio %1 (%2)").arg(WAFER_VERSION, WAFER_GIT_REVISION);
        return false;
    }
    const QStringList positional = parser.positionalArguments();
    if (positional.size() > 1) {
        error =
            QStringLiteral("expected at most one CONFIG file, got %1").arg(positional.join(' '));
        return false;
    }
    options.configPath = positional.value(0);
    options.run = parser.isSet(run);
    options.sweep = parser.isSet(runSweep);
    if (options.run && options.sweep) {
        error = QStringLiteral("--run and --sweep exclude each other: a run or a sweep");
        return false;
    }
    if (parser.isSet(quit)) {
        bool ok = false;
        options.quitAfterSteps = parser.value(quit).toInt(&ok);
        if (!ok || options.quitAfterSteps <= 0) {
            error = QStringLiteral("--quit-after-steps needs a positive whole number, got '%1'")
                        .arg(parser.value(quit));
            return false;
        }
    }
    options.screenshotPath = parser.value(shot);
    options.tab = parser.value(tab).toLower();
    if (!options.tab.isEmpty() && options.tab != QLatin1String("config") &&
        options.tab != QLatin1String("training") && options.tab != QLatin1String("wafer") &&
        options.tab != QLatin1String("samples") && options.tab != QLatin1String("chat") &&
        options.tab != QLatin1String("sweeps") && options.tab != QLatin1String("answers")) {
        error = QStringLiteral(
                    "--tab must be config, training, wafer, samples, chat, sweeps or answers, got "
                    "'%1'")
                    .arg(options.tab);
        return false;
    }
    options.dbPath = parser.value(db);
    if (parser.isSet(openRun)) {
        bool ok = false;
        options.openRunId = parser.value(openRun).toLongLong(&ok);
        if (!ok || options.openRunId < 0) {
            error = QStringLiteral("--open-run needs a run id (see `wafer runs list`), got '%1'")
                        .arg(parser.value(openRun));
            return false;
        }
    }
    options.overrides = parser.values(set);
    return true;
}

}  // namespace ws::ui
