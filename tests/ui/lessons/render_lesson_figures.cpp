// The lessons' figures (resources/lessons/figures/*.png), drawn by this program with QPainter so
// that they can be regenerated and reviewed as code: the MemoryX -> SwarmX -> wafer data flow
// (lesson 1), one weight slot against two (lesson 2), micro-batches (lesson 3), the data-
// parallel tree (lesson 4) and a learning rate that overshoots (lesson 7). Colours are the
// timeline's (stream-in blue, forward green, backward orange, gradients out purple, SwarmX red,
// MemoryX teal).
//   render_lesson_figures DIR          writes every figure into DIR
//   render_lesson_figures --check DIR  exits 1 when a figure in DIR is missing or differs from
//                                      what this program draws (ctest lesson_figures.current)
// Single-threaded; no engine code.
#include <QDir>
#include <QFont>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <QtMath>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace {

const QColor kStreamIn(78, 121, 167), kForward(89, 161, 79), kBackward(242, 142, 43);
const QColor kStreamOut(176, 122, 161), kSwarmX(225, 87, 89), kMemoryX(118, 183, 178);
const QColor kInk(30, 30, 30), kGrey(120, 120, 120), kPaper(255, 255, 255);

QFont font(int pixels, bool bold = false) {
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPixelSize(pixels);
    f.setBold(bold);
    f.setHintingPreference(QFont::PreferNoHinting);
    return f;
}

// A rounded box with a bold title and lines of text under it.
void box(QPainter& p, const QRectF& r, const QColor& fill, const QString& title,
         const QStringList& lines = {}, int titlePx = 26) {
    p.setPen(QPen(fill.darker(140), 3));
    p.setBrush(fill.lighter(165));
    p.drawRoundedRect(r, 14, 14);
    p.setPen(kInk);
    p.setFont(font(titlePx, true));
    const QRectF titleRect(r.left(), r.top() + 10, r.width(), titlePx + 12);
    p.drawText(titleRect, Qt::AlignHCenter | Qt::AlignTop, title);
    p.setFont(font(19));
    double y = titleRect.bottom() + 6;
    for (const QString& line : lines) {
        p.drawText(QRectF(r.left() + 8, y, r.width() - 16, 26), Qt::AlignHCenter, line);
        y += 26;
    }
}

// A thick arrow from a to b with a label beside its middle (above when horizontal).
void arrow(QPainter& p, QPointF a, QPointF b, const QColor& c, const QString& label = {},
           QPointF labelOffset = {0, -16}) {
    const QLineF line(a, b);
    const double angle = qAtan2(b.y() - a.y(), b.x() - a.x());
    const double head = 20;
    const QPointF shaftEnd = b - QPointF(qCos(angle), qSin(angle)) * head * 0.8;
    p.setPen(QPen(c, 7, Qt::SolidLine, Qt::FlatCap));
    p.drawLine(a, shaftEnd);
    QPainterPath tip;
    tip.moveTo(b);
    tip.lineTo(b - QPointF(qCos(angle - 0.45), qSin(angle - 0.45)) * head);
    tip.lineTo(b - QPointF(qCos(angle + 0.45), qSin(angle + 0.45)) * head);
    tip.closeSubpath();
    p.setPen(Qt::NoPen);
    p.setBrush(c);
    p.drawPath(tip);
    if (label.isEmpty()) return;
    p.setPen(c.darker(130));
    p.setFont(font(20, true));
    const QPointF mid = line.center() + labelOffset;
    p.drawText(QRectF(mid.x() - 150, mid.y() - 14, 300, 28), Qt::AlignCenter, label);
}

void caption(QPainter& p, const QRectF& r, const QString& text) {
    p.setPen(kInk);
    p.setFont(font(20));
    p.drawText(r, Qt::AlignHCenter | Qt::AlignVCenter | Qt::TextWordWrap, text);
}

void title(QPainter& p, int width, const QString& text) {
    p.setPen(kInk);
    p.setFont(font(28, true));
    p.drawText(QRectF(0, 10, width, 40), Qt::AlignHCenter, text);
}

// A horizontal bar with a label inside.
void bar(QPainter& p, const QRectF& r, const QColor& c, const QString& label) {
    p.setPen(QPen(c.darker(150), 2));
    p.setBrush(c);
    p.drawRect(r);
    p.setPen(Qt::white);
    p.setFont(font(18, true));
    p.drawText(r, Qt::AlignCenter, label);
}

