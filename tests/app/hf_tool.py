#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent Hugging Face GPT-2 folder writer and safetensors reader for the CLI tests.

Python standard library only (struct + json): it shares no code with the engine, so a file it
writes by hand and the engine reads (or the reverse) proves the format, not one implementation
agreeing with itself.

  hf_tool.py write DIR --dtype F16|BF16|F32 [--layers 2 --embd 16 --heads 2 --vocab 300
                 --positions 32 --inner N --prefix --untied --buffers --seed 1]
      A GPT2LMHeadModel-style folder: model.safetensors, config.json, vocab.json, merges.txt.
      Values are deterministic and exactly representable in the dtype.
  hf_tool.py compare DIR FILE
      Reads FILE (safetensors) by hand and checks that it holds exactly DIR's tensors (names
      compared without "transformer."; the attention buffers and a tied lm_head are skipped).
  hf_tool.py same-values FILE_A FILE_B [--names N1,N2 | --prefix P1,P2]
      Bit-exact comparison of the tensors present in both (or the named ones, or those whose
      names start with a prefix), as fp32 values.
  hf_tool.py check-byte-vocab DIR
      vocab.json maps GPT-2's bytes_to_unicode(b) to id b for all 256 bytes, merges.txt none.
  hf_tool.py shard SRC_DIR OUT_DIR N
      OUT_DIR gets SRC_DIR's files with its model.safetensors split as save_pretrained splits a
      large model: model-0000i-of-0000N.safetensors (tensors dealt round-robin, bytes untouched)
      and model.safetensors.index.json {"metadata": {"total_size"}, "weight_map"}.
  hf_tool.py cache SRC_DIR HUB ORG/NAME
      Lays SRC_DIR out in a Hugging Face cache as huggingface_hub does: HUB/models--ORG--NAME/
      blobs/<sha256 of each file>, snapshots/<commit>/<file> -> ../../blobs/<sha256>,
      refs/main = <commit> (the sha1 of the file list). Prints the snapshot folder.
  hf_tool.py check-lora-merge PEFT_DIR BASE_FILE MERGED_FILE
      PEFT's LoRA semantics for GPT-2's Conv1D (fan_in_fan_out): every weight W (in, out) of
      BASE_FILE that PEFT_DIR adapts must appear in MERGED_FILE as W + lora_alpha / r *
      (lora_B.weight @ lora_A.weight)^T within float rounding, every other tensor unchanged.
