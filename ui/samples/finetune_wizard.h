// SPDX-License-Identifier: GPL-3.0-or-later
// FinetuneWizard: point-and-click fine-tuning in four pages, over engine/finetune's planFinetune
// (the same plan `wafer finetune` runs): (1) the base model — the shipped one, a previous run from
// the run store, a run / checkpoint / Hugging Face GPT-2 folder (used in place), or a model of the
// local Hugging Face cache (listed with architecture, size and whether it can be used), with its
// size and tokenizer or the reason it cannot be used (finetune::inspectBase, the plan's own check,
// which reads no weights); (2) the text to fine-tune on (dropped or picked files and folders),
// with the plan's token count, held-out split and time per epoch, and a warning naming any file
// that does not look like text (used only when the user ticks "Train on it anyway"), or for chat
// and instruction records (.jsonl .json .csv .tsv .zip) the preview of what the run trains on
// (RecordPreviewPanel: format, column mapping, examples with the untrained part greyed out,
// lengths against the sequence length, warnings), computed with the plan; (3) the
// method: LoRA adapters or a full fine-tune, and the precision, with both methods' trained
// parameters, MemoryX bytes and estimated time side by side (FinetuneMethodPanel); (4) the
// plan's hyperparameters, editable, with how the step count follows from epochs and data, the
// live time estimate and whether the activations fit the wafer (the default learning rate
// explained from the plan's own rule), and the run's name (default: the base and the data,
// distinct from the store's runs: finetune::suggestRunName). The data files of the last Run
// come back the next time the wizard opens (QSettings), less those that no longer exist, which a
// note on page 2 names. Planning
// reads and tokenizes the text, so it runs on the wizard's own thread pool and the newest request
// wins; the GUI never waits on it (the destructor does, for a job in flight). Finish hands back
// choice(): the config to train, its parent run, the base to compare with and a sample prompt.
// GUI thread only.
#pragma once

#include <QString>
#include <QStringList>
#include <QThreadPool>
#include <QWizard>
#include <cstdint>
#include <optional>

#include "engine/finetune/finetune_plan.h"
#include "engine/session/record_preview.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QRadioButton;
class QSpinBox;
class QTimer;
class QTreeWidget;
class QWizardPage;

namespace ws::store {
class RunStore;
}

namespace ws::ui {

// What Finish starts: the plan's config with page 4's edits, ready for RunController::start.
struct FinetuneChoice {
    config::LoadedConfig config;
    std::optional<int64_t> parentRun;  // the base run when a run was chosen
    QString basePath;                  // the base as SamplesTab loads it (for "Compare with")
    QString runName;                   // as typed, else the suggested default (never empty)
    QString samplePrompt;              // words of the held-out text, for the Samples tab
};

class FinetuneMethodPanel;
class RecordPreviewPanel;

class FinetuneWizard : public QWizard {
    Q_OBJECT
public:
    enum PageId { BasePage = 0, DataPage = 1, MethodPage = 2, SettingsPage = 3 };

    // `store` may be null (no previous runs to offer); `dbPath` empty: the default store.
    FinetuneWizard(store::RunStore* store, const QString& dbPath, QWidget* parent = nullptr);
    ~FinetuneWizard() override;  // waits for a planning job in flight

    // The base model shipped with the app (appDataDir()/resources/base-model).
    static QString shippedBaseModel();

    // Page 1, as the user would choose it.
    void useShippedBase();
    bool useRun(int64_t runId);  // false when the run is not in the list
    void useFolder(const QString& path);
    // The local Hugging Face cache's models (modelio::listCachedHfModels), listed again from disk;
    // the ones this version computes can be chosen. useCachedModel: false when `id` is not
    // listed or cannot be used.
    void reloadCachedModels();
    bool useCachedModel(const QString& id);
    QStringList cachedModelIds() const;  // every listed id, usable or not, in list order
    QString baseRef() const;             // what planFinetune gets as its base ("" if none chosen)
    bool baseOk() const { return m_baseOk; }
    QString baseInfo() const;  // the facts or the error shown under the choice

