#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""PyTorch checkpoints (pytorch_model.bin, torch.save's zip format) written by hand for the tests.

Python standard library only: zipfile for the archive and the pickle written opcode by opcode
(protocol 2, as torch.save writes it), so the fixtures need no PyTorch and share no code with the
engine's reader. Where PyTorch is installed, `torch-save` and `torch-load` cross-check the format
against the real thing (they exit 77, "skipped", when `import torch` fails).

  torch_tool.py write HF_DIR OUT_DIR [--variant V]
      OUT_DIR gets HF_DIR's config.json, vocab.json, merges.txt and a pytorch_model.bin holding
      HF_DIR's model.safetensors tensors (same names and dtypes) as a state_dict() does: an
      OrderedDict with _metadata, one storage per tensor except that a tied lm_head.weight shares
      wte's storage and each layer's ln_1 weight and bias share one storage at two offsets;
      attention masks (attn.bias) as uint8 storages, masked_bias as a 0-dim tensor.
      Variants (hostile or unsupported files, each refused by the importer):
        os-system       GLOBAL os.system + REDUCE instead of the state dict
        stack-global    STACK_GLOBAL builtins.eval (protocol 4)
        inst            INST os system
        unknown-opcode  a byte that is no pickle opcode (0xff) after PROTO
        truncated       the whole file cut at 60 %
        short-storage   a storage declaring fewer elements than its tensor needs
        short-data      a storage file shorter than its declared elements
        overlap         two tensors overlapping in part in one storage
        inconsistent    one storage declared with two types (HalfStorage and FloatStorage)
        missing-storage a storage file left out of the archive
        noncontiguous   a 2-D tensor with transposed strides
        legacy          the pre-1.6 format (a bare pickle)
  torch_tool.py torch-save HF_DIR OUT_DIR [HF_DIR OUT_DIR ...]
      The same folder, pytorch_model.bin written by the real torch.save.
  torch_tool.py torch-load FILE HF_DIR [FILE HF_DIR ...]
      Loads FILE with torch.load(weights_only=True) and checks its tensors equal HF_DIR's.
  (Several pairs per call: importing torch takes seconds.)
"""
import json
import os
import shutil
import struct
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_tool  # noqa: E402

STORAGE = {"F32": ("FloatStorage", 4), "F16": ("HalfStorage", 2), "BF16": ("BFloat16Storage", 2),
           "F64": ("DoubleStorage", 8), "U8": ("ByteStorage", 1), "BOOL": ("BoolStorage", 1)}


class Pickle:
    """Protocol 2 opcodes, written out as Python's pickler writes them for torch.save."""

    def __init__(self, protocol=2):
        self.out = bytearray(b"\x80" + bytes([protocol]))
        self.memo = 0
        self.globals = {}

    def put(self):
        if self.memo < 256:
            self.out += b"q" + bytes([self.memo])
        else:
            self.out += b"r" + struct.pack("<I", self.memo)
        self.memo += 1
        return self.memo - 1

    def get(self, index):
        self.out += (b"h" + bytes([index])) if index < 256 else (b"j" + struct.pack("<I", index))

    def global_(self, module, name):
        key = (module, name)
        if key in self.globals:
            self.get(self.globals[key])
            return
        self.out += b"c" + ("%s\n%s\n" % (module, name)).encode()
        self.globals[key] = self.put()

    def string(self, s):
        raw = s.encode("utf-8")
        self.out += b"X" + struct.pack("<I", len(raw)) + raw
        self.put()

    def int(self, v):
        if 0 <= v < 256:
            self.out += b"K" + bytes([v])
        elif 0 <= v < 65536:
            self.out += b"M" + struct.pack("<H", v)
        elif -2 ** 31 <= v < 2 ** 31:
            self.out += b"J" + struct.pack("<i", v)
        else:
            raw = v.to_bytes(8, "little", signed=True)
            self.out += b"\x8a\x08" + raw

    def tuple_(self, items):
        """items: callables that each push one value."""
        if not items:
            self.out += b")"
            return
        if len(items) <= 3:
            for item in items:
                item()
            self.out += bytes([0x84 + len(items)])
        else:
            self.out += b"("
            for item in items:
                item()
            self.out += b"t"
        self.put()

    def ordered_dict(self):
        self.global_("collections", "OrderedDict")
        self.out += b")R"
        self.put()

    def tensor(self, storage_type, key, numel, offset, size, stride):
        self.global_("torch._utils", "_rebuild_tensor_v2")
        self.out += b"("
        self.tuple_([lambda: self.string("storage"),
                     lambda: self.global_("torch", storage_type),
                     lambda: self.string(key), lambda: self.string("cpu"),
                     lambda: self.int(numel)])
        self.out += b"Q"
        self.int(offset)
        self.tuple_([(lambda d=d: self.int(d)) for d in size])
        self.tuple_([(lambda d=d: self.int(d)) for d in stride])
        self.out += b"\x89"  # requires_grad False
        self.ordered_dict()  # backward hooks
        self.out += b"t"
        self.put()
        self.out += b"R"
        self.put()


