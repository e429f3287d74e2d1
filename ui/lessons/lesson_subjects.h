// SPDX-License-Identifier: GPL-3.0-or-later
// Where the studio shows each lesson check subject (engine/lesson/condition.h), so a try-it
// never asks about something the learner cannot find on screen: a config key on the Config
// tab's form, fit.* in the Config tab's "On the wafer" line, run.* in the Lessons dock's status
// line and the narration line, loss.* on the loss chart, emulated.* in the Wafer tab's summary
// and heatmap, run.max_resident_layers in the weight buffer row, coord.* and sweep.* on the
// Sweeps tab. tests/ui/lessons/lesson_subjects_test.cpp holds every shipped try-it to it.
// Pure functions; GUI thread only where they take widgets.
#pragma once

#include <QString>
#include <QStringList>

class QWidget;

namespace ws::ui {

// The object names of the widgets that show `subject` ("previous." is shown where the subject
// is: the earlier run was shown the same way). A trailing * matches a prefix. Empty: the studio
// shows it nowhere.
QStringList subjectWidgetNames(const QString& subject);

// The first widget under `root` that shows `subject`; null when none exists.
QWidget* subjectWidget(QWidget* root, const QString& subject);

}  // namespace ws::ui