// --- lesson 1: where the model lives and how one layer's weights travel ------------------------
QImage weightStreaming() {
    QImage img(960, 560, QImage::Format_RGB32);
    img.fill(kPaper);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, img.width(), QStringLiteral("Weight streaming: the model lives in MemoryX"));
    box(p, QRectF(20, 90, 250, 250), kMemoryX, QStringLiteral("MemoryX"),
        {QStringLiteral("every layer's weights"), QStringLiteral("optimizer state"),
         QStringLiteral(""), QStringLiteral("the update runs here:"),
         QStringLiteral("w ← w − lr · update")});
    box(p, QRectF(370, 185, 190, 120), kSwarmX, QStringLiteral("SwarmX"),
        {QStringLiteral("broadcast ↓"), QStringLiteral("reduce ↑")});
    // The wafer: a grid of cores, a two-slot weight buffer, the activations.
    const QRectF wafer(650, 70, 290, 360);
    box(p, wafer, QColor(150, 150, 150), QStringLiteral("Wafer"), {}, 26);
    p.setPen(QPen(QColor(190, 190, 190), 1));
    p.setBrush(QColor(235, 235, 235));
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < 10; ++c) p.drawRect(QRectF(675 + c * 24, 115 + r * 15, 20, 12));
    bar(p, QRectF(670, 225, 250, 44), kStreamIn, QStringLiteral("slot 1: layer k+1 arrives"));
    bar(p, QRectF(670, 279, 250, 44), kForward, QStringLiteral("slot 2: layer k computes"));
    p.setPen(QPen(kGrey, 2, Qt::DashLine));
    p.setBrush(QColor(245, 245, 245));
    p.drawRect(QRectF(670, 335, 250, 80));
    p.setPen(kInk);
    p.setFont(font(18));
    p.drawText(QRectF(670, 335, 250, 80), Qt::AlignCenter | Qt::TextWordWrap,
               QStringLiteral("activations stay on the wafer"));
    arrow(p, {272, 180}, {368, 215}, kStreamIn, QStringLiteral("weights in"), {0, -34});
    arrow(p, {562, 215}, {668, 245}, kStreamIn);
    arrow(p, {668, 305}, {562, 275}, kStreamOut);
    arrow(p, {368, 275}, {272, 305}, kStreamOut, QStringLiteral("gradients out"), {0, 34});
    caption(p, QRectF(20, 440, 920, 110),
            QStringLiteral("Forward: layer 0 (embeddings) to the head, one layer at a time. "
                           "Backward: the head back to layer 0; each layer's weights stream in "
                           "again, its gradient streams out, and MemoryX updates it."));
    return img;
}

// --- lesson 2: one weight slot against two ----------------------------------------------------
struct Piece {
    double start, end;
    int layer;
};

void lane(QPainter& p, double y, double x0, double unit, const std::vector<Piece>& pieces,
          const QColor& c, const QString& name) {
    p.setPen(kInk);
    p.setFont(font(19));
    p.drawText(QRectF(10, y, x0 - 20, 40), Qt::AlignRight | Qt::AlignVCenter, name);
    for (const Piece& piece : pieces)
        bar(p, QRectF(x0 + piece.start * unit, y + 2, (piece.end - piece.start) * unit, 36), c,
            QStringLiteral("L%1").arg(piece.layer));
}

