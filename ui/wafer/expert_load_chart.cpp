// SPDX-License-Identifier: GPL-3.0-or-later
// ExpertLoadChart: see expert_load_chart.h.
#include "ui/wafer/expert_load_chart.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>

#include "ui/common/plot_theme.h"

namespace ws::ui {

ExpertLoadChart::ExpertLoadChart(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("expertLoadChart"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Tokens per expert in"), this));
    m_layer = new QComboBox(this);
    m_layer->setObjectName(QStringLiteral("expertLoadLayer"));
    m_layer->setToolTip(tr("The MoE layer whose routing the bars show"));
    row->addWidget(m_layer);
    row->addStretch(1);
    layout->addLayout(row);
    m_note = new QLabel(this);
    m_note->setObjectName(QStringLiteral("expertLoadNote"));
    m_note->setWordWrap(true);
    m_note->setAlignment(Qt::AlignCenter);
    layout->addWidget(m_note, 1);
    m_plot = new QCustomPlot(this);
    m_plot->setObjectName(QStringLiteral("expertLoadPlot"));
    m_plot->setMinimumSize(240, 140);
    m_plot->setToolTip(
        tr("Token-assignments the router sent each expert of this layer in the shown step (all "
           "systems and micro-batches). The dashed line is the even share, tokens x top_k / "
           "experts. An expert's cores on the wafer are busy in proportion to its bar: the "
           "busiest expert sets the MLP's time, the others wait (see the heatmap)."));
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), font().pointSize()));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
    m_bars->setWidth(0.7);
    m_bars->setPen(Qt::NoPen);
    m_bars->setBrush(QColor(0xf2, 0x8e, 0x2b));
    m_evenLine = new QCPItemStraightLine(m_plot);
    m_evenLine->setPen(QPen(QColor(0x80, 0x80, 0x80), 1.2, Qt::DashLine));
    m_labels = QSharedPointer<QCPAxisTickerText>::create();
    m_plot->xAxis->setTicker(m_labels);
    m_plot->xAxis->setSubTicks(false);
    m_plot->xAxis->setTickLength(0, 3);
    m_plot->xAxis->setLabel(tr("expert"));
    m_plot->yAxis->setLabel(tr("tokens"));
    QFont small = font();
    small.setPointSizeF(font().pointSizeF() * 0.9);
    m_plot->xAxis->setTickLabelFont(small);
    m_plot->yAxis->setTickLabelFont(small);
    m_plot->xAxis->setLabelFont(small);
    m_plot->yAxis->setLabelFont(small);
    layout->addWidget(m_plot, 1);
    applyTheme();
    connect(m_layer, qOverload<int>(&QComboBox::activated), this,
            [this](int index) { setShownBlock(m_layer->itemData(index).toInt()); });
    setModel(0, 0, 1, {});
}

void ExpertLoadChart::applyTheme() {
    const QColor text = applyPlotPalette(m_plot).text;
    m_plot->xAxis->grid()->setVisible(false);
    m_title->setTextColor(text);
    for (auto* label : m_idleLabels) label->setColor(text);
}

void ExpertLoadChart::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
        applyTheme();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }
}

void ExpertLoadChart::setModel(int numBlocks, int experts, int topK,
                               const std::vector<int>& moeBlocks) {
    if (m_recorded) {  // a new live model: it shows when the recorded step is left
        m_live = RecordedRouting{numBlocks, experts, topK, moeBlocks, -2, {}};
        return;
    }
    applyModel(numBlocks, experts, topK, moeBlocks);
}

void ExpertLoadChart::applyModel(int numBlocks, int experts, int topK,
                                 const std::vector<int>& moeBlocks) {
    m_numBlocks = numBlocks;
    m_experts = experts;
    m_topK = std::max(1, topK);
    m_moeBlocks = experts > 0 ? moeBlocks : std::vector<int>{};
    m_layer->clear();
    for (int b : m_moeBlocks) m_layer->addItem(QStringLiteral("h.%1").arg(b), b);
    m_block = m_moeBlocks.empty() ? -1 : m_moeBlocks.front();
    m_layer->setEnabled(m_moeBlocks.size() > 1);
    m_step = -2;
    m_tokens.clear();
    redraw();
}

void ExpertLoadChart::setShownBlock(int block) {
    if (std::find(m_moeBlocks.begin(), m_moeBlocks.end(), block) == m_moeBlocks.end()) return;
    m_block = block;
    m_layer->setCurrentIndex(m_layer->findData(block));
    redraw();
}

void ExpertLoadChart::setStep(const StepRecord* record) {
    if (m_recorded) leaveRecorded();
    const int64_t step = record ? record->step : -1;
    const std::vector<std::vector<int64_t>> none;
    const auto& tokens = record ? record->expertTokens : none;
    if (step == m_step && tokens == m_tokens) return;
    m_step = step;
    m_tokens = tokens;
    redraw();
}

