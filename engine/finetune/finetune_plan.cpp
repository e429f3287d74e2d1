// SPDX-License-Identifier: GPL-3.0-or-later
// inspectBase and planFinetune (see finetune_plan.h).
#include "engine/finetune/finetune_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

#include "engine/core/paths.h"
#include "engine/data/chat_records.h"
#include "engine/data/corpus.h"
#include "engine/interop/hf_import.h"
#include "engine/interop/model_ref.h"
#include "engine/model/lora.h"
#include "engine/model/model_facts.h"
#include "engine/model/parameters.h"
#include "engine/modelio/load_model.h"
#include "engine/optim/optimizer.h"
#include "engine/session/chat_run_data.h"
#include "engine/session/param_groups.h"
#include "engine/tensor/matmul.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"

namespace ws::finetune {
namespace fs = std::filesystem;

namespace {

void useBpeFiles(config::Config& c, const fs::path& vocab, const fs::path& merges) {
    for (config::InputConfig* input : {&c.trainInput, &c.evalInput}) {
        input->tokenizer.type = "bpe";
        input->tokenizer.vocabFile = absoluteNormal(vocab).string();
        input->tokenizer.mergesFile = absoluteNormal(merges).string();
    }
}

void useHfTokenizerFile(config::Config& c, const fs::path& tokenizerJson) {
    for (config::InputConfig* input : {&c.trainInput, &c.evalInput}) {
        input->tokenizer = config::TokenizerConfig{};
        input->tokenizer.type = "hf";
        input->tokenizer.tokenizerFile = absoluteNormal(tokenizerJson).string();
    }
}

void useByteTokenizer(config::Config& c) {
    for (config::InputConfig* input : {&c.trainInput, &c.evalInput}) {
        input->tokenizer = config::TokenizerConfig{};
        input->tokenizer.type = "byte";
    }
}

Status applyOverrides(config::Config& c, const std::vector<std::string>& overrides) {
    for (const auto& o : overrides) {
        if (Status st = config::applyOverride(c, o); !st.ok()) return st;
    }
    return Status::success();
}

// From sum.stepsPerEpoch: the epochs, the steps they give within [kMinSteps, kMaxSteps], and the
// peak learning rate of the method.
void setStepsAndRate(const FinetuneRequest& request, const config::Config& c,
                     FinetuneSummary& sum) {
    sum.epochs = request.epochs;
    sum.stepsFromEpochs = int64_t(request.epochs) * sum.stepsPerEpoch;
    sum.maxSteps = std::clamp<int64_t>(sum.stepsFromEpochs, kMinSteps, kMaxSteps);
    sum.basePeakLearningRate = peakLearningRate(c.optimizer.learningRate);
    sum.peakLearningRate = sum.basePeakLearningRate / kLearningRateDivisor *
                           (request.loraRank > 0 || c.lora ? kLoraLearningRateMultiplier : 1.0);
}

// The new text's size into `sum`: held-out and training tokens, steps per epoch, the steps and
// the peak learning rate the fine-tune takes; or why the text is too short for windows of T.
Status sizeTheData(const std::string& text, int64_t tokens, int B, int T,
                   const FinetuneRequest& request, const config::Config& c, FinetuneSummary& sum) {
    // A held-out slice of at least one window (T + 1 tokens) and a training slice of at least 2.
    double fraction = std::max(0.1, double(T + 2) / double(std::max<int64_t>(tokens, 1)));
    if (fraction > 0.5 || tokens < 2 * (T + 2)) {
        return Error{fmt::format(
            "--data: the new text is {} tokens ({} bytes); fine-tuning with sequences of {} "
            "tokens needs at least {} (a held-out window and training windows). Add text, or "
            "lower the sequence length with --set train_input.max_sequence_length=N",
            tokens, sum.dataBytes, T, 2 * (T + 2))};
    }
    sum.validationFraction = fraction;
    sum.heldOutTokens = int64_t(std::llround(double(tokens) * fraction));
    sum.trainTokens = tokens - sum.heldOutTokens;
    sum.samplePrompt =
        promptFromText(text, size_t(std::llround(double(text.size()) * (1.0 - fraction))));
    sum.batchSize = B;
    sum.sequenceLength = T;
    sum.tokensPerStep = int64_t(B) * T;
    sum.stepsPerEpoch =
        std::max<int64_t>(1, (sum.trainTokens + sum.tokensPerStep - 1) / sum.tokensPerStep);
    setStepsAndRate(request, c, sum);
    return Status::success();
}

// The records' share held out for evaluation (train_input.validation_fraction; a record at least
// when there are two).
inline constexpr double kRecordsHeldOut = 0.1;

// --data: all record files (true), all text (false), or an error for a mix.
Result<bool> namesRecordFiles(const std::vector<std::string>& data) {
    std::string recordFile, textFile;
    for (const std::string& f : data) {
        std::error_code ec;
        (data::isRecordFile(f) && fs::is_regular_file(f, ec) ? recordFile : textFile) = f;
    }
    if (!recordFile.empty() && !textFile.empty())
        return Error{fmt::format(
            "--data: {} holds instruction or chat records (JSON Lines, JSON, CSV/TSV or a zip of "
            "them) but {} is plain text; fine-tune on one kind at a time (two runs, or a second "
            "fine-tune from the first)",
            recordFile, textFile)};
    return !recordFile.empty();
}

// Records: the config reads them (the held-out share, the chat template beside the base's
// tokenizer or ChatML) and `sum` gets their facts, from the same reading the run makes
// (session::openChatRunData): examples, rows, steps per epoch, the grown vocabulary.
Status sizeTheRecords(config::Config& c, std::shared_ptr<const tokenizer::Tokenizer> tokenizer,
                      const std::vector<std::string>& data, int B, int T,
                      const FinetuneRequest& request, FinetuneSummary& sum) {
    c.trainInput.dataDir = data;
    c.trainInput.format = "auto";
    c.trainInput.chatTemplate = "auto";
    c.trainInput.validationFraction = kRecordsHeldOut;
    c.trainInput.maxSequenceLength = T;
    config::Config probe = c;  // as the run will read them, the user's --set included
    probe.evalInput.dataDir.clear();
    if (Status st = applyOverrides(probe, request.overrides); !st.ok()) return st;
    probe.trainInput.maxSequenceLength = T;
    auto chat = session::openChatRunData(probe, std::move(tokenizer), session::VocabCheck::Grow);
    if (!chat.ok()) return Error{"--data: " + chat.error().message};
    const data::ExampleDataset& set = *chat->dataset;
    sum.records = true;
    sum.recordFormat = std::string(data::recordFormatName(chat->report.format));
    sum.formatEvidence = chat->report.evidence;
    sum.dataWarnings = chat->report.warnings;
    sum.chatTemplate = chat->templateName;
    sum.trainRecords = int64_t(chat->trainRecords);
    sum.heldOutRecords = int64_t(chat->heldOutRecords);
    sum.examples = set.trainStats().examples;
    sum.trainedTokens = set.trainStats().trainedTokens;
    sum.truncated = set.trainStats().truncated;
    sum.trainRows = set.trainRows().rows();
    sum.heldOutRows = set.heldOutRows().rows();
    sum.trainTokens = set.trainStats().tokens;
    sum.heldOutTokens = set.heldOutStats().tokens;
    sum.tokens = sum.trainTokens + sum.heldOutTokens;
    for (const std::string& f : data) {
        std::error_code ec;
        sum.dataBytes += int64_t(fs::file_size(f, ec));
    }
    sum.validationFraction = double(sum.heldOutRecords) /
                             double(std::max<int64_t>(1, sum.trainRecords + sum.heldOutRecords));
    sum.samplePrompt = chat->heldOutPrompt;
    sum.batchSize = B;
    sum.sequenceLength = T;
    sum.tokensPerStep = int64_t(B) * T;
    sum.stepsPerEpoch = std::max<int64_t>(1, (sum.trainRows + B - 1) / B);
    setStepsAndRate(request, c, sum);
    // The template's tokens past the base's tokenizer: their rows are new (grown) or, in a
    // vocabulary padded past the tokenizer, were never trained.
    sum.baseVocab = c.model.vocabSize;
    sum.vocab = std::max<int64_t>(c.model.vocabSize, chat->tokenizer->vocabSize());
    sum.addedTokens = chat->addedTokens;
    sum.addedTokensFrom = chat->addedTokens.empty() ? 0 : chat->baseVocab;
    c.model.vocabSize = int(sum.vocab);
    // What the run reads, said in its config: the format found, the built-in template.
    c.trainInput.format = std::string(data::recordFormatKey(chat->report.format));
    if (chat->templateName == "chatml") c.trainInput.chatTemplate = chat->templateName;
    const bool stepsSet =
        std::any_of(request.overrides.begin(), request.overrides.end(),
                    [](const std::string& o) { return o.starts_with("runconfig.max_steps="); });
    for (const data::DataWarning& w :
         set.warnings(stepsSet ? probe.runconfig.maxSteps : sum.maxSteps, B))
        sum.dataWarnings.push_back(w.message);
    return Status::success();
}

// The evaluation over the records' held-out rows (every one, up to 50 batches), after
// scheduleFinetune; with LoRA the rows of the template's added tokens train (PEFT's
// trainable_token_indices).
void scheduleRecords(config::Config& c, const FinetuneSummary& sum) {
    c.trainInput.validationFraction = kRecordsHeldOut;
    const int64_t rows = std::max<int64_t>(1, sum.heldOutRows);
    c.evalInput.batchSize = int(std::clamp<int64_t>(rows, 1, c.evalInput.batchSize));
    c.runconfig.evalSteps =
        int(std::clamp<int64_t>((rows + c.evalInput.batchSize - 1) / c.evalInput.batchSize, 1, 50));
    if (c.lora && sum.addedTokensFrom > 0) c.lora->trainableTokensFrom = int(sum.addedTokensFrom);
}

// The base's config turned into a fine-tune's: the new text with its held-out share, the
// evaluation and logging cadence, the base's weights as the start, warm-up then cosine decay.
void scheduleFinetune(config::Config& c, const FinetuneSummary& sum,
                      const std::vector<std::string>& data, const FinetuneRequest& request,
                      const std::filesystem::path& weights) {
    const int T = sum.sequenceLength;
    c.trainInput.dataDir = data;
    c.trainInput.allowBinary = request.allowBinary;
    c.trainInput.validationFraction = sum.validationFraction;
    c.trainInput.maxSequenceLength = T;
    c.evalInput.dataDir.clear();
    c.evalInput.maxSequenceLength = T;
    const int64_t windows = std::max<int64_t>(1, (sum.heldOutTokens - 1) / T);
    c.evalInput.batchSize = int(std::min<int64_t>(c.evalInput.batchSize, windows));
    c.runconfig.evalSteps = int(std::clamp<int64_t>(windows / c.evalInput.batchSize, 1, 50));
    c.runconfig.maxSteps = sum.maxSteps;
    c.runconfig.evalFrequency = int(std::max<int64_t>(1, sum.maxSteps / 10));
    c.runconfig.logSteps = int(std::clamp<int64_t>(sum.maxSteps / 20, 1, 10));
    c.runconfig.checkpointPath = weights.string();
    c.runconfig.modelDir.clear();
    c.runconfig.checkpointSteps = 0;
    c.runconfig.saveInitialCheckpoint = false;
    const int64_t warmup = std::clamp<int64_t>(sum.maxSteps / 10, 1, 100);
    config::SchedulerConfig warm, decay;
    warm.scheduler = "Linear";
    warm.initialLearningRate = 0.0;
    warm.endLearningRate = sum.peakLearningRate;
    warm.totalIters = warmup;
    decay.scheduler = "Cosine";
    decay.initialLearningRate = sum.peakLearningRate;
    decay.endLearningRate = sum.peakLearningRate / 10.0;
    decay.totalIters = 0;
    c.optimizer.learningRate.schedule = {warm, decay};
    c.optimizer.freezeEmbeddings = request.freezeEmbeddings;
    c.optimizer.freezeBlocks = request.freezeBlocks;
}

// The method on top: LoRA adapters (new, or the base's own continued), SPDF's dense fine-tune of
// a sparse base, the precision.
Status chooseMethod(config::Config& c, FinetuneSummary& sum, const FinetuneRequest& request) {
    // A base with LoRA adapters (a LoRA run, imported PEFT adapters) keeps them: the run
    // continues training them on the frozen base (session/session.cpp reads them from the base's
    // file). New adapters on top would need the old ones merged into the weights first.
    if (c.lora && request.loraRank > 0) {
        return Error{fmt::format(
            "--base holds LoRA adapters already (rank {}); fine-tune without --lora to continue "
            "training them, or merge them into the weights first (wafer export BASE --merge --out "
            "DIR) and fine-tune DIR with --lora",
            c.lora->rank)};
    }
    if (request.loraRank > 0) {
        c.lora = config::LoraConfig{
            .rank = request.loraRank,
            .alpha = request.loraAlpha > 0 ? request.loraAlpha : 2.0 * request.loraRank,
            .dropout = request.loraDropout,
            .targets = request.loraTargets.empty()
                           ? model::lora::allLinearTargets(model::GptShape::fromConfig(c.model))
                           : request.loraTargets};
    }
    // SPDF (sparse pre-training, dense fine-tuning): a sparse base fine-tunes dense. Its zero
    // weights start at zero and train like the rest; --set sparsity.* keeps it sparse.
    if ((c.sparsity && c.sparsity->sparsity > 0) || c.model.sparsity.level > 0) {
        sum.densifiedFrom = c.sparsity
                                ? fmt::format("{} at {:g}", c.sparsity->type, c.sparsity->sparsity)
                                : fmt::format("static at {:g}", c.model.sparsity.level);
        c.sparsity.reset();
        c.model.sparsity = {};
    }
    if (request.bf16) {
        c.model.mixedPrecision = *request.bf16;
        if (*request.bf16) c.model.fp16Type = "bfloat16";
    }
    return Status::success();
}

// What the method costs: parameters that train, MemoryX bytes, FLOPs and the time estimates.
void addCost(FinetuneSummary& sum, const config::Config& c) {
    const MethodCost cost = methodCost(c);
    sum.parameters = cost.parameters;
    sum.frozenParameters = cost.parameters - cost.trainableParameters;
    sum.lora = cost.lora;
    sum.bf16 = model::GptShape::fromConfig(c.model).bf16;
    sum.memoryxBytes = cost.memoryxBytes;
    sum.flopsPerToken = cost.flopsPerToken;
    sum.estimatedSecondsPerEpoch =
        estimateSeconds(cost, double(sum.trainTokens), double(sum.stepsPerEpoch));
    sum.estimatedSeconds = estimateSeconds(cost, double(sum.maxSteps) * double(sum.tokensPerStep),
                                           double(sum.maxSteps));
}

}  // namespace

Result<BaseModel> inspectBase(std::string_view refText, const fs::path& dbPath) {
    auto ref = interop::resolveModelRef(refText, dbPath);
    if (!ref.ok()) return ref.error();
    std::error_code ec;
    BaseModel base;
    base.path = ref->path;
    base.runId = ref->runId;
    // A Hugging Face folder, or the model.safetensors (or pytorch_model.bin) inside one: checked
    // as an import would.
    const fs::path folder = fs::is_directory(ref->path, ec) ? ref->path : ref->path.parent_path();
    const bool hfWeights = fs::is_directory(ref->path, ec) ||
                           ref->path.filename() == "model.safetensors" ||
                           ref->path.filename() == "pytorch_model.bin";
    if (hfWeights && interop::looksLikeHfFolder(folder.empty() ? "." : folder)) {
        auto hf = interop::inspectHfFolder(fs::is_directory(ref->path, ec) ? folder : ref->path);
        if (!hf.ok()) return hf.error();
        base.config = interop::importedRunConfig(*hf);
        if (!hf->tokenizerJson.empty()) {
            useHfTokenizerFile(base.config, hf->tokenizerJson);
            auto fast = tokenizer::loadHfTokenizer(hf->tokenizerJson);
            if (!fast.ok()) return fast.error();
            base.tokenizer = std::move(fast).value();
        } else if (hf->byteTokenizer) {
            useByteTokenizer(base.config);
            base.tokenizer = tokenizer::makeByteTokenizer();
        } else {
            useBpeFiles(base.config, hf->vocabFile, hf->mergesFile);
            auto bpe = tokenizer::loadGpt2Bpe(hf->vocabFile, hf->mergesFile);
            if (!bpe.ok()) return bpe.error();
            base.tokenizer = std::move(bpe).value();
        }
        base.weights = absoluteNormal(hf->weightsFile);
        base.huggingFace = true;
        base.description = "Hugging Face folder " + hf->folder.string();
        base.notes = hf->notes;
        base.parameters = model::deriveFacts(base.config).parameters;
        return base;
    }
    auto info = modelio::loadModelInfo(ref->path);
    if (!info.ok()) return info.error();
    base.config = info->config;
    base.tokenizer = info->tokenizer;
    base.weights = absoluteNormal(info->weightsFile);
    base.step = info->step;
    base.parameters = info->facts.parameters;
    if (base.tokenizer->kind() == "byte") {
        useByteTokenizer(base.config);
    } else if (base.tokenizer->kind() == "hf") {
        useHfTokenizerFile(base.config, info->tokenizerFolder / "tokenizer.json");
    } else {
        useBpeFiles(base.config, info->tokenizerFolder / "vocab.json",
                    info->tokenizerFolder / "merges.txt");
    }
    base.description = ref->runId ? fmt::format("run {} ({})", *ref->runId, ref->path.string())
                                  : ref->path.string();
    if (info->step >= 0) base.description += fmt::format(", step {}", info->step);
    return base;
}

double peakLearningRate(const config::LearningRate& lr) {
    if (lr.schedule.empty()) return lr.constant;
    double peak = 0.0;
    for (const auto& piece : lr.schedule) {
        peak = std::max({peak, piece.initialLearningRate, piece.endLearningRate,
                         piece.scheduler == "Constant" ? piece.learningRate : 0.0});
    }
    return peak;
}

Result<FinetunePlan> planFinetune(const FinetuneRequest& request) {
    if (request.dataFiles.empty()) return Error{"no text to fine-tune on: give --data FILE..."};
    if (request.epochs < 1)
        return Error{fmt::format("epochs is {}; it must be at least 1", request.epochs)};
    auto base = inspectBase(request.base, request.dbPath);
    if (!base.ok()) return Error{"--base: " + base.error().message};
    config::Config c = base->config;

    // The user's batch and sequence length (if overridden) shape every derived number below.
    config::Config shaped = c;
    if (Status st = applyOverrides(shaped, request.overrides); !st.ok()) return st.error();
    const int T = std::min(shaped.trainInput.maxSequenceLength, c.model.maxPositionEmbeddings);
    const int B = shaped.trainInput.batchSize;

    std::vector<std::string> data;
    for (const auto& f : request.dataFiles) data.push_back(absoluteNormal(f));
    // Chat and instruction records are not text: read as text, a model learns their JSON
    // punctuation. They are rendered with a chat template and trained on the answers.
    auto records = namesRecordFiles(data);
    if (!records.ok()) return records.error();
    FinetunePlan plan;
    FinetuneSummary& sum = plan.summary;
    sum.tokenizerKind = base->tokenizer->kind();
    if (*records) {
        if (Status st = sizeTheRecords(c, base->tokenizer, data, B, T, request, sum); !st.ok())
            return st.error();
    } else {
        data::CorpusOptions corpusOptions;
        corpusOptions.allowNonText = request.allowBinary;
        corpusOptions.allowHint = "pass --allow-binary to train on it anyway";
        auto text = data::readCorpus(data, corpusOptions);
        if (!text.ok()) return Error{"--data: " + text.error().message};
        sum.dataBytes = int64_t(text->size());
        sum.tokens = int64_t(base->tokenizer->encode(*text).size());
        const int64_t tokens = sum.tokens;
        if (Status st = sizeTheData(*text, tokens, B, T, request, c, sum); !st.ok())
            return st.error();
    }
    sum.baseDescription = base->description;
    scheduleFinetune(c, sum, data, request, base->weights);
    if (Status st = chooseMethod(c, sum, request); !st.ok()) return st.error();
    if (sum.records) scheduleRecords(c, sum);
    if (Status st = applyOverrides(c, request.overrides); !st.ok()) return st.error();
    // Kept sparse with --set sparsity.*: its masks start from the base's zeros (topk prunes the
    // smallest weights first), unless the overrides chose otherwise. Random masks would prune
    // live weights of a trained model and leave most of its pruned ones dense.
    if (!sum.densifiedFrom.empty() && c.sparsity &&
        std::none_of(request.overrides.begin(), request.overrides.end(), [](const std::string& o) {
            return o.starts_with("sparsity.init_method=") || o.starts_with("sparsity=");
        }))
        c.sparsity->initMethod = "topk";
    if (auto errors = config::validate(c); !errors.empty()) {
        return Error{
            fmt::format("the fine-tune config is not valid:\n{}", fmt::join(errors, "\n"))};
    }
    // Overrides may have changed the schedule or the length: report what will run.
    sum.maxStepsSet =
        sum.maxSteps != c.runconfig.maxSteps ||
        std::any_of(request.overrides.begin(), request.overrides.end(),
                    [](const std::string& o) { return o.starts_with("runconfig.max_steps="); });
    sum.maxSteps = c.runconfig.maxSteps;
    sum.peakLearningRate = peakLearningRate(c.optimizer.learningRate);

    addCost(sum, c);

    plan.config.config = std::move(c);
    plan.config.warnings = base->notes;
    if (!sum.densifiedFrom.empty() && !plan.config.config.sparsity &&
        plan.config.config.model.sparsity.level <= 0)
        plan.config.warnings.push_back(fmt::format(
            "the base was trained sparse ({}); this fine-tune is dense (SPDF): its zero weights "
            "start at zero and train. To stay sparse, --set sparsity.sparsity=<level> "
            "sparsity.type=static (its masks then start from the base's zeros: "
            "sparsity.init_method=topk)",
            sum.densifiedFrom));
    plan.baseWeights = base->weights;
    plan.parentRun = base->runId;
    return plan;
}

bool hasBf16Hardware() {
    return tensor::bf16Path() != tensor::Bf16Path::Emulated;
}

MethodCost methodCost(const config::Config& c) {
    MethodCost cost;
    model::GptShape shape = model::GptShape::fromConfig(c.model);
    shape.applyLora(c.lora);
    const model::ParameterTable table(shape);
    cost.lora = shape.hasLora();
    cost.bf16 = shape.bf16 && hasBf16Hardware();
    cost.parameters = int64_t(table.totalSize());
    cost.trainableParameters = cost.parameters;
    for (const auto& g : session::parameterGroups(table, c.optimizer)) {
        cost.trainableParameters -= int64_t(g.frozen ? g.size : g.frozenPrefix);
    }
    const int64_t perTrained =
        int64_t(sizeof(float)) * (1 + optim::Optimizer::stateCopies(c.optimizer));  // grad + state
    cost.memoryxBytes =
        int64_t(sizeof(float)) * cost.parameters + perTrained * cost.trainableParameters;
    cost.flopsPerToken = model::stepTrainingFlopsPerToken(shape, c.trainInput.maxSequenceLength);
    cost.flopsPerSecond = assumedCpuFlops(c.model.hiddenSize) * (cost.bf16 ? kBf16Speedup : 1.0);
    cost.optimizerSecondsPerStep = double(cost.trainableParameters) * kAdamSecondsPerParameter;
    return cost;
}

double assumedCpuFlops(int hiddenSize) {
    const double width = std::clamp(double(hiddenSize), 1.0, 768.0);
    return 1.4e10 * std::pow(width / 128.0, 4.0 / 3.0);
}

double estimateSeconds(const MethodCost& cost, double tokens, double steps) {
    return tokens * cost.flopsPerToken / cost.flopsPerSecond + steps * cost.optimizerSecondsPerStep;
}

namespace {

// 4427 -> "4,427" (counts are never negative).
std::string grouped(int64_t n) {
    const std::string digits = std::to_string(n);
    std::string text;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) text += ',';
        text += digits[i];
    }
    return text;
}

