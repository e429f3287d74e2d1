// SPDX-License-Identifier: GPL-3.0-or-later
// The fine-tune wizard's method page (issue 16), offscreen, without training: the default method
// follows the base's size (a full fine-tune for the shipped 5.3 M base, LoRA for a Hugging Face
// GPT-2 folder above 10 M parameters); each method's plan carries what the page chose (the lora:
// section and its YAML, or none), the page shows both methods' trained parameters and MemoryX
// bytes, and the estimated time follows the method (a LoRA step skips the base's weight
// gradients) and the precision (bf16 counts only on bf16 hardware). Screenshots of the page go to
// $WAFER_TEST_ARTIFACTS.
#include <QAbstractButton>
#include <QFile>
#include <QLabel>
#include <QProcess>
#include <QTest>

#include "engine/config/config_yaml.h"
#include "engine/finetune/finetune_plan.h"
#include "support/finetune_wizard_support.h"
#include "support/gui_test.h"
#include "support/studio_window.h"
#include "ui/samples/finetune_method_panel.h"
#include "ui/samples/finetune_wizard.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;

namespace {

using ws::testing::artifactPath;
using ws::testing::saveWizard;
using ws::testing::writeFile;

bool waitForPlan(FinetuneWizard* wizard) {
    QTest::qWait(200);  // the plan timer coalesces edits
    return QTest::qWaitFor([&] { return !wizard->isPlanning(); }, 30000);
}

}  // namespace

class FinetuneMethodTest : public QObject {
    Q_OBJECT
private slots:
    void init() { QVERIFY(m_window.open()); }
    void cleanup() { m_window.close(); }

