// SPDX-License-Identifier: GPL-3.0-or-later
// The studio reads every lesson file of its lessons folder at start (issue 31). A lesson whose
// `preset:` line ran on into the next, indented line (one path component past 255 bytes) used to
// stop the studio with an uncaught std::filesystem::filesystem_error (exit 134). Now the studio
// starts, lists that file as "does not load" with its error as tooltip, and opening it shows
// the error; the other lessons are listed as before. Screenshots: lesson-folder-broken*.png.
#include <QAbstractItemView>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QMessageBox>
#include <QTemporaryDir>
#include <filesystem>

#include "support/gui_test.h"
#include "ui/lessons/lessons_panel.h"
#include "ui/shell/main_window.h"

using namespace ws::ui;
namespace fs = std::filesystem;

class LessonFolderTest : public QObject {
    Q_OBJECT
private slots:
    void aBrokenLessonIsListedNotFatal();
};

void LessonFolderTest::aBrokenLessonIsListedNotFatal() {
    // The app's shared data as shipped (WAFER_STUDIO_HOME), but a lessons folder of our own.
    QTemporaryDir home;
    const fs::path root = home.path().toStdString();
    const fs::path src = WAFER_SOURCE_DIR;
    fs::create_directory_symlink(src / "presets", root / "presets");
    fs::create_symlink(src / "README.md", root / "README.md");
    fs::create_directories(root / "resources" / "lessons");
    for (const auto& entry : fs::directory_iterator(src / "resources")) {
        if (entry.path().filename() != "lessons")
            fs::create_directory_symlink(entry.path(),
                                         root / "resources" / entry.path().filename());
    }
    const fs::path lessons = root / "resources" / "lessons";
    fs::create_directory_symlink(src / "resources" / "lessons" / "figures", lessons / "figures");
    fs::copy_file(src / "resources" / "lessons" / "01-weight-streaming.yaml",
                  lessons / "01-weight-streaming.yaml");
    {
        QFile f(QString::fromStdString((lessons / "02-hand-edited.yaml").string()));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(
            "title: \"A hand edit\"\n"
            "preset: ../../presets/teaching-stream.yaml\n"
            "  and the next line ran on into it, which YAML reads as part of the path, "
            "and on and on and on and on and on and on and on and on and on and on and on "
            "and on and on and on and on and on and on and on and on and on and on and on "
            "and on and on and on and on and on and on and on and on and on and on and on\n"
            "steps:\n"
            "  - text: hello\n");
    }
    qputenv("WAFER_STUDIO_HOME", home.path().toUtf8());

    QTemporaryDir data;
    MainWindow window(data.filePath("runs.sqlite"));
    window.resize(1366, 768);
    window.show();
    window.showLessons();
    auto* list = window.lessonsPanel()->findChild<QComboBox*>("lessonList");
    QVERIFY(list);
    QStringList items;
    for (int i = 0; i < list->count(); ++i) items << list->itemText(i);
    QCOMPARE(list->count(), 3);  // "Choose a lesson…", the good one, the broken one
    QVERIFY2(items[1].startsWith("01"), qPrintable(items.join(" | ")));
    QCOMPARE(items[2], QStringLiteral("02  does not load: 02-hand-edited.yaml"));
    QVERIFY(!list->itemIcon(2).isNull());  // a warning sign
    const QString why = list->itemData(2, Qt::ToolTipRole).toString();
    QVERIFY2(why.contains("02-hand-edited.yaml:2:9: preset: "), qPrintable(why));
    QVERIFY2(why.contains("File name too long"), qPrintable(why));
    list->setCurrentIndex(2);
    QVERIFY(window.grab().save(ws::testing::artifactPath("lesson-folder-broken.png")));
    list->showPopup();
    QVERIFY(list->view()->window()->grab().save(
        ws::testing::artifactPath("lesson-folder-broken-list.png")));
    list->hidePopup();

    // Choosing it says why, as for any lesson that does not load.
    QVERIFY(!window.lessonsPanel()->openLesson(list->itemData(2).toString()));
    auto* box = window.lessonsPanel()->findChild<QMessageBox*>("lessonErrorBox");
    QVERIFY(box);
    QVERIFY2(box->text().contains("File name too long"), qPrintable(box->text()));
    box->close();
    qunsetenv("WAFER_STUDIO_HOME");
}

int main(int argc, char** argv) {
    return ws::testing::runIsolatedGuiTest<LessonFolderTest>(argc, argv);
}

#include "lesson_folder_test.moc"
