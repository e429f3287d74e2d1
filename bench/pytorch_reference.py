#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The same training step as wafer_train_bench, in plain PyTorch (eager, AdamW): fp32, or
with --precision bf16 the forward under torch.autocast("cpu", dtype=torch.bfloat16) (fp32 master
weights and optimizer, bf16 matmuls; the backward follows autocast's casts).

Run by wafer_train_bench as a child process with OMP_WAIT_POLICY=PASSIVE (without it PyTorch's
OpenMP threads spin against OpenBLAS's and it runs ~1.6x slower here). Prints a line
`tokens_per_s=<value>` that the benchmark parses. Model: token + learned position embeddings,
pre-LN blocks (causal attention scaled by 1/sqrt(head size), tanh-GELU MLP), final LayerNorm,
LM head tied to wte, mean cross-entropy; AdamW(0.9, 0.95, weight decay 0.1) like the C++ bench.
--shape smollm is a Llama instead (SmolLM-135M's shape, written as Hugging Face's LlamaModel
computes it): RMSNorm, rotary positions in the half layout, grouped-query attention (K and V
repeated for their query heads, as HF's repeat_kv), SwiGLU MLP, no biases, tied head. Attention
is written out (Debian's torch 1.13 has no scaled_dot_product_attention).
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPES = {
    "small": dict(vocab=8192, channels=256, layers=4, heads=4, ffn=1024, max_pos=256),
    "gpt2": dict(vocab=50257, channels=768, layers=12, heads=12, ffn=3072, max_pos=1024),
}
LLAMA_SHAPES = {
    "smollm": dict(vocab=49152, channels=576, layers=30, heads=9, kv_heads=3, ffn=1536,
                   theta=10000.0, eps=1e-5),
}


class Block(nn.Module):
    def __init__(self, c, nh, ffn, max_pos):
        super().__init__()
        self.nh = nh
        self.ln_1 = nn.LayerNorm(c, eps=1e-5)
        self.c_attn = nn.Linear(c, 3 * c)
        self.c_proj = nn.Linear(c, c)
        self.ln_2 = nn.LayerNorm(c, eps=1e-5)
        self.c_fc = nn.Linear(c, ffn)
        self.mlp_proj = nn.Linear(ffn, c)
        self.gelu = nn.GELU(approximate="tanh")
        mask = torch.tril(torch.ones(max_pos, max_pos)).view(1, 1, max_pos, max_pos)
        self.register_buffer("mask", mask)

    def forward(self, x):
        b, t, c = x.shape
        hs = c // self.nh
        q, k, v = self.c_attn(self.ln_1(x)).split(c, dim=2)
        q = q.view(b, t, self.nh, hs).transpose(1, 2)
        k = k.view(b, t, self.nh, hs).transpose(1, 2)
        v = v.view(b, t, self.nh, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.c_proj(y)
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


class Gpt(nn.Module):
    def __init__(self, vocab, channels, layers, heads, ffn, max_pos):
        super().__init__()
        self.wte = nn.Embedding(vocab, channels)
        self.wpe = nn.Embedding(max_pos, channels)
        self.h = nn.ModuleList([Block(channels, heads, ffn, max_pos) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(channels, eps=1e-5)
        self.lm_head = nn.Linear(channels, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # tied
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, targets):
        b, t = idx.shape
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


class RmsNorm(nn.Module):
    def __init__(self, c, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, c, nh, nkv, ffn, eps):
        super().__init__()
        self.nh, self.nkv, self.hs = nh, nkv, c // nh
        self.input_layernorm = RmsNorm(c, eps)
        self.q_proj = nn.Linear(c, nh * self.hs, bias=False)
        self.k_proj = nn.Linear(c, nkv * self.hs, bias=False)
        self.v_proj = nn.Linear(c, nkv * self.hs, bias=False)
        self.o_proj = nn.Linear(nh * self.hs, c, bias=False)
        self.post_attention_layernorm = RmsNorm(c, eps)
        self.gate_proj = nn.Linear(c, ffn, bias=False)
        self.up_proj = nn.Linear(c, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, c, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(b, t, self.nh, self.hs).transpose(1, 2)
        k = self.k_proj(h).view(b, t, self.nkv, self.hs).transpose(1, 2)
        v = self.v_proj(h).view(b, t, self.nkv, self.hs).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(self.nh // self.nkv, dim=1)
        v = v.repeat_interleave(self.nh // self.nkv, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.hs))
        att = F.softmax(att.masked_fill(mask, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, self.nh * self.hs)
        x = x + self.o_proj(y)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(nn.Module):
    def __init__(self, vocab, channels, layers, heads, kv_heads, ffn, theta, eps):
        super().__init__()
        self.hs, self.theta = channels // heads, theta
        self.embed_tokens = nn.Embedding(vocab, channels)
        self.layers = nn.ModuleList(
            [LlamaBlock(channels, heads, kv_heads, ffn, eps) for _ in range(layers)])
        self.norm = RmsNorm(channels, eps)
        self.lm_head = nn.Linear(channels, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, targets):
        b, t = idx.shape
        inv = 1.0 / (self.theta ** (torch.arange(0, self.hs, 2).float() / self.hs))
        freqs = torch.outer(torch.arange(t).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        x = self.embed_tokens(idx)
        for block in self.layers:
            x = block(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", choices=sorted(SHAPES) + sorted(LLAMA_SHAPES), default="small")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    if args.shape in LLAMA_SHAPES:
        shape = LLAMA_SHAPES[args.shape]
        model = Llama(**shape)
    else:
        shape = SHAPES[args.shape]
        model = Gpt(**shape)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(1)
    idx = torch.randint(0, shape["vocab"], (args.batch, args.seq), generator=gen)
    tgt = torch.randint(0, shape["vocab"], (args.batch, args.seq), generator=gen)
    t_fwd = t_bwd = t_opt = 0.0
    for step in range(args.warmup + args.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.precision == "bf16"):
            loss = model(idx, tgt)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        opt.step()
        t3 = time.perf_counter()
        if step >= args.warmup:
            t_fwd += t1 - t0
            t_bwd += t2 - t1
            t_opt += t3 - t2
    per_step = (t_fwd + t_bwd + t_opt) / args.steps
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.precision}, "
          f"loss {loss.item():.3f}")
    print(f"step {per_step * 1e3:.1f} ms = forward {t_fwd / args.steps * 1e3:.1f} + backward "
          f"{t_bwd / args.steps * 1e3:.1f} + AdamW {t_opt / args.steps * 1e3:.1f}")
    print(f"tokens_per_s={args.batch * args.seq / per_step:.1f}")


if __name__ == "__main__":
    main()
