// SPDX-License-Identifier: GPL-3.0-or-later
// The lessons' figures (resources/lessons/figures/*.png), drawn by this program with QPainter so
// that they can be regenerated and reviewed as code, 600 px wide with type that stays readable
// in a 270 px Lessons dock (checked on every figure): the MemoryX -> SwarmX -> wafer data flow
// (lesson 1), one weight slot against two (lesson 2), 64 sequences in 4 micro-batches of 16
// (lesson 3, as its text says), the data-parallel tree (lesson 4) and a learning rate that
// overshoots (lesson 7). Colours are the timeline's (stream-in blue, forward green, backward
// orange, gradients out purple, SwarmX red, MemoryX teal).
//   render_lesson_figures DIR          writes every figure into DIR
//   render_lesson_figures --check DIR  exits 1 when a figure in DIR is missing or differs from
//                                      what this program draws, or when a figure's smallest
//                                      type would be under 10.5 px in a 270 px dock (ctest
//                                      lesson_figures.current)
// Single-threaded; no engine code.
#include <QDir>
#include <QFont>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QPainterPath>
#include <QtMath>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <utility>
#include <vector>

namespace {

const QColor kStreamIn(78, 121, 167), kForward(89, 161, 79), kBackward(242, 142, 43);
const QColor kStreamOut(176, 122, 161), kSwarmX(225, 87, 89), kMemoryX(118, 183, 178);
const QColor kInk(30, 30, 30), kGrey(120, 120, 120), kPaper(255, 255, 255);

// Drawn 600 px wide with no type under 24 px, so that shown in a 270 px dock (the Lessons dock
// at 1366 x 768) the smallest letters are still 10.8 px; a click shows them large. The step's
// text carries the explanation: a figure holds few words.
constexpr int kWidth = 600;
constexpr int kSmallestType = 24;
constexpr double kNarrowestDock = 270, kReadablePx = 10.5;
int g_smallestUsed = 1000;  // the smallest type the figure being drawn used

QFont font(int pixels, bool bold = false) {
    g_smallestUsed = std::min(g_smallestUsed, pixels);
    QFont f(QStringLiteral("DejaVu Sans"));
    f.setPixelSize(pixels);
    f.setBold(bold);
    f.setHintingPreference(QFont::PreferNoHinting);
    return f;
}

QImage canvas(int height) {
    QImage img(kWidth, height, QImage::Format_RGB32);
    img.fill(kPaper);
    return img;
}

// A rounded box with a bold title and lines of text under it.
void box(QPainter& p, const QRectF& r, const QColor& fill, const QString& title,
         const QStringList& lines = {}) {
    p.setPen(QPen(fill.darker(140), 3));
    p.setBrush(fill.lighter(165));
    p.drawRoundedRect(r, 12, 12);
    p.setPen(kInk);
    p.setFont(font(26, true));
    const QRectF titleRect(r.left(), r.top() + 6, r.width(), 34);
    p.drawText(titleRect, Qt::AlignHCenter | Qt::AlignTop, title);
    p.setFont(font(kSmallestType));
    double y = titleRect.bottom() + 2;
    for (const QString& line : lines) {
        p.drawText(QRectF(r.left() + 4, y, r.width() - 8, 30), Qt::AlignHCenter, line);
        y += 30;
    }
}

// A thick arrow from a to b with a label beside its middle (above when horizontal).
void arrow(QPainter& p, QPointF a, QPointF b, const QColor& c, const QString& label = {},
           QPointF labelOffset = {0, -18}) {
    const QLineF line(a, b);
    const double angle = qAtan2(b.y() - a.y(), b.x() - a.x());
    const double head = 18;
    const QPointF shaftEnd = b - QPointF(qCos(angle), qSin(angle)) * head * 0.8;
    p.setPen(QPen(c, 6, Qt::SolidLine, Qt::FlatCap));
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
    p.setFont(font(kSmallestType, true));
    const QPointF mid = line.center() + labelOffset;
    p.drawText(QRectF(mid.x() - 120, mid.y() - 15, 240, 30), Qt::AlignCenter, label);
}

void title(QPainter& p, const QString& text) {
    p.setPen(kInk);
    p.setFont(font(30, true));
    p.drawText(QRectF(0, 6, kWidth, 40), Qt::AlignHCenter, text);
}

void heading(QPainter& p, const QRectF& r, const QString& text) {
    p.setPen(kInk);
    p.setFont(font(kSmallestType, true));
    p.drawText(r, Qt::AlignLeft | Qt::AlignVCenter, text);
}

// A horizontal bar with a label inside.
void bar(QPainter& p, const QRectF& r, const QColor& c, const QString& label) {
    p.setPen(QPen(c.darker(150), 2));
    p.setBrush(c);
    p.drawRect(r);
    p.setPen(Qt::white);
    p.setFont(font(kSmallestType, true));
    p.drawText(r, Qt::AlignCenter, label);
}

// --- lesson 1: where the model lives and how one layer's weights travel ------------------------
QImage weightStreaming() {
    QImage img = canvas(350);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, QStringLiteral("The model lives in MemoryX"));
    box(p, QRectF(8, 60, 170, 200), kMemoryX, QStringLiteral("MemoryX"),
        {QStringLiteral("all weights"), QStringLiteral("optimizer"), QStringLiteral("the update")});
    box(p, QRectF(232, 125, 136, 76), kSwarmX, QStringLiteral("SwarmX"));
    // The wafer: a two-slot weight buffer and the activations.
    const QRectF wafer(412, 52, 180, 288);
    box(p, wafer, QColor(150, 150, 150), QStringLiteral("Wafer"));
    bar(p, QRectF(422, 94, 160, 46), kStreamIn, QStringLiteral("k+1 in"));
    bar(p, QRectF(422, 148, 160, 46), kForward, QStringLiteral("k computes"));
    p.setPen(QPen(kGrey, 2, Qt::DashLine));
    p.setBrush(QColor(245, 245, 245));
    p.drawRect(QRectF(422, 204, 160, 126));
    p.setPen(kInk);
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(422, 204, 160, 126), Qt::AlignCenter | Qt::TextWordWrap,
               QStringLiteral("activations stay here"));
    arrow(p, {180, 120}, {230, 145}, kStreamIn);
    arrow(p, {370, 145}, {420, 120}, kStreamIn);
    arrow(p, {420, 250}, {370, 190}, kStreamOut);
    arrow(p, {230, 190}, {180, 225}, kStreamOut);
    p.setFont(font(kSmallestType, true));
    p.setPen(kStreamIn.darker(130));
    p.drawText(QRectF(180, 60, 232, 30), Qt::AlignCenter, QStringLiteral("weights in →"));
    p.setPen(kStreamOut.darker(130));
    p.drawText(QRectF(180, 280, 232, 30), Qt::AlignCenter, QStringLiteral("← gradients out"));
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
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(4, y, x0 - 10, 36), Qt::AlignRight | Qt::AlignVCenter, name);
    for (const Piece& piece : pieces)
        bar(p, QRectF(x0 + piece.start * unit, y + 2, (piece.end - piece.start) * unit, 32), c,
            QStringLiteral("%1").arg(piece.layer));
}

