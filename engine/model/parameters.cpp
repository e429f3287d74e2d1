// Parameter table construction, initialization and the FLOP count (see parameters.h).
#include "engine/model/parameters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/model/random.h"
#include "engine/tensor/threads.h"

namespace ws::model {

GptShape GptShape::fromConfig(const config::ModelConfig& model) {
    GptShape s;
    s.vocab = model.vocabSize;
    s.channels = model.hiddenSize;
    s.layers = model.numHiddenLayers;
    s.heads = model.numHeads;
    s.ffn = model.filterSize;
    s.maxPositions = model.maxPositionEmbeddings;
    s.tiedEmbedding = model.shareEmbeddingWeights;
    s.lnEps = model.layerNormEpsilon;
    s.dropout = model.dropoutRate;
    s.attnDropout = model.attentionDropoutRate;
    s.bf16 = model.mixedPrecision && model.fp16Type == "bfloat16";
    return s;
}

Status GptShape::validate(int batch, int seqLen) const {
    auto positive = [](int v, const char* key) -> Status {
        if (v > 0) return Status::success();
        return Error{fmt::format("model.{} is {}; it must be at least 1", key, v)};
    };
    for (auto [v, key] : {std::pair{vocab, "vocab_size"},
                          {channels, "hidden_size"},
                          {layers, "num_hidden_layers"},
                          {heads, "num_heads"},
                          {ffn, "filter_size"},
                          {maxPositions, "max_position_embeddings"}}) {
        if (Status st = positive(v, key); !st.ok()) return st;
    }
    if (channels % heads != 0) {
        return Error{
            fmt::format("model.num_heads = {} does not divide model.hidden_size = {}; "
                        "pick a head count that divides the width",
                        heads, channels)};
    }
    if (!(lnEps >= 0.0)) {
        return Error{fmt::format("model.layer_norm_epsilon is {}; it must be >= 0", lnEps)};
    }
    if (!(dropout >= 0.0 && dropout < 1.0)) {
        return Error{fmt::format("model.dropout_rate is {}; it must be in [0, 1)", dropout)};
    }
    if (!(attnDropout >= 0.0 && attnDropout < 1.0)) {
        return Error{
            fmt::format("model.attention_dropout_rate is {}; it must be in [0, 1)", attnDropout)};
    }
    if (batch < 0 || seqLen < 0) {
        return Error{
            fmt::format("batch {} and sequence length {} must not be negative", batch, seqLen)};
    }
    if (seqLen > maxPositions) {
        return Error{
            fmt::format("sequence length {} exceeds model.max_position_embeddings = {}; "
                        "lower train_input.max_sequence_length or raise the positions",
                        seqLen, maxPositions)};
    }
    // Activation buffers are indexed with int per row of (B*T, V) and (B, NH, T, T) planes.
    const double rows = double(batch) * seqLen;
    if (rows * std::max(vocab, 3 * std::max(channels, ffn)) > 2147483647.0) {
        return Error{
            fmt::format("batch {} x sequence {} x vocabulary {} is too large for one "
                        "step; lower train_input.batch_size",
                        batch, seqLen, vocab)};
    }
    return Status::success();
}

BlockOffsets blockOffsets(const GptShape& s) {
    const size_t C = s.channels, F = s.ffn;
    BlockOffsets o{};
    size_t at = 0;
    auto next = [&at](size_t n) {
        const size_t here = at;
        at += n;
        return here;
    };
    o.ln1w = next(C);
    o.ln1b = next(C);
    o.qkvw = next(C * 3 * C);
    o.qkvb = next(3 * C);
    o.attprojw = next(C * C);
    o.attprojb = next(C);
    o.ln2w = next(C);
    o.ln2b = next(C);
    o.fcw = next(C * F);
    o.fcb = next(F);
    o.fcprojw = next(F * C);
    o.fcprojb = next(C);
    o.size = at;
    return o;
}

ParameterTable::ParameterTable(const GptShape& shape) : m_shape(shape) {
    const int64_t V = shape.vocab, C = shape.channels, F = shape.ffn, P = shape.maxPositions;
    auto beginLayer = [this](std::string name) {
        m_layers.push_back({std::move(name), m_totalSize, 0, m_tensors.size(), 0});
    };
    auto endLayer = [this] {
        LayerSlice& layer = m_layers.back();
        layer.size = m_totalSize - layer.offset;
        layer.tensorCount = m_tensors.size() - layer.firstTensor;
    };
    beginLayer("embeddings");
    add("wte.weight", {V, C}, true);
    add("wpe.weight", {P, C}, true);
    endLayer();
    for (int l = 0; l < shape.layers; ++l) {
        const std::string h = fmt::format("h.{}.", l);
        beginLayer(fmt::format("h.{}", l));
        // Same order as BlockOffsets.
        add(h + "ln_1.weight", {C}, false);
        add(h + "ln_1.bias", {C}, false);
        add(h + "attn.c_attn.weight", {C, 3 * C}, true);
        add(h + "attn.c_attn.bias", {3 * C}, false);
        add(h + "attn.c_proj.weight", {C, C}, true);
        add(h + "attn.c_proj.bias", {C}, false);
        add(h + "ln_2.weight", {C}, false);
        add(h + "ln_2.bias", {C}, false);
        add(h + "mlp.c_fc.weight", {C, F}, true);
        add(h + "mlp.c_fc.bias", {F}, false);
        add(h + "mlp.c_proj.weight", {F, C}, true);
        add(h + "mlp.c_proj.bias", {C}, false);
        endLayer();
    }
    beginLayer("head");
    add("ln_f.weight", {C}, false);
    add("ln_f.bias", {C}, false);
    if (!shape.tiedEmbedding) add("lm_head.weight", {V, C}, true);
    endLayer();
}

void ParameterTable::add(std::string name, std::vector<int64_t> shape, bool decay) {
    size_t size = 1;
    for (int64_t d : shape) size *= static_cast<size_t>(d);
    m_byName.emplace(name, m_tensors.size());
    m_tensors.push_back({std::move(name), std::move(shape), m_totalSize, size,
                         static_cast<int>(m_layers.size()) - 1, decay});
    m_totalSize += size;
}

const TensorSlice* ParameterTable::find(std::string_view name) const {
    const auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : &m_tensors[it->second];
}

namespace {

enum class InitKind { Embedding, Hidden, Output, Zero, One };

InitKind initKindOf(const std::string& name) {
    auto endsWith = [&name](std::string_view suffix) {
        return name.size() >= suffix.size() &&
               std::string_view(name).substr(name.size() - suffix.size()) == suffix;
    };
    if (name == "wte.weight" || name == "wpe.weight") return InitKind::Embedding;
    if (endsWith("attn.c_proj.weight") || endsWith("mlp.c_proj.weight")) return InitKind::Output;
    if (endsWith("ln_1.weight") || endsWith("ln_2.weight") || name == "ln_f.weight") {
        return InitKind::One;
    }
    if (endsWith(".bias")) return InitKind::Zero;
    return InitKind::Hidden;  // c_attn.weight, c_fc.weight, lm_head.weight
}

void fillInitializer(const config::InitializerConfig& init, uint64_t key, float* out, size_t n) {
    const bool truncated = init.name != "normal";
    const double lo = std::min(init.a, init.b), hi = std::max(init.a, init.b);
    constexpr int kMaxDraws = 64;
    const auto count = static_cast<int64_t>(n);
    tensor::parallelFor(count, tensor::threadsForWork(count), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            double x = 0.0;
            for (int draw = 0; draw < kMaxDraws; ++draw) {
                // Counter = element + draw * 2^40: every (element, draw) pair has its own numbers.
                const uint64_t counter =
                    static_cast<uint64_t>(i) + (static_cast<uint64_t>(draw) << 40);
                x = init.mean + init.std * rng::standardNormal(key, counter);
                if (!truncated || (x >= lo && x <= hi)) break;
            }
            if (truncated) x = std::clamp(x, lo, hi);
            out[i] = static_cast<float>(x);
        }
    });
}

}  // namespace

