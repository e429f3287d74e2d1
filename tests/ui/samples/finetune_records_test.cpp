// SPDX-License-Identifier: GPL-3.0-or-later
// The fine-tune wizard's Data page for chat and instruction records (issue 34), offscreen, with
// the shipped base model: a JSONL file of OpenAI messages shows its detected format, the chat
// template and why, the first examples with the prompts greyed out and the answers in the
// normal colour (from the run's token mask), a histogram of example lengths against the sequence
// length and the warnings; "train on" changes the examples; a CSV file's columns fill the mapping
// combos, a missing column is named with the columns found, and changing the mapping changes the
// preview. Every choice lands in the request as an override, so the run trains what the page
// shows. A text file keeps the text page. Screenshots of the page go to $WAFER_TEST_ARTIFACTS.
#include <qcustomplot.h>
#include <QAbstractButton>
#include <QComboBox>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <QTextEdit>
#include <QTextFragment>
#include <algorithm>

#include "engine/session/record_preview.h"
#include "support/finetune_wizard_support.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/samples/record_preview_panel.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {

using ws::testing::saveWizard;
using ws::testing::writeFile;

bool waitForPlan(FinetuneWizard* wizard) {
    QTest::qWait(200);  // the plan timer coalesces edits
    return QTest::qWaitFor([&] { return !wizard->isPlanning(); }, 60000);
}

QByteArray chatRecords(int n) {
    const char* words[] = {"apple", "river", "stone", "cloud", "ember", "maple", "tiger", "piano"};
    QByteArray out;
    for (int i = 0; i < n; ++i) {
        const QByteArray w = words[i % 8];
        out += R"({"messages": [{"role": "user", "content": "Say )" + w +
               R"( twice."}, {"role": "assistant", "content": ")" + w + " " + w + "\"}]}\n";
    }
    return out;
}

struct Fragment {
    QString text;
    QTextCharFormat format;
};

std::vector<Fragment> fragmentsOf(QTextEdit* edit) {
    std::vector<Fragment> out;
    for (QTextBlock b = edit->document()->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
            out.push_back({it.fragment().text(), it.fragment().charFormat()});
    return out;
}

// The fragment holding `text` (the first), or null.
const Fragment* fragmentWith(const std::vector<Fragment>& fragments, const QString& text) {
    for (const Fragment& f : fragments)
        if (f.text.contains(text)) return &f;
    return nullptr;
}

bool greyed(const Fragment& f) {
    return f.format.foreground().color().alphaF() < 0.6;
}

bool hasOverride(const ws::finetune::FinetuneRequest& r, const std::string& o) {
    return std::find(r.overrides.begin(), r.overrides.end(), o) != r.overrides.end();
}

double barTotal(QCustomPlot* plot) {
    double total = 0;
    for (int i = 0; i < plot->plottableCount(); ++i)
        if (auto* bars = qobject_cast<QCPBars*>(plot->plottable(i)))
            for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
                total += it->value;
    return total;
}

}  // namespace

class FinetuneRecordsTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() { m_window.close(); }

    void messagesShowTheFormatTheMaskAndTheLengths() {
        const QString data = m_window.filePath("chat.jsonl");
        QVERIFY(writeFile(data, chatRecords(40)));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        wizard->next();
        wizard->addDataPaths({data});
        QVERIFY(waitForPlan(wizard));
        RecordPreviewPanel* panel = wizard->recordPanel();
        QVERIFY(panel->isVisible());
        QVERIFY(wizard->readsRecords());
        QCOMPARE(wizard->currentPage()->title(), QStringLiteral("2. Data to fine-tune on"));
        QVERIFY(wizard->recordPreview().has_value());
        const ws::session::RecordPreview& p = *wizard->recordPreview();
        QVERIFY2(p.error.empty(), p.error.c_str());
        QVERIFY2(panel->detectedText().contains("OpenAI messages"),
                 qPrintable(panel->detectedText()));
        QCOMPARE(panel->formatCombo()->currentData().toString(), QStringLiteral("auto"));
        QVERIFY(!panel->columnCombo(RecordPreviewPanel::Prompt)->isVisible());  // JSON: no columns
        QVERIFY2(panel->templateText().contains("chatml") &&
                     panel->templateText().contains("no chat template of its own"),
                 qPrintable(panel->templateText()));
        // The shipped base's sequence length and batch shape the preview.
        QCOMPARE(p.T, 128);
        QVERIFY(panel->countsText().contains(
            QLocale(QLocale::English).toString(qlonglong(p.stats.trainedTokens)) + " trained on"));

        // The prompt greyed out, the answer in the text colour, from the token mask.
        auto fragments = fragmentsOf(panel->examplesView());
        const Fragment* prompt = fragmentWith(fragments, "Say apple twice.");
        const Fragment* answer = fragmentWith(fragments, "apple apple");
        QVERIFY(prompt && answer);
        QVERIFY(greyed(*prompt));
        QVERIFY(!greyed(*answer));
        QVERIFY(!fragmentWith(fragments, "apple apple")->text.contains("Say"));

        // The histogram counts every training example; the line marks T + 1.
        QCOMPARE(barTotal(panel->histogram()), double(p.stats.given));
        QCOMPARE(p.stats.lengths.limit, 129);
        saveWizard(wizard, "finetune-records-messages.png");

        // Train on everything: the prompt is trained too, and the request says so.
        panel->setTrainOn(RecordPreviewPanel::Everything);
        QVERIFY(waitForPlan(wizard));
        fragments = fragmentsOf(panel->examplesView());
        QVERIFY(!greyed(*fragmentWith(fragments, "Say apple twice.")));
        const auto request = wizard->request();
        QVERIFY(hasOverride(request, "train_input.train_on_inputs=true"));
        QVERIFY(hasOverride(request, "train_input.mask_history=false"));
        QVERIFY(hasOverride(request, "train_input.format=auto"));
        QVERIFY(wizard->recordPreview()->trainOnInputs);
        if (wizard->plan()) QVERIFY(wizard->plan()->config.config.trainInput.trainOnInputs);

        // Last answer only, and a forced format, likewise.
        panel->setTrainOn(RecordPreviewPanel::LastAnswer);
        panel->setFormat("messages");
        QVERIFY(waitForPlan(wizard));
        QVERIFY(hasOverride(wizard->request(), "train_input.mask_history=true"));
        QVERIFY(hasOverride(wizard->request(), "train_input.format=messages"));
        QVERIFY(wizard->recordPreview()->maskHistory);
        QVERIFY(panel->detectedText().startsWith("read as: OpenAI messages"));
    }

    void csvColumnsFillTheMappingAndTheMappingChangesThePreview() {
        const QString data = m_window.filePath("turns.csv");
        QVERIFY(writeFile(data,
                          "question,reply,rid,follows,note\n"
                          "What is red?,A colour.,1,,first\n"
                          "Name a fruit.,Apple.,2,,second\n"
                          "Another one?,Pear.,3,2,third\n"));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        wizard->addDataPaths({data});
        QVERIFY(waitForPlan(wizard));
        RecordPreviewPanel* panel = wizard->recordPanel();
        QVERIFY(panel->isVisible());
        // prompt and answer are not columns of this file: named, with the columns found.
        QVERIFY2(panel->warningsText().contains("`prompt`") &&
                     panel->warningsText().contains("`question`, `reply`, `rid`, `follows`, "
                                                    "`note`"),
                 qPrintable(panel->warningsText()));
        QVERIFY(panel->warningsText().contains("Choose the prompt and answer columns above"));
        QComboBox* prompt = panel->columnCombo(RecordPreviewPanel::Prompt);
        QVERIFY(prompt->isVisible());
        QStringList items;
        for (int i = 0; i < prompt->count(); ++i) items << prompt->itemText(i);
        QCOMPARE(items, QStringList({"question", "reply", "rid", "follows", "note"}));
        QCOMPARE(prompt->currentIndex(), -1);  // "choose…"
        QCOMPARE(panel->columnCombo(RecordPreviewPanel::System)->itemText(0),
                 QStringLiteral("none"));
        saveWizard(wizard, "finetune-records-csv-missing.png");

        // The user maps the columns (the first as a user picks from the list).
        prompt->setCurrentIndex(prompt->findData("question"));
        emit prompt->activated(prompt->currentIndex());
        panel->setColumn(RecordPreviewPanel::Answer, "reply");
        panel->setColumn(RecordPreviewPanel::Id, "rid");
        panel->setColumn(RecordPreviewPanel::ParentId, "follows");
        QVERIFY(waitForPlan(wizard));
        const ws::session::RecordPreview& p = *wizard->recordPreview();
        QVERIFY2(p.error.empty(), p.error.c_str());
        QVERIFY(!panel->warningsText().contains("Choose the prompt"));
        QVERIFY2(panel->detectedText().contains("chained by `follows`"),
                 qPrintable(panel->detectedText()));
        QCOMPARE(p.trainRecords + p.heldOutRecords, size_t(2));  // two conversations
        QCOMPARE(prompt->currentData().toString(), QStringLiteral("question"));
        const auto request = wizard->request();
        QVERIFY(hasOverride(request, "train_input.prompt_column='question'"));
        QVERIFY(hasOverride(request, "train_input.answer_column='reply'"));
        QVERIFY(hasOverride(request, "train_input.parent_id_column='follows'"));
        auto fragments = fragmentsOf(panel->examplesView());
        QVERIFY(fragmentWith(fragments, "Apple.") && !greyed(*fragmentWith(fragments, "Apple.")));
        // Two conversations do not fill a batch of 16 rows: said in the warnings.
        QVERIFY2(panel->warningsText().contains("train_input.batch_size"),
                 qPrintable(panel->warningsText()));
        saveWizard(wizard, "finetune-records-csv.png");

        // Another answer column: the preview follows.
        panel->setColumn(RecordPreviewPanel::Answer, "note");
        QVERIFY(waitForPlan(wizard));
        fragments = fragmentsOf(panel->examplesView());
        QVERIFY(!fragmentWith(fragments, "Apple."));
        QVERIFY(fragmentWith(fragments, "third") && !greyed(*fragmentWith(fragments, "third")));
        QVERIFY(hasOverride(wizard->request(), "train_input.answer_column='note'"));

        // No system column: "none" is an empty name, which no column has.
        panel->setColumn(RecordPreviewPanel::System, "");
        QVERIFY(waitForPlan(wizard));
        QVERIFY(hasOverride(wizard->request(), "train_input.system_column=''"));
        QVERIFY2(wizard->recordPreview()->error.empty(), wizard->recordPreview()->error.c_str());
    }

    void textFilesKeepTheTextPage() {
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        wizard->next();
        wizard->addDataPaths({data});
        QVERIFY(waitForPlan(wizard));
        QVERIFY(!wizard->readsRecords());
        QVERIFY(wizard->recordPanel()->isHidden());
        QVERIFY(!wizard->recordPreview().has_value());
        QCOMPARE(wizard->currentPage()->title(), QStringLiteral("2. Text to fine-tune on"));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        for (const std::string& o : wizard->request().overrides)
            QVERIFY2(!o.starts_with("train_input."), o.c_str());
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<FinetuneRecordsTest>(argc, argv);
}

#include "finetune_records_test.moc"
