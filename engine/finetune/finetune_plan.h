// SPDX-License-Identifier: GPL-3.0-or-later
// Fine-tuning plans: from a base model (a run id, a run or checkpoint folder, a model.safetensors,
// a Hugging Face GPT-2 folder), new text files and a few options, the config of a training run
// that keeps the base's architecture and tokenizer and starts from its weights, with fine-tune
// defaults:
//   - learning rate: a third of the base's peak (Hugging Face bases: 2e-4, a third of GPT-2 /
//     Cerebras-GPT's 6e-4), linear warmup over 10% of the steps (at most 100), then a cosine
//     decay to a tenth of that;
//   - evaluation on a held-out slice at the end of the new text (10%, raised up to 50% when the
//     text is too short for one window), every tenth of the run, over up to 50 batches;
//   - max_steps: `epochs` passes over the training slice (default kDefaultEpochs), at least
//     kMinSteps and at most kMaxSteps (explainSteps says so in words);
//   - batch and sequence length of the base (sequence length capped at its positions);
//   - optional freezing (optimizer.freeze_embeddings / freeze_blocks; frozen tensors stay
//     bit-identical, session/param_groups.h);
//   - the method: a full fine-tune, or LoRA adapters (FinetuneRequest::loraRank > 0: the base
//     frozen, see kLoraLearningRateMultiplier); the wizard offers LoRA first for bases above
//     kLoraDefaultAboveParameters;
//   - the precision: the base's, or bf16 / fp32 as asked (FinetuneRequest::bf16);
//   - `overrides` ("key=value", as --set) applied last, so every default can be changed.
// The plan's summary is what the GUI wizard shows before Run; inspectBase is the plan's check of
// the base alone, which the wizard's first page shows. Errors name the file or key.
// Thread-safety: free functions; planFinetune reads files and tokenizes the new text,
// inspectBase reads the base's config, tokenizer and weights header (never its tensors).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/config/config_yaml.h"
#include "engine/core/result.h"

namespace ws::tokenizer {
class Tokenizer;
}