void initParameters(const ParameterTable& table, const config::ModelConfig& model, uint64_t seed,
                    float* params) {
    config::InitializerConfig output;
    if (model.outputLayerInitializer) {
        output = *model.outputLayerInitializer;
    } else {
        const double scale = 1.0 / std::sqrt(2.0 * std::max(1, table.shape().layers));
        output = model.initializer;
        output.std *= scale;
        output.a = output.mean + (output.a - output.mean) * scale;
        output.b = output.mean + (output.b - output.mean) * scale;
    }
    for (size_t t = 0; t < table.tensors().size(); ++t) {
        const TensorSlice& slice = table.tensors()[t];
        float* out = params + slice.offset;
        const uint64_t key = rng::deriveKey(seed, t);
        switch (initKindOf(slice.name)) {
            case InitKind::Embedding:
                fillInitializer(model.embeddingInitializer, key, out, slice.size);
                break;
            case InitKind::Hidden:
                fillInitializer(model.initializer, key, out, slice.size);
                break;
            case InitKind::Output:
                fillInitializer(output, key, out, slice.size);
                break;
            case InitKind::Zero:
                std::fill(out, out + slice.size, 0.0f);
                break;
            case InitKind::One:
                std::fill(out, out + slice.size, 1.0f);
                break;
        }
    }
}

size_t parameterCount(const GptShape& shape) {
    return ParameterTable(shape).totalSize();
}

double trainingFlopsPerStep(const GptShape& shape, int batch, int seqLen) {
    const double N = static_cast<double>(parameterCount(shape));
    const double perToken = 6.0 * N + 6.0 * shape.layers * shape.channels * double(seqLen);
    return perToken * batch * seqLen;
}

}  // namespace ws::model
