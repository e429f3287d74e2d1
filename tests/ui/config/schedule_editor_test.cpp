// SPDX-License-Identifier: GPL-3.0-or-later
// The learning-rate schedule editor in the Config form, offscreen: the nano preset's two pieces
// show as table rows; editing a piece rewrites the YAML and a YAML edit updates the table; pieces
// are added, reordered and removed; switching to a constant and back; the preview holds one
// point per step (capped for long runs) with the values of optim::LearningRateSchedule. Saves a
// screenshot of the Config tab showing the editor ($WAFER_TEST_ARTIFACTS).
#include <qcustomplot.h>

#include <QComboBox>
#include <QDir>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextCursor>
#include <memory>

#include "engine/optim/schedule.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/schedule_editor.h"
#include "ui/config/yaml_editor.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");

using ws::testing::artifactPath;

int columnOf(QTableWidget* table, const QString& header) {
    for (int c = 0; c < table->columnCount(); ++c) {
        if (table->horizontalHeaderItem(c)->text() == header) return c;
    }
    return -1;
}

void replaceYaml(ConfigTab* tab, const QString& from, const QString& to) {
    QString yaml = tab->yamlEditor()->toPlainText();
    QVERIFY2(yaml.contains(from), qPrintable(from));
    yaml.replace(from, to);
    QTextCursor typing(tab->yamlEditor()->document());
    typing.select(QTextCursor::Document);
    typing.insertText(yaml);
    tab->applyPendingYaml();
}
}  // namespace

class ScheduleEditorTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kNano));
        m_window->showTab("config");
        m_editor = qobject_cast<ScheduleEditor*>(
            m_window.find<ConfigTab>("configTab")->form()->editorFor("optimizer.learning_rate"));
        QVERIFY(m_editor);
    }
    void cleanup() { m_window.close(); }

    void piecesEditAndSyncBothWays() {
        ConfigDocument* doc = m_window->document();
        QTableWidget* table = m_editor->table();
        QCOMPARE(table->rowCount(), 2);  // the preset: Linear warmup, then Cosine
        const int iters = columnOf(table, "total iters");
        const int initial = columnOf(table, "initial LR");
        QVERIFY(iters >= 0 && initial >= 0);
        QCOMPARE(table->item(0, iters)->text(), QString("30"));
        QCOMPARE(qobject_cast<QComboBox*>(table->cellWidget(1, 0))->currentText(),
                 QString("Cosine"));

        // Form -> YAML.
        table->item(0, iters)->setText("40");
        QCOMPARE(doc->config().optimizer.learningRate.schedule[0].totalIters, int64_t(40));
        QVERIFY(m_window.find<ConfigTab>("configTab")
                    ->yamlEditor()
                    ->toPlainText()
                    .contains("total_iters: 40"));
        QVERIFY(doc->isModified());
        // Not a number: the cell goes back to the piece's value, the YAML is untouched.
        table->item(0, iters)->setText("soon");
        QCOMPARE(table->item(0, iters)->text(), QString("40"));

        // YAML -> form.
        replaceYaml(m_window.find<ConfigTab>("configTab"), "total_iters: 40", "total_iters: 50");
        QCOMPARE(table->item(0, iters)->text(), QString("50"));

        // Add (after the selected piece), reorder, change a kind, remove.
        table->selectRow(0);
        m_editor->addPiece();
        QCOMPARE(table->rowCount(), 3);
        QCOMPARE(doc->config().optimizer.learningRate.schedule.size(), size_t(3));
        QCOMPARE(doc->config().optimizer.learningRate.schedule[1].scheduler,
                 std::string("Constant"));
        QVERIFY(doc->canRun());
        m_editor->movePiece(1, 1);
        QCOMPARE(doc->config().optimizer.learningRate.schedule[1].scheduler, std::string("Cosine"));
        auto* kind = qobject_cast<QComboBox*>(table->cellWidget(2, 0));
        kind->setCurrentText("Linear");
        emit kind->textActivated("Linear");
        QTRY_COMPARE(doc->config().optimizer.learningRate.schedule[2].scheduler,
                     std::string("Linear"));
        m_editor->removePiece(2);
        QCOMPARE(doc->config().optimizer.learningRate.schedule.size(), size_t(2));
        QVERIFY(doc->canRun());

        // A constant and back to a schedule.
        m_editor->modeBox()->setCurrentIndex(0);
        emit m_editor->modeBox()->activated(0);
        QVERIFY(doc->config().optimizer.learningRate.schedule.empty());
        QVERIFY(m_window.find<ConfigTab>("configTab")
                    ->yamlEditor()
                    ->toPlainText()
                    .contains(QRegularExpression("learning_rate: 0\\.003\\b")));
        m_editor->constantEdit()->setText("0.002");
        emit m_editor->constantEdit()->editingFinished();
        QCOMPARE(doc->config().optimizer.learningRate.constant, 0.002);
        m_editor->modeBox()->setCurrentIndex(1);
        emit m_editor->modeBox()->activated(1);
        QCOMPARE(doc->config().optimizer.learningRate.schedule.size(), size_t(1));
        QCOMPARE(doc->config().optimizer.learningRate.schedule[0].learningRate, 0.002);
    }

    void previewIsTheEnginesSchedule() {
        ConfigDocument* doc = m_window->document();
        QCOMPARE(m_editor->previewPointCount(), 600);  // the preset's max_steps
        const ws::optim::LearningRateSchedule schedule(doc->config().optimizer.learningRate, 600);
        const auto data = m_editor->preview()->graph(0)->data();
        for (int step : {0, 15, 30, 31, 300, 599}) {
            QCOMPARE(data->at(step)->key, double(step));
            QCOMPARE(data->at(step)->value, schedule.at(step));
        }
        QVERIFY(doc->setField("runconfig.max_steps", "250"));
        QCOMPARE(m_editor->previewPointCount(), 250);
        QVERIFY(doc->setField("runconfig.max_steps", "100000"));
        QCOMPARE(m_editor->previewPointCount(), 4000);  // capped; first and last step kept
        QCOMPARE(m_editor->preview()->graph(0)->data()->at(3999)->key, 99999.0);
        QVERIFY(doc->setField("runconfig.max_steps", "600"));

        // The screenshot: the optimizer section scrolled into view.
        auto* scroll = m_window.find<ConfigTab>("configTab")->findChild<QScrollArea*>();
        QVERIFY(scroll);
        QWidget* form = m_window.find<ConfigTab>("configTab")->form();
        QWidget* top = form->findChild<QWidget*>("optimizer.optimizer_type");
        QVERIFY(top);
        scroll->verticalScrollBar()->setValue(top->mapTo(form, QPoint(0, 0)).y() - 48);
        QVERIFY(m_window->saveScreenshot(artifactPath("studio-config-schedule.png")));
    }

private:
    ws::testing::StudioWindow m_window;
    ScheduleEditor* m_editor = nullptr;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ScheduleEditorTest>(argc, argv);
}
#include "schedule_editor_test.moc"
