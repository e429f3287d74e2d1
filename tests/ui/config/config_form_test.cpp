// SPDX-License-Identifier: GPL-3.0-or-later
// The Config form's checks, offscreen in the main window: wafer.spec is a choice of the known
// specs and a misspelt one (from the YAML view) is a field error with a "did you mean"; a model
// that cannot fit the wafer shows the engine's own fit message on the field and disables Run
// until fixed; rejected values are worded with the form's field names (no CLI "--set"); number
// fields take no letters; a hidden_size / num_heads mismatch shows under num_heads; the mouse
// wheel over an unfocused combo box scrolls the form instead of changing the value.
#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QTest>
#include <QWheelEvent>
#include <memory>

#include "engine/core/units.h"
#include "engine/model/model_facts.h"
#include "engine/wafer/run_fit.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/config/config_document.h"
#include "ui/config/config_form.h"
#include "ui/config/config_tab.h"
#include "ui/config/yaml_editor.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");

using ws::testing::artifactPath;

using ws::testing::commitLine;

// The full text of a field's inline error ("" when hidden).
QString errorText(ConfigForm* form, const QString& path) {
    QLabel* label = form->errorLabelFor(path);
    if (!label || !label->isVisible()) return {};
    return label->property("fullText").toString();
}

// Scrolls the form so the field and its error are in view (for the screenshots).
void showField(ConfigForm* form, const QString& path) {
    auto* area = qobject_cast<QScrollArea*>(form->parentWidget()->parentWidget());
    area->ensureWidgetVisible(form->errorLabelFor(path), 50, 150);
    QApplication::processEvents();
}

bool hasProblemAt(const ConfigDocument* doc, const QString& path, const QString& part) {
    for (const auto& p : doc->problems())
        if (p.path == path && p.line > 0 && p.message.contains(part)) return true;
    return false;
}
}  // namespace

class ConfigFormTest : public QObject {
    Q_OBJECT
private slots:
    void init() {
        QVERIFY(m_window.open());
        QVERIFY(m_window->openConfig(kNano));
        m_window->showTab("config");
        QVERIFY(m_window.action("runAction")->isEnabled());
    }
    void cleanup() { m_window.close(); }

    void waferSpecIsAChoiceAndATypoIsAFieldError() {
        ConfigTab* tab = m_window.find<ConfigTab>("configTab");
        ConfigForm* form = tab->form();
        auto* spec = qobject_cast<QComboBox*>(form->editorFor("wafer.spec"));
        QVERIFY(spec);
        QStringList items;
        for (int i = 0; i < spec->count(); ++i) items << spec->itemText(i);
        QCOMPARE(items, QStringList({"teaching-16x16", "wse2", "wse3"}));
        QCOMPARE(spec->currentText(), QString("wse2"));

        // Typed in the YAML view, as the user did.
        tab->yamlEditor()->setPlainText(tab->yamlEditor()->toPlainText() +
                                        "\nwafer:\n  spec: teaching16\n");
        tab->applyPendingYaml();
        const QString error = errorText(form, "wafer.spec");
        QVERIFY2(error.contains("no wafer spec named \"teaching16\""), qPrintable(error));
        QVERIFY2(error.contains("did you mean \"teaching-16x16\"?"), qPrintable(error));
        QVERIFY(hasProblemAt(m_window->document(), "wafer.spec", "did you mean"));
        QVERIFY(!tab->yamlEditor()->extraSelections().isEmpty());  // marked in the YAML view
        QCOMPARE(spec->currentText(), QString("teaching16"));      // shown as written
        QVERIFY(!m_window.action("runAction")->isEnabled());
        showField(form, "wafer.spec");
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-spec-typo.png")));

        // Choosing the spec it meant fixes it.
        const int meant = spec->findText("teaching-16x16");
        spec->setCurrentIndex(meant);
        emit spec->activated(meant);
        QVERIFY2(errorText(form, "wafer.spec").isEmpty(),
                 qPrintable(errorText(form, "wafer.spec")));
        QCOMPARE(m_window->document()->config().wafer.spec, std::string("teaching-16x16"));
        QCOMPARE(spec->findText("teaching16"), -1);  // the misspelt extra item is gone
        QVERIFY(m_window.action("runAction")->isEnabled());
    }

