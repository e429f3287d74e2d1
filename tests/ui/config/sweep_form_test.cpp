// SPDX-License-Identifier: GPL-3.0-or-later
// The Config form's sweep: settings, offscreen in the main window. The mup-sweep preset's
// sweep.max_steps, seeds, parallel_trials, max_loss, final_loss_steps, max_trials, method,
// parametrization and early stopping are form fields (its axes and bundles stay in the YAML
// view); editing max_steps there changes the sweep (and only that line of the file's YAML); a
// config without a sweep: section shows none of them, so the form cannot add one by accident.
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QTest>

#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {
const QString kSweep = QStringLiteral(WAFER_SOURCE_DIR "/presets/mup-sweep.yaml");
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");
const char* const kSweepKeys[] = {"sweep.method",
                                  "sweep.num_trials",
                                  "sweep.seed",
                                  "sweep.seeds",
                                  "sweep.max_steps",
                                  "sweep.parallel_trials",
                                  "sweep.max_loss",
                                  "sweep.final_loss_steps",
                                  "sweep.max_trials",
                                  "sweep.parametrization",
                                  "sweep.early_stopping.rungs",
                                  "sweep.early_stopping.reduction_factor",
                                  "sweep.early_stopping.group_by"};
using ws::testing::artifactPath;
using ws::testing::commitLine;
}  // namespace

class SweepFormTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() { m_window.close(); }

    void sweepSettingsAreFormFields() {
        QVERIFY(m_window->openConfig(kSweep));
        m_window->showTab("config");
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        for (const char* key : kSweepKeys) {
            QWidget* editor = form->editorFor(key);
            QVERIFY2(editor, key);
            QVERIFY2(editor->isVisibleTo(form), key);
        }
        auto* maxSteps = qobject_cast<QLineEdit*>(form->editorFor("sweep.max_steps"));
        QVERIFY(maxSteps);
        QCOMPARE(maxSteps->text(), QStringLiteral("250"));
        QCOMPARE(qobject_cast<QLineEdit*>(form->editorFor("sweep.seeds"))->text(),
                 QStringLiteral("3"));
        auto* area = qobject_cast<QScrollArea*>(form->parentWidget()->parentWidget());
        area->ensureWidgetVisible(maxSteps, 50, 200);
        QApplication::processEvents();
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-sweep.png")));

        const QString before = m_window->document()->yaml();
        commitLine(maxSteps, "100");
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->config().sweep.has_value());
        QCOMPARE(doc->config().sweep->maxSteps, int64_t(100));
        QCOMPARE(doc->config().runconfig.maxSteps, int64_t(250));  // the trials' own, untouched
        // One line changed: the comments and the rest of the sweep stay as written.
        const QStringList a = before.split('\n'), b = doc->yaml().split('\n');
        QCOMPARE(a.size(), b.size());
        int changed = 0;
        for (int i = 0; i < a.size(); ++i) {
            if (a[i] == b[i]) continue;
            ++changed;
            QCOMPARE(b[i].trimmed(), QStringLiteral("max_steps: 100"));
            QVERIFY(a[i].trimmed().startsWith(QStringLiteral("max_steps: 250")));
        }
        QCOMPARE(changed, 1);
        QVERIFY(m_window.action("runSweepAction")->isEnabled());
    }

    void aConfigWithoutASweepShowsNoSweepFields() {
        QVERIFY(m_window->openConfig(kNano));
        m_window->showTab("config");
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        for (const char* key : kSweepKeys) {
            QWidget* editor = form->editorFor(key);
            QVERIFY2(editor && !editor->isVisibleTo(form), key);
        }
        QVERIFY(!m_window->document()->config().sweep.has_value());
        // Opening a sweep afterwards shows them.
        QVERIFY(m_window->openConfig(kSweep));
        QVERIFY(form->editorFor("sweep.max_steps")->isVisibleTo(form));
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SweepFormTest>(argc, argv);
}
#include "sweep_form_test.moc"