std::string plural(int64_t n, std::string_view word) {
    return fmt::format("{} {}{}", grouped(n), word, n == 1 ? "" : "s");
}

bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

std::string explainSteps(const FinetuneSummary& s) {
    const std::string perEpoch =
        s.records
            ? fmt::format(
                  "{} per epoch ({} training rows ÷ {} rows per step, rounded up; each "
                  "row packs whole examples into {} tokens)",
                  plural(s.stepsPerEpoch, "step"), grouped(s.trainRows), grouped(s.batchSize),
                  grouped(s.sequenceLength))
            : fmt::format(
                  "{} per epoch ({} training tokens ÷ {} tokens per step: {} × {} "
                  "tokens, rounded up)",
                  plural(s.stepsPerEpoch, "step"), grouped(s.trainTokens), grouped(s.tokensPerStep),
                  plural(s.batchSize, "sequence"), grouped(s.sequenceLength));
    if (s.maxStepsSet) {
        return fmt::format("{} as set by max_steps ({} would give {}; {})",
                           plural(s.maxSteps, "step"), plural(s.epochs, "epoch"),
                           plural(s.stepsFromEpochs, "step"), perEpoch);
    }
    std::string text = fmt::format("{} = {} × {}", plural(s.maxSteps, "step"),
                                   plural(s.epochs, "epoch"), perEpoch);
    if (s.stepsFromEpochs < s.maxSteps) {
        text = fmt::format("{}: {} × {} = {}, raised to the minimum of {}",
                           plural(s.maxSteps, "step"), plural(s.epochs, "epoch"), perEpoch,
                           grouped(s.stepsFromEpochs), grouped(s.maxSteps));
    } else if (s.stepsFromEpochs > s.maxSteps) {
        text = fmt::format("{}: {} × {} = {}, capped at {}", plural(s.maxSteps, "step"),
                           plural(s.epochs, "epoch"), perEpoch, grouped(s.stepsFromEpochs),
                           grouped(s.maxSteps));
    }
    return text;
}

