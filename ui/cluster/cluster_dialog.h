// ClusterDialog: the Run menu's "Run on Cluster…" form. Hosts (a comma list) or an Open MPI
// hostfile (with a file picker), processes per host and threads per process, the saved config it
// runs (or the run it resumes) and the job's systems (runconfig.num_csx: changed here it goes to
// the job as `--set runconfig.num_csx=N`, the config file untouched unless "also save it in the
// file" is ticked); below them the exact mpirun command line it will start, live and
// copyable, and how many processes that makes for how many systems. Start checks the plan first
// (cluster_plan.h: mpirun missing, a hostfile that cannot be read, more processes than systems,
// ...) and, when something must be fixed, says what in a message box ("clusterProblemBox",
// window-modal, opened without blocking) and stays open. Widgets by object name for tests:
// "hostsEdit", "hostfileEdit", "hostfileMode", "browseHostfile", "processesPerHost",
// "threadsPerProcess", "systemsSpin", "systemsNote", "saveSystemsBox", "commandLine",
// "copyCommand", "processSummary", "startButton". GUI thread.
#pragma once

#include <QDialog>
#include <functional>

#include "ui/cluster/cluster_plan.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QMessageBox;
class QPlainTextEdit;
class QPushButton;
class QRadioButton;
class QSpinBox;

namespace ws::ui {

class ClusterDialog : public QDialog {
    Q_OBJECT
public:
    // `initial` gives everything but what the form edits (config, store, binaries, root) and the
    // form's starting values; `systems` is the config's runconfig.num_csx.
    ClusterDialog(const ClusterPlan& initial, int systems, QWidget* parent = nullptr);

    // What else a changed num_csx must satisfy (the config's own rules, e.g. batch_size
    // divisible by it): a message per problem, empty when it can run.
    void setSystemsCheck(std::function<QStringList(int systems)> check) {
        m_systemsCheck = std::move(check);
        update();
    }

    ClusterPlan plan() const;  // as the form says now
    int systems() const;       // the job's runconfig.num_csx
    // Ticked: the caller saves the changed num_csx in the config file as well.
    bool saveSystemsInFile() const;
    QString shownCommandLine() const;
    // The problems Start would report now (empty: it would start).
    QStringList problems() const;
    // The last problem box Start opened (nullptr if none is open).
    QMessageBox* problemBox() const { return m_problemBox; }

public slots:
    void accept() override;  // checks the plan; closes only when it can start

private:
    void update();
    void chooseHostfile();

    ClusterPlan m_base;
    int m_configSystems = 1;  // the saved config's (or the resumed run's) num_csx
    std::function<QStringList(int)> m_systemsCheck;
    QRadioButton* m_hostsMode;
    QRadioButton* m_hostfileMode;
    QLineEdit* m_hosts;
    QLineEdit* m_hostfile;
    QPushButton* m_browse;
    QSpinBox* m_processes;
    QSpinBox* m_threads;
    QSpinBox* m_systemsSpin;
    QLabel* m_systemsNote;
    QCheckBox* m_saveSystems;
    QLabel* m_summary;
    QPlainTextEdit* m_command;
    QMessageBox* m_problemBox = nullptr;
};

}  // namespace ws::ui
