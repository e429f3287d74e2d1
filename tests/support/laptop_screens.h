// SPDX-License-Identifier: GPL-3.0-or-later
// Laptop screens for the offscreen GUI tests (issue 31): the offscreen platform's one screen is
// 800 x 600 unless told otherwise. useLaptopScreens() gives it two, as a laptop user has:
// "laptop" 1366 x 768 at (0, 0), the primary, and "small" 1280 x 720 beside it at (1366, 0).
// Call it in main() before the QApplication exists (it sets QT_QPA_PLATFORM, which CTest's
// "offscreen" would otherwise leave at one 800 x 600 screen).
#pragma once

#include <unistd.h>
#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QRect>
#include <QString>
#include <QtGlobal>

namespace ws::testing {

inline constexpr QRect kLaptopScreen{0, 0, 1366, 768};
inline constexpr QRect kSmallScreen{1366, 0, 1280, 720};

// False when the configuration file cannot be written (the test then has no laptop screen).
inline bool useLaptopScreens() {
    const QString path =
        QDir::tempPath() + QStringLiteral("/wafer-laptop-screens-%1.json").arg(qint64(::getpid()));
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate)) return false;
    file.write(R"({"screens": [
        {"name": "laptop", "x": 0, "y": 0, "width": 1366, "height": 768,
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1},
        {"name": "small", "x": 1366, "y": 0, "width": 1280, "height": 720,
         "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]})");
    file.close();
    qputenv("QT_QPA_PLATFORM", ("offscreen:configfile=" + path).toUtf8());
    return true;
}

}  // namespace ws::testing