QImage doubleBuffer() {
    QImage img(960, 520, QImage::Format_RGB32);
    img.fill(kPaper);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, img.width(), QStringLiteral("One weight slot or two (stream 3, compute 2 per layer)"));
    const double x0 = 170, unit = 34;
    // One slot: a layer streams in only after the one before has computed and left the slot.
    std::vector<Piece> s1, c1, s2, c2;
    double t = 0;
    for (int l = 0; l < 4; ++l) {
        s1.push_back({t, t + 3, l});
        c1.push_back({t + 3, t + 5, l});
        t += 5;
    }
    // Two slots: the next layer streams into the free slot while this one computes.
    for (int l = 0; l < 4; ++l) {
        s2.push_back({3.0 * l, 3.0 * l + 3, l});
        const double start = std::max(3.0 * l + 3, l > 0 ? c2.back().end : 0.0);
        c2.push_back({start, start + 2, l});
    }
    p.setPen(kInk);
    p.setFont(font(22, true));
    p.drawText(QRectF(20, 62, 600, 30), Qt::AlignLeft, QStringLiteral("1 slot"));
    lane(p, 98, x0, unit, s1, kStreamIn, QStringLiteral("stream-in"));
    lane(p, 142, x0, unit, c1, kForward, QStringLiteral("compute"));
    p.setPen(kInk);
    p.setFont(font(22, true));
    p.drawText(QRectF(20, 212, 600, 30), Qt::AlignLeft, QStringLiteral("2 slots"));
    lane(p, 248, x0, unit, s2, kStreamIn, QStringLiteral("stream-in"));
    lane(p, 292, x0, unit, c2, kForward, QStringLiteral("compute"));
    // The step's end in each case, and what the second slot saves.
    const double end1 = x0 + c1.back().end * unit, end2 = x0 + c2.back().end * unit;
    p.setPen(QPen(kInk, 2, Qt::DashLine));
    p.drawLine(QPointF(end1, 90), QPointF(end1, 400));
    p.drawLine(QPointF(end2, 240), QPointF(end2, 400));
    p.setFont(font(19));
    p.drawText(QRectF(end1 + 6, 150, 100, 26), Qt::AlignLeft, QStringLiteral("t = 20"));
    p.drawText(QRectF(end2 + 6, 300, 100, 26), Qt::AlignLeft, QStringLiteral("t = 14"));
    arrow(p, {end2 + 4, 380}, {end1 - 4, 380}, kSwarmX, QStringLiteral("saved"), {0, -18});
    caption(p, QRectF(20, 410, 920, 100),
            QStringLiteral("1 slot: t ≈ Σ (stream + compute). 2 slots: t ≈ Σ max(stream, "
                           "compute): the next layer's weights arrive while this layer "
                           "computes, at the cost of SRAM for a second layer."));
    return img;
}

// --- lesson 3: micro-batches ------------------------------------------------------------------
QImage microBatches() {
    QImage img(960, 560, QImage::Format_RGB32);
    img.fill(kPaper);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, img.width(), QStringLiteral("Micro-batches: activations that do not fit"));
    // The batch of 8 sequences, in 4 micro-batches of 2.
    const QColor groups[] = {kForward, kStreamIn, kBackward, kStreamOut};
    p.setFont(font(20, true));
    p.setPen(kInk);
    p.drawText(QRectF(20, 62, 300, 28), Qt::AlignLeft, QStringLiteral("batch: 8 sequences"));
    for (int s = 0; s < 8; ++s) {
        const QRectF r(30, 100 + s * 30, 190, 24);
        p.setPen(QPen(groups[s / 2].darker(140), 2));
        p.setBrush(groups[s / 2].lighter(150));
        p.drawRect(r);
        p.setPen(kInk);
        p.setFont(font(16));
        p.drawText(r, Qt::AlignCenter, QStringLiteral("sequence %1").arg(s + 1));
    }
    for (int g = 0; g < 4; ++g) {
        p.setPen(groups[g].darker(150));
        p.setFont(font(18, true));
        p.drawText(QRectF(228, 100 + g * 60, 100, 54), Qt::AlignVCenter | Qt::AlignLeft,
                   QStringLiteral("micro %1").arg(g + 1));
    }
    // The wafer's SRAM: the whole batch's activations overflow it, one micro-batch's fit.
    const double x0 = 380, full = 520, sram = full * 0.55;
    p.setPen(kInk);
    p.setFont(font(20, true));
    p.drawText(QRectF(x0, 62, 560, 28), Qt::AlignLeft,
               QStringLiteral("activations kept for the backward pass"));
    bar(p, QRectF(x0, 110, full, 48), kSwarmX, QString());
    p.setPen(Qt::white);
    p.setFont(font(18, true));
    p.drawText(QRectF(x0 + 12, 110, sram - 20, 48), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("whole batch"));
    p.drawText(QRectF(x0 + sram + 10, 110, full - sram - 20, 48), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("does not fit"));
    bar(p, QRectF(x0, 180, full / 4, 48), kForward, QStringLiteral("1 micro"));
    p.setPen(QPen(kInk, 3, Qt::DashLine));
    p.drawLine(QPointF(x0 + sram, 96), QPointF(x0 + sram, 244));
    p.setFont(font(18));
    p.drawText(QRectF(x0 + sram + 8, 190, 240, 30), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("← wafer SRAM"));
    // The passes: each micro-batch forward and backward, the weights streamed in each time.
    p.setPen(kInk);
    p.setFont(font(20, true));
    p.drawText(QRectF(x0, 262, 560, 28), Qt::AlignLeft, QStringLiteral("one step"));
    const double w = 118;
    for (int g = 0; g < 4; ++g) {
        const double x = x0 + g * (w + 12);
        bar(p, QRectF(x, 300, w, 20), kStreamIn, QStringLiteral("weights"));
        bar(p, QRectF(x, 324, w / 2 - 2, 34), kForward, QStringLiteral("fwd"));
        bar(p, QRectF(x + w / 2 + 2, 324, w / 2 - 2, 34), kBackward, QStringLiteral("bwd"));
        p.setPen(groups[g].darker(150));
        p.setFont(font(16, true));
        p.drawText(QRectF(x, 362, w, 22), Qt::AlignCenter, QStringLiteral("micro %1").arg(g + 1));
    }
    bar(p, QRectF(x0 + 3 * (w + 12), 392, w, 30), kMemoryX, QStringLiteral("update"));
    caption(p, QRectF(20, 436, 920, 114),
            QStringLiteral("Each micro-batch runs forward and backward on its own; the weights "
                           "stream in again for every pass. MemoryX adds up the gradients and "
                           "updates once, after the last micro-batch: the same step as the "
                           "whole batch at once."));
    return img;
}

