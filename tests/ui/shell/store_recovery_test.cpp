// SPDX-License-Identifier: GPL-3.0-or-later
// A damaged run store in the studio (issue 31): the recovery dialog offers only the routes that
// exist (no Restore Backup without a backup), a route that fails is reported in the dialog with
// the routes still open, going on without the store leaves a visible warning in the Runs dock
// (never an empty list that passes for a store without runs) with a Recover… button, and a
// fresh store keeps the damaged file. A store that opens but whose run list cannot be read
// warns the same way. Screenshots: store-recovery-*.png in $WAFER_TEST_ARTIFACTS.
#include <SQLiteCpp/Database.h>
#include <QDir>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTimer>
#include <filesystem>
#include <fstream>
#include <functional>

#include "engine/store/run_store.h"
#include "engine/store/store_recovery.h"
#include "support/gui_test.h"
#include "ui/shell/main_window.h"
#include "ui/shell/runs_dock.h"

namespace {

using namespace ws;
namespace fs = std::filesystem;

// A store holding `names`, opened once while empty, so no backup was taken.
void makeStore(const fs::path& db, std::initializer_list<const char*> names) {
    auto opened = store::RunStore::open(db);
    QVERIFY(opened.ok());
    for (const char* name : names) {
        store::NewRun run;
        run.name = name;
        QVERIFY((*opened)->createRun(run).ok());
    }
}

void overwrite(const fs::path& file, std::streamoff offset, size_t count) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(offset);
    const std::string junk(count, '\x5a');
    f.write(junk.data(), std::streamsize(junk.size()));
}

// One modal message box as the user saw it.
struct SeenBox {
    QString name, text, informative;
    QStringList buttons;  // object names of its buttons, sorted
};

// Answers every modal message box with `answer(box)` (which clicks a button), recording each.
class BoxDriver {
public:
    explicit BoxDriver(std::function<void(QMessageBox*, const SeenBox&)> answer)
        : m_answer(std::move(answer)) {
        m_timer.setInterval(50);
        QObject::connect(&m_timer, &QTimer::timeout, [this] {
            // (A box is marked, not remembered: the next one may live at the same address.)
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            if (!box || box->property("answered").toBool()) return;
            box->setProperty("answered", true);
            SeenBox seen{box->objectName(), box->text(), box->informativeText(), {}};
            for (QAbstractButton* b : box->buttons()) seen.buttons << b->objectName();
            seen.buttons.removeAll(QString());
            seen.buttons.sort();
            boxes << seen;
            m_answer(box, seen);
        });
        m_timer.start();
    }
    void stop() { m_timer.stop(); }
    QList<SeenBox> boxes;

private:
    std::function<void(QMessageBox*, const SeenBox&)> m_answer;
    QTimer m_timer;
};

void click(QMessageBox* box, const char* button) {
    auto* b = box->findChild<QPushButton*>(button);
    QVERIFY2(b, button);
    b->click();
}

}  // namespace

class StoreRecoveryTest : public QObject {
    Q_OBJECT
private slots:
    void aFailedSalvageOffersOnlyWhatExistsAndTheListWarns();
    void aListThatCannotBeReadIsAWarningNotAnEmptyList();
};