namespace {

// "a third", "a half", "1/5" of something: kLearningRateDivisor in words.
std::string fractionWords(double divisor) {
    if (divisor == 2.0) return "half";
    if (divisor == 3.0) return "a third";
    if (divisor == 4.0) return "a quarter";
    return fmt::format("1/{:g}", divisor);
}

std::string lrText(double lr) {
    return fmt::format("{:.3g}", lr);
}

}  // namespace

std::string learningRateRule() {
    return fmt::format(
        "{} of the base's peak learning rate for a full fine-tune, {:g} × that for "
        "LoRA",
        fractionWords(kLearningRateDivisor), kLoraLearningRateMultiplier);
}

std::string explainLearningRate(const FinetuneSummary& s) {
    const double full = s.basePeakLearningRate / kLearningRateDivisor;
    const double planned = s.lora ? full * kLoraLearningRateMultiplier : full;
    const std::string ofBase =
        fmt::format("{} of the base's peak {}", fractionWords(kLearningRateDivisor),
                    lrText(s.basePeakLearningRate));
    const std::string rule = s.lora ? fmt::format("{:g} × a full fine-tune's {} ({})",
                                                  kLoraLearningRateMultiplier, lrText(full), ofBase)
                                    : ofBase;
    if (std::abs(s.peakLearningRate - planned) > 1e-9 * std::max(planned, 1e-30))
        return fmt::format("{} as set (the default: {}, {})", lrText(s.peakLearningRate),
                           lrText(planned), rule);
    return fmt::format("{}: {}", lrText(planned), rule);
}

