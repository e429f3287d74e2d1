// SPDX-License-Identifier: GPL-3.0-or-later
// FailureBanner: the red strip above the tabs that says why a run, fine-tune or sweep did not
// start or failed: a headline, the engine's message as it is (it names the problem and the fix),
// a button that shows the config key the message names (in the Config tab, when the failed
// config is the one open there) and one that opens the Log. A failure that only reached the
// status bar ("Failed") and a closed Log dock went unseen (issue 31). It stays until dismissed or
// the next start. Its height follows the wrapped text, at most kMaxLines lines (the full text is
// in its tooltip and the Log), and it never widens the window. GUI thread only.
#pragma once

#include <QFrame>
#include <QString>

class QLabel;
class QPushButton;

namespace ws::session {
struct RunSummary;
}

namespace ws::ui {

// The label of the banner's message: wraps at the banner's width and asks for the height of the
// wrapped text (not a height-for-width, which could make the window taller than the screen).
class BannerText;

class FailureBanner : public QFrame {
    Q_OBJECT
public:
    static constexpr int kMaxLines = 6;

    explicit FailureBanner(QWidget* parent = nullptr);

    // A run is starting: an earlier failure is hidden, and the run's `title` and whether its
    // config is the Config tab's are kept for the failure it may end in.
    void runStarting(const QString& title, bool configIsDocument);
    // The run started by runStarting ended: a failed one is shown with the engine's message and,
    // when the run ended before its record existed, that Runs will not list it.
    void runEnded(const session::RunSummary& summary);
    // Shows `headline` and `message`; `configIsDocument`: the message is about the Config tab's
    // config, so the key it names can be shown there.
    void showFailure(const QString& headline, const QString& message, bool configIsDocument);
    void dismiss();

    QString headline() const;
    QString message() const;
    // The config key the message names ("train_input.data_dir"), shown by the Show button;
    // empty when none or when the failed config is not the Config tab's.
    QString key() const { return m_key; }
    // The longest config key named in `message` at its earliest place, as a whole key (not
    // "model.name" inside "model.name_x"); empty when none.
    static QString configKeyNamedIn(const QString& message);

signals:
    void showKeyRequested(const QString& key);
    void showLogRequested();

private:
    QLabel* m_headline;
    BannerText* m_message;
    QPushButton* m_showKey;
    QPushButton* m_showLog;
    QString m_key;
    QString m_runTitle;
    bool m_runConfigIsDocument = false;
};

}  // namespace ws::ui
