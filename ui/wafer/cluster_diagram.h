// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterDiagram: MemoryX -> SwarmX -> systems for the shown step, drawn with QPainter. Boxes
// for MemoryX (weights and optimizer state), the SwarmX broadcast / reduce tree (its depth from
// the prediction) and each system's wafer (a thumbnail of the utilization frame shown beside);
// arrows for this step's traffic so far: weights broadcast down, gradients streamed up and
// reduced, with bytes. The arrow of the latest work (the last span to arrive; spans arrive as
// work ends) is drawn bold and names its layer, so the picture moves as spans arrive. For a run
// across processes (mpirun), each system's box also says which rank on which host computes it.
// With several systems the SwarmX label also says how busy the busiest links are in the step's
// prediction and what lockstep over them adds to the step (queueing, cluster_links.h).
// In slow motion (setReplay) it draws the replay's moment instead: each link's arrow lit and as
// thick as its rate now (against the link's fastest span in the step), its bytes so far and the
// rate beside, the boxes at work outlined. Every label is wrapped whole to its box
// (cluster_layout.h): short words and one-line paddings when the widget is short (presenter
// mode's large type, a laptop), and a minimum height (minimumSizeHint) at which every label reads
// whole, so the page scrolls rather than cutting one with "…"; the tooltip has every label whole.
// GUI thread only.
#pragma once

#include <QImage>
#include <QPixmap>
#include <QRectF>
#include <QWidget>
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/wafer/replay.h"
#include "ui/common/wafer_history.h"

class QPainter;

namespace ws::ui {

class ClusterLayout;
struct ClusterTexts;

class ClusterDiagram : public QWidget {
    Q_OBJECT
public:
    struct Traffic {
        int64_t weightsDown = 0;   // bytes MemoryX sends through SwarmX (once, broadcast)
        int64_t gradientsUp = 0;   // bytes all systems stream out
        int64_t reducedBytes = 0;  // bytes SwarmX sums (its inputs)
        int updatedLayers = 0;     // MemoryX updates done
        int plannedUpdates = 0;    // updates the step makes
    };

    explicit ClusterDiagram(QWidget* parent = nullptr);

    // `frame` (may be null) is drawn small in each wafer, its colours over busy fractions
    // [colourLow, colourHigh] as the heatmap's; `live` says the step is in progress.
    void setStep(const StepRecord* record, int numSystems, int numBlocks, int treeDepth,
                 const QString& waferName, const wafer::UtilizationFrame* frame, bool live,
                 double colourLow = 0, double colourHigh = 1);
    // Across processes: one label per system, "rank 1 on hostB" (empty: one process, the
    // default). Kept across steps; WaferTab sets it per run.
    void setPlacement(std::vector<QString> perSystem);
    const std::vector<QString>& placement() const { return m_placement; }
    const Traffic& traffic() const { return m_traffic; }
    // The links' load in the step's prediction (engine/wafer/cluster_links.h), several systems
    // only: the busiest kind of link and how busy, and what SwarmX's lockstep adds to the step.
    struct LinkLoadSummary {
        bool shown = false;  // a prediction with links, more than one system
        QString busiest;     // "system links", "SwarmX level 1 uplinks", ...
        double utilization = 0;
        double lockstep = 1;   // the slowest link's chunk time over a link's mean
        double queueingS = 0;  // per step
    };
    const LinkLoadSummary& linkLoad() const { return m_links; }
    QString inFlightText() const { return m_inFlight; }
    // Slow motion: the replay's state at its cursor and a caption for the foot ("at 3.42 ms");
    // nullopt returns to the step's traffic. Call after setStep().
    void setReplay(std::optional<wafer::ReplayState> state, int numBlocks = 0,
                   const QString& caption = {});
    const std::optional<wafer::ReplayState>& replayState() const { return m_replay; }
    // The traffic labels as drawn (tests): weights down, gradients up.
    QStringList trafficLabels() const;
    // Whether the last paint had to use the compact rows (a short widget).
    bool compactLayout() const { return m_compact; }
    // The bounding rectangles of every text the last paint drew (tests: none may overlap).
    const std::vector<QRectF>& textRects() const { return m_textRects; }
    // Every text the last paint drew (tests): its lines ('\n' between them), the box it was
    // given and the rectangle its glyphs cover.
    struct DrawnText {
        QString text;
        QRectF box;
        QRectF bounds;
    };
    const std::vector<DrawnText>& drawnTexts() const { return m_drawn; }

    // 300 px wide, and as tall as its labels need at the width it has.
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    bool event(QEvent* event) override;  // the tooltip: every label whole

private:
    enum class Active { None, Down, Compute, Up, Update };
    struct Paint;                // one paint's colours and fonts (cluster_diagram.cpp)
    ClusterTexts texts() const;  // everything the diagram says now
    // Tells the page when the height the labels need changed (texts or width).
    void relayout();
    void drawMemoryX(QPainter& p, const Paint& k, const ClusterLayout& l) const;
    void drawSwarmTree(QPainter& p, const Paint& k, const ClusterLayout& l) const;
    void drawSystems(QPainter& p, const Paint& k, const ClusterLayout& l);
    // The frame in `area` at the wafer's aspect; caches the scaling.
    void drawWaferThumbnail(QPainter& p, const Paint& k, const QRectF& area);
    void drawTraffic(QPainter& p, const Paint& k, const ClusterLayout& l) const;

    QStringList downLabel() const;
    QStringList downBrief() const;  // "↓ 547.8 kB", "to 1 sys."
    QStringList upBrief() const;
    QString captionText() const;  // "each system: one teaching-16x16 wafer (...)"; "" without
    bool downNow() const;         // weights move (slow motion) / the latest work streamed them
    bool upNow() const;
    bool computeNow() const;
    QStringList upLabel() const;
    QString rateLine(const wafer::LinkFlow& flow) const;  // "51.5 MiB/s now (h.1)", "idle now"

    Traffic m_traffic;
    LinkLoadSummary m_links;
    QString m_inFlight;
    std::optional<wafer::ReplayState> m_replay;
    int m_replayBlocks = 0;
    QString m_replayCaption;
    bool m_compact = false;
    int m_requiredHeight = 0;  // minimumSizeHint's height when the page last heard of it
    std::vector<QRectF> m_textRects;
    std::vector<DrawnText> m_drawn;
    QString m_waferName;
    std::vector<QString> m_placement;  // per system; empty in one process
    Active m_active = Active::None;
    int m_numSystems = 1;
    int m_treeDepth = 0;
    bool m_hasRecord = false;
    QImage m_thumbnail;         // the frame, one pixel per display cell
    QPixmap m_scaledThumbnail;  // ... scaled to the drawn wafer
    // What the picture was drawn from (setStep returns early when nothing changed).
    struct Shown {
        int64_t step = -2;
        size_t spans = 0;
        const wafer::UtilizationFrame* frame = nullptr;
        int systems = 0, depth = 0;
        bool live = false;
        double low = 0, high = 0;
        QString wafer;
        bool operator==(const Shown&) const = default;
    } m_shown;
    const wafer::UtilizationFrame* m_thumbFrame = nullptr;
    double m_thumbLow = 0, m_thumbHigh = 1;
};

}  // namespace ws::ui