QImage doubleBuffer() {
    QImage img = canvas(380);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, QStringLiteral("One weight slot or two"));
    const double x0 = 118, unit = 19;
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
    heading(p, QRectF(8, 52, 400, 32), QStringLiteral("1 slot"));
    lane(p, 86, x0, unit, s1, kStreamIn, QStringLiteral("in"));
    lane(p, 124, x0, unit, c1, kForward, QStringLiteral("compute"));
    heading(p, QRectF(8, 178, 400, 32), QStringLiteral("2 slots"));
    lane(p, 212, x0, unit, s2, kStreamIn, QStringLiteral("in"));
    lane(p, 250, x0, unit, c2, kForward, QStringLiteral("compute"));
    // The step's end in each case, and what the second slot saves.
    const double end1 = x0 + c1.back().end * unit, end2 = x0 + c2.back().end * unit;
    p.setPen(QPen(kInk, 2, Qt::DashLine));
    p.drawLine(QPointF(end1, 80), QPointF(end1, 340));
    p.drawLine(QPointF(end2, 206), QPointF(end2, 340));
    p.setPen(kInk);
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(end1 + 6, 124, 90, 34), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("t = 20"));
    p.drawText(QRectF(end2 + 6, 250, 90, 34), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("t = 14"));
    arrow(p, {end2 + 4, 330}, {end1 - 4, 330}, kSwarmX, QStringLiteral("saved"), {0, -22});
    p.setPen(kGrey);
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(0, 344, kWidth, 32), Qt::AlignCenter,
               QStringLiteral("stream 3, compute 2 per layer"));
    return img;
}

