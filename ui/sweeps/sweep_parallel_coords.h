// SPDX-License-Identifier: GPL-3.0-or-later
// SweepParallelCoords: a parallel-coordinates view of a sweep over any number of keys. One
// vertical axis per swept key (plus parametrization and seed when they vary) and a last axis
// "final loss"; each settled trial is a polyline across them, coloured by its final loss. Keys
// whose values are all powers of two (learning rates, widths, heads) sit on a log2 scale, other
// numbers on a linear one, strings evenly spaced by name. Diverged trials are drawn, grey and
// dashed, ending at the top of the loss axis ("diverged"); pruned trials are drawn faint; the best
// trials are drawn last, so they are on top. Laid out incrementally (issue 31): a redraw makes
// lines only for the trials that are new (or whose result changed) and puts them in their place
// in the pile; the axes, their ticks and every line's shape and colour are laid out again only
// when what they show changed (a new value on an axis, a new best or worst loss, the height).
// GUI thread only.
#pragma once

#include <QWidget>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/sweep/results.h"

class QCPColorGradient;
class QCPColorScale;
class QCPCurve;
class QCPLayer;
class QCPTextElement;
class QCustomPlot;
class QMouseEvent;
class QResizeEvent;
class QShowEvent;

namespace ws::ui {

class SweepParallelCoords : public QWidget {
    Q_OBJECT
public:
    // Log2: every value a power of two; Log10: positive values spanning a decade or more (e.g.
    // learning rates 1e-4 ... 1e-2); Linear: other numbers; Categorical: text.
    enum class AxisScale { Log2, Log10, Linear, Categorical };

    explicit SweepParallelCoords(QWidget* parent = nullptr);

    // Redraws from the trials so far. `keys` are the swept keys in the sweep's order (empty:
    // every key the trials carry); parametrization and seed get an axis of their own when they
    // vary. Running, stopped and failed trials are left out: they have no result to place.
    void setResults(const std::vector<sweep::TrialResult>& trials,
                    const std::vector<std::string>& keys);

    // Axes left to right, the last one "final loss" (none while the view is empty).
    int axisCount() const { return int(m_axes.size()); }
    QString axisName(int i) const;  // the key ("model.hidden_size") or "final loss"
    AxisScale axisScale(int i) const;
    // Where a value sits on axis i, 0 (bottom) to 1 (top); NaN when the axis does not know it.
    double axisPosition(int i, const std::string& value) const;
    int lineCount() const { return int(m_lineOfTrial.size()); }
    // The polyline of a trial (by TrialResult::trial), nullptr when it is not drawn.
    QCPCurve* lineOf(int trial) const;
    // Why the view is empty ("" when it shows trials).
    QString emptyText() const { return m_emptyText; }
    QCustomPlot* plot() const { return m_plot; }

protected:
    void showEvent(QShowEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    struct Axis {
        std::string key;
        AxisScale scale = AxisScale::Linear;
        double lo = 0.0, hi = 1.0;            // of the scale's coordinate (log2 for Log2)
        std::vector<std::string> categories;  // Categorical: in order of appearance
    };
    struct Line {
        QCPCurve* curve = nullptr;
        size_t result = 0;  // index into m_trials
        std::string drawn;  // the trial's values and result its shape and pen were made from
    };

    struct LossRange;  // where the loss axis puts losses, and their colours (the .cpp)

    void rebuild();
    std::vector<Axis> keyAxes() const;
    LossRange lossRange() const;
    // What the axes, their ticks and the lines' colours are laid out from; the same again: only
    // new trials need lines.
    QString layoutKey(const LossRange& loss, bool dark, bool crowded) const;
    std::string lineKey(const sweep::TrialResult& t) const;
    void removeLines();
    void nameAxes();
    void drawAxes(const LossRange& loss);
    std::vector<std::pair<double, QString>> lossTicks(const LossRange& loss) const;
    std::vector<std::pair<double, QString>> keyTicks(int i) const;
    // Makes or updates the lines (all of them when `restyle`), then stacks them best on top.
    void updateLines(const LossRange& loss, QCPColorGradient& gradient, bool restyle);
    void shapeLine(QCPCurve* curve, const sweep::TrialResult& t, const LossRange& loss,
                   QCPColorGradient& gradient, bool crowded) const;
    void stackLines();
    void drawAxis(int i, const std::vector<std::pair<double, QString>>& ticks);
    void showEmpty(const QString& text);
    void replotIfShown();
    QFont tickFont() const;
    void showTrialTip(QMouseEvent* event);
    std::string valueOf(const sweep::TrialResult& t, const std::string& key) const;

    QCustomPlot* m_plot;
    QCPLayer* m_lineLayer;  // the lines, in drawing order
    QCPLayer* m_restack;    // passed through to move a line to the end of m_lineLayer
    QCPColorScale* m_scale;
    QCPTextElement* m_caption;
    std::vector<sweep::TrialResult> m_trials;  // the drawn ones
    std::vector<std::string> m_keys;
    std::vector<Axis> m_axes;
    std::map<int, Line> m_lineOfTrial;  // by TrialResult::trial
    QString m_layoutKey;                // what the axes were laid out from ("" none)
    QString m_emptyText;
    int m_builtForHeight = 0;  // the plot's height when the tick labels were chosen
    bool m_stale = false;      // redrawn while hidden: replot when shown
};

}  // namespace ws::ui