void StoreRecoveryTest::aFailedSalvageOffersOnlyWhatExistsAndTheListWarns() {
    QTemporaryDir dir;
    const fs::path db = dir.filePath("runs.sqlite").toStdString();
    makeStore(db, {"alpha", "beta"});
    QVERIFY(!fs::exists(store::backupPathFor(db)));
    overwrite(db, 0, size_t(fs::file_size(db)));  // nothing left that salvage could read

    // Salvage (which fails), then Continue Without Runs.
    BoxDriver driver([](QMessageBox* box, const SeenBox& seen) {
        box->grab().save(ws::testing::artifactPath(seen.buttons.contains("salvage")
                                                       ? "store-recovery-no-backup.png"
                                                       : "store-recovery-salvage-failed.png"));
        click(box, seen.buttons.contains("salvage") ? "salvage" : "continueWithout");
    });
    ui::MainWindow window(QString::fromStdString(db.string()));
    window.resize(1366, 768);
    window.show();
    auto* runs = window.findChild<ui::RunsDock*>("RunsDock");
    QTRY_VERIFY_WITH_TIMEOUT(driver.boxes.size() >= 2 && !QApplication::activeModalWidget(), 20000);
    QCOMPARE(driver.boxes.size(), 2);
    const SeenBox& first = driver.boxes[0];
    QVERIFY2(first.text.contains("is damaged"), qPrintable(first.text));
    QCOMPARE(first.buttons, QStringList({"continueWithout", "salvage", "startFresh"}));
    QVERIFY2(!first.informative.contains("Restore Backup"), qPrintable(first.informative));
    const SeenBox& failed = driver.boxes[1];
    QVERIFY2(failed.text.contains("Salvage failed"), qPrintable(failed.text));
    QVERIFY2(failed.text.contains("Nothing was changed"), qPrintable(failed.text));
    QVERIFY2(!failed.text.contains("restore the"), qPrintable(failed.text));
    QVERIFY2(failed.informative.contains("There is no backup to restore."),
             qPrintable(failed.informative));
    QCOMPARE(failed.buttons, QStringList({"continueWithout", "startFresh"}));

    // Without the store: a warning in the Runs dock, not an empty list that looks like no runs.
    QVERIFY(window.runStore() == nullptr);
    QVERIFY(runs->hasStoreProblem());
    auto* warning = runs->findChild<QLabel*>("runsStoreProblemText");
    QVERIFY(warning->isVisible());
    QVERIFY2(warning->text().contains("is damaged and not open"), qPrintable(warning->text()));
    auto* recover = runs->findChild<QPushButton*>("runsRecover");
    QVERIFY(recover->isVisible());
    QVERIFY(window.grab().save(ws::testing::artifactPath("store-recovery-runs-dock.png")));

    // Recover… offers the dialog again; Start Fresh Store keeps the damaged file.
    driver.stop();
    BoxDriver fresh([](QMessageBox* box, const SeenBox& seen) {
        if (seen.buttons.contains("startFresh"))
            click(box, "startFresh");
        else
            box->accept();  // the report
    });
    recover->click();
    QTRY_VERIFY_WITH_TIMEOUT(window.runStore() != nullptr, 20000);
    QCOMPARE(fresh.boxes.size(), 2);
    QCOMPARE(fresh.boxes[1].name, QStringLiteral("storeRecoveredBox"));
    QVERIFY2(fresh.boxes[1].text.contains("damaged file is kept at"),
             qPrintable(fresh.boxes[1].text));
    QVERIFY(!runs->hasStoreProblem());
    QVERIFY(window.runStore()->listRuns()->empty());
    QDir folder(dir.path());
    QCOMPARE(folder.entryList({"runs.sqlite.damaged-????????T??????Z"}, QDir::Files).size(), 1);
}

// The store opens (its first pages are fine, its backup fresh), but the page of the runs table
// is damaged: the list cannot be read. Before, that was one line in the Log dock and an empty
// Runs list.
void StoreRecoveryTest::aListThatCannotBeReadIsAWarningNotAnEmptyList() {
    QTemporaryDir dir;
    const fs::path db = dir.filePath("runs.sqlite").toStdString();
    makeStore(db, {"alpha"});
    QVERIFY(store::backupStore(db).ok());
    int pageSize = 0, runsPage = 0;
    {
        SQLite::Database raw(db.string(), SQLite::OPEN_READONLY);
        pageSize = raw.execAndGet("PRAGMA page_size").getInt();
        runsPage =
            raw.execAndGet("SELECT rootpage FROM sqlite_schema WHERE name = 'runs'").getInt();
    }
    overwrite(db, std::streamoff(pageSize) * (runsPage - 1), size_t(pageSize));
    QVERIFY(store::RunStore::open(db).ok());  // opening does not read that page

    BoxDriver driver([](QMessageBox* box, const SeenBox& seen) {
        if (seen.buttons.contains("continueWithout"))
            click(box, "continueWithout");
        else
            box->accept();
    });
    ui::MainWindow window(QString::fromStdString(db.string()));
    window.show();
    auto* runs = window.findChild<ui::RunsDock*>("RunsDock");
    QTRY_VERIFY_WITH_TIMEOUT(!driver.boxes.isEmpty() && !QApplication::activeModalWidget(), 20000);
    // The read failed, the file was checked and found damaged, and recovery was offered (with
    // the backup, which exists here).
    QVERIFY2(driver.boxes[0].text.contains("is damaged"), qPrintable(driver.boxes[0].text));
    QVERIFY(driver.boxes[0].buttons.contains("restoreBackup"));
    QVERIFY(runs->hasStoreProblem());
    QVERIFY(runs->findChild<QLabel*>("runsStoreProblemText")->isVisible());
    QVERIFY(runs->findChild<QPushButton*>("runsRecover")->isVisible());
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<StoreRecoveryTest>(argc, argv);
}

#include "store_recovery_test.moc"
