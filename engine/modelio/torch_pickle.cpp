// SPDX-License-Identifier: GPL-3.0-or-later
// The restricted pickle interpreter for PyTorch state dicts (see torch_pickle.h). Objects live in
// one arena and refer to each other by index, so a hostile pickle that makes a dict contain itself
// costs nothing more than its bytes: every opcode adds at most one object or one reference, so
// memory stays linear in the pickle's size, and nothing here recurses.
#include "engine/modelio/torch_pickle.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

namespace ws::modelio {

using fileio::DType;

int64_t TorchTensorInfo::elementCount() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

namespace {

// Every opcode of pickle protocols 0-5, for messages.
// clang-format off
constexpr std::array<std::pair<uint8_t, std::string_view>, 68> kOpcodeNames = {{
    {'(', "MARK"}, {'.', "STOP"}, {'0', "POP"}, {'1', "POP_MARK"}, {'2', "DUP"}, {'F', "FLOAT"},
    {'I', "INT"}, {'J', "BININT"}, {'K', "BININT1"}, {'L', "LONG"}, {'M', "BININT2"},
    {'N', "NONE"}, {'P', "PERSID"}, {'Q', "BINPERSID"}, {'R', "REDUCE"}, {'S', "STRING"},
    {'T', "BINSTRING"}, {'U', "SHORT_BINSTRING"}, {'V', "UNICODE"}, {'X', "BINUNICODE"},
    {'a', "APPEND"}, {'b', "BUILD"}, {'c', "GLOBAL"}, {'d', "DICT"}, {'}', "EMPTY_DICT"},
    {'e', "APPENDS"}, {'g', "GET"}, {'h', "BINGET"}, {'i', "INST"}, {'j', "LONG_BINGET"},
    {'l', "LIST"}, {']', "EMPTY_LIST"}, {'o', "OBJ"}, {'p', "PUT"}, {'q', "BINPUT"},
    {'r', "LONG_BINPUT"}, {'s', "SETITEM"}, {'t', "TUPLE"}, {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"}, {'G', "BINFLOAT"}, {'B', "BINBYTES"}, {'C', "SHORT_BINBYTES"},
    {0x80, "PROTO"}, {0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"},
    {0x85, "TUPLE1"}, {0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"},
    {0x8a, "LONG1"}, {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"}, {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
}};
// clang-format on

std::string_view opcodeName(uint8_t op) {
    for (const auto& [code, name] : kOpcodeNames) {
        if (code == op) return name;
    }
    return {};
}

enum class Global { OrderedDict, RebuildTensorV2, RebuildParameter, Storage };

struct StorageType {
    std::string_view name;
    DType dtype;
};

// The storage classes torch.save names in persistent ids (TypedStorage._pickle_storage_type()).
// Only the floating ones can be imported as weights; the others appear for buffers (a bool or
// uint8 attention mask) that an importer may skip by name.
constexpr std::array<StorageType, 10> kStorageTypes = {{
    {"FloatStorage", DType::F32},
    {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16},
    {"DoubleStorage", DType::F64},
    {"LongStorage", DType::I64},
    {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},
    {"CharStorage", DType::I8},
    {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool},
}};

constexpr std::string_view kAllowedGlobals =
    "collections.OrderedDict, torch._utils._rebuild_tensor_v2, torch._utils._rebuild_parameter "
    "and torch.<Float|Half|BFloat16|Double|Long|Int|Short|Char|Byte|Bool>Storage";

enum class Kind { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor };

std::string_view kindName(Kind k) {
    switch (k) {
        case Kind::None:
            return "None";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::Str:
            return "str";
        case Kind::Tuple:
            return "tuple";
        case Kind::List:
            return "list";
        case Kind::Dict:
            return "dict";
        case Kind::Global:
            return "global";
        case Kind::Storage:
            return "storage";
        case Kind::Tensor:
            return "tensor";
    }
    return "?";
}

struct Object {
    Kind kind = Kind::None;
    int64_t integer = 0;                // Int, Bool; Global: the Global; Storage: type index
    std::string text;                   // Str; Storage: key; Global: "module.name"
    std::vector<uint32_t> items;        // Tuple, List; Dict: key, value, key, value, ...
    bool ordered = false;               // Dict made by collections.OrderedDict
    uint32_t storage = 0;               // Tensor: its Storage object
    uint64_t offset = 0;                // Tensor: storage offset in elements
    std::vector<int64_t> size, stride;  // Tensor
};

constexpr uint64_t kMaxElements = uint64_t(1) << 52;  // far beyond any real tensor, no overflow

class Interpreter {
public:
    Interpreter(std::span<const std::byte> bytes, std::string_view source)
        : m_bytes(bytes), m_source(source) {}

    Result<TorchStateDict> run();

private:
    std::span<const std::byte> m_bytes;
    std::string_view m_source;
    size_t m_pos = 0;
    size_t m_opAt = 0;  // offset of the opcode being run
    uint8_t m_op = 0;
    std::vector<Object> m_objects;
    std::vector<uint32_t> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, uint32_t> m_memo;
    std::map<std::string, TorchStorageInfo> m_storages;

    Error fail(std::string_view what) const {
        const std::string_view name = opcodeName(m_op);
        return Error{fmt::format("{}: byte {} (opcode {}): {}; {}", m_source, m_opAt,
                                 name.empty() ? fmt::format("0x{:02x}", m_op) : std::string(name),
                                 what, kTorchConvertHint)};
    }

    bool take(size_t n, const std::byte*& out) {
        if (n > m_bytes.size() - m_pos) return false;
        out = m_bytes.data() + m_pos;
        m_pos += n;
        return true;
    }
    template <typename T>
    bool readLe(T& value) {
        const std::byte* p = nullptr;
        if (!take(sizeof(T), p)) return false;
        std::memcpy(&value, p, sizeof(T));  // x86-64 and every torch.save writer: little endian
        return true;
    }

    uint32_t make(Object o) {
        m_objects.push_back(std::move(o));
        return uint32_t(m_objects.size() - 1);
    }
    void push(uint32_t index) { m_stack.push_back(index); }
    std::optional<uint32_t> pop() {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) return std::nullopt;
        const uint32_t v = m_stack.back();
        m_stack.pop_back();
        return v;
    }
    // The top value, not reaching below the last MARK (as the pickle machine's metastack).
    std::optional<uint32_t> top() const {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back())) return std::nullopt;
        return m_stack.back();
    }
    // The items above the last MARK (removing them and the mark).
    std::optional<std::vector<uint32_t>> popMark() {
        if (m_marks.empty()) return std::nullopt;
        const size_t mark = m_marks.back();
        m_marks.pop_back();
        std::vector<uint32_t> items(m_stack.begin() + ptrdiff_t(mark), m_stack.end());
        m_stack.resize(mark);
        return items;
    }
    Object& at(uint32_t index) { return m_objects[index]; }

    Result<uint32_t> makeGlobal(std::string_view module, std::string_view name);
    Status reduce(uint32_t callable, uint32_t args);
    Result<uint32_t> persistentLoad(uint32_t pid);
    Result<TorchStateDict> finish(uint32_t top);
    Status addItems(uint32_t target, const std::vector<uint32_t>& items);
    // One opcode: read, then run by the family it belongs to (the opcodes a state dict uses);
    // the rest are refused.
    Status step(bool& stopped);
    std::optional<Status> machineOp(bool& stopped);
    std::optional<Status> scalarOp();
    std::optional<Status> containerOp();
    std::optional<Status> referenceOp();
    Error truncated() const;
    Error underflow() const;
    void pushInt(int64_t v);
    Status pushString(uint64_t length);
    Status memoPut(uint64_t key);
    Status memoGet(uint64_t key);
    void makeTuple(std::vector<uint32_t> items);
    std::optional<std::vector<uint32_t>> popN(size_t n);  // the top n, deepest first
    Status pushLong1();
    Status pushGlobalLines();
    Status build();
    Error refuseOpcode() const;
};

Result<uint32_t> Interpreter::makeGlobal(std::string_view module, std::string_view name) {
    Object o;
    o.kind = Kind::Global;
    o.text = fmt::format("{}.{}", module, name);
    if (module == "collections" && name == "OrderedDict") {
        o.integer = int64_t(Global::OrderedDict);
    } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
        o.integer = int64_t(Global::RebuildTensorV2);
    } else if (module == "torch._utils" && name == "_rebuild_parameter") {
        o.integer = int64_t(Global::RebuildParameter);
    } else if (auto it = std::find_if(kStorageTypes.begin(), kStorageTypes.end(),
                                      [&](const StorageType& t) { return t.name == name; });
               module == "torch" && it != kStorageTypes.end()) {
        o.integer = int64_t(Global::Storage);
        o.storage = uint32_t(it - kStorageTypes.begin());
    } else {
        // Unpickling would import this and may call it: refuse before anything of the kind.
        return fail(fmt::format(
            "global {}.{} is not part of a PyTorch state dict, so this reader refuses the "
            "file and nothing in it was run (it allows only {})",
            module.substr(0, 200), name.substr(0, 200), kAllowedGlobals));
    }
    return make(std::move(o));
}

Result<uint32_t> Interpreter::persistentLoad(uint32_t pid) {
    const Object& id = at(pid);
    const bool shape =
        id.kind == Kind::Tuple && id.items.size() == 5 && at(id.items[0]).kind == Kind::Str &&
        at(id.items[0]).text == "storage" && at(id.items[1]).kind == Kind::Global &&
        at(id.items[1]).integer == int64_t(Global::Storage) && at(id.items[2]).kind == Kind::Str &&
        at(id.items[3]).kind == Kind::Str && at(id.items[4]).kind == Kind::Int;
    if (!shape) {
        return fail(
            "a persistent id that is not ('storage', torch.<T>Storage, key, location, numel), "
            "the only kind torch.save writes for a state dict");
    }
    const StorageType& type = kStorageTypes[at(id.items[1]).storage];
    const std::string key = at(id.items[2]).text;
    const int64_t elements = at(id.items[4]).integer;
    if (elements < 0 || uint64_t(elements) > kMaxElements) {
        return fail(fmt::format("storage {} declares {} elements", key, elements));
    }
    if (key.empty() || key.size() > 64 || !std::all_of(key.begin(), key.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
        })) {
        return fail(fmt::format("storage key \"{}\" is not a plain file name", key.substr(0, 80)));
    }
    auto [it, fresh] = m_storages.emplace(
        key, TorchStorageInfo{type.dtype, std::string(type.name), uint64_t(elements)});
    if (!fresh && (it->second.dtype != type.dtype || it->second.elements != uint64_t(elements))) {
        return fail(fmt::format(
            "storage {} is declared as {} of {} elements and again as {} of {} elements; the "
            "storages are used inconsistently",
            key, it->second.typeName, it->second.elements, type.name, elements));
    }
    Object s;
    s.kind = Kind::Storage;
    s.text = key;
    return make(std::move(s));
}

Status Interpreter::reduce(uint32_t callable, uint32_t argsIndex) {
    const Object& fn = at(callable);
    if (fn.kind != Kind::Global) {
        return fail(
            fmt::format("REDUCE calls a {}, not one of the allowed globals", kindName(fn.kind)));
    }
    const Object& args = at(argsIndex);
    if (args.kind != Kind::Tuple) return fail(fmt::format("REDUCE of {} without a tuple", fn.text));
    const auto& a = args.items;
    switch (Global(fn.integer)) {
        case Global::OrderedDict: {
            if (!a.empty()) return fail("collections.OrderedDict called with arguments");
            Object d;
            d.kind = Kind::Dict;
            d.ordered = true;
            push(make(std::move(d)));
            return Status::success();
        }
        case Global::RebuildParameter: {
            if (a.size() != 3 || at(a[0]).kind != Kind::Tensor || at(a[1]).kind != Kind::Bool) {
                return fail(
                    "torch._utils._rebuild_parameter without (tensor, requires_grad, hooks)");
            }
            if (at(a[2]).kind != Kind::Dict || !at(a[2]).items.empty()) {
                return fail("a parameter with backward hooks");
            }
            push(a[0]);
            return Status::success();
        }
        case Global::RebuildTensorV2: {
            // (storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
            if (a.size() != 6 && a.size() != 7) {
                return fail(
                    fmt::format("torch._utils._rebuild_tensor_v2 with {} arguments (6 or 7 "
                                "expected)",
                                a.size()));
            }
            // At most 16 dimensions, checked before the items are looked at: a hostile pickle
            // may REDUCE many times over one huge memoised tuple.
            const auto intTuple = [&](uint32_t i) {
                const Object& t = at(i);
                return t.kind == Kind::Tuple && t.items.size() <= 16 &&
                       std::all_of(t.items.begin(), t.items.end(),
                                   [&](uint32_t x) { return at(x).kind == Kind::Int; });
            };
            if (at(a[0]).kind != Kind::Storage || at(a[1]).kind != Kind::Int || !intTuple(a[2]) ||
                !intTuple(a[3]) || at(a[4]).kind != Kind::Bool || at(a[5]).kind != Kind::Dict) {
                return fail(
                    "torch._utils._rebuild_tensor_v2 without (storage, offset, size, stride, "
                    "requires_grad, hooks) of at most 16 dimensions");
            }
            if (!at(a[5]).items.empty()) return fail("a tensor with backward hooks");
            if (a.size() == 7 && at(a[6]).kind != Kind::Dict && at(a[6]).kind != Kind::None) {
                return fail("tensor metadata that is not a dict");
            }
            Object t;
            t.kind = Kind::Tensor;
            t.storage = a[0];
            const int64_t offset = at(a[1]).integer;
            if (offset < 0 || uint64_t(offset) > kMaxElements) {
                return fail(fmt::format("a tensor at storage offset {}", offset));
            }
            t.offset = uint64_t(offset);
            for (uint32_t x : at(a[2]).items) t.size.push_back(at(x).integer);
            for (uint32_t x : at(a[3]).items) t.stride.push_back(at(x).integer);
            if (t.size.size() != t.stride.size()) {
                return fail(fmt::format("a tensor with {} sizes and {} strides", t.size.size(),
                                        t.stride.size()));
            }
            uint64_t n = 1;
            for (int64_t d : t.size) {
                if (d < 0 || uint64_t(d) > kMaxElements) {
                    return fail(fmt::format("a tensor of size [{}]", fmt::join(t.size, ", ")));
                }
                n = d == 0 ? 0
                           : (n > kMaxElements / uint64_t(d) ? kMaxElements + 1 : n * uint64_t(d));
                if (n > kMaxElements) {
                    return fail(fmt::format("a tensor of size [{}]", fmt::join(t.size, ", ")));
                }
            }
            push(make(std::move(t)));
            return Status::success();
        }
        case Global::Storage:
            return fail(
                fmt::format("{} is called; a state dict names storage types only inside "
                            "persistent ids",
                            fn.text));
    }
    return fail("an unknown callable");
}

Status Interpreter::addItems(uint32_t target, const std::vector<uint32_t>& items) {
    Object& o = at(target);
    if (o.kind == Kind::List) {
        if (o.items.size() + items.size() > m_bytes.size()) return fail("a list too long");
        o.items.insert(o.items.end(), items.begin(), items.end());
        return Status::success();
    }
    if (o.kind != Kind::Dict) {
        return fail(fmt::format("setting items of a {}, not a dict", kindName(o.kind)));
    }
    if (items.size() % 2 != 0) return fail("an odd number of items for a dict");
    for (size_t i = 0; i < items.size(); i += 2) {
        const Kind k = at(items[i]).kind;
        if (k != Kind::Str && k != Kind::Int) {
            return fail(fmt::format("a dict key that is a {}", kindName(k)));
        }
    }
    at(target).items.insert(at(target).items.end(), items.begin(), items.end());
    return Status::success();
}

Status Interpreter::step(bool& stopped) {
    m_opAt = m_pos;
    const std::byte* p = nullptr;
    if (!take(1, p)) {
        m_op = 0;
        return Error{fmt::format(
            "{}: the pickle ends at byte {} without STOP; the file is truncated (download it "
            "again)",
            m_source, m_bytes.size())};
    }
    m_op = uint8_t(*p);

    // Each family of opcodes has its own function; whatever none of them runs is refused.
    if (auto done = machineOp(stopped)) return *done;
    if (auto done = scalarOp()) return *done;
    if (auto done = containerOp()) return *done;
    if (auto done = referenceOp()) return *done;
    return refuseOpcode();
}

// The pickle machine itself: protocol, framing, STOP, and the stack's MARK, POP and DUP. Nullopt:
// not one of these opcodes.
std::optional<Status> Interpreter::machineOp(bool& stopped) {
    switch (m_op) {
        case 0x80: {  // PROTO
            uint8_t version = 0;
            if (!readLe(version)) return truncated();
            if (version < 2 || version > 5) {
                return fail(fmt::format("pickle protocol {} (torch.save writes 2 to 5)", version));
            }
            return Status::success();
        }
        case 0x95: {  // FRAME: a length hint only
            uint64_t length = 0;
            if (!readLe(length)) return truncated();
            return Status::success();
        }
        case '.':
            stopped = true;
            return Status::success();
        case '(':
            m_marks.push_back(m_stack.size());
            return Status::success();
        case '0':
            if (!pop()) return underflow();
            return Status::success();
        case '1':
            if (!popMark()) return fail("no MARK to pop to");
            return Status::success();
        case '2': {
            const auto value = top();
            if (!value) return underflow();
            push(*value);
            return Status::success();
        }
        default:
            return std::nullopt;
    }
}

// Values pushed from the bytes: None, booleans, integers, floats and strings. Nullopt: not one of
// these opcodes.
std::optional<Status> Interpreter::scalarOp() {
    switch (m_op) {
        case 'N':
            push(make(Object{}));
            return Status::success();
        case 0x88:
        case 0x89: {
            Object o;
            o.kind = Kind::Bool;
            o.integer = m_op == 0x88;
            push(make(std::move(o)));
            return Status::success();
        }
        case 'J': {
            int32_t v = 0;
            if (!readLe(v)) return truncated();
            pushInt(v);
            return Status::success();
        }
        case 'K': {
            uint8_t v = 0;
            if (!readLe(v)) return truncated();
            pushInt(v);
            return Status::success();
        }
        case 'M': {
            uint16_t v = 0;
            if (!readLe(v)) return truncated();
            pushInt(v);
            return Status::success();
        }
        case 0x8a:  // LONG1: n bytes of little-endian two's complement
            return pushLong1();
        case 'G': {  // BINFLOAT (big endian): kept as a value only
            const std::byte* s = nullptr;
            if (!take(8, s)) return truncated();
            Object o;
            o.kind = Kind::Float;
            push(make(std::move(o)));
            return Status::success();
        }
        case 'X': {
            uint32_t n = 0;
            if (!readLe(n)) return truncated();
            return pushString(n);
        }
        case 0x8c: {
            uint8_t n = 0;
            if (!readLe(n)) return truncated();
            return pushString(n);
        }
        case 0x8d: {
            uint64_t n = 0;
            if (!readLe(n)) return truncated();
            return pushString(n);
        }
        default:
            return std::nullopt;
    }
}

// Tuples, lists and dicts, built whole or filled item by item. Nullopt: not one of these opcodes.
std::optional<Status> Interpreter::containerOp() {
    switch (m_op) {
        case ')':
            makeTuple({});
            return Status::success();
        case 0x85:
        case 0x86:
        case 0x87: {
            auto items = popN(size_t(m_op - 0x84));
            if (!items) return underflow();
            makeTuple(std::move(*items));
            return Status::success();
        }
        case 't': {
            auto items = popMark();
            if (!items) return fail("no MARK before TUPLE");
            makeTuple(std::move(*items));
            return Status::success();
        }
        case ']':
        case 'l': {
            Object o;
            o.kind = Kind::List;
            if (m_op == 'l') {
                auto items = popMark();
                if (!items) return fail("no MARK before LIST");
                o.items = std::move(*items);
            }
            push(make(std::move(o)));
            return Status::success();
        }
        case '}':
        case 'd': {
            Object o;
            o.kind = Kind::Dict;
            const uint32_t index = make(std::move(o));
            if (m_op == 'd') {
                auto items = popMark();
                if (!items) return fail("no MARK before DICT");
                if (Status st = addItems(index, *items); !st.ok()) return st;
            }
            push(index);
            return Status::success();
        }
        case 'a': {
            auto items = popN(2);
            if (!items) return underflow();
            push((*items)[0]);
            if (at((*items)[0]).kind != Kind::List) return fail("APPEND to something not a list");
            return addItems((*items)[0], {(*items)[1]});
        }
        case 's': {
            auto items = popN(3);
            if (!items) return underflow();
            push((*items)[0]);
            return addItems((*items)[0], {(*items)[1], (*items)[2]});
        }
        case 'e':
        case 'u': {
            auto items = popMark();
            if (!items) return fail("no MARK before the items");
            const auto target = top();
            if (!target) return underflow();
            if (m_op == 'e' && at(*target).kind != Kind::List) {
                return fail("APPENDS to something not a list");
            }
            return addItems(*target, *items);
        }
        default:
            return std::nullopt;
    }
}

// The memo, globals (the allow-list), REDUCE, BUILD and persistent ids (the storages). Nullopt: not
// one of these opcodes.
std::optional<Status> Interpreter::referenceOp() {
    switch (m_op) {
        case 'q': {
            uint8_t key = 0;
            if (!readLe(key)) return truncated();
            return memoPut(key);
        }
        case 'r': {
            uint32_t key = 0;
            if (!readLe(key)) return truncated();
            return memoPut(key);
        }
        case 0x94:
            return memoPut(m_memo.size());
        case 'h': {
            uint8_t key = 0;
            if (!readLe(key)) return truncated();
            return memoGet(key);
        }
        case 'j': {
            uint32_t key = 0;
            if (!readLe(key)) return truncated();
            return memoGet(key);
        }
        case 'c':  // GLOBAL "module\nname\n"
            return pushGlobalLines();
        case 0x93: {  // STACK_GLOBAL
            auto items = popN(2);
            if (!items) return underflow();
            if (at((*items)[0]).kind != Kind::Str || at((*items)[1]).kind != Kind::Str) {
                return fail("module and name that are not strings");
            }
            auto g = makeGlobal(at((*items)[0]).text, at((*items)[1]).text);
            if (!g.ok()) return g.error();
            push(*g);
            return Status::success();
        }
        case 'R': {
            auto items = popN(2);
            if (!items) return underflow();
            return reduce((*items)[0], (*items)[1]);
        }
        case 'b':  // BUILD
            return build();
        case 'Q': {
            auto pid = pop();
            if (!pid) return underflow();
            auto s = persistentLoad(*pid);
            if (!s.ok()) return s.error();
            push(*s);
            return Status::success();
        }
        default:
            return std::nullopt;
    }
}

// The operand helpers of step().
Error Interpreter::truncated() const {
    return fail("its argument runs past the end of the pickle");
}

Error Interpreter::underflow() const {
    return fail("the stack is empty where a value is needed");
}

void Interpreter::pushInt(int64_t v) {
    Object o;
    o.kind = Kind::Int;
    o.integer = v;
    push(make(std::move(o)));
}

Status Interpreter::pushString(uint64_t length) {
    const std::byte* s = nullptr;
    if (length > m_bytes.size() || !take(size_t(length), s)) return truncated();
    Object o;
    o.kind = Kind::Str;
    o.text.assign(reinterpret_cast<const char*>(s), size_t(length));
    push(make(std::move(o)));
    return Status::success();
}

Status Interpreter::memoPut(uint64_t key) {
    const auto value = top();
    if (!value) return underflow();
    m_memo[key] = *value;
    return Status::success();
}

Status Interpreter::memoGet(uint64_t key) {
    auto it = m_memo.find(key);
    if (it == m_memo.end()) return fail(fmt::format("memo entry {} was never stored", key));
    push(it->second);
    return Status::success();
}

void Interpreter::makeTuple(std::vector<uint32_t> items) {
    Object o;
    o.kind = Kind::Tuple;
    o.items = std::move(items);
    push(make(std::move(o)));
}

std::optional<std::vector<uint32_t>> Interpreter::popN(size_t n) {
    std::vector<uint32_t> items(n);
    for (size_t i = n; i-- > 0;) {
        auto v = pop();
        if (!v) return std::nullopt;
        items[i] = *v;
    }
    return items;
}

// LONG1: n bytes of little-endian two's complement.
Status Interpreter::pushLong1() {
    uint8_t n = 0;
    if (!readLe(n)) return truncated();
    if (n > 8) return fail(fmt::format("an integer of {} bytes", n));
    const std::byte* s = nullptr;
    if (!take(n, s)) return truncated();
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(s[i])) << (8 * i);
    if (n > 0 && n < 8 && (uint8_t(s[n - 1]) & 0x80)) v |= ~uint64_t(0) << (8 * n);
    pushInt(int64_t(v));
    return Status::success();
}

