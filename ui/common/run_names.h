// SPDX-License-Identifier: GPL-3.0-or-later
// Short names for runs where room is scarce (the Runs dock, chart legends). A sweep trial is
// named "<sweep> #62: hidden_size=128 num_heads=8 learning_rate=0.00390625 parametrization=sp
// seed=0" (engine/sweep/runner.cpp); in a 300 px column that read "#62: hidd…zation=sp". Its
// short label is "#62 width 128 · heads 8 · lr 2⁻⁸ · SP · seed 0": keys people say
// (width, lr, heads, layers, ffn, batch), rates that are powers of two as 2^k, parametrizations
// as SP / μP. Among a sweep's trials, what every trial shares and values that follow from an
// earlier key (heads and ffn linked to the width) are left out too: "#62 width 128 · lr 2⁻⁸ ·
// SP". Full names stay in tooltips. Pure functions; GUI thread or any.
#pragma once

#include <QString>
#include <QStringList>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace ws::ui {

struct TrialName {
    QString sweep;                                    // the sweep's name before " #N"
    QString number;                                   // "#62"
    std::vector<std::pair<QString, QString>> values;  // (key's last part, value) in name order
};

// The parts of a trial's run name; nullopt for a name that is not a trial's.
std::optional<TrialName> parseTrialName(const QString& name);

// "width 128", "lr 2⁻⁸", "SP": one key=value part as a label says it.
QString shortTrialValue(const QString& key, const QString& value);

// "#62 width 128 · lr 2⁻⁸ · SP" from a trial's parts (thin spaces around the dots), leaving
// out the keys in `omit`.
QString shortTrialLabel(const TrialName& trial, const QStringList& omit = {});

// Labels for the trials of one sweep (by run id, from their run names): each leaves out the
// keys whose value every trial shares and the keys whose value follows from an earlier key's
// (one value of it for each value of the other, and the other way round). Names that are not
// trials' get no label.
std::map<int64_t, QString> sweepTrialLabels(const std::vector<std::pair<int64_t, QString>>& names);

// A run's name for a chart legend: a trial's short label, other names as they are.
QString legendRunName(const QString& name);

}  // namespace ws::ui
