// SPDX-License-Identifier: GPL-3.0-or-later
// The run store survives what a real studio does beside a CLI on the same file (issue 12's
// blocker): the studio's Save As dialog, a folder view and MIME sniffing open and close the store's
// files while `wafer train --db` processes write into it and close their connections, round after
// round, with the studio writing too. After each CLI process the WAL must still be there (no
// process took itself for the last connection), and at the end SQLite's integrity_check passes
// and every run and metric of both sides is present. And a damaged store is offered recovery.
#include <SQLiteCpp/Database.h>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileSystemModel>
#include <QMessageBox>
#include <QMimeDatabase>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>
#include <fstream>

#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"
#include "support/gui_test.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"

namespace {

using namespace ws;

const QStringList kTinyArgs = {"--set", "model.hidden_size=32",
                               "--set", "model.num_hidden_layers=1",
                               "--set", "model.num_heads=2",
                               "--set", "model.filter_size=64",
                               "--set", "train_input.max_sequence_length=32",
                               "--set", "train_input.batch_size=2",
                               "--set", "eval_input.batch_size=2",
                               "--set", "runconfig.log_steps=1",
                               "--set", "wafer.emulate=false"};

// What the studio's own widgets do to the folder: a Save As dialog on the store file, a folder
// model listing it, MIME sniffing by content, and a plain read.
void touchTheFolderLikeTheGui(QWidget* parent, const QString& folder, const QString& db) {
    QFileDialog dialog(parent, "Save As", folder);
    dialog.setOption(QFileDialog::DontUseNativeDialog);
    dialog.setAcceptMode(QFileDialog::AcceptSave);
    dialog.selectFile(db);
    dialog.show();
    QTest::qWait(150);
    dialog.reject();

    QFileSystemModel model;
    QSignalSpy loaded(&model, &QFileSystemModel::directoryLoaded);
    model.setRootPath(folder);
    loaded.wait(2000);

    QMimeDatabase mime;
    for (const char* suffix : {"", "-wal", "-shm"})
        mime.mimeTypeForFile(db + QString::fromLatin1(suffix), QMimeDatabase::MatchContent);
    QFile file(db);
    if (file.open(QIODevice::ReadOnly)) file.read(100);
    file.close();
}

}  // namespace

class StoreStressTest : public QObject {
    Q_OBJECT
private slots:
    void fileDialogsBesideCliWritersLeaveTheStoreWhole();
    void aDamagedStoreIsOfferedRecoveryNotAnEmptyList();
};

void StoreStressTest::fileDialogsBesideCliWritersLeaveTheStoreWhole() {
    QTemporaryDir dir;
    const QString db = dir.filePath("runs.sqlite");
    constexpr int kRounds = 8, kStudioPoints = 50, kCliSteps = 3;
    {
        ui::MainWindow window(db);
        window.show();
        store::RunStore* store = window.runStore();
        QVERIFY(store);
        for (int round = 0; round < kRounds; ++round) {
            QProcess cli;
            cli.setProcessChannelMode(QProcess::MergedChannels);
            QStringList args = {"train",       QString(WAFER_SOURCE_DIR) + "/presets/gpt-nano.yaml",
                                "--db",        db,
                                "--max-steps", QString::number(kCliSteps),
                                "--name",      QString("cli-%1").arg(round)};
            cli.start(WAFER_CLI, args + kTinyArgs);
            QVERIFY(cli.waitForStarted());

            touchTheFolderLikeTheGui(&window, dir.path(), db);
            store::NewRun run;
            run.name = QString("studio-%1").arg(round).toStdString();
            auto id = store->createRun(run);
            QVERIFY2(id.ok(), id.ok() ? "" : id.error().message.c_str());
            for (int step = 1; step <= kStudioPoints; ++step)
                store->logMetric(*id, step, "loss", 3.0 - step * 0.01, step);
            store->flush();
            touchTheFolderLikeTheGui(&window, dir.path(), db);

            if (cli.state() != QProcess::NotRunning) QVERIFY(cli.waitForFinished(120000));
            QVERIFY2(cli.exitStatus() == QProcess::NormalExit && cli.exitCode() == 0,
                     cli.readAll().constData());
            // Had the studio lost its locks, the CLI would have checkpointed and deleted the WAL
            // on closing, believing itself the last connection.
            QVERIFY2(
                QFile::exists(db + "-wal"),
                qPrintable(QString("round %1: the WAL was deleted under the studio").arg(round)));
        }
        QVERIFY(store->asyncWriteStatus().ok());
    }
    SQLite::Database check(db.toStdString(), SQLite::OPEN_READONLY);
    QCOMPARE(QString::fromStdString(check.execAndGet("PRAGMA integrity_check").getString()),
             QString("ok"));
    for (int round = 0; round < kRounds; ++round) {
        for (const QString& name :
             {QString("studio-%1").arg(round), QString("cli-%1").arg(round)}) {
            SQLite::Statement q(check,
                                "SELECT count(*) FROM metrics m JOIN runs r ON r.id = m.run "
                                "WHERE r.name = ? AND m.key = 'loss'");
            q.bind(1, name.toStdString());
            QVERIFY(q.executeStep());
            const int expected = name.startsWith("studio") ? kStudioPoints : kCliSteps;
            QVERIFY2(q.getColumn(0).getInt() == expected,
                     qPrintable(QString("%1 has %2 loss points, expected %3")
                                    .arg(name)
                                    .arg(q.getColumn(0).getInt())
                                    .arg(expected)));
        }
    }
}

void StoreStressTest::aDamagedStoreIsOfferedRecoveryNotAnEmptyList() {
    QTemporaryDir dir;
    const std::filesystem::path db = dir.filePath("runs.sqlite").toStdString();
    {
        auto opened = store::RunStore::open(db);
        QVERIFY(opened.ok());
        for (const char* name : {"alpha", "beta"}) {
            store::NewRun run;
            run.name = name;
            QVERIFY((*opened)->createRun(run).ok());
        }
    }
    QVERIFY(store::backupStore(db).ok());
    {
        std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
        f.write("not a database!!", 16);
    }

    // Answer the dialogs as a user would: Restore Backup, then OK on the report.
    QStringList seen;
    QTimer driver;
    driver.setInterval(50);
    QObject::connect(&driver, &QTimer::timeout, [&] {
        auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
        if (!box) return;
        seen << box->text();
        if (auto* restore = box->findChild<QPushButton*>("restoreBackup")) {
            QVERIFY(box->findChild<QPushButton*>("salvage"));
            box->grab().save(ws::testing::artifactPath("store-recovery-dialog.png"));
            restore->click();
        } else {
            box->accept();
        }
    });
    driver.start();
    ui::MainWindow window(QString::fromStdString(db.string()));
    window.show();
    QTRY_VERIFY_WITH_TIMEOUT(window.runStore() != nullptr, 10000);
    driver.stop();
    QVERIFY(seen.size() >= 2);
    QVERIFY(seen[0].contains("is damaged"));
    QVERIFY(seen[0].contains("has not been changed"));
    auto runs = window.runStore()->listRuns();
    QVERIFY(runs.ok());
    QCOMPARE(int(runs->size()), 2);
    // The damaged file is kept beside the store.
    QDir folder(dir.path());
    QCOMPARE(folder.entryList({"runs.sqlite.damaged-????????T??????Z"}, QDir::Files).size(), 1);
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<StoreStressTest>(argc, argv);
}

#include "store_stress_test.moc"
