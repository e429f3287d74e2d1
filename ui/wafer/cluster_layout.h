// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterLayout: where the cluster diagram (cluster_diagram.h) puts its boxes, arrows and labels
// in a widget of a given size, every label wrapped whole to the width it gets (issue 31: labels
// cut with "…" on a laptop). Rows from the top: title, MemoryX, the traffic labels beside the
// arrows, the SwarmX tree, the systems with their wafers, caption, foot. Of three arrangements
// the first whose rows fit the height is used: roomy rows with the full traffic labels, roomy
// rows with the brief ones, compact rows (one-line paddings, no caption) with the brief ones;
// requiredHeight() is the compact one's height, which the diagram asks for as its minimum so the
// page scrolls rather than cutting a label. A word wider than its box is broken, not cut; a
// system's placement too wide for its box says only its rank. Pure: fonts and texts in,
// rectangles and lines out. GUI thread only (font metrics).
#pragma once

#include <QFont>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QStringList>
#include <utility>
#include <vector>

namespace ws::ui {

// What the diagram says, before it is laid out.
struct ClusterTexts {
    QString title;                    // bold, top left
    QString memText;                  // under the bold "MemoryX" in its box
    QString swarmLabel;               // bold, inside the one SwarmX node of a one-level tree
    QStringList swarmSide;            // beside a deeper tree, right-aligned
    QStringList downFull, downBrief;  // beside the weights' arrow; brief: shorter words, or none
    QStringList upFull, upBrief;      // beside the gradients' arrow
    bool downBold = false, upBold = false;  // the link at work has its label in bold
    bool replay = false;                    // slow motion: the arrows sit closer together
    int numSystems = 1;
    int treeDepth = 0;
    std::vector<QString> placement;  // per system, "rank 1 on hostB"; empty in one process
    QString caption;                 // under the systems; empty: none
    QString foot;                    // bold, the bottom line
};

class ClusterLayout {
public:
    static constexpr double kMargin = 10;
    static constexpr double kMinWidth = 300;

    struct Label {
        QRectF box;
        QStringList lines;  // each no wider than box
        QString text() const { return lines.join(QLatin1Char('\n')); }
    };
    struct System {
        QRectF box;
        Label name;        // "system 0", "sys 0", "systems 7–15" (the last box for the rest)
        Label placement;   // under the wafer; no lines in one process
        QRectF waferArea;  // where the wafer's picture fits (the diagram keeps its aspect)
    };

    ClusterLayout(const QFont& normal, QSizeF size, const ClusterTexts& texts);

    bool compact() const { return m_compact; }
    // The height at which every label reads whole (the compact arrangement's).
    double requiredHeight() const { return m_required; }

    Label title, memTitle, memText, swarm, down, up, caption, foot;
    QRectF mem;                                 // MemoryX's box
    std::vector<std::vector<QRectF>> treeRows;  // the SwarmX nodes, level by level
    QRectF swarmBounds;
    double downX = 0, upX = 0;  // the top arrows' x
    std::vector<System> systems;

private:
    enum class Mode { Roomy, RoomyBrief, Compact };
    struct Frame;  // the fonts, line heights and widths of one arrangement
    using TreeRows = std::vector<std::pair<int, double>>;  // per level: nodes drawn, their width
    double arrange(Mode mode);  // lays out in `mode`, returns the rows' height
    // Its rows from the top, each on the y the previous one returns.
    void arrangeTitleAndMemoryX(const Frame& f);
    TreeRows treeWidths(const Frame& f) const;
    double arrangeTraffic(const Frame& f, double swarmW);
    double arrangeTree(const Frame& f, const TreeRows& rows, double swarmW, double y);
    double arrangeSystems(const Frame& f, double y);

    QFont m_normal, m_bold;
    QSizeF m_size;
    const ClusterTexts& m_texts;
    bool m_compact = false;
    double m_required = 0;
};

// A line's height in `font` as QPainter::drawText stacks lines, in whole pixels.
double lineHeight(const QFont& font);

}  // namespace ws::ui
