#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A second, independent float64 reference of Hugging Face's Llama forward for
hf_llama_reference_test.cpp: PyTorch written from modeling_llama.py's semantics (LlamaRMSNorm,
rotate_half with cos/sin of cat(freqs, freqs), repeat_kv, causal softmax(q k^T / sqrt(hs)),
down(silu(gate) * up), tied or untied lm_head), without importing transformers. Rope scaling:
default, linear and llama3 (as transformers' rope utils compute inv_freq); partial_rotary_factor
rotates the first head_dim * factor dims of each head (GPT-NeoX style).

usage: hf_llama_reference.py FOLDER...
Each FOLDER holds config.json, model.safetensors (float32) and tokens.json
({"batch": B, "seq": T, "inputs": [...], "targets": [...]}); out.json is written there with the
logits (B*T*V), the mean cross-entropy and its gradient for every tensor (autograd), in float64.
"""
import json
import math
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + begin:base + end]), dtype=torch.float32)
        tensors[name] = t.reshape(info["shape"]).double()
    return tensors


def inv_freq(cfg, dim):
    theta = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    scaling = cfg.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        inv = inv / scaling["factor"]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        inv_llama = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * inv_llama / factor + smooth * inv_llama
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv = torch.where(medium, smoothed, inv_llama)
    else:
        assert kind == "default", kind
    return inv


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def linear(x, w, name):
    y = x @ w[name + ".weight"].T
    if name + ".bias" in w:
        y = y + w[name + ".bias"]
    return y


def forward(cfg, w, inputs):
    B, T = inputs.shape
    C = cfg["hidden_size"]
    NH = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", NH)
    hs = cfg.get("head_dim", C // NH)
    rot = int(hs * cfg.get("partial_rotary_factor", 1.0))
    eps = cfg["rms_norm_eps"]
    freqs = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq(cfg, rot)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()  # (T, rot)

    def rope(x):  # (B, heads, T, hs)
        xr, xp = x[..., :rot], x[..., rot:]
        return torch.cat((xr * cos + rotate_half(xr) * sin, xp), dim=-1)

    x = w["model.embed_tokens.weight"][inputs]
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(h, w, p + "self_attn.q_proj").view(B, T, NH, hs).transpose(1, 2)
        k = linear(h, w, p + "self_attn.k_proj").view(B, T, KV, hs).transpose(1, 2)
        v = linear(h, w, p + "self_attn.v_proj").view(B, T, KV, hs).transpose(1, 2)
        q, k = rope(q), rope(k)
        k = k.repeat_interleave(NH // KV, dim=1)  # repeat_kv
        v = v.repeat_interleave(NH // KV, dim=1)
        scores = q @ k.transpose(2, 3) / math.sqrt(hs) + mask
        a = torch.softmax(scores, dim=-1) @ v
        a = a.transpose(1, 2).reshape(B, T, NH * hs)
        x = x + linear(a, w, p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(h, w, p + "mlp.gate_proj")
        up = linear(h, w, p + "mlp.up_proj")
        x = x + linear(torch.nn.functional.silu(gate) * up, w, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def run(folder):
    with open(f"{folder}/config.json") as f:
        cfg = json.load(f)
    with open(f"{folder}/tokens.json") as f:
        tok = json.load(f)
    B, T = tok["batch"], tok["seq"]
    inputs = torch.tensor(tok["inputs"]).view(B, T)
    targets = torch.tensor(tok["targets"]).view(B * T)
    w = read_safetensors(f"{folder}/model.safetensors")
    for t in w.values():
        t.requires_grad_(True)
    logits = forward(cfg, w, inputs)
    loss = torch.nn.functional.cross_entropy(logits.view(B * T, -1), targets)
    loss.backward()
    out = {
        "logits": logits.detach().reshape(-1).tolist(),
        "loss": loss.item(),
        "grads": {n: t.grad.reshape(-1).tolist() for n, t in w.items()},
    }
    with open(f"{folder}/out.json", "w") as f:
        json.dump(out, f)


def main():
    for folder in sys.argv[1:]:
        run(folder)


if __name__ == "__main__":
    main()
