#!/usr/bin/python3
"""Checks that a merged model folder loads the way transformers' from_pretrained loads it,
without transformers (not installable everywhere): only the standard library and torch.

  check_merged_folder.py MERGED_DIR BASE_DIR

What from_pretrained needs and this checks:
  - config.json: a JSON object whose model_type is an architecture we write (llama, mistral,
    qwen2, qwen3, gemma, gemma2, phi3), with the integer fields that architecture's config class
    reads, consistent with each other (heads divisible by KV heads, head size), and equal to the
    base's config;
  - weights: model.safetensors, or model.safetensors.index.json whose weight_map names every
    tensor once, points only at shard files that exist, and agrees with each shard's header;
    metadata.total_size equal to the bytes of the tensors;
  - every safetensors file per the format's specification: an 8-byte little-endian header length,
    a UTF-8 JSON header (optionally space-padded), dtypes from the specification, shapes of
    non-negative integers, data_offsets whose length is the tensor's byte size, sorted offsets
    that cover the data buffer exactly with no hole or overlap, __metadata__ a string map whose
    "format" is "pt" (transformers refuses other formats);
  - the tensors: exactly the names the architecture has (so nothing is left uninitialised or
    unused), each with the base's shape and dtype, all finite;
  - tokenizer files: tokenizer.json or tokenizer.model, and a tokenizer_config.json that parses.

Exit status 0 when the folder passes, 1 with one line per problem otherwise.
"""
import json
import math
import os
import struct
import sys

import torch

DTYPES = {  # safetensors dtype -> (bytes per element, torch dtype or None)
    "F64": (8, torch.float64), "F32": (4, torch.float32), "F16": (2, torch.float16),
    "BF16": (2, torch.bfloat16), "I64": (8, torch.int64), "I32": (4, torch.int32),
    "I16": (2, torch.int16), "I8": (1, torch.int8), "U8": (1, torch.uint8), "BOOL": (1, torch.bool),
    "F8_E4M3": (1, None), "F8_E5M2": (1, None), "U16": (2, None), "U32": (4, None), "U64": (8, None),
}

CONFIG_INTS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size"]
ARCHITECTURES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "qwen2": "Qwen2ForCausalLM",
                 "qwen3": "Qwen3ForCausalLM", "gemma": "GemmaForCausalLM", "gemma2": "Gemma2ForCausalLM",
                 "phi3": "Phi3ForCausalLM"}


class Problems(list):
    def add(self, text):
        self.append(text)


