// SPDX-License-Identifier: GPL-3.0-or-later
// Where the studio shows each lesson check subject: see lesson_subjects.h.
#include "ui/lessons/lesson_subjects.h"

#include <QWidget>

#include "engine/config/describe.h"

namespace ws::ui {
namespace {

bool isConfigKey(const QString& subject) {
    // "optimizer.betas[1]": the list's field.
    const std::string key = subject.section(QLatin1Char('['), 0, 0).toStdString();
    for (const auto& field : config::describeFields())
        if (field.path == key) return true;
    return false;
}

}  // namespace

QStringList subjectWidgetNames(const QString& name) {
    const QString subject = name.startsWith(QLatin1String("previous.")) ? name.mid(9) : name;
    if (isConfigKey(subject)) return {subject.section(QLatin1Char('['), 0, 0)};  // its form field
    if (subject.startsWith(QLatin1String("fit."))) return {QStringLiteral("configFit")};
    if (subject == QLatin1String("run.max_resident_layers")) return {QStringLiteral("bufferSlots")};
    if (subject == QLatin1String("run.layers")) return {QStringLiteral("waferPhase")};
    if (subject.startsWith(QLatin1String("run.")))  // state, steps, the phase a pause shows
        return {QStringLiteral("lessonStatus"), QStringLiteral("narrationLine")};
    if (subject.startsWith(QLatin1String("loss."))) return {QStringLiteral("Loss")};
    if (subject.startsWith(QLatin1String("emulated.phase_")))
        return {QStringLiteral("utilizationMap")};
    if (subject.startsWith(QLatin1String("emulated."))) return {QStringLiteral("waferSummary")};
    if (subject.startsWith(QLatin1String("answers.")))  // the run's and the one before it
        return {QStringLiteral("answersSummary0"), QStringLiteral("answersSummary1"),
                QStringLiteral("lessonStatus")};
    if (subject.startsWith(QLatin1String("coord."))) return {QStringLiteral("CoordVerdict")};
    if (subject.startsWith(QLatin1String("sweep.")))
        return {QStringLiteral("TransferStatus"), QStringLiteral("transfer_*")};
    return {};
}

QWidget* subjectWidget(QWidget* root, const QString& subject) {
    for (const QString& name : subjectWidgetNames(subject)) {
        if (name.endsWith(QLatin1Char('*'))) {
            const QString prefix = name.chopped(1);
            for (QWidget* w : root->findChildren<QWidget*>())
                if (w->objectName().startsWith(prefix)) return w;
            continue;
        }
        if (QWidget* w = root->findChild<QWidget*>(name)) return w;
    }
    return nullptr;
}

}  // namespace ws::ui
