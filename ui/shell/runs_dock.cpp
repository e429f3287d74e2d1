// SPDX-License-Identifier: GPL-3.0-or-later
// RunsDock: see runs_dock.h.
#include "ui/shell/runs_dock.h"

#include <QDateTime>
#include <QDesktopServices>
#include <QFrame>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPainterPath>
#include <QPushButton>
#include <QStyle>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <algorithm>
#include <map>
#include <memory>

#include "engine/modelio/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"
#include "ui/common/run_names.h"

namespace ws::ui {
namespace {

enum Column { kName, kStatus, kLoss, kCreated };
constexpr int kIdRole = Qt::UserRole + 1;

QColor statusColor(const QString& status) {
    if (status == QLatin1String("running") || status == QLatin1String("paused"))
        return QColor(0x1e, 0x88, 0xe5);
    if (status == QLatin1String("finished")) return QColor(0x43, 0xa0, 0x47);
    if (status == QLatin1String("stopped")) return QColor(0xfb, 0x8c, 0x00);
    if (status == QLatin1String("interrupted")) return QColor(0x8d, 0x6e, 0x63);
    if (status == QLatin1String("diverged") || status == QLatin1String("failed")) {
        return QColor(0xe5, 0x39, 0x35);
    }
    return QColor(0x9e, 0x9e, 0x9e);
}

// Read from the folder, not the store: pruned or copied-in checkpoints show as they are on disk.
std::vector<std::pair<int64_t, std::filesystem::path>> checkpointsOf(const std::string& modelDir) {
    if (modelDir.empty()) return {};
    return modelio::listCheckpoints(modelDir);
}

QString checkpointSummary(const std::string& modelDir) {
    const auto found = checkpointsOf(modelDir);
    if (found.empty()) return QObject::tr("no checkpoints");
    QStringList steps;
    for (const auto& [step, folder] : found) steps << QString::number(step);
    return QObject::tr("checkpoints at step %1 (newest: %2)")
        .arg(steps.join(QStringLiteral(", ")),
             QString::fromStdString(found.back().second.string()));
}

// The dock's content, asking for room for a run's name beside its status, loss and date: the
// main window lays a new dock out at its size hint, and a tree's default (256 px) left the
// names a few letters wide ("gpt-na…").
class RunsContent : public QWidget {
public:
    using QWidget::QWidget;
    QSize sizeHint() const override { return {440, QWidget::sizeHint().height()}; }
};

}  // namespace

QIcon statusIcon(const QString& status) {
    static std::map<QString, QIcon> cache;
    if (auto it = cache.find(status); it != cache.end()) return it->second;
    QIcon icon;
    for (int size : {16, 32, 48}) {
        QPixmap pixmap(size, size);
        pixmap.fill(Qt::transparent);
        QPainter p(&pixmap);
        p.setRenderHint(QPainter::Antialiasing);
        const QColor color = statusColor(status);
        const double s = size;
        const QRectF box(s * 0.12, s * 0.12, s * 0.76, s * 0.76);
        p.setPen(Qt::NoPen);
        p.setBrush(color);
        if (status == QLatin1String("diverged")) {
            QPainterPath triangle;  // a warning triangle: the loss left the finite numbers
            triangle.moveTo(s * 0.5, s * 0.08);
            triangle.lineTo(s * 0.94, s * 0.88);
            triangle.lineTo(s * 0.06, s * 0.88);
            triangle.closeSubpath();
            p.drawPath(triangle);
        } else {
            p.drawEllipse(box);
        }
        p.setPen(QPen(Qt::white, s * 0.11, Qt::SolidLine, Qt::RoundCap, Qt::RoundJoin));
        p.setBrush(Qt::white);
        if (status == QLatin1String("running")) {
            QPolygonF play({QPointF(s * 0.42, s * 0.34), QPointF(s * 0.66, s * 0.5),
                            QPointF(s * 0.42, s * 0.66)});
            p.drawPolygon(play);
        } else if (status == QLatin1String("paused")) {
            p.setPen(Qt::NoPen);  // two bars: paused between layers, by request
            p.drawRect(QRectF(s * 0.35, s * 0.33, s * 0.11, s * 0.34));
            p.drawRect(QRectF(s * 0.54, s * 0.33, s * 0.11, s * 0.34));
        } else if (status == QLatin1String("finished")) {
            p.setBrush(Qt::NoBrush);
            p.drawPolyline(QPolygonF({QPointF(s * 0.33, s * 0.5), QPointF(s * 0.45, s * 0.62),
                                      QPointF(s * 0.68, s * 0.38)}));
        } else if (status == QLatin1String("stopped")) {
            p.setPen(Qt::NoPen);
            p.drawRect(QRectF(s * 0.37, s * 0.37, s * 0.26, s * 0.26));
        } else if (status == QLatin1String("failed")) {
            p.drawLine(QPointF(s * 0.37, s * 0.37), QPointF(s * 0.63, s * 0.63));
            p.drawLine(QPointF(s * 0.63, s * 0.37), QPointF(s * 0.37, s * 0.63));
        } else if (status == QLatin1String("diverged")) {
            p.drawLine(QPointF(s * 0.5, s * 0.38), QPointF(s * 0.5, s * 0.6));
            p.drawPoint(QPointF(s * 0.5, s * 0.75));
        }
        p.end();
        icon.addPixmap(pixmap);
    }
    cache[status] = icon;
    return icon;
}

RunsDock::RunsDock(QWidget* parent) : QDockWidget(tr("Runs"), parent) {
    setObjectName(QStringLiteral("RunsDock"));
    auto* content = new RunsContent(this);
    m_filter = new QLineEdit(content);
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setPlaceholderText(tr("Filter runs…"));
    m_filter->setClearButtonEnabled(true);
    m_tree = new QTreeWidget(content);
    m_tree->setObjectName(QStringLiteral("runsTree"));
    m_tree->setHeaderLabels({tr("Run"), tr("Status"), tr("Loss"), tr("Created")});
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setMinimumWidth(220);
    // "gpt-nano … lr=3e-3" tells runs apart where "gpt-nano-…" does not; the tooltip has it all.
    m_tree->setTextElideMode(Qt::ElideMiddle);
    m_tree->setRootIsDecorated(true);
    // A trial sits two indentations in (its sweep's branch, its own): narrower steps leave its
    // label the room (issue 31: "#62: hidd…zation=sp" at 1366 x 768).
    m_tree->setIndentation(12);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(kName, QHeaderView::Stretch);
    for (int c : {kStatus, kLoss, kCreated}) {
        m_tree->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    }
    // The name gets the room: the status is the name's icon and the date is in the tooltip, so
    // those columns start hidden (the header's context menu shows them again). With them shown
    // a 290 px dock (what a 1400 px window leaves beside the Wafer tab) had "gpt…256".
    m_tree->setColumnHidden(kStatus, true);
    m_tree->setColumnHidden(kCreated, true);
    m_tree->header()->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_tree->header(), &QWidget::customContextMenuRequested, this,
            [this](const QPoint& pos) {
                QMenu menu(this);
                for (int c : {kStatus, kLoss, kCreated}) {
                    QAction* show = menu.addAction(m_tree->headerItem()->text(c));
                    show->setCheckable(true);
                    show->setChecked(!m_tree->isColumnHidden(c));
                    connect(show, &QAction::toggled, this,
                            [this, c](bool on) { m_tree->setColumnHidden(c, !on); });
                }
                menu.exec(m_tree->header()->mapToGlobal(pos));
            });
    m_problem = new QFrame(content);
    m_problem->setObjectName(QStringLiteral("runsStoreProblem"));
    m_problem->setFrameShape(QFrame::StyledPanel);
    {
        // The palette's own warning colours (as a tooltip's), so it reads in every theme.
        m_problem->setAutoFillBackground(true);
        QPalette warning = m_problem->palette();
        warning.setColor(QPalette::Window, palette().color(QPalette::ToolTipBase));
        warning.setColor(QPalette::WindowText, palette().color(QPalette::ToolTipText));
        m_problem->setPalette(warning);
        auto* icon = new QLabel(m_problem);
        const int size = style()->pixelMetric(QStyle::PM_SmallIconSize);
        icon->setPixmap(style()->standardIcon(QStyle::SP_MessageBoxWarning).pixmap(size, size));
        icon->setAlignment(Qt::AlignTop);
        m_problemText = new QLabel(m_problem);
        m_problemText->setObjectName(QStringLiteral("runsStoreProblemText"));
        m_problemText->setWordWrap(true);
        m_problemText->setTextInteractionFlags(Qt::TextSelectableByMouse);
        m_recover = new QPushButton(tr("Recover…"), m_problem);
        m_recover->setObjectName(QStringLiteral("runsRecover"));
        m_recover->setToolTip(
            tr("Salvage the store, restore its backup or start a fresh one; "
               "the damaged file is kept"));
        auto* text = new QVBoxLayout;
        text->addWidget(m_problemText);
        text->addWidget(m_recover, 0, Qt::AlignLeft);
        auto* row = new QHBoxLayout(m_problem);
        row->setContentsMargins(6, 6, 6, 6);
        row->addWidget(icon, 0, Qt::AlignTop);
        row->addLayout(text, 1);
        connect(m_recover, &QPushButton::clicked, this, &RunsDock::recoverRequested);
        m_problem->hide();
    }
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
    layout->addWidget(m_problem);
    layout->addWidget(m_filter);
    layout->addWidget(m_tree);
    setWidget(content);