def read_safetensors(path, problems):
    """Header entries {name: (dtype, shape, begin, end)}, metadata and the data buffer's size."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            problems.add(f"{path}: shorter than the 8-byte header length")
            return {}, {}, 0
        (n,) = struct.unpack("<Q", raw)
        if n > size - 8:
            problems.add(f"{path}: header length {n} runs past the end of the file ({size} bytes)")
            return {}, {}, 0
        header_bytes = f.read(n)
    try:
        text = header_bytes.decode("utf-8")
    except UnicodeDecodeError:
        problems.add(f"{path}: header is not UTF-8")
        return {}, {}, 0
    if not text.startswith("{") or text.rstrip(" ") != text.rstrip():
        problems.add(f"{path}: header must start with '{{' and may be padded with spaces only")
    try:
        header = json.loads(text)
    except ValueError as e:
        problems.add(f"{path}: header is not JSON ({e})")
        return {}, {}, 0
    if not isinstance(header, dict):
        problems.add(f"{path}: header is not a JSON object")
        return {}, {}, 0
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        problems.add(f"{path}: __metadata__ must map strings to strings")
        metadata = {}
    if metadata.get("format") != "pt":
        problems.add(f"{path}: metadata format is {metadata.get('format')!r}; transformers loads 'pt'")
    buffer = size - 8 - n
    entries, spans = {}, []
    for name, e in header.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            problems.add(f"{path}: {name}: entry must have exactly dtype, shape and data_offsets")
            continue
        dtype, shape, offsets = e["dtype"], e["shape"], e["data_offsets"]
        if dtype not in DTYPES:
            problems.add(f"{path}: {name}: dtype {dtype!r} is not in the specification")
            continue
        if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
            problems.add(f"{path}: {name}: shape must be a list of non-negative integers")
            continue
        if (not isinstance(offsets, list) or len(offsets) != 2 or not all(isinstance(o, int) for o in offsets)
                or not 0 <= offsets[0] <= offsets[1] <= buffer):
            problems.add(f"{path}: {name}: data_offsets {offsets} are not within the {buffer}-byte buffer")
            continue
        if offsets[1] - offsets[0] != math.prod(shape) * DTYPES[dtype][0]:
            problems.add(f"{path}: {name}: {offsets[1] - offsets[0]} bytes for shape {shape} of {dtype}")
        entries[name] = (dtype, shape, offsets[0], offsets[1])
        spans.append((offsets[0], offsets[1], name))
    at = 0
    for begin, end, name in sorted(spans):
        if begin != at:
            problems.add(f"{path}: {name} starts at {begin}, not {at} (a hole or an overlap in the buffer)")
        at = end
    if at != buffer:
        problems.add(f"{path}: tensors cover {at} of the buffer's {buffer} bytes")
    return entries, metadata, 8 + n


def load_tensor(path, start, entry):
    dtype, shape, begin, end = entry
    torch_dtype = DTYPES[dtype][1]
    if torch_dtype is None:
        return None
    with open(path, "rb") as f:
        f.seek(start + begin)
        data = bytearray(f.read(end - begin))
    if not data:
        return torch.empty(shape, dtype=torch_dtype)
    return torch.frombuffer(data, dtype=torch_dtype).reshape(shape)


def weight_files(folder, problems):
    """{tensor name: (file, header start, entry)} as from_pretrained resolves them."""
    index_path = os.path.join(folder, "model.safetensors.index.json")
    single = os.path.join(folder, "model.safetensors")
    out = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = json.load(f)
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            problems.add(f"{index_path}: weight_map missing or empty")
            return out
        by_file = {}
        for name, file in weight_map.items():
            by_file.setdefault(file, set()).add(name)
        total = 0
        for file, names in sorted(by_file.items()):
            path = os.path.join(folder, file)
            if os.path.basename(file) != file or not os.path.exists(path):
                problems.add(f"{index_path}: weight_map points at {file}, which is not in the folder")
                continue
            entries, _, start = read_safetensors(path, problems)
            if set(entries) != names:
                extra, missing = sorted(set(entries) - names), sorted(names - set(entries))
                problems.add(f"{file}: header and weight_map disagree (only in file: {extra[:3]}, only in map: {missing[:3]})")
            for name, e in entries.items():
                out[name] = (path, start, e)
                total += e[3] - e[2]
        shards = {f for f in os.listdir(folder) if f.endswith(".safetensors")}
        if shards - set(by_file):
            problems.add(f"shard files the index does not name: {sorted(shards - set(by_file))}")
        declared = index.get("metadata", {}).get("total_size")
        if declared is not None and declared != total:
            problems.add(f"{index_path}: metadata.total_size {declared} != {total} bytes of tensors")
    elif os.path.exists(single):
        entries, _, start = read_safetensors(single, problems)
        for name, e in entries.items():
            out[name] = (single, start, e)
    else:
        problems.add(f"{folder}: neither model.safetensors nor model.safetensors.index.json")
    return out


def expected_names(config):
    """The parameter names of the architecture's *ForCausalLM, as transformers names them."""
    mt, layers = config["model_type"], config["num_hidden_layers"]
    names = ["model.embed_tokens.weight", "model.norm.weight"]
    tied = config.get("tie_word_embeddings", mt in ("gemma", "gemma2"))
    for i in range(layers):
        p = f"model.layers.{i}."
        names += [p + "input_layernorm.weight", p + "post_attention_layernorm.weight", p + "self_attn.o_proj.weight",
                  p + "mlp.down_proj.weight"]
        if mt == "phi3":
            names += [p + "self_attn.qkv_proj.weight", p + "mlp.gate_up_proj.weight"]
        else:
            names += [p + f"self_attn.{x}_proj.weight" for x in "qkv"] + [p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"]
        if mt == "gemma2":
            names += [p + "pre_feedforward_layernorm.weight", p + "post_feedforward_layernorm.weight"]
        if mt == "qwen3":
            names += [p + "self_attn.q_norm.weight", p + "self_attn.k_norm.weight"]
        if mt == "qwen2" or config.get("attention_bias"):
            names += [p + f"self_attn.{x}_proj.bias" for x in "qkv"]
        if config.get("attention_bias"):
            names.append(p + "self_attn.o_proj.bias")
    if not tied:
        names.append("lm_head.weight")
    return set(names)


def check_config(folder, base, problems):
    path = os.path.join(folder, "config.json")
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        problems.add(f"config.json: {e}")
        return None
    if not isinstance(config, dict):
        problems.add("config.json is not a JSON object")
        return None
    mt = config.get("model_type")
    if mt not in ARCHITECTURES:
        problems.add(f"config.json: model_type {mt!r} is not one of {sorted(ARCHITECTURES)}")
        return None
    for key in CONFIG_INTS:
        if not isinstance(config.get(key), int) or config[key] <= 0:
            problems.add(f"config.json: {key} must be a positive integer")
            return None
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads") or heads
    if heads % kv:
        problems.add("config.json: num_attention_heads is not a multiple of num_key_value_heads")
    if "head_dim" not in config and config["hidden_size"] % heads:
        problems.add("config.json: no head_dim and hidden_size is not a multiple of num_attention_heads")
    archs = config.get("architectures")
    if archs is not None and archs != [ARCHITECTURES[mt]]:
        problems.add(f"config.json: architectures {archs} for model_type {mt} (expected [{ARCHITECTURES[mt]!r}])")
    with open(os.path.join(base, "config.json")) as f:
        if json.load(f) != config:
            problems.add("config.json differs from the base's")
    return config


def main(folder, base):
    problems = Problems()
    config = check_config(folder, base, problems)
    merged = weight_files(folder, problems)
    base_problems = Problems()
    original = weight_files(base, base_problems)
    if base_problems:
        problems.add(f"the base itself does not load: {base_problems[0]}")
    if config is not None:
        want = expected_names(config)
        if set(merged) - want:
            problems.add(f"tensors transformers would not use: {sorted(set(merged) - want)[:5]}")
        if want - set(merged):
            problems.add(f"tensors transformers would leave uninitialised: {sorted(want - set(merged))[:5]}")
    if set(merged) != set(original):
        problems.add("tensor names differ from the base's")
    parameters = 0
    for name, (path, start, e) in sorted(merged.items()):
        if name in original:
            b = original[name][2]
            if (e[0], e[1]) != (b[0], b[1]):
                problems.add(f"{name}: {e[0]} {e[1]} in the merge, {b[0]} {b[1]} in the base")
        t = load_tensor(path, start, e)
        if t is not None and t.is_floating_point() and not bool(torch.isfinite(t.float()).all()):
            problems.add(f"{name}: not finite")
        parameters += math.prod(e[1])
    if not (os.path.exists(os.path.join(folder, "tokenizer.json")) or os.path.exists(os.path.join(folder, "tokenizer.model"))):
        problems.add("no tokenizer.json or tokenizer.model")
    tc = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(tc):
        try:
            with open(tc) as f:
                json.load(f)
        except ValueError as e:
            problems.add(f"tokenizer_config.json: {e}")
    for p in problems:
        print("problem:", p)
    if problems:
        return 1
    files = len({v[0] for v in merged.values()})
    print(f"ok: {config['model_type']}, {len(merged)} tensors in {files} file(s), {parameters} parameters, "
          f"names, shapes and dtypes equal to the base's")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: check_merged_folder.py MERGED_DIR BASE_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