// GLOBAL: "module\nname\n".
Status Interpreter::pushGlobalLines() {
    std::string lines[2];
    for (std::string& line : lines) {
        const auto* begin = m_bytes.data() + m_pos;
        const auto* end = m_bytes.data() + m_bytes.size();
        const auto* nl = std::find(begin, end, std::byte{'\n'});
        if (nl == end) return truncated();
        line.assign(reinterpret_cast<const char*>(begin), size_t(nl - begin));
        m_pos += size_t(nl - begin) + 1;
    }
    auto g = makeGlobal(lines[0], lines[1]);
    if (!g.ok()) return g.error();
    push(*g);
    return Status::success();
}

// BUILD: only an OrderedDict's attributes (state_dict()'s _metadata), ignored.
Status Interpreter::build() {
    const auto state = pop();
    const auto targetIndex = top();
    if (!state || !targetIndex) return underflow();
    const Object& target = at(*targetIndex);
    if (target.kind != Kind::Dict || !target.ordered) {
        return fail(
            fmt::format("BUILD sets the state of a {}; only an OrderedDict's "
                        "attributes are accepted",
                        kindName(target.kind)));
    }
    const Kind k = at(*state).kind;
    if (k != Kind::Dict && k != Kind::None) {
        return fail(fmt::format("BUILD with a {} as state", kindName(k)));
    }
    return Status::success();
}

