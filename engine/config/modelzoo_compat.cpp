// SPDX-License-Identifier: GPL-3.0-or-later
// ModelZoo compatibility steps after reading (see modelzoo_compat.h).
#include "engine/config/modelzoo_compat.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ws::config::detail {

namespace {

constexpr const char* kKernelPath = "optimizer.adjust_learning_rate.decoder_kernel";
constexpr const char* kScalePath = "model.output_logits_scale";

// 0.046188021535170064 * sqrt(3) is 0.08 up to rounding: twelve significant digits give back the
// value the author of the current-style file would write, and change no initial weight.
double tidy(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.12g", value);
    return std::strtod(text, nullptr);
}

// Six significant digits for messages: "0.333333", "1.73205", "230.4".
std::string brief(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.6g", value);
    return text;
}

bool isWholeNumber(double x) {
    return x >= 0.5 && std::abs(x - std::round(x)) <= 1e-6 * std::max(1.0, std::abs(x));
}

// The same distribution with its spread (std, and the bounds around the mean) times `factor`.
InitializerConfig widened(InitializerConfig init, double factor) {
    init.std = tidy(init.std * factor);
    init.a = tidy(init.mean + (init.a - init.mean) * factor);
    init.b = tidy(init.mean + (init.b - init.mean) * factor);
    return init;
}

bool isHdf5Processor(std::string_view processor) {
    return processor == "GptHDF5DataProcessor" || processor == "GptHDF5MapDataProcessor";
}

}  // namespace

void translateLegacyMup(Config& config, ReadContext& ctx) {
    if (!ctx.outputLogitsScale && !ctx.decoderKernel) return;
    ModelConfig& model = config.model;
    const ReadContext::LegacyMupKey& first =
        ctx.decoderKernel ? *ctx.decoderKernel : *ctx.outputLogitsScale;
    const std::string firstPath = ctx.decoderKernel ? kKernelPath : kScalePath;
    if (model.mupBaseHiddenSize > 0 || model.mupBaseFilterSize > 0 ||
        model.outputLogitsAlpha != 1.0) {
        ctx.error(first.mark, firstPath,
                  "the file describes muP twice, with ModelZoo's older keys "
                  "(model.output_logits_scale, optimizer.adjust_learning_rate) and the current "
                  "ones (model.mup_base_hidden_size, mup_base_filter_size, output_logits_alpha); "
                  "keep the current ones and delete the older");
        return;
    }
    if (!ctx.decoderKernel) {
        ctx.error(first.mark, kScalePath,
                  "ModelZoo's older muP logit multiplier needs optimizer.adjust_learning_rate."
                  "decoder_kernel too: Wafer Studio scales the logits only under muP, whose width "
                  "multiplier m it takes from decoder_kernel (= base width / hidden_size). Add "
                  "adjust_learning_rate: {decoder_kernel: ...}, or write model."
                  "mup_base_hidden_size, mup_base_filter_size and output_logits_alpha instead");
        return;
    }
    const double kernel = ctx.decoderKernel->value;
    const double baseHidden = model.hiddenSize * kernel;
    const double baseFilter = model.filterSize * kernel;
    if (!isWholeNumber(baseHidden) || !isWholeNumber(baseFilter)) {
        ctx.error(ctx.decoderKernel->mark, kKernelPath,
                  "decoder_kernel " + brief(kernel) +
                      " is muP's base width / hidden_size, but it gives a base width of " +
                      std::to_string(model.hiddenSize) + " x " + brief(kernel) + " = " +
                      brief(baseHidden) + " and a base MLP width of " +
                      std::to_string(model.filterSize) + " x " + brief(kernel) + " = " +
                      brief(baseFilter) +
                      "; both must be whole numbers: write model.mup_base_hidden_size and "
                      "mup_base_filter_size instead");
        return;
    }
    model.mupBaseHiddenSize = static_cast<int>(std::lround(baseHidden));
    model.mupBaseFilterSize = static_cast<int>(std::lround(baseFilter));
    // decoder_kernel scales every decoder weight's LR, the MLP output's included, by the same
    // 1 / m; with both base widths from the same factor m_ffn = m, as the engine's rule needs.
    const double widthMult = double(model.hiddenSize) / model.mupBaseHiddenSize;
    const double logitsScale = ctx.outputLogitsScale ? ctx.outputLogitsScale->value : 1.0;
    model.outputLogitsAlpha =
        tidy(logitsScale * (model.scaleOutputLogitsByD ? widthMult : std::sqrt(widthMult)));
    // The older files give the initializers' final std (base std / sqrt(m), from ModelZoo's
    // convert_config_to_mup.py); under mup_base_hidden_size the engine divides by sqrt(m) itself.
    const double initFactor = std::sqrt(widthMult);
    model.initializer = widened(model.initializer, initFactor);
    if (model.outputLayerInitializer)
        *model.outputLayerInitializer = widened(*model.outputLayerInitializer, initFactor);

    const std::string m = brief(widthMult);
    std::string message = "ModelZoo's older muP keys read as the current ones: decoder_kernel " +
                          brief(kernel) + " (= base width / hidden_size) gives model." +
                          "mup_base_hidden_size " + std::to_string(model.mupBaseHiddenSize) +
                          " and mup_base_filter_size " + std::to_string(model.mupBaseFilterSize) +
                          " (width multiplier m = " + m + "); ";
    if (ctx.outputLogitsScale)
        message += "model.output_logits_scale " + brief(logitsScale) +
                   " (= output_logits_alpha / m) gives output_logits_alpha " +
                   brief(model.outputLogitsAlpha);
    else
        message +=
            "without model.output_logits_scale the logits stay unscaled: "
            "output_logits_alpha " +
            brief(model.outputLogitsAlpha);
    message += "; model.initializer" +
               std::string(model.outputLayerInitializer ? " and output_layer_initializer" : "") +
               " are multiplied by sqrt(m) = " + brief(initFactor) +
               " since muP divides them by sqrt(m) again, so the weights start as the file gives "
               "them";
    if (!model.shareEmbeddingWeights)
        message +=
            " (the untied lm_head, which starts from model.initializer, starts sqrt(m) "
            "wider than before)";
    ctx.warn(ctx.decoderKernel->mark, kKernelPath, message);
}

