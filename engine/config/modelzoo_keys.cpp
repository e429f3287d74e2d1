// SPDX-License-Identifier: GPL-3.0-or-later
// The table of ModelZoo keys loaded with a warning (see modelzoo_keys.h). Collected from the
// GPT-2/GPT-3/Cerebras-GPT params files of Cerebras/modelzoo releases 1.6 to 2.3
// (modelzoo/transformers/pytorch/{gpt2,gpt3}/configs/**.yaml).
#include "engine/config/modelzoo_keys.h"

#include <array>

namespace ws::config::detail {

namespace {

constexpr std::string_view kNotEmulated = "a Cerebras runtime setting with no effect here";

const std::array kIgnored = std::to_array<IgnoredModelZooKey>({
    // Top-level sections.
    {"", "csx", "use runconfig.num_csx for the number of emulated systems"},
    {"", "trainer", "the ModelZoo 2.x trainer layout is not read; the legacy sections are used"},
    {"", "cluster", "cluster specs are not supported by this build yet"},
    {"", "sweep", "sweeps are not supported by this build yet"},
    // model
    {"model", "use_position_embedding", "position_embedding_type chooses how positions are encoded",
     "true"},
    {"model", "fold_rope_consts", kNotEmulated},
    {"model", "alibi_trainable_slopes", "ALiBi slopes are always the fixed ones", "false"},
    {"model", "attention_type", "attention is always scaled dot product", "scaled_dot_product"},
    {"model", "loss_scaling", "the loss is always the mean over tokens", "num_tokens"},
    {"model", "loss_weight", "the loss is always the mean over tokens", "1.0"},
    {"model", "use_bfloat16", "reduced precision follows mixed_precision and fp16_type"},
    {"model", "precision_opt_level", kNotEmulated},
    {"model", "boundary_casting", kNotEmulated},
    {"model", "tf_summary", kNotEmulated},
    {"model", "allow_multireplica", kNotEmulated},
    {"model", "attention_softmax_fp32", "attention softmax is always computed in fp32", "true"},
    {"model", "weight_initialization_seed", "runconfig.seed seeds the initialization"},
    {"model", "use_vsl", "set train_input.use_vsl (and eval_input.use_vsl) instead", "false"},
    {"model", "fixed_sparse_attention", "attention is always dense"},
    // optimizer
    {"optimizer", "loss_scaling_factor", "no loss scaling is needed with bfloat16 or fp32"},
    {"optimizer", "initial_loss_scale", "no loss scaling is needed with bfloat16 or fp32"},
    {"optimizer", "max_loss_scale", "no loss scaling is needed with bfloat16 or fp32"},
    {"optimizer", "log_summaries", "metrics are always recorded in the run store"},
    {"optimizer", "ws_summary", kNotEmulated},
    {"optimizer", "disable_lr_steps_reset", "schedule pieces always run one after the other"},
    // one piece of optimizer.learning_rate
    {"schedule", "alpha",
     "set end_learning_rate instead (end_learning_rate = alpha * initial_learning_rate)"},
    // train_input / eval_input
    {"input", "prefetch_factor", "data loading is not a bottleneck here"},
    {"input", "persistent_workers", "data loading is not a bottleneck here"},
    {"input", "use_multiple_workers", "data loading is not a bottleneck here"},
    {"input", "n_parallel_reads", "data loading is not a bottleneck here"},
    {"input", "shuffle_buffer", "shuffling uses shuffle and shuffle_seed"},
    {"input", "repeat", "training data always repeats; evaluation reads eval_steps batches"},
    {"input", "vocab_size", "model.vocab_size sets the vocabulary"},
    {"input", "mixed_precision", "model.mixed_precision sets the precision"},
    {"input", "add_special_tokens", "text is tokenized as written, without special tokens"},
    // runconfig
    {"runconfig", "save_summary_steps", "log_steps sets how often metrics are recorded"},
    {"runconfig", "log_step_count_steps", "log_steps sets how often metrics are recorded"},
    {"runconfig", "save_losses", "losses are always recorded in the run store"},
    {"runconfig", "enable_distributed", kNotEmulated},
    {"runconfig", "use_appliance_data", kNotEmulated},
    {"runconfig", "execution_strategy", "training always streams weights", "weight_streaming"},
    {"runconfig", "precision_opt_level", kNotEmulated},
    {"runconfig", "use_cs_grad_accum",
     "gradient accumulation follows train_input.micro_batch_size (auto: a step is split into "
     "micro-batches whose gradients accumulate whenever the whole batch does not fit the "
     "wafer)"},
    {"runconfig", "show_debug_metrics", kNotEmulated},
    {"runconfig", "validate_only", "use `wafer validate` instead"},
    {"runconfig", "compile_only", kNotEmulated},
    {"runconfig", "mode", "the command chooses what runs (train, eval)"},
    {"runconfig", "cs_ip", kNotEmulated},
    {"runconfig", "num_wgt_servers", kNotEmulated},
    {"runconfig", "num_workers_per_csx", kNotEmulated},
});

}  // namespace

std::string sectionKind(std::string_view path) {
    if (path == "train_input" || path == "eval_input") return "input";
    if (path.starts_with("optimizer.learning_rate")) return "schedule";
    return std::string(path);
}

const IgnoredModelZooKey* findIgnoredModelZooKey(std::string_view kind, std::string_view key) {
    for (const IgnoredModelZooKey& entry : kIgnored)
        if (entry.section == kind && entry.key == key) return &entry;
    return nullptr;
}

}  // namespace ws::config::detail