namespace ws::finetune {

// The defaults, chosen by measurement (README "Fine-tuning": the shipped base model on 4.9 KB of
// modern prose, held-out loss and samples before and after).
inline constexpr int kDefaultEpochs = 3;
inline constexpr int64_t kMinSteps = 30;
inline constexpr int64_t kMaxSteps = 5000;
inline constexpr double kLearningRateDivisor = 3.0;  // peak LR: the base's peak / this
// LoRA (--lora RANK): adapters on every linear of each block (GPT-2's four, or Llama's seven
// projections on a Llama-family base: model/lora.h allLinearTargets) (QLoRA, Dettmers et al. 2023:
// all of them are needed to match a full fine-tune), alpha = 2 x rank, and a peak LR this many
// times the full fine-tune's. Measured on the shipped base, 4.9 KB of new prose, rank 8, 30
// steps (README "LoRA"): peak 1e-3 reaches eval 2.096, 3e-3 1.962, 1e-2 1.910, 2e-2 1.909, 3e-2
// diverges (2.672); the full fine-tune at its 1e-3 reaches 1.892 from 2.269.
inline constexpr double kLoraLearningRateMultiplier = 10.0;
// The wizard's default method: LoRA for bases with more parameters than this, a full fine-tune
// for smaller ones (the shipped 5.3 M base: its AdamW state is 64 MiB, adapters of rank 8 on all
// four linears would still train 5% of it, and a full fine-tune of it on a few KB of text takes
// well under a minute; GPT-2 small and up get LoRA).
inline constexpr int64_t kLoraDefaultAboveParameters = 10'000'000;
inline constexpr int kDefaultLoraRank = 8;

struct FinetuneRequest {
    std::string base;  // see the header comment
    // Text files and/or folders of text files; or instruction and chat record files (.jsonl
    // .json .csv .tsv .zip: data/chat_records.h), never mixed with text.
    std::vector<std::string> dataFiles;
    bool freezeEmbeddings = false;
    int freezeBlocks = 0;
    int loraRank = 0;          // > 0: LoRA adapters of this rank, the base frozen (see above)
    double loraAlpha = 0.0;    // 0: 2 x rank
    double loraDropout = 0.0;  // on the adapter branch's input
    // lora.targets names (model/lora.h); empty: every linear (lora::allLinearTargets).
    std::vector<std::string> loraTargets;
    // Compute in bf16 (model.mixed_precision with fp16_type bfloat16) or fp32; unset: as the base.
    std::optional<bool> bf16;
    int epochs = kDefaultEpochs;
    // Train on data files that do not look like plain text (data/text_check.h) instead of
    // refusing them (wafer finetune --allow-binary; the wizard's "use it anyway").
    bool allowBinary = false;
    std::vector<std::string> overrides;  // "key.path=value", applied last
    std::filesystem::path dbPath;        // run store for run ids (empty: the default one)
};

struct FinetuneSummary {
    std::string baseDescription;  // "run 12 (gpt-nano ...)", "Hugging Face folder ...", a path
    std::string tokenizerKind;    // "byte" | "bpe"
    int64_t dataBytes = 0;
    int64_t tokens = 0;
    int64_t trainTokens = 0;
    int64_t heldOutTokens = 0;
    double validationFraction = 0.0;
    int batchSize = 0;          // sequences per step
    int sequenceLength = 0;     // tokens per sequence
    int64_t tokensPerStep = 0;  // batchSize x sequenceLength
    int64_t stepsPerEpoch = 0;  // trainTokens / tokensPerStep, rounded up
    int epochs = 0;
    int64_t stepsFromEpochs = 0;  // epochs x stepsPerEpoch
    int64_t maxSteps = 0;         // stepsFromEpochs within [kMinSteps, kMaxSteps], or as set
    bool maxStepsSet = false;     // runconfig.max_steps was given: epochs do not count
    // A few words from the start of a sentence in the held-out end of the text: a prompt for
    // samples that shows what the fine-tune learned on text it never trained on.
    std::string samplePrompt;
    double basePeakLearningRate = 0.0;
    double peakLearningRate = 0.0;
    int64_t parameters = 0;
    int64_t frozenParameters = 0;
    bool lora = false;  // the method: LoRA adapters (else a full fine-tune)
    bool bf16 = false;  // computes in bf16 (model.mixed_precision, fp16_type bfloat16)
    // The base's sparsity ("rigl at 0.75"; empty: a dense base): the plan fine-tunes dense
    // (SPDF, sparse pre-training and dense fine-tuning) unless overrides set sparsity again.
    std::string densifiedFrom;
    int64_t memoryxBytes = 0;  // MethodCost::memoryxBytes
    double flopsPerToken = 0;  // MethodCost::flopsPerToken
    // Rough wall-clock estimate on this machine's CPU (estimateSeconds over the plan's method
    // and precision); the run itself reports the measured tokens/s.
    double estimatedSecondsPerEpoch = 0.0;
    double estimatedSeconds = 0.0;