void markSequenceLengthUnset(Config& config) {
    config.trainInput.maxSequenceLength = 0;
    config.evalInput.maxSequenceLength = 0;
}

void resolveSequenceLength(Config& config, ReadContext& ctx) {
    const int fallback = InputConfig{}.maxSequenceLength;
    InputConfig& train = config.trainInput;
    if (train.maxSequenceLength == 0) {
        if (isHdf5Processor(train.dataProcessor)) {
            train.maxSequenceLength = config.model.maxPositionEmbeddings;
            ctx.warn(YAML::Mark::null_mark(), "train_input.max_sequence_length",
                     "not given; ModelZoo's " + train.dataProcessor +
                         " takes it from its HDF5 files; here it is the model's context, "
                         "model.max_position_embeddings = " +
                         std::to_string(train.maxSequenceLength) +
                         " tokens per sequence, which a run (and wafer validate) checks against "
                         "the files. Set train_input.max_sequence_length to the files' length");
        } else {
            train.maxSequenceLength = fallback;
            if (train.dataProcessor != "TextFileDataProcessor")
                ctx.warn(YAML::Mark::null_mark(), "train_input.max_sequence_length",
                         "not given; using the default of " + std::to_string(fallback) +
                             " tokens per sequence. Set train_input.max_sequence_length to "
                             "choose");
        }
    }
    // Evaluation runs at the training length; this only keeps the saved config consistent.
    InputConfig& eval = config.evalInput;
    if (eval.maxSequenceLength == 0)
        eval.maxSequenceLength =
            isHdf5Processor(eval.dataProcessor) ? train.maxSequenceLength : fallback;
}

}  // namespace ws::config::detail