    void modelThatDoesNotFitTheWaferDisablesRun() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        ConfigDocument* doc = m_window->document();
        // 2048-token sequences on the teaching wafer: the attention scores of one sequence
        // alone outgrow its 12 MiB of SRAM.
        QVERIFY(doc->setField("model.max_position_embeddings", "2048"));
        QVERIFY(doc->setField("train_input.max_sequence_length", "2048"));
        QVERIFY(m_window.action("runAction")->isEnabled());  // fits a WSE-2
        auto* spec = qobject_cast<QComboBox*>(form->editorFor("wafer.spec"));
        QVERIFY(spec);
        const int teaching = spec->findText("teaching-16x16");
        spec->setCurrentIndex(teaching);
        emit spec->activated(teaching);

        const auto engine = ws::wafer::fitOnWafer(doc->config());
        QVERIFY(!engine.ok());
        const QString message = QString::fromStdString(engine.error().message);
        QVERIFY2(message.contains("even micro_batch_size 1 does not fit"), qPrintable(message));
        QCOMPARE(errorText(form, "wafer.spec"), message);  // the engine's words, on the field
        QVERIFY(hasProblemAt(doc, "wafer.spec", "does not fit"));
        QVERIFY(!m_window.action("runAction")->isEnabled());
        showField(form, "wafer.spec");
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-does-not-fit.png")));

        // Back to a bigger wafer: Run is enabled again.
        const int wse3 = spec->findText("wse3");
        spec->setCurrentIndex(wse3);
        emit spec->activated(wse3);
        QVERIFY(errorText(form, "wafer.spec").isEmpty());
        QVERIFY(m_window.action("runAction")->isEnabled());

