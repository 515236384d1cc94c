"""Tiny Hugging Face model folders for the GGUF export test, written with numpy alone:
config.json, model.safetensors, a byte-level BPE tokenizer.json, tokenizer_config.json with a
ChatML chat template, and optionally a LoRA adapter folder. Every weight is an fp16-representable
value stored as F32, so an f16 export holds exactly the weights wingspan-train computes with."""
import json
import os
import struct

import numpy as np

LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                r"\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
               r"\s*[\r\n]+|\s+(?!\S)|\s+")
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("Ġ", "a"), ("e", "r"), ("o", "n"), ("Ġ", "s"),
          ("e", "s"), ("Ġ", "w"), ("a", "n"), ("o", "r"), ("Ġ", "c"), ("i", "s"), ("e", "n"), ("Ġ", "o")]


def byte_chars():
    """GPT-2's reversible byte -> printable character map."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    chars, n = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + n)
            n += 1
    return chars


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, arr in tensors.items():
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
        blobs.append(arr.tobytes())
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def tokenizer_json(split):
    chars = byte_chars()
    vocab = {chars[b]: b for b in range(256)}
    for a, b in MERGES:
        vocab.setdefault(a + b, len(vocab))
    added = [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    if split == "gpt2":
        pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    else:
        pattern = LLAMA3_SPLIT if split == "llama3" else QWEN2_SPLIT
        pre = {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}
    return {"version": "1.0", "added_tokens": added, "normalizer": None, "pre_tokenizer": pre,
            "post_processor": None, "decoder": {"type": "ByteLevel", "add_prefix_space": True,
                                                "trim_offsets": True, "use_regex": True},
            "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                      "ignore_merges": False, "vocab": vocab, "merges": [f"{a} {b}" for a, b in MERGES]}}


def f16_values(rng, shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float16).astype(np.float32)


# SmolLM2-135M's widths, depth and vocabulary (HuggingFaceTB/SmolLM2-135M config.json), with an untied
# head: a 135M-class model (163M parameters) for the export checks at a real size.
SMOL_135M = {"hidden": 576, "layers": 30, "heads": 9, "kv": 3, "inter": 1536, "vocab": 49152}


def make_model(folder, arch, seed=0, dims=None):
    """arch: "llama" (GQA, untied head, BOS added, GPT-2 pre-tokenizer) or "qwen2" (q/k/v biases,
    tied head, Qwen2 pre-tokenizer) or "qwen3" (q/k norms, head_dim beyond hidden / heads).
    dims (e.g. SMOL_135M): other widths, depth and vocabulary; the vocabulary's rows past the
    tokenizer's are padding, as in real models, and a llama head scores them 0 (zero rows), so
    greedy decoding picks tokens that have text. Weights are scaled by 1/sqrt(fan-in) at such sizes."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    tok = tokenizer_json({"llama": "gpt2", "qwen2": "qwen2", "qwen3": "llama3", "gemma": "gpt2"}[arch])
    used = 256 + len(MERGES) + len(SPECIALS)
    vocab = used + 5   # a few unused rows, as real models pad
    hidden, layers, heads, kv, inter = 64, 2, 4, 2, 96
    scale = down_scale = 0.25
    if dims:
        hidden, layers, heads, kv, inter, vocab = (dims[k] for k in ("hidden", "layers", "heads", "kv", "inter", "vocab"))
        scale, down_scale = hidden ** -0.5, inter ** -0.5
    head_dim = 32 if arch == "qwen3" else hidden // heads
    norm_one = 0 if arch == "gemma" else 1   # Gemma stores RMSNorm scales as (scale - 1)
    cfg = {"architectures": [{"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM",
                              "qwen3": "Qwen3ForCausalLM", "gemma": "GemmaForCausalLM"}[arch]],
           "model_type": arch, "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
           "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "rope_theta": 10000.0 if arch == "llama" else 1e6,
           "tie_word_embeddings": arch != "llama", "torch_dtype": "float32"}
    if arch in ("qwen3", "gemma"):
        cfg["head_dim"] = head_dim
    if arch == "gemma":
        cfg["hidden_act"] = "gelu_pytorch_tanh"
    q, k = heads * head_dim, kv * head_dim
    t = {"model.embed_tokens.weight": f16_values(rng, (vocab, hidden), 1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = f16_values(rng, (hidden,), 0.1) + norm_one
        t[p + "self_attn.q_proj.weight"] = f16_values(rng, (q, hidden), scale)
        t[p + "self_attn.k_proj.weight"] = f16_values(rng, (k, hidden), scale)
        t[p + "self_attn.v_proj.weight"] = f16_values(rng, (k, hidden), scale)
        t[p + "self_attn.o_proj.weight"] = f16_values(rng, (hidden, q), scale)
        if arch == "qwen2":
            for n, width in (("q", q), ("k", k), ("v", k)):
                t[p + f"self_attn.{n}_proj.bias"] = f16_values(rng, (width,), 0.5)
        if arch == "qwen3":
            t[p + "self_attn.q_norm.weight"] = f16_values(rng, (head_dim,), 0.1) + 1
            t[p + "self_attn.k_norm.weight"] = f16_values(rng, (head_dim,), 0.1) + 1
        t[p + "post_attention_layernorm.weight"] = f16_values(rng, (hidden,), 0.1) + norm_one
        t[p + "mlp.gate_proj.weight"] = f16_values(rng, (inter, hidden), scale)
        t[p + "mlp.up_proj.weight"] = f16_values(rng, (inter, hidden), scale)
        t[p + "mlp.down_proj.weight"] = f16_values(rng, (hidden, inter), down_scale)
    t["model.norm.weight"] = f16_values(rng, (hidden,), 0.1) + norm_one
    if arch == "llama":
        t["lm_head.weight"] = f16_values(rng, (vocab, hidden), 0.5)
        if dims:
            t["lm_head.weight"][used:] = 0
    write_safetensors(os.path.join(folder, "model.safetensors"), t)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)
    tc = {"chat_template": CHATML, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
          "add_bos_token": arch == "llama", "bos_token": "<|endoftext|>" if arch == "llama" else None}
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f)
    return cfg