    connect(m_filter, &QLineEdit::textChanged, this, &RunsDock::applyFilter);
    connect(m_tree, &QTreeWidget::itemSelectionChanged, this, [this] {
        if (!m_refreshing) emit selectionChanged(selectedRunIds());
    });
    connect(m_tree, &QTreeWidget::customContextMenuRequested, this, &RunsDock::showContextMenu);
}

void RunsDock::setStore(store::RunStore* store) {
    m_store = store;
    refresh();
}

void RunsDock::refresh() {
    if (!m_store) {
        showRuns({});
        return;
    }
    auto runs = m_store->listRuns();
    if (!runs.ok()) {
        const QString message = QString::fromStdString(runs.error().message);
        showStoreProblem(tr("The run store could not be read, so its runs are not listed: %1")
                             .arg(message.section(QLatin1Char('\n'), 0, 0)),
                         false);
        emit errorOccurred(message);
        emit readFailed(message);
        return;
    }
    clearStoreProblem();
    showRuns(*runs);
}

void RunsDock::showStoreProblem(const QString& text, bool recoverable) {
    m_problemText->setText(text);
    m_problemText->setToolTip(text);
    m_recover->setVisible(recoverable);
    m_problem->show();
    // Where the user looks for runs: bring the dock forward if it was closed or tabbed away.
    show();
    raise();
}

