// SPDX-License-Identifier: GPL-3.0-or-later
// FinetuneMethodPanel: see finetune_method_panel.h.
#include "ui/samples/finetune_method_panel.h"

#include <QButtonGroup>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLocale>
#include <QRadioButton>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>

#include "engine/core/units.h"
#include "engine/model/lora.h"
#include "engine/model/parameters.h"
#include "engine/tensor/matmul.h"

namespace ws::ui {
namespace {

// lora::Target order, with what each linear is in the block.
constexpr const char* kTargetNames[4] = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"};
// A Llama-family base's linears, by PEFT's names (model/lora.h: q/k/v_proj and gate/up_proj
// adapt their columns of the fused c_attn / c_fc).
constexpr const char* kLlamaTargetNames[7] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                              "gate_proj", "up_proj", "down_proj"};

QString targetLabel(int t) {
    static const char* what[4] = {QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention q, k, v"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention output"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "MLP up"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "MLP down")};
    return QStringLiteral("%1 (%2)").arg(QLatin1String(kTargetNames[t]),
                                         FinetuneMethodPanel::tr(what[t]));
}

QString llamaTargetLabel(int t) {
    static const char* what[7] = {QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention query"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention key"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention value"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "attention output"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "MLP gate"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "MLP up"),
                                  QT_TRANSLATE_NOOP("FinetuneMethodPanel", "MLP down")};
    return QStringLiteral("%1 (%2)").arg(QLatin1String(kLlamaTargetNames[t]),
                                         FinetuneMethodPanel::tr(what[t]));
}

QString grouped(int64_t n) {
    return QLocale(QLocale::English).toString(qlonglong(n));
}

}  // namespace

