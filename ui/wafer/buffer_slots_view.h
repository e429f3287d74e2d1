// SPDX-License-Identifier: GPL-3.0-or-later
// BufferSlotsView: the wafer's weight buffer at the phase the Wafer tab shows, one box per slot
// of wafer.weight_buffer_layers: which layer's weights are resident and being computed on,
// which are streaming in (and how far), and beside them whose gradients stream out to MemoryX.
// Colours are the timeline's (stream-in, forward, backward, stream-out). It draws a
// wafer::BufferState (engine/wafer/buffer_slots.h) and nothing else. GUI thread only.
#pragma once

#include <QWidget>
#include <optional>

#include "engine/wafer/buffer_slots.h"

namespace ws::ui {

class BufferSlotsView : public QWidget {
    Q_OBJECT
public:
    explicit BufferSlotsView(QWidget* parent = nullptr);

    // The buffer at one moment (`numBlocks` names layers: 0 embeddings, 1..L h.0..h.L-1, L+1
    // head); nullopt: nothing to show, `why` says so. `source` says where the state comes from
    // (the tooltip's second line).
    void setState(std::optional<wafer::BufferState> state, int numBlocks, const QString& why = {},
                  const QString& source = {});
    // What the boxes say, one line: "slot 1: h.0 forward, computing · slot 2: h.1 forward,
    // streaming in 40 % · gradients out: h.2" (tests, tooltips).
    QString text() const;

    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QString layerName(int layer) const;
    QString slotText(const wafer::SlotState& slot) const;
    QString shortSlotText(const wafer::SlotState& slot) const;  // for a narrow box

    std::optional<wafer::BufferState> m_state;
    QString m_why;
    int m_numBlocks = 0;
};

}  // namespace ws::ui