void RunsDock::clearStoreProblem() {
    m_problem->hide();
}

bool RunsDock::hasStoreProblem() const {
    return !m_problem->isHidden();
}

namespace {

int64_t idOf(const QTreeWidgetItem* item) {
    return item->data(kName, kIdRole).toLongLong();
}

// A trial is named "<sweep name> #N: key=value ... seed=S" (sweep/runner.cpp). Under its sweep
// it gets a short label (run_names.h): the sweep's name, the values every trial shares and the
// ones linked to another key are dropped, the keys said as people say them, so what tells the
// trials apart fits the column ("#62 width 128 · lr 2^-8 · SP"); the tooltip has the full name.
std::map<int64_t, QString> trialLabels(const std::vector<store::RunInfo>& runs) {
    std::map<int64_t, QString> sweepNames;
    for (const auto& run : runs) {
        if (run.kind == "sweep") sweepNames[run.id] = QString::fromStdString(run.name);
    }
    std::map<int64_t, std::vector<std::pair<int64_t, QString>>> bySweep;
    std::map<int64_t, QString> labels;
    for (const auto& run : runs) {
        if (!run.sweepId || !sweepNames.count(*run.sweepId)) continue;
        QString name = QString::fromStdString(run.name);
        const QString prefix = sweepNames[*run.sweepId] + QLatin1Char(' ');
        if (name.startsWith(prefix)) name = name.mid(prefix.size());
        labels[run.id] = name;
        bySweep[*run.sweepId].emplace_back(run.id, name);
    }
    for (const auto& [sweep, trials] : bySweep)
        for (auto& [id, label] : sweepTrialLabels(trials)) labels[id] = label;
    return labels;
}

// Puts `item` under `parent` (nullptr: top level) among siblings kept newest (highest id) first.
void place(QTreeWidget* tree, QTreeWidgetItem* item, QTreeWidgetItem* parent) {
    const int64_t id = idOf(item);
    const int count = parent ? parent->childCount() : tree->topLevelItemCount();
    int at = 0;
    while (at < count) {
        const QTreeWidgetItem* sibling = parent ? parent->child(at) : tree->topLevelItem(at);
        if (idOf(sibling) < id) break;
        ++at;
    }
    if (parent) {
        parent->insertChild(at, item);
    } else {
        tree->insertTopLevelItem(at, item);
    }
}

}  // namespace