FinetuneMethodPanel::FinetuneMethodPanel(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("finetuneMethod"));
    m_lora = new QRadioButton(tr("LoRA adapters: the base stays frozen, small low-rank adapters on "
                                 "its linear layers train"),
                              this);
    m_lora->setObjectName(QStringLiteral("methodLora"));
    m_full = new QRadioButton(tr("Full fine-tune: every weight of the base trains"), this);
    m_full->setObjectName(QStringLiteral("methodFull"));
    auto* group = new QButtonGroup(this);
    group->addButton(m_lora);
    group->addButton(m_full);

    m_loraBox = new QGroupBox(tr("LoRA"), this);
    m_rank = new QSpinBox(m_loraBox);
    m_rank->setObjectName(QStringLiteral("loraRank"));
    m_rank->setRange(1, 1024);
    m_rank->setValue(finetune::kDefaultLoraRank);
    m_rank->setToolTip(tr("Rank r of each adapter: A is in × r, B is r × out"));
    m_alpha = new QDoubleSpinBox(m_loraBox);
    m_alpha->setObjectName(QStringLiteral("loraAlpha"));
    m_alpha->setRange(0.01, 1e6);
    m_alpha->setDecimals(2);
    m_alpha->setValue(2.0 * finetune::kDefaultLoraRank);
    m_alpha->setToolTip(tr("The update is (alpha / rank) · x·A·B; 2 × rank unless changed"));
    m_dropout = new QDoubleSpinBox(m_loraBox);
    m_dropout->setObjectName(QStringLiteral("loraDropout"));
    m_dropout->setRange(0.0, 0.9);
    m_dropout->setSingleStep(0.05);
    m_dropout->setDecimals(2);
    m_dropout->setToolTip(tr("Dropout on the adapters' input only (the base path is untouched)"));
    // One grid of target boxes per family; setBase shows the base's.
    auto* targets = new QVBoxLayout;
    targets->setContentsMargins(0, 0, 0, 0);
    m_gpt2Grid = new QWidget(m_loraBox);
    auto* gpt2 = new QGridLayout(m_gpt2Grid);
    gpt2->setContentsMargins(0, 0, 0, 0);
    for (int t = 0; t < 4; ++t) {
        m_targets[t] = new QCheckBox(targetLabel(t), m_gpt2Grid);
        m_targets[t]->setObjectName(QStringLiteral("loraTarget_") + QLatin1String(kTargetNames[t]));
        m_targets[t]->setChecked(true);
        gpt2->addWidget(m_targets[t], t / 2, t % 2);
    }
    m_llamaGrid = new QWidget(m_loraBox);
    auto* llama = new QGridLayout(m_llamaGrid);
    llama->setContentsMargins(0, 0, 0, 0);
    for (int t = 0; t < 7; ++t) {
        m_llamaTargets[t] = new QCheckBox(llamaTargetLabel(t), m_llamaGrid);
        m_llamaTargets[t]->setObjectName(QStringLiteral("loraTarget_") +
                                         QLatin1String(kLlamaTargetNames[t]));
        m_llamaTargets[t]->setChecked(true);
        // Attention's four in the first column, the MLP's three in the second.
        llama->addWidget(m_llamaTargets[t], t < 4 ? t : t - 4, t < 4 ? 0 : 1);
    }
    m_llamaGrid->setVisible(false);
    targets->addWidget(m_gpt2Grid);
    targets->addWidget(m_llamaGrid);
    auto* form = new QFormLayout(m_loraBox);
    form->addRow(tr("Rank"), m_rank);
    form->addRow(tr("Alpha"), m_alpha);
    form->addRow(tr("Adapters on"), targets);
    form->addRow(tr("Dropout"), m_dropout);

    const bool hardware = finetune::hasBf16Hardware();
    m_bf16 = new QCheckBox(
        hardware ? tr("Compute in bf16 (this CPU: %1; fp32 master weights and optimizer state)")
                       .arg(QString::fromStdString(tensor::bf16PathDescription()))
                 : tr("Compute in bf16 (this CPU has no bf16 instructions: emulated, not faster)"),
        this);
    m_bf16->setObjectName(QStringLiteral("methodBf16"));
    m_comparison = new QLabel(this);
    m_comparison->setObjectName(QStringLiteral("methodComparison"));
    m_comparison->setTextFormat(Qt::RichText);
    m_comparison->setWordWrap(true);
    m_comparison->setAlignment(Qt::AlignTop | Qt::AlignLeft);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_lora);
    layout->addWidget(m_loraBox);
    layout->addWidget(m_full);
    layout->addWidget(m_bf16);
    layout->addWidget(m_comparison, 1);

    m_full->setChecked(true);
    m_loraBox->setEnabled(false);
    connect(group, &QButtonGroup::buttonToggled, this, [this](QAbstractButton*, bool on) {
        if (!on) return;
        m_loraBox->setEnabled(m_lora->isChecked());
        if (!m_updating) {
            m_methodEdited = true;
            // The precision default follows the method until the user sets it.
            if (!m_bf16Edited) {
                const QSignalBlocker block(m_bf16);
                m_bf16->setChecked(m_baseBf16 || (lora() && finetune::hasBf16Hardware()));
            }
            userChanged();
        }
    });
    connect(m_rank, &QSpinBox::valueChanged, this, [this](int r) {
        if (!m_alphaEdited) {
            const QSignalBlocker block(m_alpha);
            m_alpha->setValue(2.0 * r);
        }
        userChanged();
    });
    connect(m_alpha, &QDoubleSpinBox::valueChanged, this, [this] {
        m_alphaEdited = true;
        userChanged();
    });
    connect(m_dropout, &QDoubleSpinBox::valueChanged, this, &FinetuneMethodPanel::userChanged);
    auto targetToggled = [this] {
        m_targetsEdited = true;
        userChanged();
    };
    for (QCheckBox* box : m_targets) connect(box, &QCheckBox::toggled, this, targetToggled);
    for (QCheckBox* box : m_llamaTargets) connect(box, &QCheckBox::toggled, this, targetToggled);
    connect(m_bf16, &QCheckBox::toggled, this, [this] {
        m_bf16Edited = true;
        userChanged();
    });
    refresh();
}

