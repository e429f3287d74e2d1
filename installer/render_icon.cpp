// SPDX-License-Identifier: GPL-3.0-or-later
// wafer-render-icon: renders the app icon's SVG (resources/icons/wafer-studio.svg) to the PNG
// sizes of the freedesktop hicolor theme, at build time, so that the PNGs always match the SVG.
// Usage: wafer-render-icon ICON.svg OUT_DIR SIZE... (writes OUT_DIR/<SIZE>x<SIZE>/wafer-studio.png)
#include <QDir>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSvgRenderer>
#include <cstdio>

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: wafer-render-icon ICON.svg OUT_DIR SIZE...\n");
        return 2;
    }
    qputenv("QT_QPA_PLATFORM", "offscreen");  // a build machine has no display
    QGuiApplication app(argc, argv);
    QSvgRenderer svg(QString::fromLocal8Bit(argv[1]));
    if (!svg.isValid()) {
        std::fprintf(stderr, "wafer-render-icon: %s is not a valid SVG\n", argv[1]);
        return 1;
    }
    for (int i = 3; i < argc; ++i) {
        const int size = QString::fromLatin1(argv[i]).toInt();
        if (size <= 0 || size > 1024) {
            std::fprintf(stderr, "wafer-render-icon: size '%s' is not 1 to 1024\n", argv[i]);
            return 2;
        }
        QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
        image.fill(Qt::transparent);
        QPainter painter(&image);
        painter.setRenderHint(QPainter::Antialiasing);
        svg.render(&painter);
        painter.end();
        const QString dir =
            QStringLiteral("%1/%2x%2").arg(QString::fromLocal8Bit(argv[2])).arg(size);
        const QString file = dir + QStringLiteral("/wafer-studio.png");
        if (!QDir().mkpath(dir) || !image.save(file, "PNG")) {
            std::fprintf(stderr, "wafer-render-icon: cannot write %s\n", qPrintable(file));
            return 1;
        }
    }
    return 0;
}