bool ExpertLoadChart::setPlanned(const wafer::StepPrediction* planned,
                                 const RecordedRouting* recorded) {
    if (planned && recorded && recorded->experts > 0 && !recorded->tokens.empty()) {
        if (!m_recorded) {
            m_live = RecordedRouting{m_numBlocks, m_experts, m_topK, m_moeBlocks, m_step, m_tokens};
            m_recorded = true;
        } else if (recorded->step == m_step && recorded->tokens == m_tokens &&
                   recorded->moeBlocks == m_moeBlocks && m_plannedNote.isEmpty()) {
            return true;  // already shown
        }
        m_plannedNote.clear();
        const int block = m_block;
        applyModel(recorded->numBlocks, recorded->experts, recorded->topK, recorded->moeBlocks);
        m_step = recorded->step;
        m_tokens = recorded->tokens;
        setShownBlock(block);  // keeps the picked layer when the new model has it
        redraw();
        return true;
    }
    if (m_recorded) leaveRecorded();
    QString note;
    if (planned && planned->moeExperts > 0) {
        int64_t perExpert = 0;
        for (const auto& block : planned->expertTokens)
            if (!block.empty()) perExpert = block.front();
        note = tr("This run recorded no routing counts (they are stored on its log steps). This "
                  "is the step its config plans, which assumes uniform routing: each of the %1 "
                  "experts gets %2 tokens per micro-batch.")
                   .arg(planned->moeExperts)
                   .arg(perExpert);
    } else if (planned) {
        note = tr("This model has no mixture-of-experts layers (no model.moe).");
    }
    if (note != m_plannedNote) {
        m_plannedNote = note;
        redraw();
    }
    return planned && planned->moeExperts > 0;
}

void ExpertLoadChart::leaveRecorded() {
    m_recorded = false;
    const RecordedRouting live = std::move(m_live);
    m_live = {};
    applyModel(live.numBlocks, live.experts, live.topK, live.moeBlocks);
    m_step = live.step;
    m_tokens = live.tokens;
    redraw();
}

void ExpertLoadChart::redraw() {
    for (auto* label : m_idleLabels) m_plot->removeItem(label);
    m_idleLabels.clear();
    m_shown.clear();
    m_even = 0;
    const bool haveCounts = m_block >= 0 && size_t(m_block) < m_tokens.size() &&
                            int(m_tokens[size_t(m_block)].size()) == m_experts;
    const QString note = [&] {
        if (!m_plannedNote.isEmpty()) return m_plannedNote;  // a stored run's planned step
        if (m_experts <= 0)
            return tr(
                "This model has no mixture-of-experts layers (no model.moe), so there is no "
                "routing to show: every block's MLP is dense.");
        if (m_step < 0)
            return tr("No step yet: the tokens each expert gets appear here as the run trains.");
        if (!haveCounts)
            return tr("Step %1: no routing counts for h.%2 (they arrive with the step's metrics).")
                .arg(m_step + 1)
                .arg(m_block);
        return QString();
    }();
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
    m_plot->setVisible(note.isEmpty());
    if (!note.isEmpty()) return;

    m_shown = m_tokens[size_t(m_block)];
    QVector<double> keys, values;
    m_labels->clear();
    int64_t total = 0, busiest = 0;
    int idle = 0;
    for (int e = 0; e < m_experts; ++e) {
        const int64_t n = m_shown[size_t(e)];
        keys.push_back(e);
        values.push_back(double(n));
        total += n;
        busiest = std::max(busiest, n);
        // Thin the names when there are many experts.
        const int every = std::max(1, m_experts / 16);
        m_labels->addTick(e, e % every == 0 ? QString::number(e) : QString());
    }
    m_bars->setData(keys, values, true);
    m_even = double(total) / m_experts;
    for (int e = 0; e < m_experts; ++e) {
        if (m_shown[size_t(e)] > 0) continue;
        ++idle;
        auto* label = new QCPItemText(m_plot);
        label->position->setType(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(e, 0);
        label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        label->setText(tr("idle"));
        label->setColor(m_title->textColor());
        m_idleLabels.push_back(label);
    }
    m_evenLine->point1->setCoords(-1, m_even);
    m_evenLine->point2->setCoords(m_experts, m_even);
    m_plot->xAxis->setRange(-0.6, m_experts - 0.4);
    m_plot->yAxis->setRange(0, std::max(1.0, double(busiest) * 1.15));
    QString imbalance =
        m_even > 0 ? tr("busiest %1x the even share").arg(double(busiest) / m_even, 0, 'f', 2)
                   : tr("no tokens");
    if (idle > 0) imbalance += tr(", %n idle", nullptr, idle);
    // The picker above names the layer; two short lines fit the column beside the timeline.
    m_title->setText(tr("step %1%2 · %3 tokens x top-%4\n%5 experts, %6")
                         .arg(m_step + 1)
                         .arg(m_recorded ? tr(" (recorded)") : QString())
                         .arg(total / m_topK)
                         .arg(m_topK)
                         .arg(m_experts)
                         .arg(imbalance));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

int ExpertLoadChart::barCount() const {
    return int(m_shown.size());
}

double ExpertLoadChart::barValue(int expert) const {
    if (expert < 0 || size_t(expert) >= m_shown.size())
        return std::numeric_limits<double>::quiet_NaN();
    return double(m_shown[size_t(expert)]);
}

QString ExpertLoadChart::titleText() const {
    return m_shown.empty() ? QString() : m_title->text();
}

QString ExpertLoadChart::noteText() const {
    return m_note->isVisibleTo(this) ? m_note->text() : QString();
}

}  // namespace ws::ui
