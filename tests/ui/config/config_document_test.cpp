// SPDX-License-Identifier: GPL-3.0-or-later
// Tests of the config document behind the Config tab: the nano preset loads, a field edit
// rewrites the YAML and a YAML edit changes the field, problems carry their key path and YAML
// line, and a rejected or inconsistent value blocks Run until it is fixed. A field edit keeps the
// file's comments; an untitled copy has no file path; saving elsewhere keeps paths meaningful.
#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "ui/config/config_document.h"

using ws::ui::ConfigDocument;

namespace {
const QString kNano = QStringLiteral(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");

bool hasProblemAt(const ConfigDocument& doc, const QString& path) {
    for (const auto& p : doc.problems()) {
        if (p.path == path && p.line > 0) return true;
    }
    return false;
}
}  // namespace

class ConfigDocumentTest : public QObject {
    Q_OBJECT
private slots:
    void loadsThePreset() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        QVERIFY(doc.canRun());
        QCOMPARE(doc.fieldValue("model.hidden_size"), QString("128"));
        QCOMPARE(doc.fieldValue("optimizer.betas"), QString("[0.9, 0.95]"));
        QCOMPARE(doc.config().model.name, std::string("gpt-nano"));
        QVERIFY(!doc.isModified());
    }

    void fieldEditRewritesYamlAndYamlEditChangesField() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        QVERIFY(doc.setField("model.hidden_size", "192"));
        QVERIFY(doc.yaml().contains(QRegularExpression("hidden_size: 192\\b")));
        QCOMPARE(doc.config().model.hiddenSize, 192);
        QVERIFY(doc.isModified());

        QString yaml = doc.yaml();
        yaml.replace(QRegularExpression("max_steps: \\d+"), "max_steps: 77");
        doc.setYaml(yaml);
        QVERIFY(doc.canRun());
        QCOMPARE(doc.fieldValue("runconfig.max_steps"), QString("77"));
        QCOMPARE(doc.config().runconfig.maxSteps, int64_t(77));
    }

    void inconsistentValueIsLocatedAndBlocksRun() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        QVERIFY(doc.setField("model.num_heads", "3"));  // 128 is not divisible by 3
        QVERIFY(!doc.canRun());
        QVERIFY(hasProblemAt(doc, "model.num_heads") || hasProblemAt(doc, "model.hidden_size"));
        QVERIFY(doc.setField("model.num_heads", "4"));
        QVERIFY(doc.canRun());
    }

    void rejectedValueKeepsConfigAndBlocksRun() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        QVERIFY(!doc.setField("model.hidden_size", "-4"));
        QVERIFY(!doc.canRun());
        QVERIFY(hasProblemAt(doc, "model.hidden_size"));
        QCOMPARE(doc.config().model.hiddenSize, 128);
        QVERIFY(doc.setField("model.hidden_size", "128"));
        QVERIFY(doc.canRun());
    }

    void fieldEditKeepsCommentsAndOrder() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        const QString original = doc.yaml();
        QSignalSpy notes(&doc, &ConfigDocument::note);
        QVERIFY(doc.setField("model.hidden_size", "192"));
        QVERIFY(doc.setField("optimizer.betas", "[0.8, 0.99]"));
        QCOMPARE(notes.count(), 0);  // patched, not regenerated
        const QStringList before = original.split('\n');
        const QStringList after = doc.yaml().split('\n');
        QCOMPARE(after.size(), before.size());
        int differing = 0;
        for (qsizetype i = 0; i < before.size(); ++i) differing += before[i] != after[i];
        QCOMPARE(differing, 2);
        QVERIFY(doc.yaml().contains("    betas: [0.8, 0.99]\n"));
        QVERIFY(doc.yaml().contains("data_dir: ../resources/corpus   # a folder of .txt files"));
    }

    void untitledCopyHasNoFileAndSavesWithAbsolutePaths() {
        ConfigDocument doc;
        QVERIFY(doc.loadUntitledCopy(kNano, "gpt-nano (preset)"));
        QVERIFY(doc.isUntitled());
        QVERIFY(doc.filePath().isEmpty());
        QVERIFY(!doc.isModified());
        QVERIFY(doc.canRun());  // its relative data_dir still resolves next to the preset
        QCOMPARE(doc.displayName(), QString("gpt-nano (preset) — untitled"));
        QCOMPARE(doc.suggestedFileName(), QString("gpt-nano.yaml"));

        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("copy.yaml");
        QVERIFY(doc.saveFile(path));
        QVERIFY(!doc.isUntitled());
        QCOMPARE(doc.displayName(), QString("copy.yaml"));
        ConfigDocument reread;
        QVERIFY(reread.loadFile(path));
        QVERIFY(reread.canRun());
        QCOMPARE(reread.config().trainInput.dataDir.front(),
                 QDir::cleanPath(WAFER_SOURCE_DIR "/resources/corpus").toStdString());

        doc.setUntitled("model:\n    hidden_size: 64\n", "finetune of x");
        QVERIFY(doc.isUntitled());
        QCOMPARE(doc.displayName(), QString("finetune of x — untitled"));
        QCOMPARE(doc.config().model.hiddenSize, 64);
    }

    void yamlErrorsCarryTheirLine() {
        ConfigDocument doc;
        QVERIFY(doc.loadFile(kNano));
        QString yaml = doc.yaml();
        yaml.replace("hidden_size: 128", "hiden_size: 128");  // a typo: unknown key
        doc.setYaml(yaml);
        QVERIFY(!doc.canRun());
        QVERIFY(!doc.problems().empty());
        const int expectedLine =
            int(yaml.left(yaml.indexOf("hiden_size")).count(QLatin1Char('\n'))) + 1;
        bool found = false;
        for (const auto& p : doc.problems()) found = found || p.line == expectedLine;
        QVERIFY2(found, qPrintable(doc.problems().front().message));
        QCOMPARE(doc.config().model.hiddenSize, 128);  // the last config that parsed stays
    }
};

QTEST_GUILESS_MAIN(ConfigDocumentTest)
#include "config_document_test.moc"
