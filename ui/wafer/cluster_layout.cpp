// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterLayout: see cluster_layout.h.
#include "ui/wafer/cluster_layout.h"

#include <QCoreApplication>
#include <QFontMetrics>
#include <algorithm>
#include <cmath>

#include "ui/common/text_fit.h"

namespace ws::ui {
namespace {

// The diagram's words (translated in its context).
QString tr(const char* text) {
    return QCoreApplication::translate("ws::ui::ClusterDiagram", text);
}

QFont boldOf(QFont font) {
    font.setBold(true);
    return font;
}

bool wordsFit(const QString& text, const QFontMetrics& fm, int width) {
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    return std::all_of(words.begin(), words.end(),
                       [&](const QString& word) { return fm.horizontalAdvance(word) <= width; });
}

}  // namespace

double lineHeight(const QFont& font) {
    // Fractional metrics, rounded up: drawText stacks lines at the line spacing.
    const QFontMetricsF fm(font);
    return std::ceil(std::max(fm.height(), fm.lineSpacing()));
}

ClusterLayout::ClusterLayout(const QFont& normal, QSizeF size, const ClusterTexts& texts)
    : m_normal(normal), m_bold(boldOf(normal)), m_size(size), m_texts(texts) {
    m_required = arrange(Mode::Compact);
    for (Mode mode : {Mode::Roomy, Mode::RoomyBrief})
        if (arrange(mode) <= size.height()) return;
    arrange(Mode::Compact);
}

// What one arrangement measures with: the fonts, line heights and widths every row uses.
struct ClusterLayout::Frame {
    const ClusterTexts& t;
    bool c;      // compact rows
    bool brief;  // brief traffic labels where they take fewer lines
    QFontMetrics fm, bfm;
    double line, boldLine;
    double w, inner;
};

double ClusterLayout::arrange(Mode mode) {
    m_compact = mode == Mode::Compact;
    const Frame f{m_texts,
                  m_compact,
                  mode != Mode::Roomy,
                  QFontMetrics(m_normal),
                  QFontMetrics(m_bold),
                  lineHeight(m_normal),
                  lineHeight(m_bold),
                  std::max(m_size.width(), kMinWidth),
                  std::max(m_size.width(), kMinWidth) - 2 * kMargin};
    arrangeTitleAndMemoryX(f);
    const TreeRows rows = treeWidths(f);
    double swarmW = 0;
    for (const auto& [drawn, nodeW] : rows) swarmW = std::max(swarmW, drawn * (nodeW + 6) - 6);
    double y = arrangeTraffic(f, swarmW);
    y = arrangeTree(f, rows, swarmW, y);
    return arrangeSystems(f, y);
}

// The title, then MemoryX's box.
void ClusterLayout::arrangeTitleAndMemoryX(const Frame& f) {
    const ClusterTexts& t = f.t;
    const bool c = f.c;
    const QFontMetrics &fm = f.fm, &bfm = f.bfm;
    const double line = f.line, boldLine = f.boldLine, w = f.w, inner = f.inner;
    double y = kMargin;

    title.lines = wrapLines({t.title}, bfm, int(inner), LongWord::Break);
    const double titleH = title.lines.size() * boldLine + (c ? 2 : 6);
    title.box = QRectF(kMargin, y, inner, title.lines.size() * boldLine);
    y += titleH;

    // MemoryX: "MemoryX" over its state, or both on one line when compact.
    const QString oneLine = tr("MemoryX · %1").arg(t.memText);
    const double memW =
        std::min(inner, std::max(w * 0.5, fm.horizontalAdvance(c ? oneLine : t.memText) + 24.0));
    const double memX = w / 2 - memW / 2;
    if (c) {
        memTitle = {};
        memText.lines = wrapLines({oneLine}, fm, int(memW - 12), LongWord::Break);
        mem = QRectF(memX, y, memW, memText.lines.size() * line + 8);
        memText.box = mem.adjusted(6, 4, -6, -4);
    } else {
        memTitle.lines = {tr("MemoryX")};
        memText.lines = wrapLines({t.memText}, fm, int(memW - 12), LongWord::Break);
        mem = QRectF(memX, y, memW, boldLine + memText.lines.size() * line + 10);
        memTitle.box = QRectF(memX + 6, y + 4, memW - 12, boldLine);
        memText.box = QRectF(memX + 6, y + 4 + boldLine, memW - 12, mem.height() - boldLine - 8);
    }
}

// The SwarmX tree's widths: one row of nodes per level (fan-out up to 4); a one-level tree
// is one node with its label inside.
ClusterLayout::TreeRows ClusterLayout::treeWidths(const Frame& f) const {
    const ClusterTexts& t = f.t;
    const QFontMetrics& bfm = f.bfm;
    const double w = f.w, inner = f.inner;
    const int levels = std::max(1, t.treeDepth);
    TreeRows rows;
    for (int level = 0; level < levels; ++level) {
        const int fromBottom = levels - level;  // 1 = the level next to the systems
        const int nodes = std::max(
            1, int(std::ceil(t.numSystems / std::pow(4.0, std::max(0, fromBottom - 1)) / 4.0)));
        const int drawn = std::min(nodes, 8);
        double nodeW = std::min(110.0, (w * 0.7) / drawn - 6);
        if (levels == 1 && drawn == 1)
            nodeW = std::min(inner, double(bfm.horizontalAdvance(t.swarmLabel)) + 20);
        rows.emplace_back(drawn, nodeW);
    }
    return rows;
}

// The traffic labels beside the top arrows (the full words when roomy, else the brief ones when
// they take fewer lines); returns the y below the arrows.
double ClusterLayout::arrangeTraffic(const Frame& f, double swarmW) {
    const ClusterTexts& t = f.t;
    const bool c = f.c, brief = f.brief;
    const QFontMetrics &fm = f.fm, &bfm = f.bfm;
    const double line = f.line, boldLine = f.boldLine, w = f.w;
    const double offset = std::min(t.replay ? 28.0 : 40.0, swarmW / 4);
    downX = w / 2 - offset;
    upX = w / 2 + offset;
    const double gap = t.replay ? 14 : 8;  // clear of a thick arrow's head
    auto trafficLines = [&](const QStringList& full, const QStringList& shorter, bool bold,
                            double width) {
        const QFontMetrics m = bold ? bfm : fm;
        QStringList lines = wrapLines(full, m, int(width), LongWord::Break);
        if (brief && !shorter.isEmpty()) {
            QStringList b = wrapLines(shorter, m, int(width), LongWord::Break);
            if (b.size() < lines.size()) lines = b;
        }
        return lines;
    };
    down.lines = trafficLines(t.downFull, t.downBrief, t.downBold, downX - kMargin - gap);
    up.lines = trafficLines(t.upFull, t.upBrief, t.upBold, w - upX - gap - kMargin);
    const double trafficH = std::max(down.lines.size() * (t.downBold ? boldLine : line),
                                     up.lines.size() * (t.upBold ? boldLine : line));
    const double arrowGap = std::max(c ? line + 12 : 2 * line + 14, trafficH + 8);
    down.box = QRectF(kMargin, mem.bottom() + 2, downX - kMargin - gap, arrowGap - 4);
    up.box = QRectF(upX + gap, mem.bottom() + 2, w - upX - gap - kMargin, arrowGap - 4);
    return mem.bottom() + arrowGap;
}

// The tree's rows, its label inside the one node or beside a deeper tree; returns the y below.
double ClusterLayout::arrangeTree(const Frame& f, const TreeRows& rows, double swarmW, double y) {
    const ClusterTexts& t = f.t;
    const bool c = f.c;
    const QFontMetrics &fm = f.fm, &bfm = f.bfm;
    const double line = f.line, boldLine = f.boldLine, w = f.w;
    const int levels = int(rows.size());
    QStringList side;
    double levelH = line + (c ? 6 : 10);
    if (levels == 1 && rows[0].first == 1) {
        swarm.lines = wrapLines({t.swarmLabel}, bfm, int(rows[0].second - 12), LongWord::Break);
        levelH = swarm.lines.size() * boldLine + (c ? 6 : 10);
    } else {
        const double sideW = w / 2 - swarmW / 2 - kMargin - 6;
        side = wrapLines(t.swarmSide, fm, int(sideW), LongWord::Break);
        levelH = std::max(levelH, (side.size() * line + 4) / levels);
    }
    treeRows.clear();
    swarmBounds = QRectF();
    for (int level = 0; level < levels; ++level) {
        const auto [drawn, nodeW] = rows[size_t(level)];
        const double rowW = drawn * (nodeW + 6) - 6;
        std::vector<QRectF> nodes;
        for (int i = 0; i < drawn; ++i) {
            const QRectF node(w / 2 - rowW / 2 + i * (nodeW + 6), y + level * levelH, nodeW,
                              levelH - 4);
            nodes.push_back(node);
            swarmBounds = swarmBounds.isNull() ? node : swarmBounds.united(node);
        }
        treeRows.push_back(std::move(nodes));
    }
    if (side.isEmpty()) {
        swarm.box = swarmBounds.adjusted(6, 0, -6, 0);
    } else {
        swarm.lines = side;
        swarm.box = QRectF(kMargin, swarmBounds.top(), swarmBounds.left() - kMargin - 6,
                           swarmBounds.height());
    }
    y += levels * levelH + (c ? 16 : 26);
    return y;
}

// Systems with their wafers, then caption and foot; returns the rows' height.
double ClusterLayout::arrangeSystems(const Frame& f, double y) {
    const ClusterTexts& t = f.t;
    const bool c = f.c;
    const QFontMetrics &fm = f.fm, &bfm = f.bfm;
    const double line = f.line, boldLine = f.boldLine, w = f.w, inner = f.inner;
    // Systems with their wafers: as many as fit at ~64 px each (at most 8), the last box
    // standing for the rest.
    const int fitting = std::max(1, int((inner + 8) / (64 + 8)));
    const int drawnSystems = std::min({t.numSystems, 8, fitting});
    const double sysW = std::min(170.0, inner / drawnSystems - 8);
    const double sysRowW = drawnSystems * (sysW + 8) - 8;
    const int textW = int(sysW - 8);
    const bool narrow = sysW < fm.horizontalAdvance(tr("system 00")) + 8;
    systems.assign(size_t(drawnSystems), {});
    int nameLines = 1, placeLines = 0;
    for (int s = 0; s < drawnSystems; ++s) {
        System& sys = systems[size_t(s)];
        const bool rest = drawnSystems < t.numSystems && s == drawnSystems - 1;
        const QString name =
            rest     ? (narrow ? tr("%1–%2") : tr("systems %1–%2")).arg(s).arg(t.numSystems - 1)
            : narrow ? tr("sys %1").arg(s)
                     : tr("system %1").arg(s);
        sys.name.lines = wrapLines({name}, fm, textW, LongWord::Break);
        nameLines = std::max(nameLines, int(sys.name.lines.size()));
        if (!rest && size_t(s) < t.placement.size()) {
            // "rank 1 on hostB" where its words fit the box, else "rank 1" (the tooltip has it
            // whole).
            const QString& where = t.placement[size_t(s)];
            sys.placement.lines = wordsFit(where, fm, textW)
                                      ? wrapLines({where}, fm, textW, LongWord::Break)
                                      : wrapLines({where.section(QLatin1Char(' '), 0, 1)}, fm,
                                                  textW, LongWord::Break);
            placeLines = std::max(placeLines, int(sys.placement.lines.size()));
        }
    }
    const double nameH = nameLines * line, placeH = placeLines * line;
    // The wafer's picture at least a line high (two when roomy): a dot tells nothing.
    const double waferMin = c ? line + 4 : 2 * line;
    const double sysMin = 2 + nameH + 4 + waferMin + (placeLines ? placeH + 4 : 0) + 6;
    const double sysY = y;

    caption.lines = c || t.caption.isEmpty()
                        ? QStringList()
                        : wrapLines({t.caption}, fm, int(inner), LongWord::Break);
    const double captionH = caption.lines.isEmpty() ? 0 : caption.lines.size() * line + 4;
    foot.lines = wrapLines({t.foot}, bfm, int(inner), LongWord::Break);
    const double footH = foot.lines.size() * boldLine + (c ? 4 : 8);

    const double needed = sysY + sysMin + captionH + footH + kMargin;
    const double sysH = std::max(sysMin, m_size.height() - sysY - captionH - footH - kMargin);
    for (int s = 0; s < drawnSystems; ++s) {
        System& sys = systems[size_t(s)];
        sys.box = QRectF(w / 2 - sysRowW / 2 + s * (sysW + 8), sysY, sysW, sysH);
        sys.name.box = QRectF(sys.box.left() + 4, sysY + 2, textW, nameH);
        sys.placement.box =
            QRectF(sys.box.left() + 4, sys.box.bottom() - 2 - placeH, textW, placeH);
        const double waferTop = sysY + 2 + nameH + 4;
        const double waferBottom = sys.box.bottom() - (placeLines ? placeH + 4 : 0) - 6;
        sys.waferArea =
            QRectF(sys.box.left() + 6, waferTop, sysW - 12, std::max(0.0, waferBottom - waferTop));
    }
    caption.box = QRectF(kMargin, sysY + sysH + 2, inner, caption.lines.size() * line);
    foot.box =
        QRectF(kMargin, sysY + sysH + captionH + (c ? 2 : 4), inner, foot.lines.size() * boldLine);
    return needed;
}

}  // namespace ws::ui
