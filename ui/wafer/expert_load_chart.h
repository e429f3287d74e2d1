// SPDX-License-Identifier: GPL-3.0-or-later
// ExpertLoadChart: the Wafer tab's tokens-per-expert chart. For the step the tab shows and the
// MoE layer picked above it (h.0, h.2, ...), one bar per expert: the token-assignments the router
// sent it in that step (all systems and micro-batches), a dashed line at the even share (tokens x
// top_k / experts), and the imbalance in the title ("busiest 1.8x the even share, 1 idle"), so a
// collapsing router shows here and, on the heatmap, as that expert's idle cores. Experts that got
// no token are marked "idle". A dense model (no model.moe) hides the plot and says so in a
// sentence. The counts come with each step's metrics (session::StepMetrics::expertTokens) and
// live in the Wafer tab's history (its last WaferHistory::kMaxSteps steps, in memory). The run
// store keeps them for log steps (metrics moe/h.<b>.expert_<e>_tokens): a stored run shows its
// newest recorded step (setPlanned with a RecordedRouting), or what its planned step assumes
// when it recorded none. GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "ui/common/wafer_history.h"

class QComboBox;
class QLabel;

namespace ws::ui {

// A stored run's routing as its store recorded it: the model's MoE layout and the counts of its
// newest log step (tokens[block][expert], empty for dense blocks).
struct RecordedRouting {
    int numBlocks = 0;
    int experts = 0;
    int topK = 1;
    std::vector<int> moeBlocks;
    int64_t step = -1;  // 0-based
    std::vector<std::vector<int64_t>> tokens;
};

class ExpertLoadChart : public QWidget {
    Q_OBJECT
public:
    explicit ExpertLoadChart(QWidget* parent = nullptr);

    // The run's model: its experts per MoE block and top_k, and which of its numBlocks blocks
    // are MoE (experts 0: a dense model, the chart says there is nothing to show).
    void setModel(int numBlocks, int experts, int topK, const std::vector<int>& moeBlocks);
    // Shows `record`'s tokens per expert (StepRecord::expertTokens) for the picked layer; null
    // or without counts: says there are none yet. Replots only when what is shown changed.
    void setStep(const StepRecord* record);
    // A stored run's planned step (the Wafer tab's showPlannedRun). With `recorded` counts the
    // chart shows that recorded step's bars (the live run's model and step come back when the
    // mode is left); without, it says what the plan assumes (uniform routing). Null `planned`
    // leaves that mode. True when the planned model has experts (the chart is worth showing).
    bool setPlanned(const wafer::StepPrediction* planned,
                    const RecordedRouting* recorded = nullptr);
    bool showsRecorded() const { return m_recorded; }

    // What is drawn, for tests and the main window.
    bool isMoe() const { return m_experts > 0; }
    int shownBlock() const { return m_block; }  // the picked MoE block (0-based); -1 none
    void setShownBlock(int block);
    int barCount() const;
    double barValue(int expert) const;  // 0 for an idle expert; NaN when nothing is shown
    double evenShare() const { return m_even; }
    QString titleText() const;
    QString noteText() const;  // the sentence shown instead of the plot ("" when the plot shows)
    QCustomPlot* plot() const { return m_plot; }

    // With the tab bar above it, no taller than the timeline beside it: the Wafer page's
    // height follows its parts' hints (word-wrapped labels make the scroll area lay it out by
    // height-for-width), so a taller hint would make the page scroll.
    QSize sizeHint() const override { return {320, 200}; }

protected:
    void changeEvent(QEvent* event) override;  // follows a light/dark palette switch

private:
    void applyTheme();
    void redraw();
    void applyModel(int numBlocks, int experts, int topK, const std::vector<int>& moeBlocks);
    void leaveRecorded();

    int m_numBlocks = 0;
    int m_experts = 0;
    int m_topK = 1;
    std::vector<int> m_moeBlocks;
    int m_block = -1;
    int64_t m_step = -2;                         // the shown step; -1 none
    std::vector<std::vector<int64_t>> m_tokens;  // its counts per block
    std::vector<int64_t> m_shown;                // the bars' counts
    double m_even = 0;
    QString m_plannedNote;    // setPlanned: shown instead of the bars
    bool m_recorded = false;  // setPlanned with counts: a stored run's recorded step is shown
    RecordedRouting m_live;   // the live run's model and step while a recorded one is shown

    QComboBox* m_layer;
    QLabel* m_note;
    QCustomPlot* m_plot;
    QCPTextElement* m_title;
    QCPBars* m_bars;
    QCPItemStraightLine* m_evenLine;
    std::vector<QCPItemText*> m_idleLabels;
    QSharedPointer<QCPAxisTickerText> m_labels;
};

}  // namespace ws::ui
