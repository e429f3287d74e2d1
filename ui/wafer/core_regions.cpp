// SPDX-License-Identifier: GPL-3.0-or-later
// Matrix regions on the core grid: see core_regions.h.
#include "ui/wafer/core_regions.h"

#include <QCoreApplication>
#include <QStringList>
#include <algorithm>

namespace ws::ui {
namespace {

QString tr(const char* text) {
    return QCoreApplication::translate("CoreRegions", text);
}

// What Y's columns are for an op ("qkv", "fc.dW", "logits.dX", ...), and their named parts
// (Q, K, V for the qkv projection, gate and up for SwiGLU's fc; one part otherwise) with their
// widths (WaferOp::columnParts: K and V narrower than Q with grouped-query attention; empty:
// equal parts).
struct ColumnMeaning {
    QString what;
    QStringList parts;
    std::vector<int64_t> widths;
};

ColumnMeaning columnMeaning(const wafer::OpTiming& op) {
    const QString name = QString::fromStdString(op.name);
    const QString base = name.section('.', 0, 0);
    const bool dX = name.endsWith(QLatin1String(".dX"));
    const bool dW = name.endsWith(QLatin1String(".dW"));
    if (dX) return {tr("input-gradient channels"), {tr("dX")}, {}};
    const QString prefix = dW ? QStringLiteral("dW ") : QString();
    if (base == QLatin1String("qkv"))
        return {tr("the query, key and value projections"),
                {prefix + "Q", prefix + "K", prefix + "V"},
                op.columnParts};
    if (base == QLatin1String("fc") && op.columnParts.size() == 2)
        return {tr("SwiGLU's gate and up projections"),
                {prefix + tr("gate"), prefix + tr("up")},
                op.columnParts};
    if (base == QLatin1String("fc") || base == QLatin1String("gelu") ||
        base == QLatin1String("swiglu"))
        return {tr("MLP hidden units"), {prefix + tr("MLP hidden")}, {}};
    if (base == QLatin1String("rope"))
        return {tr("the rotated query and key dimensions"), {tr("rotated q | k")}, {}};
    if (base.startsWith(QLatin1String("rmsnorm")) || base.startsWith(QLatin1String("ln_")))
        return {tr("channels"), {name}, {}};
    if (base == QLatin1String("logits") || base == QLatin1String("cross_entropy"))
        return {tr("vocabulary entries"), {prefix + tr("vocab")}, {}};
    if (base == QLatin1String("attn_proj") || base == QLatin1String("fc_proj"))
        return {tr("output channels"), {prefix + tr("channels")}, {}};
    return {tr("output columns"), {name}, {}};
}

}  // namespace

CoreRegions coreRegionsOf(const wafer::OpTiming& op) {
    CoreRegions out;
    const wafer::GridMapping& g = op.mapping;
    if (g.rows <= 0 || g.groupCols <= 0 || g.n.block <= 0 || op.n <= 0) return out;
    const ColumnMeaning meaning = columnMeaning(op);
    const QString opName = QString::fromStdString(op.name);
    out.caption = tr("Cores ↔ matrix: %1, output %2 × %3 (the phase's longest op)\nrows of "
                     "cores hold tokens, columns hold %4")
                      .arg(opName)
                      .arg(op.m)
                      .arg(op.n)
                      .arg(meaning.what);
    if (g.folds > 1) out.caption += tr("; %1 column groups, each its own tokens").arg(g.folds);
    // Columns of cores that hold Y's columns: n / block of a group's groupCols (the last ones
    // may get none).
    const double usedCols = std::min<double>(g.groupCols, double(op.n) / double(g.n.block));
    const int parts = int(meaning.parts.size());
    // Where part i starts, as a fraction of the used columns: by the parts' widths when they are
    // known and add up to the output, else equal parts.
    std::vector<double> edge(size_t(parts) + 1, 0.0);
    int64_t known = 0;
    for (int64_t w : meaning.widths) known += w;
    const bool byWidth = int(meaning.widths.size()) == parts && known == op.n;
    for (int part = 0; part < parts; ++part)
        edge[size_t(part) + 1] =
            byWidth ? edge[size_t(part)] + double(meaning.widths[size_t(part)]) / double(known)
                    : double(part + 1) / parts;
    for (int group = 0; group < g.folds; ++group) {
        const double x0 = double(group) * g.groupCols - 0.5;
        const double y0 = -0.5, y1 = g.rows - 0.5;
        const int64_t firstRow = g.m.begin(int64_t(group) * g.rows);
        const int64_t lastRow = g.m.end(int64_t(group + 1) * g.rows - 1);
        const QString tokens = g.folds > 1 && lastRow > firstRow
                                   ? tr(" · tokens %1–%2").arg(firstRow).arg(lastRow - 1)
                                   : QString();
        for (int part = 0; part < parts; ++part) {
            const double a = usedCols * edge[size_t(part)], b = usedCols * edge[size_t(part) + 1];
            if (b <= a) continue;
            CoreRegion r{x0 + a, x0 + b, y0, y1, meaning.parts[part]};
            if (parts == 1) {
                r.label += tr(" %1–%2").arg(0).arg(op.n - 1);
            }
            if (part == 0) r.label += tokens;
            out.regions.push_back(r);
        }
        if (usedCols < g.groupCols - 0.5)
            out.regions.push_back({x0 + usedCols, x0 + g.groupCols, y0, y1, tr("idle")});
    }
    const int leftover = g.cols - g.folds * g.groupCols;
    if (leftover > 0)
        out.regions.push_back(
            {double(g.folds) * g.groupCols - 0.5, g.cols - 0.5, -0.5, g.rows - 0.5, tr("idle")});
    return out;
}

CoreRegions coreRegionsOfExperts(const std::vector<wafer::CoreRegion>& experts,
                                 const std::vector<int64_t>& tokens) {
    CoreRegions out;
    if (experts.empty() || experts.size() != tokens.size()) return out;
    int64_t busiest = 0;
    for (int64_t t : tokens) busiest = std::max(busiest, t);
    out.caption = tr("Cores ↔ experts: each of the %1 experts owns a fixed share of the wafer and "
                     "computes only the tokens routed to it\nthe busiest (%2 tokens) sets the "
                     "MLP's time; the others' cores wait")
                      .arg(experts.size())
                      .arg(busiest);
    for (size_t e = 0; e < experts.size(); ++e) {
        const wafer::CoreRegion& g = experts[e];
        if (g.rows <= 0 || g.cols <= 0) continue;
        const QString label = tokens[e] > 0 ? tr("expert %1 · %2 tokens").arg(e).arg(tokens[e])
                                            : tr("expert %1 · idle").arg(e);
        out.regions.push_back(
            {g.col0 - 0.5, g.col0 + g.cols - 0.5, g.row0 - 0.5, g.row0 + g.rows - 0.5, label});
    }
    return out;
}

CoreRegions coreRegionsFor(const wafer::LayerTiming& phase) {
    const wafer::OpTiming* longest = nullptr;
    for (const auto& op : phase.ops) {
        if (op.name.rfind("attention", 0) == 0 || op.adapter) continue;  // no matrix to name
        if (!longest || op.timeS > longest->timeS) longest = &op;
    }
    return longest ? coreRegionsOf(*longest) : CoreRegions{};
}

}  // namespace ws::ui