    // Instruction and chat records (--data naming .jsonl .json .csv .tsv .zip files; the fields
    // below stay empty for plain text). The run reads them as session/chat_run_data.h does:
    // rendered with `chatTemplate`, trained on the answers, packed into rows of sequenceLength
    // tokens; a step is batchSize rows, so stepsPerEpoch = trainRows / batchSize, rounded up,
    // and tokens / trainTokens / heldOutTokens count the examples' tokens.
    bool records = false;
    std::string recordFormat;    // "OpenAI messages"
    std::string formatEvidence;  // why: "120 records with a `messages` list"
    std::string chatTemplate;    // "chatml", "<folder>/tokenizer_config.json"
    int64_t trainRecords = 0;
    int64_t heldOutRecords = 0;
    int64_t examples = 0;       // training examples kept (conversations with a trained token)
    int64_t trainedTokens = 0;  // of trainTokens, those with a loss (the answers)
    int64_t truncated = 0;      // training examples cut to the sequence length
    int64_t trainRows = 0;      // packed rows the training examples fill
    int64_t heldOutRows = 0;
    std::vector<std::string> dataWarnings;  // the readers' and the examples' (truncation, epochs)
    // The vocabulary: the template's special tokens past the base's rows grow it (the base's
    // rows copied, the new ones mean-initialised; with LoRA they train beside the adapters).
    int64_t baseVocab = 0;
    int64_t vocab = 0;
    std::string addedTokens;      // "chatml's <|im_start|>, <|im_end|>"; empty: nothing added
    int64_t addedTokensFrom = 0;  // the first id the template's tokens got (0: none added)
};

// The effective fp32 training throughput the time estimate assumes (FLOP/s), by model width:
// narrow matmuls keep the cores far from their peak. Interpolates three runs on the 2-core AMD
// EPYC of REFERENCE.md while other builds shared it (an idle machine is faster):
//   gpt-nano (C = 128): 1.4e10;  gpt-base (C = 256, bf16 1954 tokens/s / 1.8): 3.6e10;
//   GPT-2 small (C = 768, B = 4, T = 256: 196-213 tokens/s x 0.76 GFLOP): 1.55e11,
// i.e. 1.4e10 x (C / 128)^(4/3), capped at the widest measured.
double assumedCpuFlops(int hiddenSize);
// bf16 on bf16 hardware (AMX or AVX512-BF16; tensor::bf16Path()): the measured speed-up of a
// training step over fp32 (README "bfloat16": GPT-2 small, 1.80-1.81x on AVX512-BF16). Where
// bf16 is emulated in fp32 the estimate keeps the fp32 rate.
inline constexpr double kBf16Speedup = 1.8;
// AdamW in MemoryX, per trained parameter and step: the difference between a full and a LoRA
// step of GPT-2 small when LoRA saved only AdamW (README "LoRA": 3464 vs 3026 ms for 124 M
// parameters on the 2-core machine).
inline constexpr double kAdamSecondsPerParameter = 3.5e-9;

// What a training method costs on a model: the config's own (its lora: section says LoRA or
// full, its model section the precision). Assumes what a LoRA step does once the frozen base
// keeps no gradient or optimizer state and forms no weight gradient (the engine's LoRA path):
//   - trainable: every parameter the optimizer updates (frozen groups and, with LoRA, the whole
//     base excluded);
//   - MemoryX: fp32 weights of every parameter, plus an fp32 gradient and the optimizer's state
//     copies for each trained one (a frozen tensor, LoRA's base or freeze_*, keeps weights only);
//   - FLOPs per token: model::stepTrainingFlopsPerToken (full: 6 N + 6 L C T; LoRA: the base's
//     forward and input gradient, 4 N, plus 6 x the adapters, plus the attention);
//   - time: FLOPs at assumedCpuFlops(C) (x kBf16Speedup in bf16 on bf16 hardware), plus AdamW over
//     the trained parameters once per step (kAdamSecondsPerParameter).
struct MethodCost {
    bool lora = false;
    bool bf16 = false;       // computes in bf16 on a bf16 hardware path (not emulated)
    int64_t parameters = 0;  // base + adapters
    int64_t trainableParameters = 0;
    int64_t memoryxBytes = 0;
    double flopsPerToken = 0;
    double flopsPerSecond = 0;           // the assumed rate
    double optimizerSecondsPerStep = 0;  // AdamW over the trained parameters
};
MethodCost methodCost(const config::Config& config);
// Seconds for `steps` steps over `tokens` tokens in all.
double estimateSeconds(const MethodCost& cost, double tokens, double steps);
// The bf16 hardware path this machine has (AMX or AVX512-BF16), for the default precision.
bool hasBf16Hardware();

// The base model a request names (FinetuneRequest::base), checked as planFinetune checks it:
// through modelio::loadModelInfo, or for a Hugging Face folder (or the model.safetensors in one)
// as `wafer import` inspects it. No tensor data is read.
struct BaseModel {
    config::Config config;  // the base's, its tokenizer named by absolute paths (bpe) or "byte"
    std::shared_ptr<const tokenizer::Tokenizer> tokenizer;
    std::filesystem::path path;     // the base as resolved (a run id: its folder or checkpoint)
    std::filesystem::path weights;  // the model.safetensors training starts from (absolute)
    std::optional<int64_t> runId;   // when given as a run id
    bool huggingFace = false;       // a Hugging Face folder, used in place
    int64_t step = -1;              // the training step of the weights (-1: unknown)
    int64_t parameters = 0;
    std::string description;         // as FinetuneSummary::baseDescription
    std::vector<std::string> notes;  // what reading a Hugging Face config approximated
};

// `ref` and `dbPath` as FinetuneRequest::base and ::dbPath.
Result<BaseModel> inspectBase(std::string_view ref, const std::filesystem::path& dbPath);

struct FinetunePlan {
    config::LoadedConfig config;        // ready for session::Session::create
    std::filesystem::path baseWeights;  // the model.safetensors training starts from
    std::optional<int64_t> parentRun;   // the base's run when given as a run id
    FinetuneSummary summary;
};

Result<FinetunePlan> planFinetune(const FinetuneRequest& request);

// How the step count follows from epochs, data size, batch and sequence length:
// "30 steps = 10 epochs × 3 steps per epoch (4,427 training tokens ÷ 2,048 tokens per step:
// 16 sequences × 128 tokens)", then ", raised to the minimum of 10" or similar; for records
// "... (90 training rows ÷ 16 rows per step, rounded up; each row packs whole examples into
// 128 tokens)".
std::string explainSteps(const FinetuneSummary& summary);

// The plan's peak learning rate and where it comes from, computed from the same constants the
// plan uses (kLearningRateDivisor, kLoraLearningRateMultiplier): "1e-3: a third of the base's
// peak 3e-3" for a full fine-tune, "0.01: 10 × a full fine-tune's 1e-3 (a third of the base's
// peak 3e-3)" for LoRA, "2e-4 as set (the default: ...)" when overrides changed it.
std::string explainLearningRate(const FinetuneSummary& summary);
// The same rule without a plan, for both methods: "a third of the base's peak for a full
// fine-tune, 10 × that for LoRA".
std::string learningRateRule();

// The name of a fine-tune run the user did not name: "<base model> fine-tune on <data>" ("gpt-base
// fine-tune on manual.txt", "... on manual.txt +2 more"), with " (2)", " (3)", ... added until it
// is none of `taken` (the run store's names), so that no two fine-tunes share a name on the
// charts and in Runs.
std::string suggestRunName(std::string_view baseName, const std::vector<std::string>& dataFiles,
                           const std::vector<std::string>& taken);

// The before/after line of a finished fine-tune: "eval loss on the held-out end of your text
// 2.616 → 1.480 (43% lower)". NaN values read as "not measured".
// `what` names what the loss is over (records: "the held-out records' answers").
std::string describeEvalChange(double before, double after,
                               std::string_view what = "the held-out end of your text");
// What a fine-tune's eval loss counts, for describeEvalChange: the held-out end of the text, the
// held-out records' answers (their last answers with mask_history), or every token of them
// with train_on_inputs.
std::string evalLossCounts(const config::InputConfig& input);

// A prompt from `text`: the first few words of the first sentence or line that starts at or
// after byte `from` (the held-out end), or of the text's first one when none does.
std::string promptFromText(std::string_view text, size_t from);

// The peak learning rate of a schedule (its largest value anywhere).
double peakLearningRate(const config::LearningRate& lr);

}  // namespace ws::finetune