def contiguous_strides(shape):
    strides, n = [], 1
    for d in reversed(shape):
        strides.insert(0, n)
        n *= d
    return strides


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def state_dict_entries(hf_dir, variant):
    """(name, storage key, storage type, storage numel, offset, shape, stride) and storages."""
    tensors, _ = hf_tool.read_safetensors(hf_dir + "/model.safetensors")
    with open(hf_dir + "/config.json") as f:
        tied = json.load(f).get("tie_word_embeddings", True)
    # ln_1.weight before ln_1.bias: the bias goes after the weight in their shared storage.
    names = sorted(tensors, key=lambda n: n.replace("ln_1.bias", "ln_1.~bias"))
    prefix = "transformer." if any(n.startswith("transformer.") for n in names) else ""
    if tied and "lm_head.weight" not in tensors:
        names.append("lm_head.weight")  # state_dict() of GPT2LMHeadModel lists the tied head
    storages = {}  # key -> [storage type, raw bytes]
    entries = []
    for name in names:
        if name == "lm_head.weight" and tied:
            wte = entries[[e[0] for e in entries].index(prefix + "wte.weight")]
            entries.append((name,) + wte[1:])
            continue
        dtype, shape, values = tensors[name]
        if name.endswith(".attn.bias"):
            dtype, raw = "U8", bytes(int(v) for v in values)
        else:
            raw = hf_tool.encode(values, dtype)
        stype, size = STORAGE[dtype]
        if name.endswith("ln_1.bias") and name.replace("bias", "weight") in tensors:
            # ln_1.weight and ln_1.bias in one storage: weight at 0, bias after it.
            wname = name.replace("bias", "weight")
            wkey = [e for e in entries if e[0] == wname]
            assert wkey, "ln_1.weight must come first"
            key = wkey[0][1]
            offset = len(storages[key][1]) // size
            storages[key][1] += raw
            entries.append((name, key, stype, None, offset, shape, contiguous_strides(shape)))
            continue
        key = str(len(storages))
        storages[key] = [stype, bytearray(raw)]
        entries.append((name, key, stype, None, 0, shape, contiguous_strides(shape)))
    # Storage element counts once every storage is complete.
    entries = [(n, k, t, len(storages[k][1]) // STORAGE_SIZE[t], o, s, st)
               for n, k, t, _, o, s, st in entries]
    return entries, storages


STORAGE_SIZE = {v[0]: v[1] for v in STORAGE.values()}


def pickle_state_dict(entries, prefix_names):
    p = Pickle()
    p.ordered_dict()
    p.out += b"("
    for name, key, stype, count, offset, shape, stride in entries:
        p.string(name)
        p.tensor(stype, key, count, offset, shape, stride)
    p.out += b"u"
    # state_dict()'s _metadata attribute: BUILD with {"_metadata": OrderedDict(...)}.
    p.out += b"}"
    p.put()
    p.string("_metadata")
    p.ordered_dict()
    p.out += b"("
    for module in [""] + prefix_names:
        p.string(module)
        p.out += b"}"
        p.put()
        p.string("version")
        p.int(1)
        p.out += b"s"
    p.out += b"u"
    p.out += b"s"
    p.out += b"b."
    return bytes(p.out)


def write_zip(path, pickle_bytes, storages, leave_out=None, short=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", pickle_bytes)
        z.writestr("archive/byteorder", "little")
        for key, (_, raw) in storages.items():
            if key == leave_out:
                continue
            z.writestr("archive/data/" + key, bytes(raw[:-4] if key == short else raw))
        z.writestr("archive/version", "3\n")


def cmd_write(args):
    hf_dir, out_dir = args[0], args[1]
    variant = args[3] if len(args) > 3 and args[2] == "--variant" else None
    os.makedirs(out_dir, exist_ok=True)
    for f in ("config.json", "vocab.json", "merges.txt"):
        shutil.copy(os.path.join(hf_dir, f), os.path.join(out_dir, f))
    path = os.path.join(out_dir, "pytorch_model.bin")
    entries, storages = state_dict_entries(hf_dir, variant)
    modules = sorted({e[0].rsplit(".", 1)[0] for e in entries})
    leave_out = short = None

    def find(suffix):
        return [i for i, e in enumerate(entries) if e[0].endswith(suffix)][0]

    if variant == "short-storage":
        i = find("h.0.attn.c_proj.weight")
        n, k, t, count, o, s, st = entries[i]
        entries[i] = (n, k, t, count - 1, o, s, st)
        storages[k][1] = storages[k][1][:-STORAGE_SIZE[t]]
    elif variant == "short-data":
        short = entries[find("h.0.mlp.c_fc.weight")][1]
    elif variant == "missing-storage":
        leave_out = entries[find("wpe.weight")][1]
    elif variant == "overlap":
        # h.1.ln_2.bias reads the second half of h.0.ln_2.bias plus what follows it.
        a, b = find("h.0.ln_2.bias"), find("h.1.ln_2.bias")
        n, k, t, count, o, s, st = entries[a]
        storages[k][1] += storages[entries[b][1]][1]
        entries[a] = (n, k, t, count * 2, o, s, st)
        nb, _, tb, _, _, sb, stb = entries[b]
        entries[b] = (nb, k, tb, count * 2, s[0] // 2, sb, stb)
    elif variant == "inconsistent":
        i, j = find("h.0.ln_2.bias"), find("h.0.ln_2.weight")
        n, k, t, count, o, s, st = entries[j]
        other = "FloatStorage" if t == "HalfStorage" else "HalfStorage"
        entries[j] = (n, entries[i][1], other, count, o, s, st)
    elif variant == "noncontiguous":
        i = find("h.0.attn.c_proj.weight")
        n, k, t, count, o, s, st = entries[i]
        entries[i] = (n, k, t, count, o, s, [1, s[0]])
    data = pickle_state_dict(entries, modules)
    if variant == "os-system":
        p = Pickle()
        p.global_("os", "system")
        p.tuple_([lambda: p.string("touch %s/pwned" % out_dir)])
        p.out += b"R."
        data = bytes(p.out)
    elif variant == "stack-global":
        p = Pickle(protocol=4)
        p.out += b"\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x94"
        p.out += b"\x8c\x0cprint('hi')\x94\x85\x94R\x94."
        data = bytes(p.out)
    elif variant == "inst":
        data = b"\x80\x02(X\x04\x00\x00\x00trueios\nsystem\n."
    elif variant == "unknown-opcode":
        data = data[:2] + b"\xff" + data[2:]
    write_zip(path, data, storages, leave_out, short)
    if variant == "truncated":
        with open(path, "rb") as f:
            raw = f.read()
        with open(path, "wb") as f:
            f.write(raw[:len(raw) * 6 // 10])
    elif variant == "legacy":
        with open(path, "wb") as f:
            magic = 0x1950A86A20F9469CFC6C
            f.write(b"\x80\x02\x8a\x0a" + magic.to_bytes(10, "little") + b".")
            f.write(b"\x80\x02K\xe9.")  # protocol version 1001, then sys info, pickle, storages


def need_torch():
    try:
        import torch  # noqa: F401
    except Exception as e:  # noqa: BLE001
        print("PyTorch is not installed here (%s): skipped" % e)
        sys.exit(77)
    import torch
    return torch


def cmd_torch_save(args):
    for i in range(0, len(args), 2):
        torch_save_one(need_torch(), args[i], args[i + 1])


def torch_save_one(torch, hf_dir, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for f in ("config.json", "vocab.json", "merges.txt"):
        shutil.copy(os.path.join(hf_dir, f), os.path.join(out_dir, f))
    tensors, _ = hf_tool.read_safetensors(hf_dir + "/model.safetensors")
    dtypes = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
    state = {}
    for name in sorted(tensors):
        dtype, shape, values = tensors[name]
        t = torch.tensor(values, dtype=torch.float64).reshape(shape)
        state[name] = (t != 0) if name.endswith(".attn.bias") else t.to(dtypes[dtype])
    with open(hf_dir + "/config.json") as f:
        if json.load(f).get("tie_word_embeddings", True):
            wte = [n for n in state if n.endswith("wte.weight")][0]
            state["lm_head.weight"] = state[wte]  # shares the storage, as a tied model's does
    import collections
    torch.save(collections.OrderedDict(state), os.path.join(out_dir, "pytorch_model.bin"))


def cmd_torch_load(args):
    for i in range(0, len(args), 2):
        torch_load_one(need_torch(), args[i], args[i + 1])


def torch_load_one(torch, path, hf_dir):
    got = torch.load(path, map_location="cpu", weights_only=True)
    want, _ = hf_tool.read_safetensors(hf_dir + "/model.safetensors")
    for name, (dtype, shape, values) in want.items():
        t = got[name]
        if list(t.shape) != shape:
            sys.exit("%s: shape %s vs %s" % (name, list(t.shape), shape))
        if [float(v) for v in t.double().flatten().tolist()] != values:
            sys.exit("%s: values differ" % name)
    print("torch.load reads the same %d tensors from %s" % (len(want), path))


if __name__ == "__main__":
    commands = {"write": cmd_write, "torch-save": cmd_torch_save, "torch-load": cmd_torch_load}
    commands[sys.argv[1]](sys.argv[2:])