// An opcode step() does not run: damaged bytes, an object constructor, or one a state dict
// never uses.
Error Interpreter::refuseOpcode() const {
    const std::string_view name = opcodeName(m_op);
    if (name.empty()) return fail("not a pickle opcode; the file is damaged or not a checkpoint");
    if (m_op == 'i' || m_op == 'o' || m_op == 0x81 || m_op == 0x92 || m_op == 0x82 ||
        m_op == 0x83 || m_op == 0x84) {
        return fail(
            "it creates an arbitrary object, which a state dict never does, so this reader "
            "refuses the file and nothing in it was run");
    }
    return fail("a state dict written by torch.save does not use it");
}

Result<TorchStateDict> Interpreter::finish(uint32_t top) {
    const Object& dict = at(top);
    if (dict.kind != Kind::Dict) {
        return Error{
            fmt::format("{}: the pickle holds a {}, not a state dict (names -> tensors); save "
                        "model.state_dict() with torch.save, or {}",
                        m_source, kindName(dict.kind), kTorchConvertHint)};
    }
    TorchStateDict out;
    std::map<std::string, size_t> seen;
    for (size_t i = 0; i < dict.items.size(); i += 2) {
        const Object& key = at(dict.items[i]);
        const Object& value = at(dict.items[i + 1]);
        const std::string name = key.kind == Kind::Str ? key.text : fmt::format("{}", key.integer);
        if (key.kind != Kind::Str) {
            return Error{fmt::format("{}: the state dict has a non-string key {}", m_source, name)};
        }
        if (value.kind != Kind::Tensor) {
            const bool nested = value.kind == Kind::Dict;
            return Error{fmt::format(
                "{}: entry \"{}\" is a {}, not a tensor{}", m_source, name.substr(0, 200),
                kindName(value.kind),
                nested ? "; this looks like a training checkpoint that holds a state dict "
                         "inside (save its model's state_dict() alone)"
                       : "; only a plain state dict of tensors can be imported")};
        }
        if (!seen.emplace(name, out.tensors.size()).second) {
            return Error{fmt::format("{}: tensor {} is stored twice", m_source, name)};
        }
        const Object& storage = at(value.storage);
        const TorchStorageInfo& s = m_storages.at(storage.text);
        TorchTensorInfo t;
        t.name = name;
        t.dtype = s.dtype;
        t.shape = value.size;
        t.storageKey = storage.text;
        t.storageOffset = value.offset;
        // Contiguous (row-major) strides; a dimension of size 1 may carry any stride.
        int64_t expected = 1;
        bool contiguous = true;
        for (size_t d = value.size.size(); d-- > 0;) {
            if (value.size[d] != 1 && value.stride[d] != expected) contiguous = false;
            expected *= value.size[d];
        }
        if (!contiguous && t.elementCount() > 0) {
            return Error{fmt::format(
                "{}: tensor {} is not contiguous (size [{}], stride [{}]); this reader takes "
                "tensors as state_dict() saves them: save {{k: v.contiguous() for k, v in "
                "state_dict().items()}}, or {}",
                m_source, name, fmt::join(value.size, ", "), fmt::join(value.stride, ", "),
                kTorchConvertHint)};
        }
        const uint64_t n = uint64_t(t.elementCount());
        if (t.storageOffset + n > s.elements) {
            return Error{fmt::format(
                "{}: tensor {} needs elements [{}, {}) of storage {} but the storage declares "
                "only {} ({}); the file is damaged",
                m_source, name, t.storageOffset, t.storageOffset + n, t.storageKey, s.elements,
                s.typeName)};
        }
        out.tensors.push_back(std::move(t));
    }
    for (const auto& t : out.tensors)
        out.storages.emplace(t.storageKey, m_storages.at(t.storageKey));
    return out;
}

Result<TorchStateDict> Interpreter::run() {
    if (m_bytes.size() > kMaxTorchPickleBytes) {
        return Error{
            fmt::format("{}: the pickle is {} bytes, more than a state dict needs "
                        "(limit {}); {}",
                        m_source, m_bytes.size(), kMaxTorchPickleBytes, kTorchConvertHint)};
    }
    bool stopped = false;
    while (!stopped) {
        if (Status st = step(stopped); !st.ok()) return st.error();
    }
    if (m_stack.size() != 1 || !m_marks.empty()) {
        return fail(fmt::format("STOP leaves {} values and {} marks (one value expected)",
                                m_stack.size(), m_marks.size()));
    }
    return finish(m_stack.back());
}

}  // namespace

Result<TorchStateDict> parseTorchPickle(std::span<const std::byte> pickle,
                                        std::string_view source) {
    return Interpreter(pickle, source).run();
}

}  // namespace ws::modelio