def use_tokenizer(folder, tokenizer_dir):
    """Replaces a model folder's tokenizer with another's (a SentencePiece-style one), the
    embedding and head resized to its vocabulary."""
    import shutil
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(tokenizer_dir, f), os.path.join(folder, f))
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    vocab = 1 + max(max(tok["model"]["vocab"].values()), max(a["id"] for a in tok["added_tokens"]))
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    cfg["vocab_size"] = vocab
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header, data = json.loads(f.read(n)), f.read()
    rng, tensors = np.random.default_rng(3), {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a = np.frombuffer(data[h["data_offsets"][0]:h["data_offsets"][1]], dtype=np.float32).reshape(h["shape"])
        if name in ("model.embed_tokens.weight", "lm_head.weight"):
            a = f16_values(rng, (vocab, a.shape[1]), 1.0 if "embed" in name else 0.5)
        tensors[name] = a
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    return cfg


def make_adapter(folder, cfg, seed=1, rank=4):
    """A LoRA adapter on q_proj and v_proj (B non-zero, so merging changes the output)."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    hidden, heads, kv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    head_dim = cfg.get("head_dim", hidden // heads)
    t = {}
    for i in range(cfg["num_hidden_layers"]):
        for n, out in (("q_proj", heads * head_dim), ("v_proj", kv * head_dim)):
            stem = f"base_model.model.model.layers.{i}.self_attn.{n}"
            t[stem + ".lora_A.weight"] = f16_values(rng, (rank, hidden), 0.25)
            t[stem + ".lora_B.weight"] = f16_values(rng, (out, rank), 0.25)
    write_safetensors(os.path.join(folder, "adapter_model.safetensors"), t)
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump({"r": rank, "lora_alpha": 8, "target_modules": ["q_proj", "v_proj"], "peft_type": "LORA"}, f)