void RunsDock::showRuns(const std::vector<store::RunInfo>& runs) {
    // Updated in place, not rebuilt: the selection, the expanded sweeps, the current item and the
    // scroll position stay as the user left them while other processes add runs.
    std::vector<int64_t> before = selectedRunIds();
    m_refreshing = true;
    std::map<int64_t, QTreeWidgetItem*> items;
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it) items[idOf(*it)] = *it;
    std::map<int64_t, const store::RunInfo*> listed;
    for (const auto& run : runs) listed[run.id] = &run;
    // Runs that are gone: their children (trials of a deleted sweep) are placed again below.
    for (auto it = items.begin(); it != items.end();) {
        if (listed.count(it->first)) {
            ++it;
            continue;
        }
        QTreeWidgetItem* gone = it->second;
        for (QTreeWidgetItem* child : gone->takeChildren()) {
            if (listed.count(idOf(child))) m_tree->addTopLevelItem(child);
        }
        delete gone;
        it = items.erase(it);
    }
    const std::map<int64_t, QString> labels = trialLabels(runs);
    std::vector<std::pair<QTreeWidgetItem*, int64_t>> placement;  // item, parent id (or 0)
    for (const auto& run : runs) {
        QTreeWidgetItem*& item = items[run.id];
        if (!item) {
            item = new QTreeWidgetItem;
            item->setData(kName, kIdRole, qint64(run.id));
        }
        const auto label = labels.find(run.id);
        fillItem(item, run, label != labels.end() ? label->second : QString());
        placement.emplace_back(item, run.sweepId && listed.count(*run.sweepId) ? *run.sweepId : 0);
    }
    // Top level first (sweeps are there), then each trial under its sweep.
    std::stable_partition(placement.begin(), placement.end(),
                          [](const auto& p) { return p.second == 0; });
    for (auto [item, parentId] : placement) {
        QTreeWidgetItem* parent = parentId ? items[parentId] : nullptr;
        if (item->parent() == parent && (parent || m_tree->indexOfTopLevelItem(item) >= 0))
            continue;
        if (QTreeWidgetItem* old = item->parent()) {
            old->removeChild(item);
        } else if (const int index = m_tree->indexOfTopLevelItem(item); index >= 0) {
            m_tree->takeTopLevelItem(index);
        }
        const bool firstChild = parent && parent->childCount() == 0;
        place(m_tree, item, parent);
        // A sweep opens when its first trial arrives; after that it stays as the user left it.
        if (firstChild) parent->setExpanded(true);
    }
    applyFilter();
    selectRuns(before);
    m_refreshing = false;
    std::vector<int64_t> after = selectedRunIds();
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    if (after != before) emit selectionChanged(selectedRunIds());  // a selected run was deleted
}

