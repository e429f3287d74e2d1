// SPDX-License-Identifier: GPL-3.0-or-later
// TransferDialog: see transfer_dialog.h.
#include "ui/sweeps/transfer_dialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSpinBox>
#include <QVBoxLayout>
#include <cmath>

#include "engine/config/config_yaml.h"

namespace ws::ui {

TransferDialog::TransferDialog(const config::Config& proxy, int proxyWidth, double bestLog2Lr,
                               const QString& suggestedPath, QWidget* parent)
    : QDialog(parent), m_proxy(proxy), m_proxyWidth(proxyWidth) {
    setWindowTitle(tr("Transfer the μP optimum"));
    auto* layout = new QVBoxLayout(this);
    auto* intro = new QLabel(
        tr("Writes a config for a wider model that trains at the proxy's optimum: under μP the "
           "base values carry over and the width multiplier (hidden_size / "
           "mup_base_hidden_size = %1) scales them inside the engine.")
            .arg(proxyWidth),
        this);
    intro->setWordWrap(true);
    layout->addWidget(intro);
    auto* form = new QFormLayout;
    form->addRow(tr("Proxy width (mup_base_hidden_size)"),
                 new QLabel(QString::number(proxyWidth), this));
    m_log2Lr = new QDoubleSpinBox(this);
    m_log2Lr->setRange(-30, 4);
    m_log2Lr->setDecimals(2);
    m_log2Lr->setSingleStep(0.5);
    m_log2Lr->setValue(bestLog2Lr);
    m_log2Lr->setToolTip(tr("log2 of the base learning rate; the sweep's μP optimum"));
    form->addRow(tr("Base learning rate (log2)"), m_log2Lr);
    m_std = new QDoubleSpinBox(this);
    m_std->setRange(1e-5, 10);
    m_std->setDecimals(5);
    m_std->setSingleStep(0.005);
    m_std->setValue(proxy.model.initializer.std);
    form->addRow(tr("Base init std (σ_base)"), m_std);
    m_embScale = new QDoubleSpinBox(this);
    m_embScale->setRange(0.001, 1000);
    m_embScale->setDecimals(3);
    m_embScale->setValue(proxy.model.embeddingsScale);
    form->addRow(tr("Embedding multiplier (embeddings_scale)"), m_embScale);
    m_width = new QSpinBox(this);
    const int head = proxy.model.numHeads > 0 ? proxy.model.hiddenSize / proxy.model.numHeads : 1;
    m_width->setRange(1, 1 << 16);
    m_width->setSingleStep(std::max(head, 1));
    m_width->setValue(proxyWidth * 8);
    m_width->setSuffix(tr("  (hidden_size)"));
    form->addRow(tr("Target width"), m_width);
    m_layers = new QSpinBox(this);
    m_layers->setRange(1, 512);
    m_layers->setValue(proxy.model.numHiddenLayers);
    form->addRow(tr("Target depth (layers)"), m_layers);
    auto* pathRow = new QHBoxLayout;
    m_path = new QLineEdit(suggestedPath, this);
    auto* browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Target config"), m_path->text(),
                                                          tr("YAML config (*.yaml *.yml)"));
        if (!path.isEmpty()) m_path->setText(path);
    });
    pathRow->addWidget(m_path, 1);
    pathRow->addWidget(browse);
    form->addRow(tr("Write to"), pathRow);
    layout->addLayout(form);
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_status->setObjectName(QStringLiteral("TransferStatus"));
    layout->addWidget(m_status);
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Save | QDialogButtonBox::Cancel, this);
    layout->addWidget(m_buttons);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_buttons, &QDialogButtonBox::accepted, this, [this] {
        QString error;
        if (writeConfig(&error)) {
            accept();
        } else {
            m_status->setText(
                QStringLiteral("<span style='color:#d62728'>%1</span>").arg(error.toHtmlEscaped()));
        }
    });
    for (auto* box : {m_log2Lr, m_std, m_embScale})
        connect(box, &QDoubleSpinBox::valueChanged, this, &TransferDialog::revalidate);
    for (auto* box : {m_width, m_layers})
        connect(box, &QSpinBox::valueChanged, this, &TransferDialog::revalidate);
    connect(m_path, &QLineEdit::textChanged, this, &TransferDialog::revalidate);
    revalidate();
}

mup::TransferRequest TransferDialog::request() const {
    mup::TransferRequest r;
    r.proxy = m_proxy;
    r.proxyHiddenSize = m_proxyWidth;
    r.baseLearningRate = std::exp2(m_log2Lr->value());
    r.initStd = m_std->value();
    r.embeddingsScale = m_embScale->value();
    r.targetHiddenSize = m_width->value();
    r.targetLayers = m_layers->value();
    return r;
}

QString TransferDialog::outputPath() const {
    return m_path->text().trimmed();
}

QString TransferDialog::problem() const {
    auto target = mup::makeTransferConfig(request());
    if (!target.ok()) return QString::fromStdString(target.error().message);
    if (outputPath().isEmpty()) return tr("choose a file to write");
    return {};
}

void TransferDialog::revalidate() {
    const QString p = problem();
    const auto r = request();
    m_status->setText(
        p.isEmpty()
            ? tr("learning rate %1, width multiplier %2")
                  .arg(r.baseLearningRate, 0, 'g', 4)
                  .arg(double(r.targetHiddenSize) / double(std::max(m_proxyWidth, 1)), 0, 'g', 4)
            : QStringLiteral("<span style='color:#d62728'>%1</span>")
                  .arg(p.toHtmlEscaped().replace('\n', QStringLiteral("<br>"))));
    m_buttons->button(QDialogButtonBox::Save)->setEnabled(p.isEmpty());
}

bool TransferDialog::writeConfig(QString* error) {
    auto target = mup::makeTransferConfig(request());
    if (!target.ok()) {
        if (error) *error = QString::fromStdString(target.error().message);
        return false;
    }
    QSaveFile file(outputPath());
    if (!file.open(QIODevice::WriteOnly)) {
        if (error) *error = tr("cannot write %1: %2").arg(outputPath(), file.errorString());
        return false;
    }
    const std::string yaml = "# Written by Wafer Studio's μTransfer from a " +
                             std::to_string(m_proxyWidth) + "-wide μP proxy.\n" +
                             config::saveConfigYaml(*target);
    file.write(QByteArray::fromStdString(yaml));
    if (!file.commit()) {
        if (error) *error = tr("cannot write %1: %2").arg(outputPath(), file.errorString());
        return false;
    }
    return true;
}

}  // namespace ws::ui
