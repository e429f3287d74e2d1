// SPDX-License-Identifier: GPL-3.0-or-later
// Resuming a stopped or finished run from the studio: checkResume() finds the run's newest
// checkpoint and asks the engine (session/resume.h) whether the run can continue exactly with the
// chosen config; ResumeDialog shows the answer: what will happen, or why not (the config changes
// that would break exactness, a damaged or replaced file), offering "Resume anyway" only where the
// engine allows it (SessionOptions::allowConfigChange). GUI thread only; checkResume reads files
// and the store synchronously (a checkpoint header and a few rows: fast).
#pragma once

#include <QDialog>
#include <QString>
#include <QStringList>
#include <filesystem>
#include <optional>

#include "engine/config/config_yaml.h"

class QLabel;
class QPushButton;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

struct ResumeCheck {
    int64_t runId = -1;
    QString runName;
    std::filesystem::path folder;  // the checkpoint resumed from (empty when none was found)
    int64_t step = 0;              // its global step
    std::optional<config::LoadedConfig> config;  // the config the resumed run would train with
    std::optional<config::LoadedConfig> checkpointConfig;  // the checkpoint's own
    bool usesEditorConfig = false;  // `config` is the Config tab's, not the checkpoint's
    QString error;                  // why it cannot resume at all (empty: it can)
    QStringList changes;            // settings that would change training (checkpoint -> now)
    QStringList notes;              // differences that keep the resume exact
    bool canForce = false;          // "Resume anyway" is possible (allowConfigChange)
    bool atLastStep = false;        // the checkpoint is at runconfig.max_steps: nothing to train

    bool canResumeExactly() const { return error.isEmpty() && changes.isEmpty() && !atLastStep; }
};

// Checks run `runId` of `store`: its newest checkpoint, then `editorConfig` (the Config tab's,
// used when it describes the same model; else the checkpoint's own config) against it.
ResumeCheck checkResume(store::RunStore* store, int64_t runId,
                        const std::optional<config::LoadedConfig>& editorConfig);

class ResumeDialog : public QDialog {
    Q_OBJECT
public:
    enum Choice { Cancel, ResumeExact, ResumeAnyway, ResumeWithCheckpointConfig };

    ResumeDialog(const ResumeCheck& check, QWidget* parent = nullptr);
    Choice choice() const { return m_choice; }
    QString message() const;  // the text shown (tests)
    QPushButton* resumeButton() const { return m_resume; }
    QPushButton* anywayButton() const { return m_anyway; }
    QPushButton* ownConfigButton() const { return m_ownConfig; }

private:
    Choice m_choice = Cancel;
    QLabel* m_text;
    QPushButton* m_resume = nullptr;
    QPushButton* m_anyway = nullptr;
    QPushButton* m_ownConfig = nullptr;
};

}  // namespace ws::ui
