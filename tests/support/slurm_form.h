// SPDX-License-Identifier: GPL-3.0-or-later
// The Run on Cluster tests' Slurm request: the dialog switched to its Slurm tab and filled in (1
// task of 1 CPU per node), as a person would. Header-only test support.
#pragma once

#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTabWidget>

#include "ui/cluster/cluster_dialog.h"

inline ws::ui::ClusterDialog* fillSlurmForm(ws::ui::ClusterDialog* dialog, const QString& partition,
                                            int nodes, const QString& timeLimit) {
    if (!dialog) return nullptr;
    dialog->findChild<QTabWidget*>("launcherTabs")->setCurrentIndex(1);
    dialog->findChild<QComboBox*>("slurmPartition")->setEditText(partition);
    dialog->findChild<QSpinBox*>("slurmNodes")->setValue(nodes);
    dialog->findChild<QSpinBox*>("slurmTasksPerNode")->setValue(1);
    dialog->findChild<QSpinBox*>("slurmCpusPerTask")->setValue(1);
    dialog->findChild<QLineEdit*>("slurmTimeLimit")->setText(timeLimit);
    return dialog;
}
