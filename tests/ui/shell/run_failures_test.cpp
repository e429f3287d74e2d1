// SPDX-License-Identifier: GPL-3.0-or-later
// Failures that went silent (issue 31): a run whose data_dir does not exist or whose data is
// binary, a start refused because a run is active, and a sweep whose every trial failed each show
// the engine's message in the failure banner above the tabs, with a button that shows the key it
// names in the Config tab and one that opens the closed Log; the next start hides it.
// Screenshots of the banner go to the test artifacts.
#include <QDockWidget>
#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>
#include <QToolButton>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/shell/failure_banner.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/sweeps/sweep_controller.h"

using namespace ws::ui;
using ws::testing::artifactPath;

namespace {

// A 1-layer byte-level GPT: a run of a few steps takes a second.
QString tinyYaml(const QString& dataDir, const QString& extra = {}) {
    return QStringLiteral(
               "model:\n  name: tiny-failure\n  hidden_size: 16\n  num_hidden_layers: 1\n"
               "  num_heads: 2\n  filter_size: 32\n  vocab_size: 256\n"
               "  max_position_embeddings: 16\n"
               "optimizer:\n  learning_rate: 0.003\n"
               "train_input:\n  data_dir: \"%1\"\n  batch_size: 2\n  max_sequence_length: 16\n"
               "eval_input:\n  batch_size: 2\n"
               "runconfig:\n  max_steps: 3\n  eval_frequency: 0\n  eval_steps: 0\n"
               "  log_steps: 1\n"
               "wafer:\n  emulate: false\n")
               .arg(dataDir) +
           extra;
}

bool writeFile(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

QByteArray someText() {
    QByteArray text;
    for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog.\n";
    return text;
}

}  // namespace

class RunFailuresTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.makeFolder());
        QVERIFY(writeFile(m_window.filePath("text.txt"), someText()));
        QVERIFY(m_window.open({1366, 768}));
        m_window.find<QDockWidget>("LogDock")->close();  // as the user had it: closed
        m_banner = m_window.find<FailureBanner>("failureBanner");
    }
    void cleanup() { m_window.close(); }

    void missingDataDirIsShownWithItsKey() {
        const QString missing = m_window.filePath("no-such-folder");
        QVERIFY(openYaml("missing.yaml", tinyYaml(missing)));
        QVERIFY(!m_banner->isVisible());
        pressRunAndWait();
        QVERIFY(m_banner->isVisible());
        QVERIFY2(m_banner->headline().contains("tiny-failure"), qPrintable(m_banner->headline()));
        QVERIFY2(m_banner->message().contains("train_input.data_dir"),
                 qPrintable(m_banner->message()));
        QVERIFY2(m_banner->message().contains(missing), qPrintable(m_banner->message()));
        QCOMPARE(m_banner->key(), QStringLiteral("train_input.data_dir"));
        QVERIFY(m_window->saveScreenshot(artifactPath("run-failure-missing-data.png")));

        // Show the key: the Config tab, its field focused. Open Log: the closed dock opens.
        m_window.find<QPushButton>("failureShowKey")->click();
        auto* tabs = m_window.find<QTabWidget>("mainTabs");
        auto* configTab = m_window.find<ConfigTab>("configTab");
        QCOMPARE(tabs->currentWidget(), configTab);
        QWidget* field = configTab->form()->editorFor("train_input.data_dir");
        QTRY_VERIFY(field->hasFocus());
        QVERIFY(!m_window.find<QDockWidget>("LogDock")->isVisible());
        m_window.find<QPushButton>("failureShowLog")->click();
        QVERIFY(m_window.find<QDockWidget>("LogDock")->isVisible());
        const QString log = m_window.find<LogDock>("LogDock")->text();
        QVERIFY2(log.count(missing) == 1, qPrintable(log));  // the error, not repeated
        QVERIFY(m_banner->isVisible());                      // until dismissed or the next start

        // Fixed: the next run starts and the banner goes.
        QVERIFY(m_window->document()->setField("train_input.data_dir",
                                               '"' + m_window.filePath("text.txt") + '"'));
        QSignalSpy finished(m_window->controller(), &RunController::finished);
        QVERIFY(m_window->startRun());
        QVERIFY(!m_banner->isVisible());
        QVERIFY(finished.wait(60000));
        QVERIFY(!m_banner->isVisible());
    }

    void binaryDataIsShownWithTheFix() {
        QByteArray binary("\x89PNG\r\n\x1a\n", 8);
        binary += QByteArray(4096, '\0');
        QVERIFY(writeFile(m_window.filePath("picture.png"), binary));
        QVERIFY(openYaml("binary.yaml", tinyYaml(m_window.filePath("picture.png"))));
        pressRunAndWait();
        QVERIFY(m_banner->isVisible());
        QVERIFY2(m_banner->message().contains("picture.png") &&
                     m_banner->message().contains("not plain text") &&
                     m_banner->message().contains("train_input.allow_binary"),
                 qPrintable(m_banner->message()));
        QCOMPARE(m_banner->key(), QStringLiteral("train_input.data_dir"));
        QVERIFY(m_window->saveScreenshot(artifactPath("run-failure-binary-data.png")));
        m_window.find<QToolButton>("failureDismiss")->click();
        QVERIFY(!m_banner->isVisible());
    }

    void aRefusedStartIsShown() {
        QVERIFY(openYaml("good.yaml", tinyYaml(m_window.filePath("text.txt"))));
        const auto loaded = m_window->document()->loadedConfig();
        QVERIFY(m_window->startLessonRun(loaded, {}, true));  // paused before its first layer
        QVERIFY(!m_window->startLessonRun(loaded, {}, true));
        QVERIFY(m_banner->isVisible());
        QVERIFY2(m_banner->headline().contains("could not start"),
                 qPrintable(m_banner->headline()));
        QVERIFY2(m_banner->message().contains("a run is already active"),
                 qPrintable(m_banner->message()));
        QVERIFY(m_banner->key().isEmpty());  // nothing in the config to show
        QVERIFY(m_window.find<QPushButton>("failureShowKey")->isHidden());
        QVERIFY(m_window.stopRun(60000));
    }

    void aSweepWhoseTrialsAllFailIsShown() {
        const QString missing = m_window.filePath("gone");
        QVERIFY(openYaml(
            "sweep.yaml",
            tinyYaml(missing, QStringLiteral("sweep:\n  parallel_trials: 1\n  max_steps: 3\n"
                                             "  parameters:\n    optimizer.learning_rate: "
                                             "{values: [0.001, 0.003]}\n"))));
        m_window->setSweepConfirmer([](const QString&) { return true; });  // its question: Yes
        QSignalSpy done(m_window->sweepController(), &SweepController::finished);
        const bool started = m_window->startSweep();
        if (started) QVERIFY(done.wait(120000));
        QVERIFY(m_banner->isVisible());
        QVERIFY2(m_banner->message().contains(missing), qPrintable(m_banner->message()));
        QVERIFY2(m_banner->message().contains("data_dir"), qPrintable(m_banner->message()));
        QVERIFY(m_window->saveScreenshot(artifactPath("run-failure-sweep.png")));
    }

private:
    bool openYaml(const QString& name, const QString& yaml) {
        const QString path = m_window.filePath(name);
        return writeFile(path, yaml.toUtf8()) && m_window->openConfig(path);
    }
    // Run, as F5 would (startRun: the action may be disabled when the config already names the
    // problem), and waits for the run it started, if any, to end.
    void pressRunAndWait() {
        QSignalSpy finished(m_window->controller(), &RunController::finished);
        if (m_window->startRun()) QVERIFY(finished.wait(60000));
    }

    ws::testing::StudioWindow m_window;
    FailureBanner* m_banner = nullptr;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<RunFailuresTest>(argc, argv);
}
#include "run_failures_test.moc"
