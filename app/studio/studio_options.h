// SPDX-License-Identifier: GPL-3.0-or-later
// StudioOptions: the wafer-studio command line, parsed without side effects so tests can feed
// it argument lists.
//   wafer-studio [CONFIG] [--run | --sweep] [--quit-after-steps N] [--screenshot FILE.png] [--tab
//   NAME]
//                [--db PATH] [--open-run ID] [--set key.path=value]...
// Thread-safety: pure function.
#pragma once

#include <QString>
#include <QStringList>

namespace ws::ui {

struct StudioOptions {
    QString configPath;      // empty: the default preset (presets/gpt-nano.yaml)
    bool run = false;        // start training at once
    bool sweep = false;      // start the config's sweep at once (screenshot + quit at its end)
    int quitAfterSteps = 0;  // > 0: after that many steps, screenshot (if asked) and quit 0
    QString screenshotPath;
    QString tab;            // config | training | wafer | samples | sweeps (case-insensitive)
    QString dbPath;         // empty: the user's run store
    qint64 openRunId = -1;  // >= 0: select this stored run (a sweep shows in the Sweeps tab)
    QStringList overrides;  // --set key.path=value
};

// Parses arguments (argv[0] first). On failure returns false and sets `error` to a message
// naming the argument; `--help` sets `helpText` and returns false with an empty error.
bool parseStudioOptions(const QStringList& arguments, StudioOptions& options, QString& error,
                        QString& helpText);

}  // namespace ws::ui
