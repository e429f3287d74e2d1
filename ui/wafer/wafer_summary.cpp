// SPDX-License-Identifier: GPL-3.0-or-later
// WaferSummary: see wafer_summary.h.
#include "ui/wafer/wafer_summary.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "engine/core/units.h"
#include "engine/wafer/cycle_model.h"
#include "ui/wafer/time_split_bar.h"

namespace ws::ui {
WaferSummary::WaferSummary(QWidget* page, QVBoxLayout* layout) : QObject(page) {
    m_summary = new QLabel(page);
    m_summary->setObjectName(QStringLiteral("waferSummary"));
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_realSummary = new QLabel(page);
    m_realSummary->setObjectName(QStringLiteral("waferRealSummary"));
    m_realSummary->setWordWrap(true);  // one long line set the page's width on a laptop
    layout->addWidget(m_realSummary);
    auto* splitRow = new QHBoxLayout;
    m_splitLabel = new QLabel(tr("Where the predicted step time goes:"), page);
    splitRow->addWidget(m_splitLabel, 0, Qt::AlignTop);
    m_split = new TimeSplitBar(page);
    splitRow->addWidget(m_split, 1);
    layout->addLayout(splitRow);
}

void WaferSummary::show(const wafer::StepPrediction* p, bool emulatorOff, bool planned,
                        double realTokensPerS) {
    if (p) {
        m_summary->setText(tr("<b>Predicted on %1 × %2 system(s):</b> step %3 · %4 · MFU %5 % · "
                              "weight streaming %6")
                               .arg(QString::fromStdString(p->waferName))
                               .arg(p->numSystems)
                               .arg(QString::fromStdString(formatSeconds(p->stepS)),
                                    QString::fromStdString(formatSi(p->tokensPerS, "tokens/s")))
                               .arg(100.0 * p->mfu, 0, 'f', 1)
                               .arg(p->weightStreamingHidden
                                        ? tr("<b>hidden</b> behind compute")
                                        : tr("<b>not hidden</b> (the step waits for "
                                             "weights)")));
        if (p->loraRank > 0) {
            const double busy = p->split.compute + p->split.fabric;
            m_summary->setText(
                m_summary->text() +
                tr("<br><b>LoRA rank %1:</b> the adapter ops (x·A, u·B and their gradients) take "
                   "%2 of the step (%3 % of the wafer's compute and fabric time); the frozen base "
                   "forms no weight gradients and only the adapters' gradients stream out")
                    .arg(p->loraRank)
                    .arg(QString::fromStdString(formatSeconds(p->adapterS)))
                    .arg(busy > 0 ? 100.0 * p->adapterS / busy : 0.0, 0, 'f', 1));
        }
        if (!p->activationPlan.empty() && !p->blockActivations.empty()) {
            // Activation offload / recompute (wafer/activation_plan.h): the planner's one line.
            m_summary->setText(
                m_summary->text() +
                tr("<br><b>Activations:</b> %1 · recompute %2 of the step, offload %3 each way "
                   "(the timeline's activation-offload lane) · HFU %4 %")
                    .arg(QString::fromStdString(p->activationPlan).toHtmlEscaped())
                    .arg(QString::fromStdString(formatSeconds(p->recomputeS)))
                    .arg(QLocale().formattedDataSize(int64_t(p->offloadBytesPerStep), 2,
                                                     QLocale::DataSizeSIFormat))
                    .arg(100.0 * p->hfu, 0, 'f', 1));
        }
        m_split->setSplit(&p->split);
        m_split->show();
        m_splitLabel->show();
    } else {
        m_summary->setText(emulatorOff
                               ? tr("<b>No prediction:</b> the emulator is off for this run")
                               : tr("<b>No prediction</b> for this run"));
        m_split->setSplit(nullptr);
        m_split->hide();  // nothing to split: no empty bar
        m_splitLabel->hide();
    }
    if (planned) {
        m_realSummary->setText(
            tr("Planned step only: the run's real CPU speed is in its record "
               "(Runs dock), not replayed here"));
        return;
    }
    const QString aside = p ? tr("the model really trains; only the wafer's time is emulated")
                            : tr("the model really trains; nothing is emulated");
    m_realSummary->setText(
        realTokensPerS > 0
            ? tr("Real training on this CPU: %1 (%2)")
                  .arg(QString::fromStdString(formatSi(realTokensPerS, "tokens/s")), aside)
            : tr("Real training on this CPU: tokens/s not measured yet"));
}

QString WaferSummary::realText() const {
    return m_realSummary->text();
}

}  // namespace ws::ui