void RunsDock::fillItem(QTreeWidgetItem* item, const store::RunInfo& run, const QString& label) {
    const QString status =
        QString::fromStdString(session::shownRunStatus(run.status, run.modelDir));
    const QString name = QString::fromStdString(run.name);
    item->setText(kName, label.isEmpty() ? name : label);
    item->setIcon(kName, statusIcon(status));
    item->setText(kStatus, status);
    item->setToolTip(kStatus, status == QLatin1String("interrupted")
                                  ? tr("The process training it ended without recording its end "
                                       "(killed or crashed). Resume Run continues it from its "
                                       "newest checkpoint.")
                                  : QString());
    const auto summary =
        QJsonDocument::fromJson(QByteArray::fromStdString(run.summaryJson)).object();
    const QJsonValue finalLoss = summary.value(QLatin1String("final_loss"));
    item->setText(kLoss,
                  finalLoss.isDouble() ? QString::number(finalLoss.toDouble(), 'f', 3) : QString());
    const QDateTime created =
        QDateTime::fromString(QString::fromStdString(run.created), Qt::ISODateWithMs);
    item->setText(kCreated, created.isValid()
                                ? created.toLocalTime().toString(QStringLiteral("MM-dd HH:mm"))
                                : QString::fromStdString(run.created));
    // The whole name, however narrow the column: names are elided in the middle, and the
    // tooltip (on every column but a status that explains itself) says everything, including
    // the columns hidden by default.
    QString tip = tr("%1\nRun %2 · %3 · %4 · created %5\n%6\n%7")
                      .arg(name)
                      .arg(run.id)
                      .arg(QString::fromStdString(run.kind), status, item->text(kCreated),
                           QString::fromStdString(run.modelDir), checkpointSummary(run.modelDir));
    if (status == QLatin1String("interrupted")) tip += '\n' + item->toolTip(kStatus);
    for (int column : {kName, kLoss, kCreated}) item->setToolTip(column, tip);
    if (item->toolTip(kStatus).isEmpty()) item->setToolTip(kStatus, tip);
}

std::vector<int64_t> RunsDock::selectedRunIds() const {
    std::vector<int64_t> ids;
    for (const auto* item : m_tree->selectedItems()) {
        ids.push_back(item->data(kName, kIdRole).toLongLong());
    }
    return ids;
}

void RunsDock::selectRuns(const std::vector<int64_t>& ids) {
    // One selectionChanged for the whole change, not one per row (each loads runs' metrics).
    const bool inRefresh = m_refreshing;
    std::vector<int64_t> before = selectedRunIds();
    m_refreshing = true;
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it) {
        const int64_t id = (*it)->data(kName, kIdRole).toLongLong();
        (*it)->setSelected(std::find(ids.begin(), ids.end(), id) != ids.end());
    }
    m_refreshing = inRefresh;
    if (inRefresh) return;
    std::vector<int64_t> after = selectedRunIds();
    std::sort(before.begin(), before.end());
    std::sort(after.begin(), after.end());
    if (after != before) emit selectionChanged(selectedRunIds());
}

void RunsDock::applyFilter() {
    const QString text = m_filter->text().trimmed();
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it) {
        QTreeWidgetItem* item = *it;
        const bool match = text.isEmpty() ||
                           item->text(kName).contains(text, Qt::CaseInsensitive) ||
                           item->text(kStatus).contains(text, Qt::CaseInsensitive);
        item->setHidden(!match);
        if (match) {
            for (QTreeWidgetItem* p = item->parent(); p; p = p->parent()) p->setHidden(false);
        }
    }
}

bool RunsDock::renameRun(int64_t id, const QString& name) {
    if (!m_store) return false;
    const Status status = m_store->renameRun(id, name.toStdString());
    if (!status.ok()) {
        emit errorOccurred(QString::fromStdString(status.error().message));
        return false;
    }
    refresh();
    return true;
}

bool RunsDock::deleteRun(int64_t id) {
    if (!m_store) return false;
    const Status status = m_store->deleteRun(id);
    if (!status.ok()) {
        emit errorOccurred(QString::fromStdString(status.error().message));
        return false;
    }
    refresh();  // says selectionChanged if the run was selected
    return true;
}