// --- lesson 4: the data-parallel tree ---------------------------------------------------------
QImage dataParallel() {
    QImage img(960, 560, QImage::Format_RGB32);
    img.fill(kPaper);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, img.width(), QStringLiteral("Data parallelism: one model, 4 systems"));
    box(p, QRectF(330, 60, 300, 86), kMemoryX, QStringLiteral("MemoryX"),
        {QStringLiteral("one copy of the weights")}, 24);
    box(p, QRectF(60, 200, 840, 86), kSwarmX, QStringLiteral("SwarmX"),
        {QStringLiteral("broadcasts the weights down, adds (Σ) the gradients up")}, 24);
    arrow(p, {455, 148}, {455, 198}, kStreamIn, QStringLiteral("weights"), {-90, 0});
    arrow(p, {505, 198}, {505, 148}, kStreamOut, QStringLiteral("one gradient"), {105, 0});
    for (int s = 0; s < 4; ++s) {
        const QRectF r(30 + s * 235, 360, 195, 96);
        box(p, r, QColor(150, 150, 150), QStringLiteral("system %1").arg(s),
            {QStringLiteral("2 of 8 sequences")}, 22);
        const double x = r.center().x();
        arrow(p, {x - 24, 288}, {x - 24, 358}, kStreamIn);
        arrow(p, {x + 24, 358}, {x + 24, 288}, kStreamOut);
    }
    caption(p, QRectF(20, 462, 920, 90),
            QStringLiteral("SwarmX sends each layer's weights to every system and adds the 4 "
                           "systems' gradients on the way back: MemoryX gets one gradient, as "
                           "if one system had seen all 8 sequences. Same loss curve."));
    return img;
}