// --- lesson 3: micro-batches ------------------------------------------------------------------
// Lesson 3, step 2: 64 sequences do not fit; the run cuts them into 4 micro-batches of 16.
QImage microBatches() {
    QImage img = canvas(440);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, QStringLiteral("64 sequences, 4 micro-batches"));
    const QColor groups[] = {kForward, kStreamIn, kBackward, kStreamOut};
    const double x0 = 10, full = 580, w = full / 4;
    heading(p, QRectF(x0, 50, full, 32), QStringLiteral("the batch, cut in 4"));
    for (int g = 0; g < 4; ++g) {
        const QRectF r(x0 + g * w, 86, w - 6, 40);
        p.setPen(QPen(groups[g].darker(140), 2));
        p.setBrush(groups[g].lighter(150));
        p.drawRect(r);
        p.setPen(kInk);
        p.setFont(font(kSmallestType, true));
        p.drawText(r, Qt::AlignCenter, QStringLiteral("16 seqs"));
    }
    // The wafer's SRAM: the whole batch's activations overflow it, one micro-batch's fit.
    heading(p, QRectF(x0, 138, full, 32), QStringLiteral("activations on the wafer"));
    const double sram = full * 0.62;
    bar(p, QRectF(x0, 174, full, 40), kSwarmX, QString());
    p.setPen(Qt::white);
    p.setFont(font(kSmallestType, true));
    p.drawText(QRectF(x0 + 10, 174, sram - 20, 40), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("all 64 sequences"));
    p.drawText(QRectF(x0 + sram + 8, 174, full - sram - 16, 40), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("too much"));
    bar(p, QRectF(x0, 220, full / 4 + 40, 40), kForward, QStringLiteral("16 fit"));
    p.setPen(QPen(kInk, 3, Qt::DashLine));
    p.drawLine(QPointF(x0 + sram, 166), QPointF(x0 + sram, 268));
    p.setPen(kInk);
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(x0 + sram + 8, 222, full - sram - 8, 36), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("← SRAM"));
    // The passes: each micro-batch forward and backward, the weights streamed in each time.
    heading(p, QRectF(x0, 276, full, 32), QStringLiteral("one step: 4 passes, 1 update"));
    const double pw = 112;
    for (int g = 0; g < 4; ++g) {
        const double x = x0 + g * (pw + 8);
        bar(p, QRectF(x, 312, pw, 34), kStreamIn, QStringLiteral("weights"));
        bar(p, QRectF(x, 350, pw / 2 - 2, 34), kForward, QStringLiteral("f"));
        bar(p, QRectF(x + pw / 2 + 2, 350, pw / 2 - 2, 34), kBackward, QStringLiteral("b"));
        p.setPen(QPen(groups[g].darker(140), 5));
        p.drawLine(QPointF(x, 390), QPointF(x + pw, 390));
    }
    bar(p, QRectF(x0 + 4 * (pw + 8), 312, full - 4 * (pw + 8), 72), kMemoryX,
        QStringLiteral("update"));
    p.setPen(kInk);
    p.setFont(font(kSmallestType));
    p.drawText(QRectF(x0, 398, full, 36), Qt::AlignLeft | Qt::AlignVCenter,
               QStringLiteral("weights stream in again for every pass"));
    return img;
}

// --- lesson 4: the data-parallel tree ---------------------------------------------------------
QImage dataParallel() {
    QImage img = canvas(400);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, QStringLiteral("One model, 4 systems"));
    box(p, QRectF(190, 50, 220, 80), kMemoryX, QStringLiteral("MemoryX"),
        {QStringLiteral("one copy")});
    box(p, QRectF(10, 178, 580, 76), kSwarmX, QStringLiteral("SwarmX"),
        {QStringLiteral("weights ↓, gradients Σ ↑")});
    arrow(p, {270, 132}, {270, 176}, kStreamIn);
    arrow(p, {330, 176}, {330, 132}, kStreamOut);
    for (int s = 0; s < 4; ++s) {
        const QRectF r(10 + s * 148, 306, 136, 88);
        box(p, r, QColor(150, 150, 150), QStringLiteral("system %1").arg(s),
            {QStringLiteral("2 of 8")});
        const double x = r.center().x();
        arrow(p, {x - 18, 256}, {x - 18, 304}, kStreamIn);
        arrow(p, {x + 18, 304}, {x + 18, 256}, kStreamOut);
    }
    return img;
}

// --- lesson 7: a learning rate that overshoots ------------------------------------------------
// Gradient descent on loss(w) = w^2 from w0, with a step factor k (w <- w - k * 2w).
QImage learningRate() {
    QImage img = canvas(380);
    QPainter p(&img);
    p.setRenderHint(QPainter::Antialiasing);
    title(p, QStringLiteral("w ← w − lr · gradient"));
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
        p.setFont(font(kSmallestType, true));
        p.drawText(QRectF(r.left() - 10, r.bottom() + 8, r.width() + 20, 64),
                   Qt::AlignHCenter | Qt::TextWordWrap, label);
    };
    panel(QRectF(20, 64, 260, 220), 0.2, kForward,
          QStringLiteral("lr small: each step goes downhill"));
    panel(QRectF(320, 64, 260, 220), 1.15, kSwarmX,
          QStringLiteral("lr too large: each step overshoots"));
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
        g_smallestUsed = 1000;
        const QImage drawn = draw();
        // Readable in the Lessons dock: the smallest type, scaled to the narrowest dock.
        const double shownPx = g_smallestUsed * kNarrowestDock / drawn.width();
        if (shownPx < kReadablePx) {
            std::fprintf(stderr,
                         "%s: its smallest type (%d px of %d) is %.1f px in a %.0f px dock, "
                         "under %.1f px: draw it larger\n",
                         qPrintable(name), g_smallestUsed, drawn.width(), shownPx, kNarrowestDock,
                         kReadablePx);
            ++bad;
            continue;
        }
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
