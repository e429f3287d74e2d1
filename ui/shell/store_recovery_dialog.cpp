// SPDX-License-Identifier: GPL-3.0-or-later
// The damaged-store dialog (see store_recovery_dialog.h).
#include "ui/shell/store_recovery_dialog.h"

#include <QMessageBox>
#include <QPushButton>
#include <map>
#include <optional>
#include <set>

#include "engine/store/store_recovery.h"

namespace ws::ui {
namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// What the dialog explains for each route it offers, then where the damaged file goes.
QString routesText(const std::filesystem::path& db, const store::StoreHealth& health,
                   const std::set<store::RecoveryMethod>& failed) {
    using store::RecoveryMethod;
    QStringList routes;
    if (!failed.count(RecoveryMethod::Salvage))
        routes << QObject::tr(
            "Salvage copies every run and metric that SQLite can still read into a new store.");
    if (health.backup && !failed.count(RecoveryMethod::Backup))
        routes << QObject::tr(
                      "Restore Backup puts back the last good copy, taken %1 with %n run(s); "
                      "runs recorded after it are not in it.",
                      nullptr, int(health.backup->runs))
                      .arg(qs(health.backup->taken));
    if (!health.backup && !failed.empty()) routes << QObject::tr("There is no backup to restore.");
    routes << QObject::tr(
        "Start Fresh Store sets the damaged file aside and starts an empty store: the runs are "
        "not listed any more, and new runs are recorded again.");
    return routes.join(QLatin1Char(' ')) +
           QObject::tr(
               "\n\nEach way the damaged file is kept beside the store as %1.damaged-"
               "<time>.")
               .arg(qs(db.filename().string()));
}

// The dialog once: the routes not yet tried. nullopt: go on without the store.
std::optional<store::RecoveryMethod> askForRoute(QWidget* parent, const std::filesystem::path& db,
                                                 const store::StoreHealth& health,
                                                 const std::set<store::RecoveryMethod>& failed,
                                                 const QString& failure) {
    using store::RecoveryMethod;
    QMessageBox box(parent);
    box.setObjectName("storeRecoveryBox");
    box.setIcon(QMessageBox::Critical);
    box.setWindowTitle(QObject::tr("Run Store Damaged"));
    const QString file = qs(db.string()).toHtmlEscaped();
    box.setText(
        failure.isEmpty()
            ? QObject::tr("The run store <b>%1</b> is damaged. It has not been changed.").arg(file)
            : failure.toHtmlEscaped());
    box.setInformativeText(QObject::tr("SQLite says: %1\n\n").arg(qs(health.problem)) +
                           routesText(db, health, failed));
    std::map<QAbstractButton*, RecoveryMethod> routes;
    auto add = [&](RecoveryMethod method, const QString& label, const char* name) {
        if (failed.count(method)) return;
        QPushButton* button = box.addButton(label, QMessageBox::AcceptRole);
        button->setObjectName(name);
        routes[button] = method;
        if (!box.defaultButton()) box.setDefaultButton(button);
    };
    add(RecoveryMethod::Salvage, QObject::tr("Salvage"), "salvage");
    if (health.backup) add(RecoveryMethod::Backup, QObject::tr("Restore Backup"), "restoreBackup");
    add(RecoveryMethod::Fresh, QObject::tr("Start Fresh Store"), "startFresh");
    QPushButton* without =
        box.addButton(QObject::tr("Continue Without Runs"), QMessageBox::RejectRole);
    without->setObjectName("continueWithout");
    box.exec();
    const auto chosen = routes.find(box.clickedButton());
    if (chosen == routes.end()) return std::nullopt;
    return chosen->second;
}

void reportRecovered(QWidget* parent, const std::filesystem::path& db, store::RecoveryMethod method,
                     const store::RecoveryReport& report) {
    QMessageBox box(parent);
    box.setObjectName("storeRecoveredBox");
    box.setIcon(QMessageBox::Information);
    box.setWindowTitle(QObject::tr("Run Store Recovered"));
    box.setText(method == store::RecoveryMethod::Fresh
                    ? QObject::tr("A fresh, empty run store starts at %1.\nThe damaged file is "
                                  "kept at %2.")
                          .arg(qs(db.string()), qs(report.damagedKeptAt.string()))
                    : QObject::tr("Recovered %1: %2 run(s) and %3 metric rows.\nThe damaged file "
                                  "is kept at %4.")
                          .arg(qs(db.string()))
                          .arg(report.runs)
                          .arg(report.metrics)
                          .arg(qs(report.damagedKeptAt.string())));
    box.exec();
}

}  // namespace

bool offerStoreRecovery(QWidget* parent, const std::filesystem::path& db,
                        const store::StoreHealth& health) {
    std::set<store::RecoveryMethod> failed;
    QString failure;
    for (;;) {
        const auto method = askForRoute(parent, db, health, failed, failure);
        if (!method) return false;
        auto report = store::recoverStore(db, *method);
        if (report.ok()) {
            reportRecovered(parent, db, *method, *report);
            return true;
        }
        // The engine's first line says what failed ("Salvage failed: ... Nothing was changed");
        // its other lines are the command-line routes, which the buttons are here.
        failed.insert(*method);
        failure = qs(report.error().message).section(QLatin1Char('\n'), 0, 0);
    }
}

}  // namespace ws::ui
