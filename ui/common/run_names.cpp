// SPDX-License-Identifier: GPL-3.0-or-later
// Short run names: see run_names.h.
#include "ui/common/run_names.h"

#include <QRegularExpression>
#include <cmath>
#include <set>

namespace ws::ui {
namespace {

// The key names people use for the swept keys that come up most; others keep their last part.
QString spokenKey(const QString& key) {
    static const std::map<QString, QString> kSpoken = {
        {QStringLiteral("hidden_size"), QStringLiteral("width")},
        {QStringLiteral("learning_rate"), QStringLiteral("lr")},
        {QStringLiteral("num_heads"), QStringLiteral("heads")},
        {QStringLiteral("num_hidden_layers"), QStringLiteral("layers")},
        {QStringLiteral("filter_size"), QStringLiteral("ffn")},
        {QStringLiteral("batch_size"), QStringLiteral("batch")},
        {QStringLiteral("weight_decay"), QStringLiteral("wd")},
        {QStringLiteral("max_sequence_length"), QStringLiteral("seq")},
    };
    const auto it = kSpoken.find(key);
    return it == kSpoken.end() ? key : it->second;
}

// -8 -> "⁻⁸": an exponent written as one, narrower than "^-8" in a tight column.
QString superscript(long exponent) {
    static const char16_t kDigits[] = u"⁰¹²³⁴⁵⁶⁷⁸⁹";
    QString out;
    for (const QChar c : QString::number(exponent))
        out += c == QLatin1Char('-') ? QChar(u'⁻') : QChar(kDigits[c.unicode() - u'0']);
    return out;
}

// 0.00390625 -> "2⁻⁸"; other numbers to 3 significant digits; text as it is.
QString shortNumber(const QString& value, bool rate) {
    bool ok = false;
    const double v = value.toDouble(&ok);
    if (!ok || !std::isfinite(v)) return value;
    if (rate && v > 0) {
        const double e = std::log2(v);
        if (std::abs(e - std::round(e)) < 1e-9)
            return QStringLiteral("2") + superscript(std::lround(e));
    }
    if (v == std::round(v) && std::abs(v) < 1e9) return QString::number(qint64(v));
    return QString::number(v, 'g', 3);
}

}  // namespace

std::optional<TrialName> parseTrialName(const QString& name) {
    // "<sweep> #N: key=value key=value ..." (engine/sweep/runner.cpp, describeValues).
    static const QRegularExpression kTrial(QStringLiteral("^(.*?)\\s*(#\\d+): (.*)$"));
    const QRegularExpressionMatch m = kTrial.match(name);
    if (!m.hasMatch()) return std::nullopt;
    TrialName trial;
    trial.sweep = m.captured(1);
    trial.number = m.captured(2);
    for (const QString& part : m.captured(3).split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const qsizetype eq = part.indexOf(QLatin1Char('='));
        if (eq <= 0) return std::nullopt;
        trial.values.emplace_back(part.left(eq), part.mid(eq + 1));
    }
    return trial;
}

QString shortTrialValue(const QString& key, const QString& value) {
    if (key == QLatin1String("parametrization")) {
        if (value == QLatin1String("mup")) return QStringLiteral("μP");
        if (value == QLatin1String("sp")) return QStringLiteral("SP");
        return value.toUpper();
    }
    const QString spoken = spokenKey(key);
    return spoken + QLatin1Char(' ') + shortNumber(value, spoken == QLatin1String("lr"));
}

QString shortTrialLabel(const TrialName& trial, const QStringList& omit) {
    QStringList parts;
    for (const auto& [key, value] : trial.values)
        if (!omit.contains(key)) parts << shortTrialValue(key, value);
    if (parts.isEmpty()) return trial.number;
    // Thin spaces around the dots: a narrow column holds a few more letters.
    return trial.number + QLatin1Char(' ') + parts.join(QStringLiteral("\u2009·\u2009"));
}

std::map<int64_t, QString> sweepTrialLabels(const std::vector<std::pair<int64_t, QString>>& names) {
    std::vector<std::pair<int64_t, TrialName>> trials;
    for (const auto& [id, name] : names)
        if (auto t = parseTrialName(name)) trials.emplace_back(id, std::move(*t));
    std::map<int64_t, QString> labels;
    if (trials.empty()) return labels;
    // Every key any trial names, in the order they come.
    QStringList keys;
    for (const auto& [id, t] : trials)
        for (const auto& kv : t.values)
            if (!keys.contains(kv.first)) keys << kv.first;
    auto valueOf = [](const TrialName& t, const QString& key) -> QString {
        for (const auto& [k, v] : t.values)
            if (k == key) return v;
        return QStringLiteral("\x1f");  // absent: a value of its own
    };
    QStringList omit;
    if (trials.size() > 1) {
        for (const QString& key : keys) {
            std::set<QString> seen;
            for (const auto& [id, t] : trials) seen.insert(valueOf(t, key));
            if (seen.size() == 1) omit << key;  // every trial has the same
        }
        // A key whose values pair one to one with an earlier kept key's says nothing more
        // (heads and ffn linked to the width), once the pairing was seen repeated: among two
        // trials any two keys that differ would pair up.
        std::map<QString, size_t> distinct;
        for (const QString& key : keys) {
            std::set<QString> seen;
            for (const auto& [id, t] : trials) seen.insert(valueOf(t, key));
            distinct[key] = seen.size();
        }
        for (qsizetype b = 0; b < keys.size(); ++b) {
            if (omit.contains(keys[b])) continue;
            for (qsizetype a = 0; a < b; ++a) {
                if (omit.contains(keys[a]) || distinct[keys[a]] >= trials.size()) continue;
                std::map<QString, QString> forward, backward;
                bool pairs = true;
                for (const auto& [id, t] : trials) {
                    const QString va = valueOf(t, keys[a]), vb = valueOf(t, keys[b]);
                    const auto f = forward.emplace(va, vb).first;
                    const auto r = backward.emplace(vb, va).first;
                    if (f->second != vb || r->second != va) {
                        pairs = false;
                        break;
                    }
                }
                if (pairs) {
                    omit << keys[b];
                    break;
                }
            }
        }
    }
    for (const auto& [id, t] : trials) labels[id] = shortTrialLabel(t, omit);
    return labels;
}

QString legendRunName(const QString& name) {
    const auto trial = parseTrialName(name);
    return trial ? shortTrialLabel(*trial) : name;
}

}  // namespace ws::ui
