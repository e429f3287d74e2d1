// SPDX-License-Identifier: GPL-3.0-or-later
// The Samples tab on a model with LoRA adapters (issue 16): base vs adapter side by side, with the
// same prompt and seed. The adapter column is the model sampled with its adapters; the base column
// is the same model without them and gives exactly what sampling the base model itself gives. A
// second model to compare with takes the place of the base column. The screenshot goes to
// $WAFER_TEST_ARTIFACTS/samples-lora-base-vs-adapter.png.
#include <QCheckBox>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <filesystem>
#include <fstream>

#include "engine/config/config_yaml.h"
#include "engine/model/parameters.h"
#include "engine/model/random.h"
#include "engine/modelio/load_model.h"
#include "engine/modelio/weights_io.h"
#include "support/gui_test.h"
#include "ui/samples/samples_tab.h"

using ws::testing::artifactPath;
using ws::ui::SamplesTab;
namespace fs = std::filesystem;

class SamplesLoraTest : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    fs::path m_base, m_lora;

    // The shipped base model with rank-4 adapters on all four linears: A as initialised, B drawn
    // small, as a short LoRA fine-tune leaves them (the text changes, it does not fall apart).
    void writeLoraFolder() {
        m_base = fs::path(WAFER_SOURCE_DIR) / "resources" / "base-model";
        auto base = ws::modelio::loadModel(m_base);
        QVERIFY2(base.ok(), base.ok() ? "" : base.error().message.c_str());
        ws::config::Config cfg = base->config;
        cfg.lora = ws::config::LoraConfig{
            .rank = 4, .alpha = 8.0, .targets = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}};
        cfg.runconfig.checkpointPath = (m_base / "model.safetensors").string();
        ws::model::GptShape shape = base->shape;
        shape.applyLora(cfg.lora);
        const ws::model::ParameterTable table(shape), baseTable(base->shape);
        std::vector<float> params(table.totalSize());
        ws::model::initParameters(table, cfg.model, 1, params.data());
        for (const auto& t : baseTable.tensors())
            std::copy_n(base->params.data() + t.offset, t.size,
                        params.data() + table.find(t.name)->offset);
        for (const auto& t : table.tensors())
            if (t.name.find(".lora_B.") != std::string::npos)
                for (size_t i = 0; i < t.size; ++i)
                    params[t.offset + i] =
                        float(0.04 * ws::model::rng::standardNormal(9, t.offset + i));
        m_lora = fs::path(m_dir.path().toStdString()) / "lora-run";
        fs::create_directories(m_lora);
        QVERIFY(
            ws::modelio::saveWeights(m_lora / "model.safetensors", table, params.data(), cfg, 30)
                .ok());
        std::ofstream(m_lora / "config.yaml") << ws::config::saveConfigYaml(cfg);
        QVERIFY(base->tokenizer->save(m_lora).ok());
    }

    static bool generateAndWait(SamplesTab& tab) {
        QSignalSpy done(&tab, &SamplesTab::finished);
        if (!tab.generate()) return false;
        if (!done.wait(120000) && done.isEmpty()) return false;
        return done.front().at(0).toBool();
    }

private slots:
    void initTestCase() { writeLoraFolder(); }

    void baseVsAdapterSideBySide() {
        SamplesTab tab;
        tab.resize(1200, 640);
        tab.show();
        tab.setPrompt("The wafer");
        tab.setLength(160);
        tab.setSeed(7);
        tab.setModelPath(QString::fromStdString(m_lora.string()));
        QCOMPARE(tab.modelLoraRank(), 4);
        auto* toggle = tab.findChild<QCheckBox*>("samplesLoraCompare");
        QVERIFY(toggle && toggle->isVisible() && toggle->isChecked());
        QVERIFY(tab.comparesAdaptersWithBase());
        QVERIFY(tab.paneTitle(0).endsWith("with LoRA adapters (rank 4)"));
        QVERIFY(tab.paneTitle(1).endsWith("base model (adapters off)"));
        QVERIFY(generateAndWait(tab));
        const QString adapted = tab.output(), baseColumn = tab.compareOutput();
        QVERIFY(adapted.startsWith("The wafer") && baseColumn.startsWith("The wafer"));
        QVERIFY(adapted.size() > 60 && baseColumn.size() > 60);
        QVERIFY2(adapted != baseColumn, "the adapters changed nothing");
        QVERIFY(tab.grab().save(artifactPath("samples-lora-base-vs-adapter.png"), "PNG"));

        // The base column is the base model: sampling the base itself gives the same text.
        tab.setModelPath(QString::fromStdString(m_base.string()));
        QCOMPARE(tab.modelLoraRank(), 0);
        QVERIFY(!toggle->isVisible());
        QVERIFY(!tab.comparesAdaptersWithBase());
        QVERIFY(generateAndWait(tab));
        QCOMPARE(tab.output(), baseColumn);

        // Turned off, or with a second model named, the LoRA model is compared as any other.
        tab.setModelPath(QString::fromStdString(m_lora.string()));
        tab.setCompareAdaptersWithBase(false);
        QVERIFY(!tab.comparesAdaptersWithBase());
        tab.setCompareAdaptersWithBase(true);
        tab.setCompareModelPath(QString::fromStdString(m_base.string()));
        QVERIFY(!toggle->isVisible());
        QVERIFY(!tab.comparesAdaptersWithBase());
        QVERIFY(generateAndWait(tab));
        QCOMPARE(tab.output(), adapted);
        QCOMPARE(tab.compareOutput(), baseColumn);
    }
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<SamplesLoraTest>(argc, argv);
}

#include "samples_lora_test.moc"
