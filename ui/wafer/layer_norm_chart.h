// SPDX-License-Identifier: GPL-3.0-or-later
// LayerNormChart: the Wafer tab's bar chart of one step's gradient norm per ParameterTable layer
// (embeddings, h.0 ... h.{L-1}, head; before clipping) on a log axis, with the step's global norm
// in its title, so a loss spike can be traced to the layers whose gradients blew up. Zero norms
// (frozen layers) and non-finite ones have no bar (a log axis cannot show them); the title says
// how many. GUI thread only.
#pragma once

#include <qcustomplot.h>

#include <QString>
#include <vector>

#include "ui/common/wafer_history.h"

namespace ws::ui {

class LayerNormChart : public QCustomPlot {
    Q_OBJECT
public:
    explicit LayerNormChart(QWidget* parent = nullptr);

    // Shows `record`'s norms (null or without norms: says there are none yet). Replots only when
    // what is shown changed.
    void setStep(const StepRecord* record, int numBlocks);

    // What is drawn, for tests.
    int barCount() const;
    double barValue(int layer) const;  // NaN when that layer has no bar
    QString titleText() const;
    QString barLabel(int layer) const;  // the name under it: "" when thinned, "emb" when tight

    // With the tab bar above it, no taller than the timeline beside it: the Wafer page's
    // height follows its parts' hints (word-wrapped labels make the scroll area lay it out by
    // height-for-width), so a taller hint would make the page scroll.
    QSize sizeHint() const override { return {320, 200}; }

protected:
    void changeEvent(QEvent* event) override;        // follows a light/dark palette switch
    void resizeEvent(QResizeEvent* event) override;  // labels may need thinning

private:
    void applyTheme();
    // Layer names under the bars: "embeddings" becomes "emb" and only every k-th layer is
    // named when the names would overlap at this width.
    void updateTickLabels();

    QString m_help;  // the tooltip's first lines, above the shown step's values
    QCPTextElement* m_title;
    QCPBars* m_bars;
    QSharedPointer<QCPAxisTickerText> m_labels;
    std::vector<double> m_shownNorms;
    double m_shownGlobal = -1;
    int64_t m_shownStep = -2;
    int m_numBlocks = -1;
    int m_layers = 0;  // slots on the x axis
};

}  // namespace ws::ui
