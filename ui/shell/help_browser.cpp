// HelpBrowser and the About box (see help_browser.h).
#include "ui/shell/help_browser.h"

#include <QAbstractTextDocumentLayout>
#include <QFile>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QListWidget>
#include <QMessageBox>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

#include "engine/core/paths.h"
#include "wafer/version.h"

namespace ws::ui {

QStringList helpMenuSections() {
    return {QStringLiteral("Quick start"),  QStringLiteral("The studio"),
            QStringLiteral("Command line"), QStringLiteral("Checkpoints and resume"),
            QStringLiteral("Sweeps"),       QStringLiteral("Import, export and fine-tuning"),
            QStringLiteral("Presets"),      QStringLiteral("Config reference")};
}

QString studioVersionText() {
    return QStringLiteral("Wafer Studio %1 (%2)").arg(WAFER_VERSION, WAFER_GIT_REVISION);
}

void showAboutBox(QWidget* parent) {
    QMessageBox::about(
        parent, QObject::tr("About Wafer Studio"),
        QObject::tr("<h3>%1</h3><p>Train and fine-tune GPT-style language models on an emulated "
                    "wafer-scale machine with weight streaming.</p><p>Qt %2. The guide (Help ▸ "
                    "Wafer Studio Guide, F1) is the README in %3.</p>")
            .arg(studioVersionText().toHtmlEscaped(), QString::fromLatin1(qVersion()),
                 QString::fromStdString(appDataDir().string()).toHtmlEscaped()));
}

HelpBrowser::HelpBrowser(QWidget* parent) : QDialog(parent) {
    setObjectName("helpBrowser");
    setWindowTitle(tr("Wafer Studio Guide"));
    m_sections = new QListWidget(this);
    m_text = new QTextBrowser(this);
    m_text->setOpenExternalLinks(true);
    auto* split = new QSplitter(this);
    split->addWidget(m_sections);
    split->addWidget(m_text);
    split->setStretchFactor(1, 1);
    split->setSizes({220, 780});
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);
    resize(1000, 720);

    const QString readme = QString::fromStdString((appDataDir() / "README.md").string());
    QFile file(readme);
    if (!file.open(QIODevice::ReadOnly)) {
        m_text->setPlainText(tr("The guide (README.md) was not found in %1; it ships with "
                                "Wafer Studio beside the presets folder.")
                                 .arg(QFileInfo(readme).absolutePath()));
        return;
    }
    m_loaded = true;
    // Screenshots are referenced relative to the README.
    m_text->setSearchPaths({QFileInfo(readme).absolutePath()});
    m_text->setMarkdown(QString::fromUtf8(file.readAll()));
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        const int level = b.blockFormat().headingLevel();
        if (level == 2 || level == 3) {
            auto* item =
                new QListWidgetItem((level == 3 ? QStringLiteral("    ") : QString()) + b.text());
            item->setData(Qt::UserRole, b.text());
            m_sections->addItem(item);
        }
    }
    connect(m_sections, &QListWidget::itemClicked, this,
            [this](QListWidgetItem* item) { showSection(item->data(Qt::UserRole).toString()); });
}

bool HelpBrowser::showSection(const QString& heading) {
    for (QTextBlock b = m_text->document()->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() == 0 || !b.text().startsWith(heading)) continue;
        const QRectF where = m_text->document()->documentLayout()->blockBoundingRect(b);
        m_text->verticalScrollBar()->setValue(int(where.top()));
        for (int i = 0; i < m_sections->count(); ++i) {
            if (m_sections->item(i)->data(Qt::UserRole).toString() == b.text())
                m_sections->setCurrentRow(i);
        }
        return true;
    }
    return false;
}

QString HelpBrowser::currentSection() const {
    const QListWidgetItem* item = m_sections->currentItem();
    return item ? item->data(Qt::UserRole).toString() : QString();
}

}  // namespace ws::ui