"""
import json
import math
import random
import struct
import sys


def bytes_to_unicode():
    # GPT-2's table (openai/gpt-2 encoder.py), written out again here.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


SIZES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


def encode(values, dtype):
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values)
    if dtype == "F64":
        return struct.pack("<%dd" % len(values), *values)
    if dtype == "F16":
        return struct.pack("<%de" % len(values), *values)
    if dtype == "BF16":
        out = bytearray()
        for v in values:
            bits = struct.unpack("<I", struct.pack("<f", v))[0]
            assert bits & 0xFFFF == 0, "value not exact in bf16"
            out += struct.pack("<H", bits >> 16)
        return bytes(out)
    raise ValueError(dtype)


def decode(raw, dtype):
    n = len(raw) // SIZES[dtype]
    if dtype == "F32":
        return list(struct.unpack("<%df" % n, raw))
    if dtype == "F64":
        return list(struct.unpack("<%dd" % n, raw))
    if dtype == "F16":
        return list(struct.unpack("<%de" % n, raw))
    if dtype == "BF16":
        return [struct.unpack("<f", struct.pack("<I", h << 16))[0]
                for h in struct.unpack("<%dH" % n, raw)]
    raise ValueError("dtype %s not handled" % dtype)


def write_safetensors(path, tensors, metadata=None, pad_to=1):
    """tensors: list of (name, dtype, shape, raw bytes). Header padded with spaces to pad_to."""
    header = {}
    offset = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((-len(text)) % pad_to)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, _, _, raw in tensors:
            f.write(raw)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], decode(body[begin:end], info["dtype"]))
    return out, header.get("__metadata__", {})


def exact_value(rng, dtype, scale):
    # Multiples of 2^-10 below 2^-3: at most 7 significant bits, exact in fp16, bf16 and fp32.
    return rng.randint(-96, 96) / 1024.0 * scale


def model_tensors(layers, embd, vocab, positions, inner, untied, rng, dtype):
    C, F = embd, inner

    def t(name, shape, kind="w"):
        n = 1
        for d in shape:
            n *= d
        if kind == "ones":
            vals = [1.0 + rng.randint(-16, 16) / 64.0 for _ in range(n)]
        else:
            vals = [exact_value(rng, dtype, 1.0) for _ in range(n)]
        return name, shape, vals

    ts = [t("wte.weight", [vocab, C]), t("wpe.weight", [positions, C])]
    for l in range(layers):
        p = "h.%d." % l
        ts += [t(p + "ln_1.weight", [C], "ones"), t(p + "ln_1.bias", [C]),
               t(p + "attn.c_attn.weight", [C, 3 * C]), t(p + "attn.c_attn.bias", [3 * C]),
               t(p + "attn.c_proj.weight", [C, C]), t(p + "attn.c_proj.bias", [C]),
               t(p + "ln_2.weight", [C], "ones"), t(p + "ln_2.bias", [C]),
               t(p + "mlp.c_fc.weight", [C, F]), t(p + "mlp.c_fc.bias", [F]),
               t(p + "mlp.c_proj.weight", [F, C]), t(p + "mlp.c_proj.bias", [C])]
    ts += [t("ln_f.weight", [C], "ones"), t("ln_f.bias", [C])]
    if untied:
        ts.append(t("lm_head.weight", [vocab, C]))
    return ts


def write_tokenizer(folder, vocab_size):
    b2u = bytes_to_unicode()
    vocab = {b2u[b]: b for b in range(256)}
    merges = []
    # A few merges of common English pairs, spelled byte-level ("Ġ" is the space).
    pairs = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r"),
             ("o", "n"), ("Ġ", "s"), ("r", "e"), ("a", "t")]
    for a, b in pairs:
        if len(vocab) >= vocab_size - 1:
            break
        merges.append("%s %s" % (a, b))
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(folder + "/vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(folder + "/merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    return len(vocab)


def cmd_write(args):
    import argparse
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--dtype", default="F32")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--embd", type=int, default=16)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=300)
    p.add_argument("--positions", type=int, default=32)
    p.add_argument("--inner", type=int, default=0)
    p.add_argument("--prefix", action="store_true")
    p.add_argument("--untied", action="store_true")
    p.add_argument("--buffers", action="store_true")
    p.add_argument("--activation", default="gelu_new")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args(args)
    import os
    os.makedirs(a.dir, exist_ok=True)
    rng = random.Random(a.seed)
    inner = a.inner or 4 * a.embd
    tokens = write_tokenizer(a.dir, a.vocab)
    assert tokens <= a.vocab
    tensors = []
    for name, shape, vals in model_tensors(a.layers, a.embd, a.vocab, a.positions, inner,
                                           a.untied, rng, a.dtype):
        full = name if (name == "lm_head.weight" or not a.prefix) else "transformer." + name
        tensors.append((full, a.dtype, shape, encode(vals, a.dtype)))
    if a.buffers:
        for l in range(a.layers):
            pre = "transformer." if a.prefix else ""
            mask = [1.0 if j <= i else 0.0 for i in range(a.positions) for j in range(a.positions)]
            tensors.append((pre + "h.%d.attn.bias" % l, "F32", [1, 1, a.positions, a.positions],
                            encode(mask, "F32")))
            tensors.append((pre + "h.%d.attn.masked_bias" % l, "F32", [], encode([-1e4], "F32")))
    # Odd order and an unaligned header, as other writers produce.
    rng.shuffle(tensors)
    write_safetensors(a.dir + "/model.safetensors", tensors, {"format": "pt"}, pad_to=1)
    config = {
        "_name_or_path": "tiny-hf-gpt2", "architectures": ["GPT2LMHeadModel"],
        "model_type": "gpt2", "activation_function": a.activation, "vocab_size": a.vocab,
        "n_embd": a.embd, "n_layer": a.layers, "n_head": a.heads, "n_positions": a.positions,
        "n_ctx": a.positions, "n_inner": None if not a.inner else a.inner,
        "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0,
        "initializer_range": 0.02, "tie_word_embeddings": not a.untied,
        "bos_token_id": tokens - 1, "eos_token_id": tokens - 1,
        "task_specific_params": {"text-generation": {"do_sample": True, "max_length": 50}},
    }
    with open(a.dir + "/config.json", "w") as f:
        json.dump(config, f, indent=2)


def canonical(name):
    return name[len("transformer."):] if name.startswith("transformer.") else name


def load_canonical(path):
    tensors, _ = read_safetensors(path)
    out = {}
    for name, (dtype, shape, vals) in tensors.items():
        c = canonical(name)
        if c.endswith(".attn.bias") or c.endswith(".attn.masked_bias"):
            continue
        out[c] = (dtype, shape, vals)
    return out


def cmd_compare(args):
    hf_dir, file = args
    with open(hf_dir + "/config.json") as f:
        tied = json.load(f).get("tie_word_embeddings", True)
    want = load_canonical(hf_dir + "/model.safetensors")
    if tied:
        want.pop("lm_head.weight", None)
    got = load_canonical(file)
    if set(want) != set(got):
        sys.exit("names differ: only in source %s, only in %s %s" % (
            sorted(set(want) - set(got)), file, sorted(set(got) - set(want))))
    for name in sorted(want):
        if want[name][1] != got[name][1]:
            sys.exit("%s: shape %s vs %s" % (name, want[name][1], got[name][1]))
        if want[name][2] != got[name][2]:
            sys.exit("%s: values differ" % name)
    print("same %d tensors" % len(want))


def cmd_same_values(args):
    a, b = args[0], args[1]
    option = args[2] if len(args) > 3 else None
    values = args[3].split(",") if option else []
    ta, tb = load_canonical(a), load_canonical(b)
    check = values if option == "--names" else sorted(set(ta) & set(tb))
    if option == "--prefix":
        check = [n for n in check if any(n.startswith(p) for p in values)]
    if not check:
        sys.exit("no tensors to compare")
    for n in check:
        va = struct.pack("<%df" % len(ta[n][2]), *ta[n][2])
        vb = struct.pack("<%df" % len(tb[n][2]), *tb[n][2])
        if va != vb:
            sys.exit("differs: " + n)
    print("identical %d tensors" % len(check))


def cmd_check_byte_vocab(args):
    folder = args[0]
    b2u = bytes_to_unicode()
    with open(folder + "/vocab.json", encoding="utf-8") as f:
        vocab = json.load(f)
    want = {b2u[b]: b for b in range(256)}
    if vocab != want:
        sys.exit("vocab.json is not the 256 byte symbols with id = byte value")
    with open(folder + "/merges.txt", encoding="utf-8") as f:
        lines = f.read().split("\n")
    if not lines[0].startswith("#version") or any(lines[1:-1]) or lines[-1] != "":
        sys.exit("merges.txt must be a version line and no merges")
    print("byte vocabulary ok")


def cmd_check_lora_merge(args):
    peft, base_file, merged_file = args[0], args[1], args[2]
    with open(peft + "/adapter_config.json", encoding="utf-8") as f:
        cfg = json.load(f)
    assert cfg["peft_type"] == "LORA" and cfg["fan_in_fan_out"] is True, cfg
    scale = cfg["lora_alpha"] / cfg["r"]
    adapters, _ = read_safetensors(peft + "/adapter_model.safetensors")
    base, merged = load_canonical(base_file), load_canonical(merged_file)
    prefix = "base_model.model.transformer."
    adapted = set()
    worst = 0.0
    for name, (_, a_shape, a) in adapters.items():
        if not name.endswith(".lora_A.weight"):
            continue
        module = name[len(prefix):-len(".lora_A.weight")]
        _, b_shape, b = adapters[prefix + module + ".lora_B.weight"]
        r, n_in = a_shape
        n_out = b_shape[0]
        assert b_shape == [n_out, r], (name, a_shape, b_shape)
        weight = module + ".weight"
        _, w_shape, w = base[weight]
        _, m_shape, m = merged[weight]
        assert w_shape == [n_in, n_out] == m_shape, (weight, w_shape, m_shape)
        for i in range(n_in):
            for o in range(n_out):
                delta = sum(b[o * r + k] * a[k * n_in + i] for k in range(r))
                want = w[i * n_out + o] + scale * delta
                got = m[i * n_out + o]
                # float rounding of the result (and of the engine's float inputs)
                if abs(got - want) > 1e-6 * max(1.0, abs(want)):
                    sys.exit("%s[%d][%d]: merged %r, base + scale BA %r" % (weight, i, o, got, want))
                worst = max(worst, abs(got - want))
        adapted.add(weight)
    if not adapted:
        sys.exit("no adapters in " + peft)
    for name in merged:
        if name in adapted:
            continue
        if name not in base or base[name][2] != merged[name][2]:
            sys.exit("changed without an adapter: " + name)
    print("merged %d weights, worst |merged - (W + scale BA)| = %.3g" % (len(adapted), worst))


def cmd_shard(args):
    import os
    import shutil
    src, out, n = args[0], args[1], int(args[2])
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(src):
        if name != "model.safetensors":
            shutil.copy(os.path.join(src, name), os.path.join(out, name))
    with open(src + "/model.safetensors", "rb") as f:
        data = f.read()
    (hn,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + hn].decode("utf-8"))
    body = data[8 + hn:]
    names = sorted(k for k in header if k != "__metadata__")
    shards = [[] for _ in range(n)]
    weight_map = {}
    total = 0
    for i, name in enumerate(names):
        info = header[name]
        begin, end = info["data_offsets"]
        shard = "model-%05d-of-%05d.safetensors" % (i % n + 1, n)
        shards[i % n].append((name, info["dtype"], info["shape"], body[begin:end]))
        weight_map[name] = shard
        total += end - begin
    for i, tensors in enumerate(shards):
        write_safetensors(out + "/model-%05d-of-%05d.safetensors" % (i + 1, n), tensors,
                          {"format": "pt"}, pad_to=8)
    with open(out + "/model.safetensors.index.json", "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


def cmd_cache(args):
    import hashlib
    import os
    import shutil
    src, hub, repo = args
    root = os.path.join(hub, "models--" + repo.replace("/", "--"))
    files = sorted(os.listdir(src))
    commit = hashlib.sha1("\n".join(files).encode()).hexdigest()
    snapshot = os.path.join(root, "snapshots", commit)
    os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
    os.makedirs(os.path.join(root, "refs"), exist_ok=True)
    os.makedirs(snapshot, exist_ok=True)
    for name in files:
        with open(os.path.join(src, name), "rb") as f:
            sha = hashlib.sha256(f.read()).hexdigest()
        shutil.copy(os.path.join(src, name), os.path.join(root, "blobs", sha))
        os.symlink(os.path.join("..", "..", "blobs", sha), os.path.join(snapshot, name))
    with open(os.path.join(root, "refs", "main"), "w") as f:
        f.write(commit)
    print(snapshot)


if __name__ == "__main__":
    commands = {"write": cmd_write, "compare": cmd_compare, "same-values": cmd_same_values,
                "shard": cmd_shard, "cache": cmd_cache,
                "check-byte-vocab": cmd_check_byte_vocab, "check-lora-merge": cmd_check_lora_merge}
    commands[sys.argv[1]](sys.argv[2:])