    // Page 2. The last Run's files are there when the wizard opens (dataNote() names those left
    // out because they no longer exist).
    void addDataPaths(const QStringList& paths);
    void clearData();
    QStringList dataPaths() const;
    // Files of the data that do not look like plain text ("'x.pdf' looks like a PDF document,
    // ..."), as the newest plan found them; they block Next unless allowed.
    QStringList nonTextFiles() const { return m_nonText; }
    QString dataNote() const;
    void setAllowBinary(bool allow);
    bool allowBinary() const;
    // Instruction and chat records (every file a .jsonl, .json, .csv, .tsv or .zip): the page
    // shows the preview of what the run trains on (RecordPreviewPanel), computed with the plan;
    // its choices go into the request as overrides. Text files keep the text page.
    bool readsRecords() const;
    RecordPreviewPanel* recordPanel() const { return m_records; }
    const std::optional<session::RecordPreview>& recordPreview() const { return m_preview; }
    // The request planFinetune gets (the wizard's choices, the panel's overrides included).
    finetune::FinetuneRequest request() const;

    // Page 3: the method (LoRA or full, its settings, the precision).
    FinetuneMethodPanel* method() const { return m_method; }

    // Page 4 (0 max steps: from epochs).
    void setEpochs(int epochs);
    void setMaxSteps(int steps);
    void setFreezeEmbeddings(bool freeze);
    void setFreezeBlocks(int blocks);
    void setLearningRate(double lr);
    void setWarmupSteps(int steps);
    void setOverrides(const QString& overrides);  // "key=value" separated by spaces, as --set
    void setRunName(const QString& name);
    // The name the run gets when the Run name field is left empty (its placeholder).
    QString suggestedRunName() const;
    QString settingsSubtitle() const;  // page 4's subtitle: the defaults, the LR explained

    // The newest finished plan, if it succeeded; its error otherwise.
    bool isPlanning() const { return m_running || m_pending; }
    const std::optional<finetune::FinetunePlan>& plan() const { return m_plan; }
    QString planError() const { return m_planError; }
    QString dataSummary() const;       // page 2's summary text
    QString settingsEstimate() const;  // page 4's estimate text
    FinetuneChoice choice() const;

    // Run: remembers the data files for the next time, then closes as accepted.
    void accept() override;

signals:
    void planFinished();  // a planning job ended (plan() or planError() is current)

private:
    void restoreDataPaths();
    QWizardPage* makeBasePage();
    QWizardPage* makeDataPage();
    QWizardPage* makeMethodPage();
    QWizardPage* makeSettingsPage();
    void reloadRuns();
    void inspectBase();
    void schedulePlan();
    void startPlan();
    void onPlanned(uint64_t generation, Result<finetune::FinetunePlan> result, QStringList nonText,
                   std::optional<session::RecordPreview> preview);
    void showPlan();
    void showDataKind();
    void refreshComplete();

    store::RunStore* m_store;
    QString m_dbPath;
    QThreadPool m_pool;
    QTimer* m_planTimer;
    uint64_t m_generation = 0;
    bool m_running = false;
    bool m_pending = false;
    std::optional<finetune::FinetunePlan> m_plan;
    QString m_planError;
    bool m_baseOk = false;
    QString m_basePath;  // resolved path of the chosen base
    int m_baseLayers = 0;

    // Page 1
    QWizardPage* m_basePage;
    QRadioButton* m_shipped;
    QRadioButton* m_fromRun;
    QRadioButton* m_fromFolder;
    QRadioButton* m_fromCache;
    QTreeWidget* m_runs;
    QLineEdit* m_folder;
    QTreeWidget* m_cached;  // the Hugging Face cache's models
    QLabel* m_baseInfo;
    // Page 2
    QWizardPage* m_dataPage;
    QListWidget* m_files;
    QCheckBox* m_allowBinary;
    QLabel* m_summary;
    QLabel* m_dataNote;
    QStringList m_nonText;
    RecordPreviewPanel* m_records;
    std::optional<session::RecordPreview> m_preview;  // the newest, for record files
    // Page 3
    QWizardPage* m_methodPage;
    FinetuneMethodPanel* m_method;
    // Page 4
    QWizardPage* m_settingsPage;
    QLineEdit* m_learningRate;
    QSpinBox* m_epochs;
    QSpinBox* m_maxSteps;
    QSpinBox* m_warmup;
    QCheckBox* m_freezeEmbeddings;
    QSpinBox* m_freezeBlocks;
    QLineEdit* m_overrides;
    QLineEdit* m_runName;
    QLabel* m_estimate;
    std::vector<std::string> m_takenNames;  // every run's name in the store
    bool m_lrEdited = false;
    bool m_warmupEdited = false;
};

}  // namespace ws::ui
