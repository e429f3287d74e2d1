// SPDX-License-Identifier: GPL-3.0-or-later
// The Run on Cluster tests' config: presets/gpt-nano.yaml made tiny (2 layers x 32 wide, 4
// sequences of 32 tokens), with `systems` emulated systems, a log line every `logSteps` steps,
// no evaluation, and steps enough to train until the test stops it. Header-only test support.
#pragma once

#include <QFile>
#include <QString>

inline QString tinyClusterConfig(int systems, int logSteps) {
    QFile preset(WAFER_SOURCE_DIR "/presets/gpt-nano.yaml");
    if (!preset.open(QIODevice::ReadOnly)) qFatal("cannot read presets/gpt-nano.yaml");
    QString yaml = QString::fromUtf8(preset.readAll());
    yaml.replace("../resources/corpus", WAFER_SOURCE_DIR "/resources/corpus");
    yaml.replace("hidden_size: 128", "hidden_size: 32");
    yaml.replace("num_hidden_layers: 4", "num_hidden_layers: 2");
    yaml.replace("filter_size: 512", "filter_size: 64");
    yaml.replace("max_sequence_length: 128", "max_sequence_length: 32");
    yaml.replace("batch_size: 16", "batch_size: 4");
    yaml.replace("max_steps: 600", "max_steps: 1000000");
    yaml.replace("log_steps: 10", QString("log_steps: %1").arg(logSteps));
    yaml.replace("eval_frequency: 100", "eval_frequency: 0");
    yaml.replace("num_csx: 1", QString("num_csx: %1").arg(systems));
    return yaml;
}
