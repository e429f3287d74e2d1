// SPDX-License-Identifier: GPL-3.0-or-later
// TransferDialog: μTransfer from the Sweeps tab. Pre-filled with the μP proxy's optimum (its
// width, best learning rate, init std and embedding multiplier), it asks for a target width and
// depth and writes the target config YAML with the μP fields set (engine/mup/transfer.h does the
// generation; problems show live under the form and disable Save). GUI thread only.
#pragma once

#include <QDialog>

#include "engine/mup/transfer.h"

class QDialogButtonBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace ws::ui {

class TransferDialog : public QDialog {
    Q_OBJECT
public:
    // `proxy`: the config the sweep ran with its μP bundle applied; `bestLog2Lr`: the proxy's
    // optimum at width `proxyWidth`; `suggestedPath`: where Save writes by default.
    TransferDialog(const config::Config& proxy, int proxyWidth, double bestLog2Lr,
                   const QString& suggestedPath, QWidget* parent = nullptr);

    mup::TransferRequest request() const;
    QString outputPath() const;
    QString problem() const;  // the generator's error for the current inputs, "" when fine
    // Writes the target config to outputPath(); false with `error` set when it cannot.
    bool writeConfig(QString* error);

    QSpinBox* targetWidth() const { return m_width; }
    QSpinBox* targetLayers() const { return m_layers; }
    QDoubleSpinBox* log2Lr() const { return m_log2Lr; }
    QLineEdit* pathEdit() const { return m_path; }

private:
    void revalidate();

    config::Config m_proxy;
    int m_proxyWidth;
    QDoubleSpinBox* m_log2Lr;
    QDoubleSpinBox* m_std;
    QDoubleSpinBox* m_embScale;
    QSpinBox* m_width;
    QSpinBox* m_layers;
    QLineEdit* m_path;
    QLabel* m_status;
    QDialogButtonBox* m_buttons;
};

}  // namespace ws::ui