    // The shipped base (5.3 M parameters): a full fine-tune by default; the plan of each method
    // is what the page shows, and LoRA's is the lora: section the page describes.
    void eachMethodPlansWhatThePageShows() {
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        FinetuneMethodPanel* method = wizard->method();
        QVERIFY(!method->lora());  // 5.3 M parameters: below the LoRA default's threshold
        wizard->next();
        wizard->addDataPaths({data});
        QVERIFY(waitForPlan(wizard));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        wizard->next();
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::MethodPage));
        // Both methods in fp32 (the shipped base computes in bf16), so the estimates compare
        // the methods alone.
        method->setBf16(false);
        QVERIFY(waitForPlan(wizard));

        // Full: no lora: section, every parameter trains.
        const auto full = *wizard->plan();
        QVERIFY(!full.config.config.model.mixedPrecision);
        QVERIFY(!full.config.config.lora.has_value());
        QVERIFY(!full.summary.lora);
        QCOMPARE(full.summary.frozenParameters, int64_t(0));
        QVERIFY(!QString::fromStdString(ws::config::saveConfigYaml(full.config.config))
                     .contains("\nlora:"));  // (a commented "# lora:" is fine)
        const QString fullText = method->comparisonText();
        QVERIFY2(fullText.contains("Full fine-tune") && fullText.contains("MemoryX"),
                 qPrintable(fullText));
        saveWizard(wizard, "finetune-wizard-3-method-full.png");

        // LoRA rank 4 on q_proj, v_proj and down_proj (the shipped base has Llama blocks: the
        // page offers PEFT's projection names), alpha 12, dropout 0.1.
        method->setLora(true);
        method->setRank(4);
        method->setAlpha(12);
        method->setDropout(0.1);
        method->setTargets({"q_proj", "v_proj", "down_proj"});
        method->setBf16(false);
        QVERIFY(waitForPlan(wizard));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        const auto lora = *wizard->plan();
        const auto& l = lora.config.config.lora;
        QVERIFY(l.has_value());
        QCOMPARE(l->rank, 4);
        QCOMPARE(l->alpha, 12.0);
        QCOMPARE(l->dropout, 0.1);
        QCOMPARE(l->targets, (std::vector<std::string>{"q_proj", "v_proj", "down_proj"}));
        const QString yaml = QString::fromStdString(ws::config::saveConfigYaml(lora.config.config));
        QVERIFY2(yaml.contains("\nlora:") && yaml.contains("rank: 4"), qPrintable(yaml));
        QVERIFY(!lora.config.config.model.mixedPrecision);
        // llama-base: 6 blocks x rank 4 x ((256 + 256) + (256 + 128) + (768 + 256)): q is 4 heads
        // of 64, v its 2 KV heads of 64, down SwiGLU's projection from 768.
        const int64_t adapters = 6 * 4 * (512 + 384 + 1024);
        QVERIFY(lora.summary.lora);
        QCOMPARE(lora.summary.parameters - lora.summary.frozenParameters, adapters);
        QCOMPARE(lora.summary.parameters, full.summary.parameters + adapters);
        // The LoRA LR default is 10 x the full fine-tune's.
        QCOMPARE(lora.summary.peakLearningRate,
                 full.summary.peakLearningRate * ws::finetune::kLoraLearningRateMultiplier);
        // MemoryX: gradients and AdamW state for the adapters only.
        QCOMPARE(lora.summary.memoryxBytes, 4 * lora.summary.parameters + 12 * adapters);
        QCOMPARE(full.summary.memoryxBytes, 16 * full.summary.parameters);
        // The estimate follows the method: the base's weight gradients and AdamW are skipped.
        QVERIFY(lora.summary.flopsPerToken < full.summary.flopsPerToken);
        QVERIFY(lora.summary.estimatedSeconds < full.summary.estimatedSeconds);
        const auto cost = ws::finetune::methodCost(lora.config.config);
        QCOMPARE(lora.summary.estimatedSeconds,
                 ws::finetune::estimateSeconds(
                     cost, double(lora.summary.maxSteps) * double(lora.summary.tokensPerStep),
                     double(lora.summary.maxSteps)));
        // The page compares both, the chosen one in bold.
        const QString text = method->comparisonText();
        QVERIFY2(text.contains("<b>LoRA, rank 4</b>"), qPrintable(text));
        QVERIFY2(text.contains(QLocale(QLocale::English).toString(qlonglong(adapters))),
                 qPrintable(text));
        QVERIFY2(text.contains("estimated time of this plan"), qPrintable(text));
        saveWizard(wizard, "finetune-wizard-3-method-lora.png");
        wizard->next();
        // LoRA freezes the whole base: the freezing options are off.
        QVERIFY(!wizard->findChild<QWidget*>("freezeEmbeddings")->isEnabled());
        QVERIFY2(wizard->settingsEstimate().contains("LoRA rank 4 (alpha 12) on q_proj, "
                                                     "v_proj, down_proj, fp32"),
                 qPrintable(wizard->settingsEstimate()));
        saveWizard(wizard, "finetune-wizard-4-settings-lora.png");
        wizard->back();

        // bf16: the plan computes in bf16; the estimate is faster only on bf16 hardware.
        method->setBf16(true);
        QVERIFY(waitForPlan(wizard));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        const auto bf16 = *wizard->plan();
        QVERIFY(bf16.config.config.model.mixedPrecision);
        QCOMPARE(QString::fromStdString(bf16.config.config.model.fp16Type),
                 QStringLiteral("bfloat16"));
        QVERIFY(bf16.summary.bf16);
        if (ws::finetune::hasBf16Hardware())
            QVERIFY(bf16.summary.estimatedSeconds < lora.summary.estimatedSeconds);
        else
            QCOMPARE(bf16.summary.estimatedSeconds, lora.summary.estimatedSeconds);

        // No target: the page says so and Next stays off.
        method->setTargets({});
        QVERIFY(!method->valid());
        QVERIFY(method->comparisonText().contains("at least one linear layer"));
        QVERIFY(waitForPlan(wizard));
        QVERIFY(!wizard->button(QWizard::NextButton)->isEnabled());
        wizard->reject();
    }

    // A base above 10 M parameters (a GPT-2 folder written by the independent writer, 8 x 352:
    // 12 M): LoRA by
    // default, rank 8 on all four linears, alpha 16, bf16 where the CPU has it.
    void largerBasesDefaultToLora() {
        const QString hf = m_window.filePath("hf");
        QProcess writer;
        writer.start(QStringLiteral("/usr/bin/python3"),
                     {QStringLiteral(WAFER_SOURCE_DIR "/tests/app/hf_tool.py"),
                      QStringLiteral("write"), hf, QStringLiteral("--dtype"), QStringLiteral("F16"),
                      QStringLiteral("--layers"), QStringLiteral("8"), QStringLiteral("--embd"),
                      QStringLiteral("352"), QStringLiteral("--heads"), QStringLiteral("4"),
                      QStringLiteral("--positions"), QStringLiteral("64")});
        if (!writer.waitForStarted()) QSKIP("python3 is not available");
        QVERIFY(writer.waitForFinished(120000));
        QVERIFY2(writer.exitCode() == 0, writer.readAllStandardError().constData());
        FinetuneWizard* wizard = m_window->openFinetuneWizard();
        FinetuneMethodPanel* method = wizard->method();
        QVERIFY(!method->lora());
        wizard->useFolder(hf);
        QVERIFY2(wizard->baseOk(), qPrintable(wizard->baseInfo()));
        QVERIFY(method->lora());
        QCOMPARE(method->rank(), ws::finetune::kDefaultLoraRank);
        QCOMPARE(method->alpha(), 2.0 * ws::finetune::kDefaultLoraRank);
        QCOMPARE(method->targets(), (QStringList{"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"}));
        QCOMPARE(method->dropout(), 0.0);
        QCOMPARE(method->bf16(), ws::finetune::hasBf16Hardware());
        // The rank drives alpha until alpha is edited.
        method->setRank(16);
        QCOMPARE(method->alpha(), 32.0);
        method->setRank(8);
        const auto lora = method->cost(true), full = method->cost(false);
        QVERIFY(lora.trainableParameters * 20 < full.trainableParameters);
        QVERIFY(lora.memoryxBytes * 2 < full.memoryxBytes);
        const QString data = m_window.filePath("lighthouse.txt");
        QVERIFY(writeFile(data, ws::testing::lighthouseText()));
        wizard->next();
        wizard->addDataPaths({data});
        QVERIFY(waitForPlan(wizard));
        QVERIFY2(wizard->plan().has_value(), qPrintable(wizard->planError()));
        QVERIFY(wizard->plan()->config.config.lora.has_value());
        wizard->next();
        QCOMPARE(wizard->currentId(), int(FinetuneWizard::MethodPage));
        saveWizard(wizard, "finetune-wizard-3-method-gpt2-folder.png");
        // The choice is the user's from then on: the shipped base keeps LoRA.
        method->setLora(true);
        wizard->back();
        wizard->back();
        wizard->useShippedBase();
        QVERIFY(method->lora());
        wizard->reject();
    }

    // Issue 33: a Llama-family base offers PEFT's seven projection names instead of GPT-2's
    // four (all on by default), gate_proj / up_proj only with SwiGLU; the costs and the request
    // carry them.
    void llamaBaseOffersPeftsProjectionNames() {
        FinetuneMethodPanel panel;
        ws::config::Config llama;
        ws::config::ModelConfig& m = llama.model;
        m.hiddenSize = 256;
        m.numHiddenLayers = 4;
        m.numHeads = 8;
        m.filterSize = 512;
        m.vocabSize = 1024;
        m.maxPositionEmbeddings = 128;
        m.positionEmbeddingType = "rotary";
        m.normType = "rmsnorm";
        m.nonlinearity = "swiglu";
        panel.setBase(llama, 30'000'000);
        QVERIFY(panel.lora());
        const QStringList seven = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                   "gate_proj", "up_proj", "down_proj"};
        QCOMPARE(panel.targets(), seven);
        auto* q = panel.findChild<QAbstractButton*>(QStringLiteral("loraTarget_q_proj"));
        auto* cAttn = panel.findChild<QAbstractButton*>(QStringLiteral("loraTarget_c_attn"));
        QVERIFY(q && cAttn);
        QVERIFY(q->isVisibleTo(&panel) && !cAttn->isVisibleTo(&panel));
        panel.resize(720, 420);
        panel.show();
        QVERIFY(QTest::qWaitForWindowExposed(&panel));
        QVERIFY(panel.grab().save(artifactPath("finetune-method-llama-targets.png"), "PNG"));
        panel.setTargets({"q_proj", "v_proj"});
        QCOMPARE(panel.targets(), (QStringList{"q_proj", "v_proj"}));
        ws::finetune::FinetuneRequest request;
        panel.applyTo(request);
        QCOMPARE(request.loraTargets, (std::vector<std::string>{"q_proj", "v_proj"}));
        // Rank 8 on q and v of 4 blocks: 4 x 8 x ((256 + 256) + (256 + 256)).
        const auto qv = panel.cost(true);
        QCOMPARE(qv.trainableParameters, int64_t(4 * 8 * 1024));
        // With the full fine-tune chosen (the LoRA box disabled) the LoRA column still counts
        // the chosen adapters.
        panel.setLora(false);
        QCOMPARE(panel.cost(true).trainableParameters, qv.trainableParameters);
        panel.setLora(true);
        // Before the user picks targets, a GELU base first (the wizard starts on the shipped
        // GPT-2) then a SwiGLU Llama gets all seven, gate and up included.
        {
            FinetuneMethodPanel fresh;
            ws::config::Config gelu = llama;
            gelu.model.nonlinearity = "gelu";
            fresh.setBase(gelu, 30'000'000);
            QCOMPARE(fresh.targets(),
                     (QStringList{"q_proj", "k_proj", "v_proj", "o_proj", "down_proj"}));
            fresh.setBase(llama, 30'000'000);
            QCOMPARE(fresh.targets(), seven);
        }
        // A GELU Llama-named base (rotary, RMSNorm, GELU) has no gate or up projection.
        m.nonlinearity = "gelu";
        panel.setTargets(seven);
        panel.setBase(llama, 30'000'000);
        QCOMPARE(panel.targets(),
                 (QStringList{"q_proj", "k_proj", "v_proj", "o_proj", "down_proj"}));
        // Back to a GPT-2 base: GPT-2's names again.
        panel.setBase(ws::config::Config{}, 30'000'000);
        QVERIFY(!q->isVisibleTo(&panel) && cAttn->isVisibleTo(&panel));
        panel.setTargets({"c_attn", "mlp.c_proj"});
        QCOMPARE(panel.targets(), (QStringList{"c_attn", "mlp.c_proj"}));
    }

private:
    ws::testing::StudioWindow m_window;
};

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<FinetuneMethodTest>(argc, argv);
}

#include "finetune_method_test.moc"
