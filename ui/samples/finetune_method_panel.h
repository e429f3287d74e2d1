// SPDX-License-Identifier: GPL-3.0-or-later
// FinetuneMethodPanel: the fine-tune wizard's method page (issue 16): LoRA adapters (rank, alpha,
// targets by HF GPT-2 module name on a GPT-2 base, by Llama's (PEFT's) q/k/v/o/gate/up/down_proj
// on a Llama-family base, dropout; the base stays frozen) or a full fine-tune, and
// whether to compute in bf16. Beside the choice, both methods' costs on the chosen base, from
// engine/finetune's methodCost (the same figures the plan's summary and `wafer finetune
// --dry-run` use): trained parameters, MemoryX bytes, training FLOPs per token and, once the
// wizard has a plan, the estimated time of that plan under each method.
// Defaults (setBase, until the user changes them): LoRA for bases above
// finetune::kLoraDefaultAboveParameters, a full fine-tune below (the shipped base); rank
// finetune::kDefaultLoraRank, alpha 2 x rank (following the rank until edited), every target of
// the base's family (gate_proj and up_proj only with SwiGLU),
// no dropout; bf16 when the base computes in bf16, or for LoRA on a CPU with bf16 hardware.
// GUI thread only.
#pragma once

#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <optional>

#include "engine/config/config.h"
#include "engine/finetune/finetune_plan.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QRadioButton;
class QSpinBox;

namespace ws::ui {

class FinetuneMethodPanel : public QWidget {
    Q_OBJECT
public:
    explicit FinetuneMethodPanel(QWidget* parent = nullptr);

    // A new base: its config (training shape, precision) and size set the defaults the user
    // has not overridden.
    void setBase(const config::Config& base, int64_t parameters);
    // The wizard's newest plan (null: none), for the estimated times; its config replaces the
    // base's as the one the costs are computed on.
    void setPlan(const finetune::FinetunePlan* plan);

    bool lora() const;
    int rank() const;
    double alpha() const;
    double dropout() const;
    QStringList targets() const;
    bool bf16() const;
    // At least one target with LoRA (otherwise the page says so and blocks Next).
    bool valid() const;

    // As a user would choose (each marks the choice as the user's, so a new base keeps it).
    void setLora(bool lora);
    void setRank(int rank);
    void setAlpha(double alpha);
    void setDropout(double dropout);
    void setTargets(const QStringList& targets);
    void setBf16(bool bf16);

    // The request fields of this choice (loraRank 0 for a full fine-tune; bf16 set only when
    // it differs from the base's precision).
    void applyTo(finetune::FinetuneRequest& request) const;
    // The cost of each method with the current settings on the current config.
    finetune::MethodCost cost(bool lora) const;
    QString comparisonText() const;

signals:
    void changed();

private:
    config::Config configFor(bool lora) const;
    void userChanged();
    void refresh();

    std::optional<config::Config> m_base;
    std::optional<config::Config> m_planConfig;
    double m_planTokens = 0, m_planSteps = 0;
    bool m_baseBf16 = false;
    bool m_methodEdited = false, m_alphaEdited = false, m_bf16Edited = false;
    bool m_updating = false;

    QRadioButton* m_lora;
    QRadioButton* m_full;
    QSpinBox* m_rank;
    QDoubleSpinBox* m_alpha;
    QDoubleSpinBox* m_dropout;
    QCheckBox* m_targets[4];       // GPT-2's names (a GPT-2 base)
    QCheckBox* m_llamaTargets[7];  // Llama's names (a Llama-family base)
    QWidget* m_gpt2Grid;
    QWidget* m_llamaGrid;
    bool m_llamaBase = false;
    bool m_swiglu = false;         // the base's MLP has gate and up projections
    bool m_targetsEdited = false;  // the user chose targets: a new base keeps them
    QCheckBox* m_bf16;
    QWidget* m_loraBox;
    QLabel* m_comparison;
};

}  // namespace ws::ui
