// ClusterDiagram: MemoryX -> SwarmX -> systems for the shown step, drawn with QPainter. Boxes
// for MemoryX (weights and optimizer state), the SwarmX broadcast / reduce tree (its depth from
// the prediction) and each system's wafer (a thumbnail of the utilization frame shown beside);
// arrows for this step's traffic so far: weights broadcast down, gradients streamed up and
// reduced, with bytes. The arrow of the latest work (the last span to arrive; spans arrive as
// work ends) is drawn bold and names its layer, so the picture moves as spans arrive. For a run
// across processes (mpirun), each system's box also says which rank on which host computes it.
// GUI thread only.
#pragma once

#include <QImage>
#include <QPixmap>
#include <QRectF>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "ui/common/wafer_history.h"

class QPainter;

namespace ws::ui {

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
    QString inFlightText() const { return m_inFlight; }

    QSize minimumSizeHint() const override { return {300, 260}; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    enum class Active { None, Down, Compute, Up, Update };
    struct Paint;  // one paint's colours, fonts and rows (cluster_diagram.cpp)
    QRectF drawMemoryX(QPainter& p, const Paint& k) const;
    QRectF drawSwarmTree(QPainter& p, const Paint& k) const;
    std::vector<QRectF> drawSystems(QPainter& p, const Paint& k);
    // Caches the scaling; `bottomLine` leaves a text line free under the wafer.
    void drawWaferThumbnail(QPainter& p, const Paint& k, const QRectF& box, bool bottomLine);
    void drawTraffic(QPainter& p, const Paint& k, const QRectF& mem, const QRectF& swarmBounds,
                     const std::vector<QRectF>& systems) const;

    Traffic m_traffic;
    QString m_inFlight;
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