        // An SRAM override that is too small: the error is on that field.
        auto* sram = qobject_cast<QLineEdit*>(form->editorFor("wafer.sram_bytes"));
        QVERIFY(sram);
        commitLine(sram, "200000");
        QVERIFY2(errorText(form, "wafer.sram_bytes").contains("does not fit"),
                 qPrintable(errorText(form, "wafer.sram_bytes")));
        QVERIFY(!m_window.action("runAction")->isEnabled());
        commitLine(sram, "0");
        QVERIFY(errorText(form, "wafer.sram_bytes").isEmpty());
        QVERIFY(m_window.action("runAction")->isEnabled());
    }

    // Issue 14: the facts line says what weight streaming moves; in bf16 mode weights stream as
    // 2-byte bf16, so the wafer buffer and the bytes streamed per pass halve.
    void factsShowTheWeightBufferAndStreamedBytesHalvedInBf16() {
        ConfigTab* tab = m_window.find<ConfigTab>("configTab");
        ConfigDocument* doc = m_window->document();
        const auto fp32 = ws::model::deriveFacts(doc->config());
        const QString text32 = tab->factsLabel()->text();
        QVERIFY2(text32.contains("(fp32 weights)"), qPrintable(text32));
        QVERIFY(doc->setField("model.mixed_precision", "true"));  // fp16_type: bfloat16 default
        const auto bf16 = ws::model::deriveFacts(doc->config());
        QCOMPARE(fp32.waferBufferBytes, 2 * bf16.waferBufferBytes);
        QCOMPARE(fp32.streamedBytesPerPass, 2 * bf16.streamedBytesPerPass);
        const QString text16 = tab->factsLabel()->text();
        QVERIFY2(text16.contains("(bf16 weights)"), qPrintable(text16));
        const auto human = [](int64_t b) {  // the tab's units (engine/core/units.h)
            return QString::fromStdString(ws::formatBytes(double(b)));
        };
        const auto streaming = [&](const ws::model::ModelFacts& f) {
            return "wafer buffer " + human(f.waferBufferBytes) + ", " +
                   human(f.streamedBytesPerPass) + " streamed in per forward + backward";
        };
        QVERIFY2(text16.contains(streaming(bf16)), qPrintable(text16));
        QVERIFY2(text32.contains(streaming(fp32)), qPrintable(text32));
        QVERIFY(m_window->saveScreenshot(artifactPath("config-facts-bf16.png")));
    }

    // Issue 33: a YAML in ModelZoo's Llama keys opens in the form; the block options are
    // choices, and the facts line shows the parameters and the KV cache of the KV heads only,
    // live as the KV heads change.
    void llamaKeysOpenInTheFormWithLiveFacts() {
        QVERIFY(m_window->openConfig(QStringLiteral(WAFER_SOURCE_DIR "/presets/smollm-135m.yaml")));
        ConfigTab* tab = m_window.find<ConfigTab>("configTab");
        ConfigForm* form = tab->form();
        ConfigDocument* doc = m_window->document();
        QVERIFY(doc->isParsed());
        const auto items = [&](const QString& path) {
            QStringList out;
            auto* combo = qobject_cast<QComboBox*>(form->editorFor(path));
            if (combo)
                for (int i = 0; i < combo->count(); ++i) out << combo->itemText(i);
            return out;
        };
        const auto current = [&](const QString& path) {
            auto* combo = qobject_cast<QComboBox*>(form->editorFor(path));
            return combo ? combo->currentText() : QString();
        };
        QCOMPARE(items("model.position_embedding_type"),
                 QStringList({"learned", "rotary", "alibi"}));
        QCOMPARE(current("model.position_embedding_type"), QString("rotary"));
        QCOMPARE(items("model.norm_type"), QStringList({"layernorm", "rmsnorm"}));
        QCOMPARE(current("model.norm_type"), QString("rmsnorm"));
        QCOMPARE(items("model.nonlinearity"), QStringList({"gelu", "swiglu"}));
        QCOMPARE(current("model.nonlinearity"), QString("swiglu"));
        QCOMPARE(items("model.attention_module"),
                 QStringList({"aiayn_attention", "multiquery_attention"}));
        QVERIFY(form->editorFor("model.extra_attention_params.num_kv_groups"));
        QVERIFY(form->editorFor("model.rope_theta"));
        QVERIFY(form->editorFor("model.use_ffn_bias"));

        const auto human = [](int64_t b) {
            return QString::fromStdString(ws::formatBytes(double(b)));
        };
        const auto facts = ws::model::deriveFacts(doc->config());
        QCOMPARE(facts.parameters, int64_t(134515008));
        QCOMPARE(facts.kvCacheBytesPerToken, int64_t(2 * 30 * 3 * 64 * 4));
        const QString text = tab->factsLabel()->text();
        QVERIFY2(text.contains(QString::fromStdString(ws::formatCount(134515008.0))),
                 qPrintable(text));
        QVERIFY2(text.contains("KV cache " + human(facts.kvCacheBytesPerToken) + " per token"),
                 qPrintable(text));
        showField(form, "model.extra_attention_params.num_kv_groups");
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-llama.png")));

        // Nine KV heads (plain multi-head attention): three times the cache, more parameters.
        QVERIFY(doc->setField("model.extra_attention_params.num_kv_groups", "9"));
        const auto mha = ws::model::deriveFacts(doc->config());
        QCOMPARE(mha.kvCacheBytesPerToken, 3 * facts.kvCacheBytesPerToken);
        QCOMPARE(mha.parameters - facts.parameters, int64_t(30) * 576 * 2 * (576 - 192));
        const QString after = tab->factsLabel()->text();
        QVERIFY2(after.contains("KV cache " + human(mha.kvCacheBytesPerToken) + " per token"),
                 qPrintable(after));
    }

    // Rotary's settings show with rotary positions only, the KV groups with multi-query attention
    // only: a GPT-2 config's form lists neither, and choosing rotary in the form shows them.
    void settingsOfAnotherChoiceShowOnlyWithIt() {
        const QStringList rotary = {"model.rotary_dim", "model.rope_theta",
                                    "model.pos_scaling_factor", "model.pos_scaling_type"};
        const QString kv = QStringLiteral("model.extra_attention_params.num_kv_groups");
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        const auto shown = [&](const QString& path) {
            QWidget* editor = form->editorFor(path);
            return editor && editor->isVisibleTo(form);
        };
        QVERIFY(m_window->openConfig(kNano));
        for (const QString& path : rotary) QVERIFY2(!shown(path), qPrintable(path));
        QVERIFY(!shown(kv));
        QVERIFY(shown("model.position_embedding_type"));
        QVERIFY(shown("model.hidden_size"));

        auto* position = qobject_cast<QComboBox*>(form->editorFor("model.position_embedding_type"));
        QVERIFY(position);
        position->setCurrentText(QStringLiteral("rotary"));
        emit position->activated(position->currentIndex());
        QCOMPARE(QString::fromStdString(m_window->document()->config().model.positionEmbeddingType),
                 QStringLiteral("rotary"));
        for (const QString& path : rotary) QVERIFY2(shown(path), qPrintable(path));
        QVERIFY(!shown(kv));

        QVERIFY(m_window->openConfig(QStringLiteral(WAFER_SOURCE_DIR "/presets/llama-nano.yaml")));
        for (const QString& path : rotary) QVERIFY2(shown(path), qPrintable(path));
        QVERIFY(shown(kv));
    }

    // The chat keys show with record data only, the CSV column mapping with CSV data only: a
    // plain-text config's form lists none of them; a JSONL file shows the chat keys; a CSV file
    // (or format: columns) adds the column mapping.
    void chatKeysShowOnlyWithRecordData() {
        const QStringList chat = {"train_input.chat_template", "train_input.train_on_inputs",
                                  "train_input.mask_history",  "train_input.pack_examples",
                                  "train_input.long_examples", "train_input.validation_records"};
        const QStringList columns = {"train_input.prompt_column", "train_input.answer_column",
                                     "train_input.system_column", "train_input.id_column",
                                     "train_input.parent_id_column"};
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        ConfigDocument* doc = m_window->document();
        const auto shown = [&](const QString& path) {
            QWidget* editor = form->editorFor(path);
            return editor && editor->isVisibleTo(form);
        };
        QVERIFY(m_window->openConfig(kNano));
        QVERIFY(shown("train_input.format"));
        for (const QString& path : chat + columns) QVERIFY2(!shown(path), qPrintable(path));

        const QString jsonl =
            QStringLiteral(WAFER_SOURCE_DIR "/resources/instructions/train.jsonl");
        QVERIFY(doc->setField("train_input.data_dir", "[\"" + jsonl + "\"]"));
        for (const QString& path : chat) QVERIFY2(shown(path), qPrintable(path));
        for (const QString& path : columns) QVERIFY2(!shown(path), qPrintable(path));
        QApplication::processEvents();  // lay out the rows just shown before scrolling to them
        auto* area = qobject_cast<QScrollArea*>(form->parentWidget()->parentWidget());
        area->ensureWidgetVisible(form->editorFor("train_input.validation_records"), 50, 50);
        QApplication::processEvents();
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-chat-keys.png")));

        QTemporaryDir dir;
        QFile csv(dir.filePath("pairs.csv"));
        QVERIFY(csv.open(QIODevice::WriteOnly));
        csv.write("prompt,answer\nHi,Hello\n");
        csv.close();
        QVERIFY(doc->setField("train_input.data_dir", "[\"" + csv.fileName() + "\"]"));
        for (const QString& path : chat + columns) QVERIFY2(shown(path), qPrintable(path));

        // Forced to plain text, the same file is text: no chat keys.
        QVERIFY(doc->setField("train_input.format", "text"));
        for (const QString& path : chat + columns) QVERIFY2(!shown(path), qPrintable(path));
        QVERIFY(doc->setField("train_input.format", "columns"));
        for (const QString& path : chat + columns) QVERIFY2(shown(path), qPrintable(path));
    }

    void rejectedValuesAreWordedWithTheFormsFieldNames() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        ConfigDocument* doc = m_window->document();
        // As a paste into the document would arrive (the field itself takes no letters).
        QVERIFY(!doc->setField("runconfig.max_steps", "2OO"));
        QCOMPARE(errorText(form, "runconfig.max_steps"),
                 QString("Max steps (runconfig.max_steps): '2OO' is not a whole number"));
        showField(form, "runconfig.max_steps");
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-max-steps.png")));
        QVERIFY(!m_window.action("runAction")->isEnabled());

        auto* maxSteps = qobject_cast<QLineEdit*>(form->editorFor("runconfig.max_steps"));
        commitLine(maxSteps, "-5");  // a number, out of range: the engine's rule, form's name
        const QString range = errorText(form, "runconfig.max_steps");
        QVERIFY2(range.startsWith("Max steps (runconfig.max_steps): "), qPrintable(range));
        QVERIFY2(range.contains("-5"), qPrintable(range));
        QVERIFY2(!range.contains("--set"), qPrintable(range));
        for (const auto& p : doc->problems())
            QVERIFY2(!p.message.contains("--set"), qPrintable(p.message));

        auto* weightDecay = qobject_cast<QLineEdit*>(form->editorFor("optimizer.weight_decay"));
        QVERIFY(weightDecay);
        QVERIFY(!doc->setField("optimizer.weight_decay", "0.1x"));
        QCOMPARE(errorText(form, "optimizer.weight_decay"),
                 QString("Weight decay (optimizer.weight_decay): '0.1x' is not a number "
                         "(e.g. 0.5, 3e-4)"));
        commitLine(maxSteps, "200");
        commitLine(weightDecay, "0.01");
        QVERIFY(m_window.action("runAction")->isEnabled());
    }

    void numberFieldsTakeNoLetters() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        auto* maxSteps = qobject_cast<QLineEdit*>(form->editorFor("runconfig.max_steps"));
        commitLine(maxSteps, "2OO");  // letter O for zero, as typed by the user
        QCOMPARE(maxSteps->text(), QString("2"));
        QCOMPARE(m_window->document()->config().runconfig.maxSteps, int64_t(2));

        auto* weightDecay = qobject_cast<QLineEdit*>(form->editorFor("optimizer.weight_decay"));
        weightDecay->setFocus();
        weightDecay->selectAll();
        QTest::keyClicks(weightDecay, "1e-4");  // floats keep their exponent
        QCOMPARE(weightDecay->text(), QString("1e-4"));
        QTest::keyClick(weightDecay, Qt::Key_Return);
        QCOMPARE(m_window->document()->config().optimizer.weightDecay, 1e-4);
        const QString shown = weightDecay->text();
        weightDecay->selectAll();
        QTest::keyClicks(weightDecay, "abc");
        QCOMPARE(weightDecay->text(), shown);  // no letter got in
        QVERIFY(m_window.action("runAction")->isEnabled());
    }

    void headsThatDoNotDivideTheWidthShowUnderNumHeads() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        auto* heads = qobject_cast<QLineEdit*>(form->editorFor("model.num_heads"));
        commitLine(heads, "5");
        const QString error = errorText(form, "model.num_heads");
        QVERIFY2(error.contains("not divisible by model.num_heads (5)"), qPrintable(error));
        QVERIFY(!errorText(form, "model.hidden_size").isEmpty());  // the other fix, too
        showField(form, "model.num_heads");
        QVERIFY(m_window->saveScreenshot(artifactPath("config-form-num-heads.png")));
        QVERIFY(!m_window.action("runAction")->isEnabled());
        commitLine(heads, "4");
        QVERIFY(errorText(form, "model.num_heads").isEmpty());
        QVERIFY(errorText(form, "model.hidden_size").isEmpty());
        QVERIFY(m_window.action("runAction")->isEnabled());
    }

    void wheelOverAnUnfocusedComboScrollsTheForm() {
        ConfigForm* form = m_window.find<ConfigTab>("configTab")->form();
        auto* area = qobject_cast<QScrollArea*>(form->parentWidget()->parentWidget());
        QVERIFY(area);
        QScrollBar* bar = area->verticalScrollBar();
        QVERIFY(bar->maximum() > 0);
        auto* combo = qobject_cast<QComboBox*>(form->editorFor("model.initializer.name"));
        QVERIFY(combo);
        QVERIFY(combo->count() > 1);
        combo->setCurrentIndex(0);
        const QString value = m_window->document()->fieldValue("model.initializer.name");
        bar->setValue(0);
        m_window->activateWindow();  // focus is only real in the active window
        QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
        m_window.find<ConfigTab>("configTab")->yamlEditor()->setFocus();
        QVERIFY(!combo->hasFocus());

        const auto wheel = [combo] {
            const QPointF at(combo->width() / 2.0, combo->height() / 2.0);
            QWheelEvent event(at, combo->mapToGlobal(at), QPoint(), QPoint(0, -120), Qt::NoButton,
                              Qt::NoModifier, Qt::NoScrollPhase, false);
            QApplication::sendEvent(combo, &event);
        };
        wheel();
        QCOMPARE(combo->currentIndex(), 0);
        QCOMPARE(m_window->document()->fieldValue("model.initializer.name"), value);
        QVERIFY2(bar->value() > 0, "the form did not scroll");

        // Once focused (clicked or tabbed to), the wheel changes it as usual.
        combo->setFocus();
        QVERIFY(combo->hasFocus());
        const int scrolled = bar->value();
        wheel();
        QCOMPARE(combo->currentIndex(), 1);
        QCOMPARE(bar->value(), scrolled);
        QCOMPARE(combo->focusPolicy(), Qt::StrongFocus);
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<ConfigFormTest>(argc, argv);
}
#include "config_form_test.moc"
