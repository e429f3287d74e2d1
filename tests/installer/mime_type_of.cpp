// SPDX-License-Identifier: GPL-3.0-or-later
// mime_type_of FILE...: prints each file's MIME type as Qt (and so KDE's file managers) sees it,
// from the shared MIME database on XDG_DATA_DIRS. package_test.sh points it at a database
// compiled with the package's MIME type.
#include <QCoreApplication>
#include <QMimeDatabase>
#include <cstdio>

int main(int argc, char** argv) {
    QCoreApplication app(argc, argv);
    const QMimeDatabase db;
    for (int i = 1; i < argc; ++i)
        std::printf("%s %s\n", argv[i],
                    qPrintable(db.mimeTypeForFile(QString::fromLocal8Bit(argv[i])).name()));
    return 0;
}