std::string suggestRunName(std::string_view baseName, const std::vector<std::string>& dataFiles,
                           const std::vector<std::string>& taken) {
    std::string name = fmt::format("{} fine-tune", baseName.empty() ? "model" : baseName);
    if (!dataFiles.empty()) {
        std::filesystem::path first(dataFiles.front());
        if (!first.has_filename()) first = first.parent_path();  // "notes/" names "notes"
        name += " on " + first.filename().string();
        if (dataFiles.size() > 1) name += fmt::format(" +{} more", dataFiles.size() - 1);
    }
    const auto isTaken = [&](const std::string& candidate) {
        return std::find(taken.begin(), taken.end(), candidate) != taken.end();
    };
    std::string unique = name;
    for (int n = 2; isTaken(unique); ++n) unique = fmt::format("{} ({})", name, n);
    return unique;
}

std::string evalLossCounts(const config::InputConfig& input) {
    if (!session::readsRecords(input)) return "the held-out end of your text";
    if (input.trainOnInputs) return "every token of the held-out records (train_on_inputs)";
    return input.maskHistory ? "the held-out records' last answers"
                             : "the held-out records' answers";
}

std::string describeEvalChange(double before, double after, std::string_view what) {
    const auto value = [](double v) {
        return std::isfinite(v) ? fmt::format("{:.3f}", v) : std::string("not measured");
    };
    std::string text = fmt::format("eval loss on {} {} → {}", what, value(before), value(after));
    if (std::isfinite(before) && std::isfinite(after) && before > 0) {
        const double change = (after - before) / before;
        text += change <= 0
                    ? fmt::format(" ({:.0f}% lower)", -100 * change)
                    : fmt::format(" ({:.0f}% higher: the model got worse on it)", 100 * change);
    }
    return text;
}

