// SPDX-License-Identifier: GPL-3.0-or-later
// μTransfer config generation: from the winning hyperparameters of a narrow μP proxy (its width,
// its best learning rate, its init std and embedding multiplier) write the config of a wider
// (and optionally deeper) target model with the μP fields set, so the target trains at the
// proxy's optimum (μP paper, arXiv 2203.03466, §5 "μTransfer"; Cerebras-GPT tuned a 40M proxy
// this way; the same inputs as ModelZoo's μP config generator: base width, base LR, base init
// std, embedding multiplier). Under μP the base values are used as they are: the width
// multiplier m = hidden_size / mup_base_hidden_size scales the hidden init variance and LR inside
// the engine (engine/model/parameters.cpp), so nothing here is divided by m.
// Thread-safety: a pure function. Never throws: bad input is an Error naming the field.
#pragma once

#include <optional>

#include "engine/config/config.h"
#include "engine/core/result.h"

namespace ws::mup {

struct TransferRequest {
    config::Config proxy;           // the config the sweep ran (its μP bundle applied), any width
    int proxyHiddenSize = 0;        // d_base: the width whose optimum is transferred
    double baseLearningRate = 0.0;  // the proxy's best learning rate
    std::optional<double> initStd;  // σ_base; default: proxy initializer std
    std::optional<double> embeddingsScale;  // m_emb; default: the proxy's (1 when not μP)
    int targetHiddenSize = 0;
    int targetLayers = 0;  // 0: the proxy's depth
};

// The target config: hidden_size = target, num_heads keeping the proxy's head size, filter_size
// keeping its filter/hidden ratio, mup_base_hidden_size = proxy width, mup_base_filter_size =
// the proxy's filter size at that width, constant learning rate = baseLearningRate, initializer
// (and embedding initializer) std = σ_base with truncation bounds kept at the same multiple of
// σ, embeddings_scale = m_emb, scale_qk_dot_by_d on; its sweep: section removed. Errors: a
// target narrower than the proxy, a width the head size or proxy width does not divide, a
// non-positive rate or std, a result that fails validation.
Result<config::Config> makeTransferConfig(const TransferRequest& request);

}  // namespace ws::mup