// --- lesson 7: a learning rate that overshoots ------------------------------------------------
// Gradient descent on loss(w) = w^2 from w0, with a step factor k (w <- w - k * 2w).
QImage learningRate() {
    QImage img(960, 500, QImage::Format_RGB32);
    img.fill(kPaper);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, img.width(), QStringLiteral("The step size: w ← w − lr · gradient"));
    const auto panel = [&](const QRectF& r, double lr, const QColor& c, const QString& label) {
        const double range = 3.2;  // w in [-range, range]
        const auto toScreen = [&](double w, double loss) {
            return QPointF(r.center().x() + w / range * r.width() / 2,
                           r.bottom() - loss / (range * range) * r.height());
        };
        QPainterPath curve;
        for (int i = 0; i <= 100; ++i) {
            const double w = -range + 2 * range * i / 100.0;
            i == 0 ? curve.moveTo(toScreen(w, w * w)) : curve.lineTo(toScreen(w, w * w));
        }
        p.setPen(QPen(kGrey, 3));
        p.setBrush(Qt::NoBrush);
        p.drawPath(curve);
        double w = lr < 0.5 ? -2.6 : -0.9;
        for (int k = 0; k < 6; ++k) {
            const double next = w - lr * 2 * w;
            if (std::abs(next) > range) break;
            arrow(p, toScreen(w, w * w), toScreen(next, next * next), c);
            w = next;
        }
        p.setPen(c.darker(130));
        p.setFont(font(21, true));
        p.drawText(QRectF(r.left(), r.bottom() + 10, r.width(), 60),
                   Qt::AlignHCenter | Qt::TextWordWrap, label);
        p.setPen(kGrey);
        p.setFont(font(16));
        p.drawText(QRectF(r.left(), r.top() - 4, r.width(), 24), Qt::AlignHCenter,
                   QStringLiteral("loss(w)"));
    };
    panel(QRectF(40, 90, 400, 300), 0.2, kForward,
          QStringLiteral("lr small enough: each step goes downhill"));
    panel(QRectF(520, 90, 400, 300), 1.15, kSwarmX,
          QStringLiteral("lr too large: each step overshoots, the loss climbs"));
    caption(p, QRectF(20, 450, 920, 44),
            QStringLiteral("The wafer computes bad updates exactly as fast as good ones."));
    return img;
}

const std::vector<std::pair<QString, std::function<QImage()>>>& figures() {
    static const std::vector<std::pair<QString, std::function<QImage()>>> all = {
        {QStringLiteral("weight-streaming.png"), weightStreaming},
        {QStringLiteral("double-buffer.png"), doubleBuffer},
        {QStringLiteral("micro-batches.png"), microBatches},
        {QStringLiteral("data-parallel.png"), dataParallel},
        {QStringLiteral("learning-rate.png"), learningRate},
    };
    return all;
}

// Mean absolute difference per channel (0-255); -1 when the sizes differ.
double difference(const QImage& a, const QImage& b) {
    if (a.size() != b.size()) return -1;
    const QImage x = a.convertToFormat(QImage::Format_RGB32);
    const QImage y = b.convertToFormat(QImage::Format_RGB32);
    double sum = 0;
    for (int row = 0; row < x.height(); ++row) {
        const QRgb* px = reinterpret_cast<const QRgb*>(x.constScanLine(row));
        const QRgb* py = reinterpret_cast<const QRgb*>(y.constScanLine(row));
        for (int col = 0; col < x.width(); ++col)
            sum += std::abs(qRed(px[col]) - qRed(py[col])) +
                   std::abs(qGreen(px[col]) - qGreen(py[col])) +
                   std::abs(qBlue(px[col]) - qBlue(py[col]));
    }
    return sum / (3.0 * x.width() * x.height());
}

}  // namespace

int main(int argc, char** argv) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QGuiApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    const bool check = !args.isEmpty() && args.front() == QLatin1String("--check");
    if (args.size() != (check ? 2 : 1)) {
        std::fprintf(stderr, "usage: render_lesson_figures [--check] DIR\n");
        return 2;
    }
    const QDir dir(args.back());
    int bad = 0;
    for (const auto& [name, draw] : figures()) {
        const QImage drawn = draw();
        const QString path = dir.filePath(name);
        if (!check) {
            if (!dir.exists() && !QDir().mkpath(dir.path())) return 1;
            if (!drawn.save(path)) {
                std::fprintf(stderr, "cannot write %s\n", qPrintable(path));
                return 1;
            }
            std::printf("wrote %s\n", qPrintable(path));
            continue;
        }
        // Fonts may rasterize a little differently elsewhere: a small mean difference passes.
        const double diff = difference(QImage(path), drawn);
        if (diff < 0 || diff > 2.0) {
            std::fprintf(stderr,
                         "%s is %s: run `render_lesson_figures %s` and commit the figures\n",
                         qPrintable(path), diff < 0 ? "missing or of another size" : "out of date",
                         qPrintable(dir.path()));
            ++bad;
        } else {
            std::printf("%s current (mean difference %.3f)\n", qPrintable(name), diff);
        }
    }
    return bad == 0 ? 0 : 1;
}
