// SPDX-License-Identifier: GPL-3.0-or-later
// wafer-studio: the desktop studio's entry point. Thin: parse the command line, open the config,
// show the window. For scripted smoke tests, `--run --quit-after-steps N --screenshot FILE.png
// [--tab NAME]` starts training, saves a screenshot of the window after N steps, stops the run
// and quits with status 0 (1 if the run ends or fails first, 2 on a usage error).
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QTimer>
#include <cstdio>

#include "app/studio/studio_options.h"
#include "engine/core/paths.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/sweeps/sweep_controller.h"

namespace {

// Drives --quit-after-steps: screenshot after N steps, then stop and quit once joined.
void armQuitAfterSteps(ws::ui::MainWindow& window, const ws::ui::StudioOptions& options) {
    auto* controller = window.controller();
    auto shotTaken = std::make_shared<bool>(false);
    QObject::connect(
        controller, &ws::ui::RunController::metrics, &window,
        [&window, options, shotTaken, controller](const std::vector<ws::session::StepMetrics>& b) {
            if (*shotTaken || b.back().step < options.quitAfterSteps) return;
            *shotTaken = true;
            if (!options.tab.isEmpty()) window.showTab(options.tab);
            if (!options.screenshotPath.isEmpty() &&
                !window.saveScreenshot(options.screenshotPath)) {
                std::fprintf(stderr, "wafer-studio: cannot write screenshot %s\n",
                             qPrintable(options.screenshotPath));
                QCoreApplication::exit(1);
                return;
            }
            controller->stop();
        });
    QObject::connect(controller, &ws::ui::RunController::finished, &window,
                     [shotTaken](const ws::session::RunSummary& summary) {
                         if (!*shotTaken) {
                             std::fprintf(stderr,
                                          "wafer-studio: the run ended (%s) before the "
                                          "requested step: %s\n",
                                          ws::session::runStateName(summary.state),
                                          summary.detail.c_str());
                         }
                         QCoreApplication::exit(*shotTaken ? 0 : 1);
                     });
}

// Drives --sweep: starts the sweep; when it ends, screenshot (if asked) and quit 0 when it
// finished (1 when it failed or could not start).
void armSweep(ws::ui::MainWindow& window, const ws::ui::StudioOptions& options) {
    window.setSweepConfirmer([](const QString& message) {
        std::fprintf(stderr, "wafer-studio: %s (confirmed by --sweep)\n", qPrintable(message));
        return true;
    });
    QObject::connect(window.sweepController(), &ws::ui::SweepController::finished, &window,
                     [&window, options](const ws::sweep::SweepOutcome& outcome) {
                         if (options.screenshotPath.isEmpty()) return;
                         if (!options.tab.isEmpty()) window.showTab(options.tab);
                         const bool shot = window.saveScreenshot(options.screenshotPath);
                         if (!shot)
                             std::fprintf(stderr, "wafer-studio: cannot write screenshot %s\n",
                                          qPrintable(options.screenshotPath));
                         QCoreApplication::exit(shot && outcome.status == "finished" ? 0 : 1);
                     });
    QTimer::singleShot(0, &window, [&window, options] {
        if (!window.startSweep()) {
            std::fprintf(stderr,
                         "wafer-studio: cannot start the sweep (see the Sweeps tab and "
                         "the log)\n");
            if (!options.screenshotPath.isEmpty()) QCoreApplication::exit(1);
        }
    });
}

}  // namespace

int main(int argc, char** argv) {
    // The command line is read before any window system is needed, so that --help, --version and
    // usage errors work without a display (a QApplication aborts without one).
    ws::ui::StudioOptions options;
    {
        QCoreApplication probe(argc, argv);
        QCoreApplication::setApplicationName(QStringLiteral("wafer-studio"));
        QString error, help;
        if (!ws::ui::parseStudioOptions(QCoreApplication::arguments(), options, error, help)) {
            if (error.isEmpty()) {
                std::printf("%s\n", qPrintable(help));
                return 0;
            }
            std::fprintf(stderr, "wafer-studio: %s (see --help)\n", qPrintable(error));
            return 2;
        }
    }
    QApplication::setHighDpiScaleFactorRoundingPolicy(
        Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("WaferStudio"));
    QApplication::setApplicationName(QStringLiteral("wafer-studio"));
    QApplication::setApplicationDisplayName(QStringLiteral("Wafer Studio"));
    // The installed menu entry (installer/wafer-studio.desktop) and its icon.
    QGuiApplication::setDesktopFileName(QStringLiteral("wafer-studio"));
    QApplication::setWindowIcon(QIcon::fromTheme(
        QStringLiteral("wafer-studio"), QIcon(QStringLiteral(":/icons/wafer-studio.svg"))));
    QString configPath = options.configPath;
    if (configPath.isEmpty()) {
        configPath =
            QString::fromStdString((ws::appDataDir() / "presets" / "gpt-nano.yaml").string());
    }

    ws::ui::MainWindow window(options.dbPath);
    if (!window.openConfig(configPath)) {
        std::fprintf(stderr, "wafer-studio: %s has problems; they are listed in the Config tab\n",
                     qPrintable(configPath));
    }
    for (const QString& override : options.overrides) {
        const qsizetype eq = override.indexOf('=');
        if (eq <= 0 || !window.document()->setField(override.left(eq), override.mid(eq + 1))) {
            std::fprintf(stderr, "wafer-studio: --set %s was not applied (see the Config tab)\n",
                         qPrintable(override));
            if (options.quitAfterSteps > 0) return 2;
        }
    }
    if (options.openRunId >= 0 && !window.openStoredRun(options.openRunId)) {
        std::fprintf(stderr, "wafer-studio: there is no run %lld in the run store\n",
                     static_cast<long long>(options.openRunId));
        if (!options.screenshotPath.isEmpty()) return 2;
    }
    if (!options.tab.isEmpty()) window.showTab(options.tab);
    window.show();

    if (options.quitAfterSteps > 0) armQuitAfterSteps(window, options);
    if (options.sweep) {
        armSweep(window, options);
    } else if (options.run) {
        QTimer::singleShot(0, &window, [&window, &options] {
            if (!window.startRun()) {
                std::fprintf(stderr,
                             "wafer-studio: cannot start the run (see the Config tab "
                             "and the log)\n");
                if (options.quitAfterSteps > 0) QCoreApplication::exit(1);
                return;
            }
            if (!options.tab.isEmpty()) window.showTab(options.tab);
        });
    } else if (options.quitAfterSteps > 0 || !options.screenshotPath.isEmpty()) {
        // Without --run there are no steps to wait for: screenshot the opened window and quit.
        QTimer::singleShot(200, &window, [&window, &options] {
            const bool ok =
                options.screenshotPath.isEmpty() || window.saveScreenshot(options.screenshotPath);
            QCoreApplication::exit(ok ? 0 : 1);
        });
    }
    return QApplication::exec();
}
