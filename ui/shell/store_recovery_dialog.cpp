// The damaged-store dialog (see store_recovery_dialog.h).
#include "ui/shell/store_recovery_dialog.h"

#include <QMessageBox>
#include <QPushButton>

#include "engine/store/store_recovery.h"

namespace ws::ui {

bool offerStoreRecovery(QWidget* parent, const std::filesystem::path& db,
                        const store::StoreHealth& health) {
    QMessageBox box(parent);
    box.setObjectName("storeRecoveryBox");
    box.setIcon(QMessageBox::Critical);
    box.setWindowTitle(QObject::tr("Run Store Damaged"));
    box.setText(QObject::tr("The run store <b>%1</b> is damaged. It has not been changed.")
                    .arg(QString::fromStdString(db.string()).toHtmlEscaped()));
    QString info = QObject::tr(
                       "SQLite says: %1\n\nSalvage copies every run and metric that "
                       "SQLite can still read into a new store.")
                       .arg(QString::fromStdString(health.problem));
    if (health.backup) {
        info += QObject::tr(
                    " Restore Backup puts back the last good copy, taken %1 with %n "
                    "run(s); runs recorded after it are not in it.",
                    nullptr, int(health.backup->runs))
                    .arg(QString::fromStdString(health.backup->taken));
    }
    info += QObject::tr(
                "\n\nEither way the damaged file is kept beside the store as %1.damaged-"
                "<time>.")
                .arg(QString::fromStdString(db.filename().string()));
    box.setInformativeText(info);
    QPushButton* salvage = box.addButton(QObject::tr("Salvage"), QMessageBox::AcceptRole);
    salvage->setObjectName("salvage");
    QPushButton* restore = nullptr;
    if (health.backup) {
        restore = box.addButton(QObject::tr("Restore Backup"), QMessageBox::AcceptRole);
        restore->setObjectName("restoreBackup");
    }
    QPushButton* without =
        box.addButton(QObject::tr("Continue Without Runs"), QMessageBox::RejectRole);
    without->setObjectName("continueWithout");
    box.setDefaultButton(salvage);
    box.exec();
    if (box.clickedButton() != salvage && (!restore || box.clickedButton() != restore))
        return false;

    const auto method = box.clickedButton() == salvage ? store::RecoveryMethod::Salvage
                                                       : store::RecoveryMethod::Backup;
    auto report = store::recoverStore(db, method);
    if (!report.ok()) {
        QMessageBox::critical(parent, QObject::tr("Recovery Failed"),
                              QString::fromStdString(report.error().message));
        return false;
    }
    QMessageBox::information(
        parent, QObject::tr("Run Store Recovered"),
        QObject::tr("Recovered %1: %2 run(s) and %3 metric rows.\nThe damaged file is kept at %4.")
            .arg(QString::fromStdString(db.string()))
            .arg(report->runs)
            .arg(report->metrics)
            .arg(QString::fromStdString(report->damagedKeptAt.string())));
    return true;
}

}  // namespace ws::ui
