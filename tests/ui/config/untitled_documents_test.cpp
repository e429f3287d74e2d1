// SPDX-License-Identifier: GPL-3.0-or-later
// Untitled documents, offscreen: a shipped preset opens as an untitled copy, Ctrl+S asks for a
// file (never in the presets folder, which is refused unless confirmed) and leaves the preset's
// bytes alone, and a form edit keeps the preset's comments in the YAML view. The fine-tune
// wizard's config (and a stored run's config) becomes its own untitled document, so the "Save
// them first?" prompt's default button cannot write it over the file that was open before.
#include <QAbstractButton>
#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/common/run_controller.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/shell/log_dock.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"

using namespace ws::ui;

namespace {

const QString kPresets = QStringLiteral(WAFER_SOURCE_DIR "/presets");
const QString kNano = kPresets + QStringLiteral("/gpt-nano.yaml");

QByteArray readBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeBytes(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

QStringList commentLines(const QString& text) {
    QStringList out;
    for (const QString& line : text.split('\n'))
        if (line.trimmed().startsWith('#')) out << line;
    return out;
}

using ws::testing::commitLine;

struct Question {
    QString title, text;
    QMessageBox::StandardButton defaultButton;
};

}  // namespace

class UntitledDocumentsTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        m_questions.clear();
        m_suggested.clear();
        // Every question is answered with its default button, as pressing Enter would.
        m_window->setAsker([this](const QString& title, const QString& text,
                                  QMessageBox::StandardButtons,
                                  QMessageBox::StandardButton defaultButton) {
            m_questions.push_back({title, text, defaultButton});
            return defaultButton;
        });
        m_window->setSaveFileChooser([this](const QString& suggested) {
            m_suggested << suggested;
            return m_nextChoice;
        });
        m_nextChoice.clear();
    }
    void cleanup() { m_window.close(); }

    void presetOpensUntitledAndCtrlSAsksInsteadOfWritingIt() {
        const QByteArray preset = readBytes(kNano);
        QVERIFY(!preset.isEmpty());
        QVERIFY(MainWindow::isShippedPreset(kNano));
        QVERIFY(m_window->openConfig(kNano));  // what a plain launch does
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->isUntitled());
        QVERIFY2(m_window->windowTitle().startsWith("gpt-nano (preset) — untitled"),
                 qPrintable(m_window->windowTitle()));

        // A form edit patches the YAML view: every comment of the preset stays.
        ConfigTab* tab = m_window.find<ConfigTab>("configTab");
        auto* hidden = qobject_cast<QLineEdit*>(tab->form()->editorFor("model.hidden_size"));
        QVERIFY(hidden);
        commitLine(hidden, "192");
        const QString yaml = tab->yamlEditor()->toPlainText();
        QVERIFY2(yaml.contains("    hidden_size: 192             # width of the residual stream"),
                 qPrintable(yaml));
        QCOMPARE(commentLines(yaml), commentLines(QString::fromUtf8(preset)));
        QVERIFY(doc->isModified());
        m_window->showTab("config");
        QVERIFY(m_window->saveScreenshot(ws::testing::artifactPath("untitled-preset-edited.png")));

        // Ctrl+S asks for a file name, suggested outside the presets folder; cancelling writes
        // nothing.
        m_window->activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        QTest::keySequence(m_window.get(), QKeySequence::Save);
        QCOMPARE(m_suggested.size(), 1);
        QCOMPARE(QFileInfo(m_suggested.front()).fileName(), QStringLiteral("gpt-nano.yaml"));
        QVERIFY2(!MainWindow::isShippedPreset(m_suggested.front()), qPrintable(m_suggested[0]));
        QCOMPARE(readBytes(kNano), preset);
        QVERIFY(doc->isUntitled() && doc->isModified());

        // Choosing the preset itself is refused unless confirmed (the default is Cancel).
        m_nextChoice = kNano;
        m_window.action("saveAction")->trigger();
        QCOMPARE(m_questions.size(), size_t(1));
        QCOMPARE(m_questions.front().defaultButton, QMessageBox::Cancel);
        QVERIFY(m_questions.front().text.contains("shipped presets folder"));
        QCOMPARE(readBytes(kNano), preset);
        QVERIFY(doc->isUntitled());

        // A folder of the user's: written with its comments, relative paths made absolute.
        const QString mine = m_window.filePath("mine.yaml");
        m_nextChoice = mine;
        m_window.action("saveAction")->trigger();
        QCOMPARE(readBytes(kNano), preset);
        QCOMPARE(doc->filePath(), QFileInfo(mine).absoluteFilePath());
        QVERIFY(!doc->isModified());
        QVERIFY2(m_window->windowTitle().startsWith("mine.yaml"),
                 qPrintable(m_window->windowTitle()));
        const QString saved = QString::fromUtf8(readBytes(mine));
        QCOMPARE(commentLines(saved), commentLines(QString::fromUtf8(preset)));
        QVERIFY(saved.contains("hidden_size: 192"));
        const QString corpus = QDir::cleanPath(WAFER_SOURCE_DIR "/resources/corpus");
        QVERIFY2(saved.contains("data_dir: \"" + corpus + "\""), qPrintable(saved));
        ConfigDocument reread;
        QVERIFY(reread.loadFile(mine));
        QVERIFY(reread.canRun());
        QCOMPARE(reread.config().trainInput.dataDir.front(), corpus.toStdString());

        // Ctrl+S on a titled document saves in place, without asking.
        QVERIFY(doc->setField("runconfig.max_steps", "42"));
        m_window.action("saveAction")->trigger();
        QCOMPARE(m_suggested.size(), 3);
        QVERIFY(readBytes(mine).contains("max_steps: 42"));

        // New from Preset: again an untitled copy, offered in the folder saved into last.
        QAction* newNano = nullptr;
        for (QAction* menu : m_window->menuBar()->actions()) {
            if (!menu->menu()) continue;
            for (QAction* sub : menu->menu()->actions()) {
                if (!sub->menu() || !sub->text().contains("Preset")) continue;
                for (QAction* a : sub->menu()->actions())
                    if (a->text() == "gpt-nano") newNano = a;
            }
        }
        QVERIFY(newNano);
        newNano->trigger();
        QVERIFY(doc->isUntitled());
        QVERIFY(!doc->isModified());
        m_nextChoice.clear();
        m_window.action("saveAction")->trigger();
        QCOMPARE(m_suggested.size(), 4);
        QCOMPARE(m_suggested.back(),
                 QFileInfo(m_window.filePath("gpt-nano.yaml")).absoluteFilePath());
        QCOMPARE(readBytes(kNano), preset);
    }

    void finetuneConfigIsItsOwnUntitledDocument() {
        const QString mine = m_window.filePath("mine.yaml");
        QVERIFY(writeBytes(mine, readBytes(kNano)));
        QVERIFY(m_window->openConfig(mine));
        const QByteArray original = readBytes(mine);
        QVERIFY(!m_window->document()->isUntitled());

        const QString data = m_window.filePath("lighthouse.txt");
        QByteArray text;
        for (int i = 0; i < 60; ++i)
            text += "The lighthouse keeper wrote: wind from the west, the lamp burned.\n";
        QVERIFY(writeBytes(data, text));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        wizard->next();
        wizard->addDataPaths({data});
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        wizard->next();  // the method page (the shipped base: a full fine-tune)
        wizard->next();
        wizard->setMaxSteps(1);
        QTRY_VERIFY_WITH_TIMEOUT(!wizard->isPlanning(), 30000);
        QSignalSpy finished(m_window->controller(), &RunController::finished);
        wizard->button(QWizard::FinishButton)->click();
        QVERIFY(m_window->controller()->isActive());
        ConfigDocument* doc = m_window->document();
        // The fine-tune's config is in the Config tab, but not under mine.yaml's name.
        QVERIFY(doc->yaml().contains("checkpoint_path"));
        QVERIFY(doc->isUntitled());
        QVERIFY2(doc->displayName().startsWith("finetune of llama-base"),
                 qPrintable(doc->displayName()));
        QVERIFY(m_window->windowTitle().contains("untitled"));
        m_window->controller()->stop();
        QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);

        // Edited, then the window is closed: "Save them first?" answered with its default
        // (Save) asks for a file name; cancelling that keeps the window and mine.yaml as it was.
        QVERIFY(doc->setField("runconfig.max_steps", "9"));
        QVERIFY(!m_window->close());
        QCOMPARE(m_questions.size(), size_t(1));
        QVERIFY(m_questions.front().text.contains("Save them first?"));
        QCOMPARE(m_questions.front().defaultButton, QMessageBox::Save);
        QCOMPARE(m_suggested.size(), 1);
        QVERIFY(m_suggested.front() != QFileInfo(mine).absoluteFilePath());
        m_window.action("saveAction")->trigger();
        QCOMPARE(m_suggested.size(), 2);
        QCOMPARE(readBytes(mine), original);

        // A stored run's config opened from the Runs dock is untitled too.
        QVERIFY(m_window->openConfig(mine));
        QCOMPARE(m_window->document()->filePath(), QFileInfo(mine).absoluteFilePath());
        emit m_window.find<RunsDock>("RunsDock")
            ->openConfigRequested(doc->yaml(), QStringLiteral("run 1"));
        QVERIFY(doc->isUntitled());
        QCOMPARE(doc->displayName(), QStringLiteral("config of run 1 — untitled"));
        QVERIFY(doc->setField("runconfig.max_steps", "11"));
        m_window.action("saveAction")->trigger();
        QCOMPARE(readBytes(mine), original);
    }

private:
    ws::testing::StudioWindow m_window;
    std::vector<Question> m_questions;
    QStringList m_suggested;
    QString m_nextChoice;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<UntitledDocumentsTest>(argc, argv);
}

#include "untitled_documents_test.moc"
