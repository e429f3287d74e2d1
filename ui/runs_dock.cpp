// RunsDock: see runs_dock.h.
#include "ui/runs_dock.h"

#include <QDateTime>
#include <QDesktopServices>
#include <QHeaderView>
#include <QInputDialog>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QPainter>
#include <QPainterPath>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <map>
#include <memory>

#include "engine/session/checkpoints.h"
#include "engine/session/folder_lock.h"
#include "engine/store/run_store.h"

namespace ws::ui {
namespace {

enum Column { kName, kStatus, kLoss, kCreated };
constexpr int kIdRole = Qt::UserRole + 1;

QColor statusColor(const QString& status) {
    if (status == QLatin1String("running")) return QColor(0x1e, 0x88, 0xe5);
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
    return session::listCheckpoints(modelDir);
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
    auto* content = new QWidget(this);
    m_filter = new QLineEdit(content);
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setPlaceholderText(tr("Filter runs…"));
    m_filter->setClearButtonEnabled(true);
    m_tree = new QTreeWidget(content);
    m_tree->setObjectName(QStringLiteral("runsTree"));
    m_tree->setHeaderLabels({tr("Run"), tr("Status"), tr("Loss"), tr("Created")});
    m_tree->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_tree->setMinimumWidth(220);
    m_tree->setRootIsDecorated(true);
    m_tree->setUniformRowHeights(true);
    m_tree->setAlternatingRowColors(true);
    m_tree->setContextMenuPolicy(Qt::CustomContextMenu);
    m_tree->header()->setStretchLastSection(false);
    m_tree->header()->setSectionResizeMode(kName, QHeaderView::Stretch);
    for (int c : {kStatus, kLoss, kCreated}) {
        m_tree->header()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
    }
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->setSpacing(4);
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
    const std::vector<int64_t> selected = selectedRunIds();
    m_refreshing = true;
    m_tree->clear();
    if (m_store) {
        auto runs = m_store->listRuns();
        if (!runs.ok()) {
            emit errorOccurred(QString::fromStdString(runs.error().message));
        } else {
            std::map<int64_t, QTreeWidgetItem*> items;
            std::vector<std::pair<QTreeWidgetItem*, int64_t>> children;
            for (const auto& run : *runs) {
                auto* item = new QTreeWidgetItem;
                const QString status =
                    QString::fromStdString(session::shownRunStatus(run.status, run.modelDir));
                item->setText(kName, QString::fromStdString(run.name));
                item->setIcon(kName, statusIcon(status));
                item->setText(kStatus, status);
                if (status == QLatin1String("interrupted"))
                    item->setToolTip(kStatus,
                                     tr("The process training it ended without recording its end "
                                        "(killed or crashed). Resume Run continues it from its "
                                        "newest checkpoint."));
                item->setData(kName, kIdRole, qint64(run.id));
                const auto summary =
                    QJsonDocument::fromJson(QByteArray::fromStdString(run.summaryJson)).object();
                if (summary.contains(QLatin1String("final_loss")) &&
                    summary.value(QLatin1String("final_loss")).isDouble()) {
                    item->setText(
                        kLoss, QString::number(
                                   summary.value(QLatin1String("final_loss")).toDouble(), 'f', 3));
                }
                const QDateTime created =
                    QDateTime::fromString(QString::fromStdString(run.created), Qt::ISODateWithMs);
                item->setText(kCreated, created.isValid() ? created.toLocalTime().toString(
                                                                QStringLiteral("MM-dd HH:mm"))
                                                          : QString::fromStdString(run.created));
                item->setToolTip(kName, tr("%1\nRun %2 · %3 · %4\n%5\n%6")
                                            .arg(QString::fromStdString(run.name))
                                            .arg(run.id)
                                            .arg(QString::fromStdString(run.kind), status,
                                                 QString::fromStdString(run.modelDir),
                                                 checkpointSummary(run.modelDir)));
                items[run.id] = item;
                if (run.sweepId) {
                    children.emplace_back(item, *run.sweepId);
                } else {
                    m_tree->addTopLevelItem(item);
                }
            }
            for (auto [item, parent] : children) {
                if (auto it = items.find(parent); it != items.end()) {
                    // A trial is named "<sweep name> #N: values"; under its sweep, "#N: values"
                    // is what tells the trials apart (the tooltip keeps the whole name).
                    const QString prefix = it->second->text(kName) + QLatin1Char(' ');
                    if (item->text(kName).startsWith(prefix))
                        item->setText(kName, item->text(kName).mid(prefix.size()));
                    it->second->addChild(item);
                    it->second->setExpanded(true);
                } else {
                    m_tree->addTopLevelItem(item);
                }
            }
        }
    }
    applyFilter();
    selectRuns(selected);
    m_refreshing = false;
}

std::vector<int64_t> RunsDock::selectedRunIds() const {
    std::vector<int64_t> ids;
    for (const auto* item : m_tree->selectedItems()) {
        ids.push_back(item->data(kName, kIdRole).toLongLong());
    }
    return ids;
}

void RunsDock::selectRuns(const std::vector<int64_t>& ids) {
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it) {
        const int64_t id = (*it)->data(kName, kIdRole).toLongLong();
        (*it)->setSelected(std::find(ids.begin(), ids.end(), id) != ids.end());
    }
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
    refresh();
    emit selectionChanged(selectedRunIds());
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
    resume->setToolTip(info->kind == "sweep"
                           ? tr("Continue this sweep: the trials without a result run again")
                           : tr("Continue this run from its newest checkpoint"));
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
