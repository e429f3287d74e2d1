#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""An independent float64 reference of a PEFT LoRA adapter on a Hugging Face Llama, for
peft_llama_test.cpp: PEFT's LoraLayer semantics on each adapted nn.Linear written out in PyTorch
(peft is not installed here), on top of hf_llama_reference.py's Llama forward (modeling_llama.py
without transformers):

    y = x W^T (+ b) + (lora_alpha / r) * (x A^T) B^T

with A = <module>.lora_A.weight (r, in) and B = <module>.lora_B.weight (out, r) read by PEFT's
names (base_model.model.<module>.lora_{A,B}.weight, module e.g. model.layers.0.self_attn.q_proj)
for every module of target_modules; no dropout (eval). Nothing here knows the engine's fused
[q | k | v] / [gate | up] storage: each projection gets its own adapter, as in PEFT.

usage: peft_llama_reference.py FOLDER...
Each FOLDER holds the base (config.json, model.safetensors, float32), the adapter
(adapter_config.json, adapter_model.safetensors) and tokens.json ({"batch": B, "seq": T,
"inputs": [...]}); out.json gets the logits (B*T*V) in float64.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "modelio"))
import hf_llama_reference as ref  # noqa: E402

import torch  # noqa: E402

PREFIX = "base_model.model."


def run(folder):
    with open(f"{folder}/config.json") as f:
        cfg = json.load(f)
    with open(f"{folder}/adapter_config.json") as f:
        acfg = json.load(f)
    with open(f"{folder}/tokens.json") as f:
        tok = json.load(f)
    assert acfg["peft_type"] == "LORA" and not acfg.get("fan_in_fan_out"), acfg
    scale = acfg["lora_alpha"] / acfg["r"]
    targets = set(acfg["target_modules"])
    weights = ref.read_safetensors(f"{folder}/model.safetensors")
    adapter = ref.read_safetensors(f"{folder}/adapter_model.safetensors")
    used = set()
    base_linear = ref.linear

    def lora_linear(x, w, name):
        y = base_linear(x, w, name)
        if name.rsplit(".", 1)[-1] not in targets:
            return y
        a_name, b_name = PREFIX + name + ".lora_A.weight", PREFIX + name + ".lora_B.weight"
        A, B = adapter[a_name], adapter[b_name]
        used.update((a_name, b_name))
        return y + scale * ((x @ A.T) @ B.T)

    ref.linear = lora_linear
    B, T = tok["batch"], tok["seq"]
    inputs = torch.tensor(tok["inputs"]).view(B, T)
    with torch.no_grad():
        logits = ref.forward(cfg, weights, inputs)
    ref.linear = base_linear
    unused = set(adapter) - used
    assert not unused, f"adapter tensors no module used: {sorted(unused)}"
    with open(f"{folder}/out.json", "w") as f:
        json.dump({"logits": logits.reshape(-1).tolist(), "adapters": len(used)}, f)


def main():
    for folder in sys.argv[1:]:
        run(folder)


if __name__ == "__main__":
    main()
