// SPDX-License-Identifier: GPL-3.0-or-later
// FailureBanner: see failure_banner.h.
#include "ui/shell/failure_banner.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/session/session.h"
#include "ui/config/config_document.h"

namespace ws::ui {

class BannerText : public QLabel {
public:
    explicit BannerText(QWidget* parent) : QLabel(parent) {
        setWordWrap(true);
        setTextFormat(Qt::PlainText);
        setTextInteractionFlags(Qt::TextSelectableByMouse);
        setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // never widens the window
    }
    QSize minimumSizeHint() const override { return {0, fontMetrics().lineSpacing()}; }
    QSize sizeHint() const override {
        const int w = width() > 100 ? width() : 900;
        const int most = FailureBanner::kMaxLines * fontMetrics().lineSpacing();
        return {0, std::min(most, QLabel::heightForWidth(w))};
    }
    bool hasHeightForWidth() const override { return false; }

protected:
    void resizeEvent(QResizeEvent* event) override {
        QLabel::resizeEvent(event);
        if (width() != m_hintWidth) {  // the text wraps differently: ask the layout again
            m_hintWidth = width();
            updateGeometry();
        }
    }

private:
    int m_hintWidth = -1;
};

FailureBanner::FailureBanner(QWidget* parent) : QFrame(parent) {
    setObjectName(QStringLiteral("failureBanner"));
    // Its own colours in light and dark palettes alike: dark red text on a pale red ground.
    setStyleSheet(QStringLiteral(
        "#failureBanner { background: #fdecea; border: 1px solid #e53935; border-radius: 3px; }"
        "#failureBanner QLabel { color: #5f2120; background: transparent; }"));
    auto* icon = new QLabel(this);
    const int side = style()->pixelMetric(QStyle::PM_MessageBoxIconSize, nullptr, this);
    icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxCritical).pixmap(side, side));
    icon->setAlignment(Qt::AlignTop);
    m_headline = new QLabel(this);
    m_headline->setObjectName(QStringLiteral("failureHeadline"));
    m_headline->setTextFormat(Qt::PlainText);
    m_headline->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    QFont bold = m_headline->font();
    bold.setBold(true);
    m_headline->setFont(bold);
    m_message = new BannerText(this);
    m_message->setObjectName(QStringLiteral("failureMessage"));
    m_showKey = new QPushButton(this);
    m_showKey->setObjectName(QStringLiteral("failureShowKey"));
    m_showLog = new QPushButton(tr("Open Log"), this);
    m_showLog->setObjectName(QStringLiteral("failureShowLog"));
    auto* close = new QToolButton(this);
    close->setObjectName(QStringLiteral("failureDismiss"));
    close->setText(QStringLiteral("✕"));
    close->setAutoRaise(true);
    close->setToolTip(tr("Hide this message (the Log keeps it)"));

    auto* text = new QVBoxLayout;
    text->setSpacing(2);
    text->addWidget(m_headline);
    text->addWidget(m_message);
    auto* buttons = new QVBoxLayout;
    buttons->setSpacing(4);
    buttons->addWidget(m_showKey);
    buttons->addWidget(m_showLog);
    buttons->addStretch(1);
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 6, 4, 6);
    layout->setSpacing(8);
    layout->addWidget(icon, 0, Qt::AlignTop);
    layout->addLayout(text, 1);
    layout->addLayout(buttons);
    layout->addWidget(close, 0, Qt::AlignTop);

    connect(m_showKey, &QPushButton::clicked, this, [this] { emit showKeyRequested(m_key); });
    connect(m_showLog, &QPushButton::clicked, this, &FailureBanner::showLogRequested);
    connect(close, &QToolButton::clicked, this, &FailureBanner::dismiss);
    hide();
}

void FailureBanner::runStarting(const QString& title, bool configIsDocument) {
    dismiss();
    m_runTitle = title;
    m_runConfigIsDocument = configIsDocument;
}

void FailureBanner::runEnded(const session::RunSummary& summary) {
    if (summary.state != session::RunState::Failed) return;
    const QString name = m_runTitle.isEmpty() ? tr("The run") : tr("“%1”").arg(m_runTitle);
    QString headline;
    QString message = QString::fromStdString(summary.detail);
    if (message.isEmpty()) message = tr("the engine gave no reason; the Log has the run's lines");
    if (summary.runId < 0) {
        headline = tr("%1 failed before training started").arg(name);
        message += tr("\nNothing was recorded, so Runs does not list it.");
    } else {
        headline = tr("%1 failed after %n step(s)", nullptr, int(summary.steps)).arg(name);
    }
    showFailure(headline, message, m_runConfigIsDocument);
}

void FailureBanner::showFailure(const QString& headline, const QString& message,
                                bool configIsDocument) {
    m_headline->setText(headline);
    m_message->setText(message.trimmed());
    setToolTip(headline + QStringLiteral("\n") + message.trimmed());
    m_key = configIsDocument ? configKeyNamedIn(message) : QString();
    m_showKey->setText(tr("Show %1").arg(ConfigDocument::fieldLabel(m_key)));
    m_showKey->setToolTip(
        tr("Show %1 (%2) in the Config tab").arg(m_key, ConfigDocument::fieldLabel(m_key)));
    m_showKey->setVisible(!m_key.isEmpty());
    show();
    m_message->updateGeometry();
}

void FailureBanner::dismiss() {
    hide();
    m_key.clear();
}

QString FailureBanner::headline() const {
    return m_headline->text();
}

QString FailureBanner::message() const {
    return m_message->text();
}

QString FailureBanner::configKeyNamedIn(const QString& message) {
    QString best;
    qsizetype bestAt = -1;
    const auto partOfKey = [](QChar c) { return c.isLetterOrNumber() || c == '_'; };
    for (const QString& path : ConfigDocument::knownPaths()) {
        if (path.isEmpty()) continue;
        for (qsizetype at = message.indexOf(path); at >= 0; at = message.indexOf(path, at + 1)) {
            const qsizetype end = at + path.size();
            if (end < message.size() && partOfKey(message[end])) continue;
            if (at > 0 && (partOfKey(message[at - 1]) || message[at - 1] == '.')) continue;
            if (bestAt < 0 || at < bestAt || (at == bestAt && path.size() > best.size())) {
                best = path;
                bestAt = at;
            }
            break;
        }
    }
    return best;
}

}  // namespace ws::ui