bool RunsDock::canResume(int64_t id) const {
    if (!m_store) return false;
    auto info = m_store->getRun(id);
    // "running" is not excluded: a killed process leaves that status behind. A run that really
    // is training elsewhere is refused when the session takes its folder's lock.
    if (!info.ok() || info->kind == "sweep") return false;
    return !checkpointsOf(info->modelDir).empty();
}

QString RunsDock::resumeToolTip(int64_t id) const {
    if (!m_store) return tr("Continue this run from its newest checkpoint");
    auto info = m_store->getRun(id);
    if (info.ok() && info->kind == "sweep")
        return tr("Continue this sweep: the trials without a result run again");
    if (!info.ok() || canResume(id)) return tr("Continue this run from its newest checkpoint");
    std::error_code ec;
    if (!info->modelDir.empty() &&
        std::filesystem::exists(std::filesystem::path(info->modelDir) / "config.yaml", ec))
        return tr(
            "This run ended before its first checkpoint, so there is nothing to continue "
            "from. Open config in editor, then Run, starts it again with the same config.");
    return tr(
        "This run has no checkpoint to continue from (runconfig.checkpoint_steps writes "
        "them during training).");
}

void RunsDock::showContextMenu(const QPoint& pos) {
    QTreeWidgetItem* item = m_tree->itemAt(pos);
    if (!item) return;
    std::unique_ptr<QMenu> menu(contextMenu(item->data(kName, kIdRole).toLongLong(), this));
    if (menu) menu->exec(m_tree->viewport()->mapToGlobal(pos));
}

QMenu* RunsDock::contextMenu(int64_t id, QWidget* parent) {
    if (!m_store) return nullptr;
    auto info = m_store->getRun(id);
    if (!info.ok()) return nullptr;
    const QString name = QString::fromStdString(info->name);
    auto* menu = new QMenu(parent);
    menu->setToolTipsVisible(true);
    menu->addAction(tr("Open config in editor"), this, [this, yaml = info->configYaml, name] {
        emit openConfigRequested(QString::fromStdString(yaml), name);
    });
    QAction* folder = menu->addAction(tr("Open folder"), this, [dir = info->modelDir] {
        QDesktopServices::openUrl(QUrl::fromLocalFile(QString::fromStdString(dir)));
    });
    folder->setEnabled(!info->modelDir.empty());
    QMenu* checkpoints = menu->addMenu(tr("Checkpoints"));
    for (const auto& [step, path] : checkpointsOf(info->modelDir)) {
        checkpoints->addAction(tr("Open checkpoint-%1 folder").arg(step), this,
                               [dir = QString::fromStdString(path.string())] {
                                   QDesktopServices::openUrl(QUrl::fromLocalFile(dir));
                               });
    }
    checkpoints->setEnabled(!checkpoints->isEmpty());
    QAction* resume =
        menu->addAction(style()->standardIcon(QStyle::SP_BrowserReload), tr("Resume run…"), this,
                        [this, id] { emit resumeRequested(id); });
    resume->setObjectName(QStringLiteral("resumeRun"));
    resume->setEnabled(m_resumeCheck ? m_resumeCheck(id) : canResume(id));
    resume->setToolTip(resumeToolTip(id));
    menu->addSeparator();
    menu->addAction(tr("Rename…"), this, [this, id, name] {
        bool ok = false;
        const QString newName = QInputDialog::getText(this, tr("Rename run"), tr("Name:"),
                                                      QLineEdit::Normal, name, &ok);
        if (ok && !newName.trimmed().isEmpty()) renameRun(id, newName.trimmed());
    });
    menu->addAction(
        style()->standardIcon(QStyle::SP_TrashIcon), tr("Delete…"), this, [this, id, name] {
            const auto answer = QMessageBox::question(
                this, tr("Delete run"),
                tr("Delete run %1 “%2” and its metrics from the run store?\nIts folder on disk is "
                   "kept.")
                    .arg(id)
                    .arg(name),
                QMessageBox::Yes | QMessageBox::Cancel, QMessageBox::Cancel);
            if (answer == QMessageBox::Yes) deleteRun(id);
        });
    return menu;
}

}  // namespace ws::ui
