// SPDX-License-Identifier: GPL-3.0-or-later
// TimeSplitBar: where the predicted step time goes (compute, waiting for weights, fabric + fill,
// SwarmX reduce, bubble), as one stacked bar with a legend beneath; the Wafer tab's summary row.
// (Moved out of wafer_tab.cpp, which had passed 800 lines.) GUI thread only.
#pragma once

#include <QColor>
#include <QString>
#include <QWidget>
#include <vector>

#include "engine/wafer/cycle_model.h"

namespace ws::ui {

class TimeSplitBar : public QWidget {
public:
    explicit TimeSplitBar(QWidget* parent);
    // The split to draw; null: "no prediction".
    void setSplit(const wafer::TimeSplit* split);
    QSize sizeHint() const override { return {420, minimumHeight()}; }

protected:
    void changeEvent(QEvent* event) override;
    void paintEvent(QPaintEvent*) override;

private:
    struct Part {
        QString name;
        double s = 0;
        QColor color;
    };
    std::vector<Part> m_parts;
};

}  // namespace ws::ui
