// SPDX-License-Identifier: GPL-3.0-or-later
// ClusterDialog: the Run menu's "Run on Cluster…" form, with a tab per way to start the job.
// Open MPI: hosts (a comma list) or an Open MPI hostfile (with a file picker), processes per host
// and threads per process. Slurm: partition (sinfo's, listed with their state and time limit),
// nodes, tasks per node, CPUs per task and the time limit. Below both the saved config it
// runs (or the run it resumes) and the job's systems (runconfig.num_csx: changed here it goes to
// the job as `--set runconfig.num_csx=N`, the config file untouched unless "also save it in the
// file" is ticked); below them the exact mpirun command line it will start (with Slurm: the
// batch script it will submit), live and copyable, and how many processes that makes for how
// many systems. Start checks the plan first
// (cluster_plan.h: mpirun missing, a hostfile that cannot be read, more processes than systems,
// ...) and, when something must be fixed, says what in a message box ("clusterProblemBox",
// window-modal, opened without blocking) and stays open. Widgets by object name for tests:
// "hostsEdit", "hostfileEdit", "hostfileMode", "browseHostfile", "processesPerHost",
// "threadsPerProcess", "launcherTabs", "slurmPartition", "slurmNodes", "slurmTasksPerNode",
// "slurmCpusPerTask", "slurmTimeLimit", "slurmClusterNote", "systemsSpin", "systemsNote",
// "saveSystemsBox", "commandCaption", "commandLine", "copyCommand", "processSummary",
// "startButton". GUI thread.
#pragma once

#include <QDialog>
#include <QPointer>
#include <functional>

#include "ui/cluster/cluster_plan.h"
#include "ui/cluster/slurm_script.h"

class QCheckBox;
class QComboBox;
class QTabWidget;
class QLabel;
class QLineEdit;
class QMessageBox;
class QPlainTextEdit;
class QProcess;
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
    ~ClusterDialog() override;

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
    QMessageBox* problemBox() const;

public slots:
    void accept() override;  // checks the plan; closes only when it can start

private:
    QWidget* makeMpirunPage();
    QWidget* makeSlurmPage();
    void update();
    void chooseHostfile();
    // Fills the partition list from sinfo (in the background: a controller that does not answer
    // makes sinfo wait); the note says what sinfo said when it fails.
    void listPartitions();

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
    QTabWidget* m_launchers;
    QComboBox* m_partition;
    QSpinBox* m_nodes;
    QSpinBox* m_tasksPerNode;
    QSpinBox* m_cpusPerTask;
    QLineEdit* m_timeLimit;
    QLabel* m_slurmNote;
    QLabel* m_commandCaption;
    QLabel* m_launcherNote;
    QPushButton* m_start;
    QProcess* m_sinfo = nullptr;         // asking for the partitions now
    QList<SlurmPartition> m_partitions;  // sinfo's answer
    bool m_partitionsAsked = false;
    QSpinBox* m_systemsSpin;
    QLabel* m_systemsNote;
    QCheckBox* m_saveSystems;
    QLabel* m_summary;
    QPlainTextEdit* m_command;
    // Cleared by Qt when the box goes (closed, or deleted with the dialog).
    QPointer<QMessageBox> m_problemBox;
};

}  // namespace ws::ui
