// SPDX-License-Identifier: GPL-3.0-or-later
// Short run names (issue 31): a μP sweep's trial names, which the Runs dock cut to
// "#62: hidd…zation=sp", shorten to what tells the trials apart, in the words people use
// (width, lr 2⁻⁸, SP / μP); linked keys (heads and ffn follow the width) and shared ones
// (the seed) are left out among a sweep's trials, kept in a single trial's legend name.
#include <QTest>
#include <cmath>
#include <set>

#include "ui/common/run_names.h"

using namespace ws::ui;

namespace {

// A trial name as engine/sweep/runner.cpp writes it for presets/mup-sweep.yaml.
QString mupTrial(int number, int width, int log2Lr, const char* parametrization) {
    return QStringLiteral(
               "sweep 2026-03-01 10:15 #%1: hidden_size=%2 num_heads=%3 filter_size=%4 "
               "learning_rate=%5 parametrization=%6 seed=0")
        .arg(number)
        .arg(width)
        .arg(width / 16)
        .arg(4 * width)
        .arg(QString::number(std::exp2(log2Lr), 'g', 17))
        .arg(QLatin1String(parametrization));
}

}  // namespace

class RunNamesTest : public QObject {
    Q_OBJECT
private slots:
    void aTrialNameIsParsed() {
        const auto t = parseTrialName(mupTrial(62, 128, -8, "sp"));
        QVERIFY(t);
        QCOMPARE(t->sweep, QStringLiteral("sweep 2026-03-01 10:15"));
        QCOMPARE(t->number, QStringLiteral("#62"));
        QCOMPARE(t->values.size(), size_t(6));
        QCOMPARE(t->values[3].second, QStringLiteral("0.00390625"));
        QVERIFY(!parseTrialName(QStringLiteral("gpt-nano")));
        QVERIFY(!parseTrialName(QStringLiteral("lesson 5: sparsity, step 2")));
    }

    void valuesReadAsPeopleSayThem() {
        QCOMPARE(shortTrialValue("hidden_size", "128"), QStringLiteral("width 128"));
        QCOMPARE(shortTrialValue("learning_rate", "0.00390625"), QStringLiteral("lr 2⁻⁸"));
        QCOMPARE(shortTrialValue("learning_rate", "0.003"), QStringLiteral("lr 0.003"));
        QCOMPARE(shortTrialValue("parametrization", "mup"), QString::fromUtf8("μP"));
        QCOMPARE(shortTrialValue("parametrization", "sp"), QStringLiteral("SP"));
        QCOMPARE(shortTrialValue("dropout", "0.1"), QStringLiteral("dropout 0.1"));
    }

    void aSweepsTrialsKeepWhatTellsThemApart() {
        std::vector<std::pair<int64_t, QString>> names;
        int number = 0;
        for (int width : {32, 64, 128})
            for (int lr = -10; lr <= -6; ++lr)
                for (const char* p : {"sp", "mup"})
                    names.emplace_back(100 + number, mupTrial(number, width, lr, p)), ++number;
        const auto labels = sweepTrialLabels(names);
        QCOMPARE(labels.size(), names.size());
        // #62's would be cut in a 300 px column; this fits ("#62: hidd…zation=sp" before).
        const QString label = labels.at(100 + 25);
        QCOMPARE(label, QString::fromUtf8("#25 width 128\u2009·\u2009lr 2⁻⁸\u2009·\u2009μP"));
        QVERIFY(label.size() < 32);
        // Every label is different: nothing that tells trials apart was dropped.
        std::set<QString> distinct;
        for (const auto& [id, l] : labels) distinct.insert(l);
        QCOMPARE(distinct.size(), labels.size());
        // One trial alone keeps everything (nothing to compare with), sweep name dropped.
        QCOMPARE(legendRunName(mupTrial(3, 64, -7, "sp")),
                 QString::fromUtf8("#3 width 64\u2009·\u2009heads 4\u2009·\u2009ffn "
                                   "256\u2009·\u2009lr 2⁻⁷\u2009·\u2009SP\u2009·\u2009seed 0"));
        QCOMPARE(legendRunName(QStringLiteral("gpt-nano")), QStringLiteral("gpt-nano"));
        // Two trials: a key that differs is kept even though it pairs with another one.
        const auto two =
            sweepTrialLabels({{1, mupTrial(0, 32, -8, "sp")}, {2, mupTrial(1, 64, -8, "mup")}});
        QVERIFY2(two.at(1).contains("SP") && two.at(2).contains("width 64"),
                 qPrintable(two.at(1) + " / " + two.at(2)));
    }
};

QTEST_GUILESS_MAIN(RunNamesTest)
#include "run_names_test.moc"