std::string promptFromText(std::string_view text, size_t from) {
    // Sentence or line starts: after a newline, or after ". ", "! ", "? " before a capital.
    const auto startsSentence = [&](size_t i) {
        if (i >= text.size() || isSpace(text[i])) return false;
        if (i == 0) return true;
        if (text[i - 1] == '\n') return true;
        if (i >= 2 && text[i - 1] == ' ' &&
            (text[i - 2] == '.' || text[i - 2] == '!' || text[i - 2] == '?'))
            return std::isupper(static_cast<unsigned char>(text[i])) != 0;
        return false;
    };
    // The first few words of the sentence at `i`, within its line; empty when too short to say
    // anything about style (a lone "}" or a heading of one word).
    const auto wordsAt = [&](size_t i) {
        constexpr int kWords = 6;
        size_t end = i;
        int words = 0;
        while (end < text.size() && text[end] != '\n' && words < kWords) {
            while (end < text.size() && text[end] != '\n' && !isSpace(text[end])) ++end;
            ++words;
            while (end < text.size() && text[end] != '\n' && isSpace(text[end]) && words < kWords)
                ++end;
        }
        std::string prompt(text.substr(i, end - i));
        while (!prompt.empty() && isSpace(prompt.back())) prompt.pop_back();
        return words >= 3 ? prompt : std::string();
    };
    for (size_t start : {std::min(from, text.size()), size_t(0)}) {
        for (size_t i = start; i < text.size(); ++i) {
            if (!startsSentence(i)) continue;
            if (std::string prompt = wordsAt(i); !prompt.empty()) return prompt;
        }
    }
    size_t cut = std::min<size_t>(text.size(), 24);
    while (cut > 0 && cut < text.size() && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
        --cut;  // never split a UTF-8 character
    return std::string(text.substr(0, cut));
}

}  // namespace ws::finetune