void FinetuneMethodPanel::setBase(const config::Config& base, int64_t parameters) {
    m_base = base;
    m_planConfig.reset();
    const model::GptShape shape = model::GptShape::fromConfig(base.model);
    m_baseBf16 = shape.bf16;
    m_updating = true;
    // The target names of the base's family; gate/up_proj exist with SwiGLU only.
    m_llamaBase = model::lora::llamaNamed(shape);
    m_gpt2Grid->setVisible(!m_llamaBase);
    m_llamaGrid->setVisible(m_llamaBase);
    m_swiglu = shape.mlp == model::GptShape::Mlp::SwiGlu;
    for (int t = 0; t < 7; ++t) {
        const QSignalBlocker block(m_llamaTargets[t]);
        const bool gateOrUp = t == 4 || t == 5;
        if (gateOrUp) m_llamaTargets[t]->setEnabled(m_swiglu);
        // Until the user picks targets, every linear the base has; gate/up never without SwiGLU.
        if (!m_targetsEdited) m_llamaTargets[t]->setChecked(!gateOrUp || m_swiglu);
        if (gateOrUp && !m_swiglu) m_llamaTargets[t]->setChecked(false);
    }
    if (!m_methodEdited) {
        (parameters > finetune::kLoraDefaultAboveParameters ? m_lora : m_full)->setChecked(true);
        m_loraBox->setEnabled(m_lora->isChecked());
    }
    if (!m_bf16Edited) {
        const QSignalBlocker block(m_bf16);
        m_bf16->setChecked(m_baseBf16 || (lora() && finetune::hasBf16Hardware()));
    }
    m_updating = false;
    refresh();
}

void FinetuneMethodPanel::setPlan(const finetune::FinetunePlan* plan) {
    if (plan) {
        m_planConfig = plan->config.config;
        m_planSteps = double(plan->summary.maxSteps);
        m_planTokens = m_planSteps * double(plan->summary.tokensPerStep);
    } else {
        m_planConfig.reset();
    }
    refresh();
}

bool FinetuneMethodPanel::lora() const {
    return m_lora->isChecked();
}
int FinetuneMethodPanel::rank() const {
    return m_rank->value();
}
double FinetuneMethodPanel::alpha() const {
    return m_alpha->value();
}
double FinetuneMethodPanel::dropout() const {
    return m_dropout->value();
}
QStringList FinetuneMethodPanel::targets() const {
    QStringList list;
    if (m_llamaBase) {
        for (int t = 0; t < 7; ++t)
            if (m_llamaTargets[t]->isChecked() && (m_swiglu || (t != 4 && t != 5)))
                list << QLatin1String(kLlamaTargetNames[t]);
        return list;
    }
    for (int t = 0; t < 4; ++t)
        if (m_targets[t]->isChecked()) list << QLatin1String(kTargetNames[t]);
    return list;
}
bool FinetuneMethodPanel::bf16() const {
    return m_bf16->isChecked();
}
bool FinetuneMethodPanel::valid() const {
    return !lora() || !targets().isEmpty();
}

void FinetuneMethodPanel::setLora(bool lora) {
    (lora ? m_lora : m_full)->setChecked(true);
    m_methodEdited = true;
}
void FinetuneMethodPanel::setRank(int rank) {
    m_rank->setValue(rank);
}
void FinetuneMethodPanel::setAlpha(double alpha) {
    m_alpha->setValue(alpha);
}
void FinetuneMethodPanel::setDropout(double dropout) {
    m_dropout->setValue(dropout);
}
void FinetuneMethodPanel::setTargets(const QStringList& targets) {
    m_targetsEdited = true;
    for (int t = 0; t < 4; ++t)
        m_targets[t]->setChecked(targets.contains(QLatin1String(kTargetNames[t])));
    for (int t = 0; t < 7; ++t)
        m_llamaTargets[t]->setChecked(targets.contains(QLatin1String(kLlamaTargetNames[t])));
}
void FinetuneMethodPanel::setBf16(bool bf16) {
    m_bf16->setChecked(bf16);
    m_bf16Edited = true;
}

void FinetuneMethodPanel::applyTo(finetune::FinetuneRequest& r) const {
    r.loraRank = lora() ? rank() : 0;
    r.loraAlpha = lora() ? alpha() : 0.0;
    r.loraDropout = lora() ? dropout() : 0.0;
    r.loraTargets.clear();
    if (lora())
        for (const QString& t : targets()) r.loraTargets.push_back(t.toStdString());
    r.bf16.reset();
    if (bf16() != m_baseBf16) r.bf16 = bf16();
}

