// SPDX-License-Identifier: GPL-3.0-or-later
// The Config tab's YAML view follows a light/dark palette switch live: keys change colour
// without reopening the file, and problem tints follow.
#include <QApplication>
#include <QTest>
#include <QTextBlock>
#include <QTextLayout>

#include "ui/config/yaml_editor.h"

using ws::ui::YamlEditor;

namespace {

QPalette paletteWithBase(const QColor& base, const QColor& text) {
    QPalette p;
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::Text, text);
    return p;
}

// The colour the highlighter gave the first characters of the first line (a key).
QColor keyColour(const YamlEditor& editor) {
    const QTextBlock block = editor.document()->firstBlock();
    for (const auto& range : block.layout()->formats())
        if (range.start == 0) return range.format.foreground().color();
    return {};
}

}  // namespace

class YamlEditorTest : public QObject {
    Q_OBJECT
private slots:
    void followsAPaletteSwitchLive() {
        YamlEditor editor;
        editor.setPalette(paletteWithBase(Qt::white, Qt::black));
        editor.replaceText(QStringLiteral("model:\n  hidden_size: 128\n"));
        QVERIFY(!editor.highlighter()->darkColours());
        const QColor light = keyColour(editor);
        QVERIFY(light.isValid());

        editor.setPalette(paletteWithBase(QColor(0x20, 0x20, 0x20), Qt::white));
        QVERIFY(editor.highlighter()->darkColours());
        const QColor dark = keyColour(editor);
        QVERIFY(dark.isValid());
        QVERIFY(dark != light);
        QVERIFY(dark.lightness() > light.lightness());  // light text on the dark base
    }
};

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    YamlEditorTest test;
    return QTest::qExec(&test, argc, argv);
}
#include "yaml_editor_test.moc"