config::Config FinetuneMethodPanel::configFor(bool withLora) const {
    config::Config c = m_planConfig ? *m_planConfig : m_base ? *m_base : config::Config{};
    c.lora.reset();
    if (withLora) {
        config::LoraConfig l;
        l.rank = rank();
        l.alpha = alpha();
        l.dropout = dropout();
        l.targets.clear();
        for (const QString& t : targets()) l.targets.push_back(t.toStdString());
        c.lora = l;
    }
    c.model.mixedPrecision = bf16();
    if (bf16()) c.model.fp16Type = "bfloat16";
    return c;
}

finetune::MethodCost FinetuneMethodPanel::cost(bool withLora) const {
    return finetune::methodCost(configFor(withLora));
}

QString FinetuneMethodPanel::comparisonText() const {
    return m_comparison->text();
}

void FinetuneMethodPanel::userChanged() {
    refresh();
    emit changed();
}

void FinetuneMethodPanel::refresh() {
    if (!m_base) {
        m_comparison->setText(tr("<i>Choose a base model first.</i>"));
        return;
    }
    if (!valid()) {
        m_comparison->setText(
            tr("<span style='color:#b00020'>Choose at least one linear layer for the "
               "adapters, or a full fine-tune.</span>"));
        return;
    }
    const finetune::MethodCost costs[2] = {cost(true), cost(false)};
    const bool chosen[2] = {lora(), !lora()};
    auto cell = [&](int i, const QString& text) {
        return chosen[i] ? QStringLiteral("<td><b>%1</b></td>").arg(text)
                         : QStringLiteral("<td>%1</td>").arg(text);
    };
    QString rows;
    auto row = [&](const QString& what, const QString& a, const QString& b) {
        rows += QStringLiteral("<tr><td>%1</td>%2%3</tr>").arg(what, cell(0, a), cell(1, b));
    };
    row(QString(), tr("LoRA, rank %1").arg(rank()), tr("Full fine-tune"));
    QString trained[2];
    for (int i = 0; i < 2; ++i) {
        const auto& c = costs[i];
        trained[i] =
            tr("%1 of %2 (%3 %)")
                .arg(grouped(c.trainableParameters), grouped(c.parameters))
                .arg(100.0 * double(c.trainableParameters) / double(c.parameters), 0, 'g', 3);
    }
    row(tr("trained parameters"), trained[0], trained[1]);
    row(tr("MemoryX (weights, gradients, optimizer state)"),
        QString::fromStdString(formatBytes(costs[0].memoryxBytes)),
        QString::fromStdString(formatBytes(costs[1].memoryxBytes)));
    row(tr("training FLOPs per token"),
        QString::fromStdString(formatSi(costs[0].flopsPerToken, "FLOP")),
        QString::fromStdString(formatSi(costs[1].flopsPerToken, "FLOP")));
    if (m_planConfig) {
        row(tr("estimated time of this plan (%1 steps)").arg(qlonglong(m_planSteps)),
            QString::fromStdString(formatRoughDuration(
                finetune::estimateSeconds(costs[0], m_planTokens, m_planSteps))),
            QString::fromStdString(formatRoughDuration(
                finetune::estimateSeconds(costs[1], m_planTokens, m_planSteps))));
    }
    const QString note =
        tr("A LoRA step computes the frozen base's forward and input gradients (about 2/3 of a "
           "full step's matmuls), the adapters' small products, and AdamW over the adapters "
           "only; MemoryX keeps gradients and optimizer state for the adapters alone. "
           "Estimates assume %1%2 on this CPU at this width.")
            .arg(QString::fromStdString(
                formatSi(costs[0].flopsPerSecond / (costs[0].bf16 ? finetune::kBf16Speedup : 1.0),
                         "FLOP/s")))
            .arg(costs[0].bf16 ? tr(" × %1 in bf16").arg(finetune::kBf16Speedup) : QString());
    m_comparison->setText(
        QStringLiteral("<table cellspacing='0' cellpadding='3'>%1</table><p><small>%2</small></p>")
            .arg(rows, note.toHtmlEscaped()));
}

}  // namespace ws::ui
