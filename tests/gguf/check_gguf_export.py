#!/usr/bin/env python3
"""`wingspan-train export --format gguf` checked by llama.cpp itself (issue 30).

  check_gguf_export.py WINGSPAN_TRAIN GGUF_PROBE WORK_DIR

For tiny Llama-, Qwen2-, Qwen3- and Gemma-shaped models this script writes (tiny_models.py), and a
135M-class Llama (SmolLM2-135M's shape: decoding and the serving terms, check_135m_class):
  - every quantization exports, with protocol lines (hello, one log per tensor, done) and a file
    whose size is the one `done` reports;
  - the gguf package reads the file back: the architecture's keys and tensor names as
    llama.cpp's convert_hf_to_gguf.py writes them, vectors in F32, matrices in the chosen type,
    q8_0/q4_0 bytes equal to gguf-py's reference quantizer's, the tokenizer and chat template;
  - llama.cpp (llama-cpp-python) tokenizes prompts to the ids `wingspan-train tokenize` gives and
    greedy-decodes them to the same text and token count as `wingspan-train generate
    --temperature 0` for the f32 and f16 files (the weights are fp16-exact);
  - bf16, q8_0 and q4_0 logits stay within stated tolerances of the f32 file's;
  - base + LoRA adapter merged on the fly decodes as `generate --adapter` does;
  - the Modelfile's TEMPLATE renders what the model's Jinja chat template renders;
  - bad input gets exit 2, an `error` line and no file;
  - core's GGUF reader (gguf_probe) finds the tensors' types and bytes, and its llama.cpp KV cache
    bytes equal what llama.cpp prints when it loads the file, at three context lengths and two
    KV cache types; truncated and hostile headers are refused.
Exit 0 when everything holds; 1 with the failures listed.
"""
import functools
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_models  # noqa: E402

import gguf  # noqa: E402
import llama_cpp  # noqa: E402
import llama_cpp_plain  # noqa: E402,F401  (the file's layout on every CPU)

BIN, PROBE, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
FAILURES = []
PROMPTS = ["the cat sat on the mat", "Hello world, this is", "in 1999 there were 42 owls"]
NEW_TOKENS = 12
# Logit tolerances: the largest, over the prompts' positions, RMS over the vocabulary of (logits -
# reference logits) / std(reference logits). These random 2-layer models amplify errors (weights of
# std 0.25 over 64 inputs, no training to smooth them); measured here (README "GGUF export"):
#   against the f32 file:  bf16 0.028-0.043, q8_0 0.050-0.088, q4_0 0.62-0.82;
#   against an f32 file of the same dequantized weights: q8_0 0.036-0.081, q4_0 0.038-0.060,
#   what is left being llama.cpp's q8_0 rounding of activations in quantized matmuls.
TOLERANCE = {"bf16": 0.08, "q8_0": 0.15, "q4_0": 1.2,
             "q8_0 (dequantized weights)": 0.12, "q4_0 (dequantized weights)": 0.12}


def check(ok, what):
    if not ok:
        FAILURES.append(what)
        print("FAIL:", what, flush=True)
    return ok


def run(args, expect_rc=0, text=True):
    p = subprocess.run([BIN] + args, capture_output=True, text=text, timeout=300)
    check(p.returncode == expect_rc, f"{' '.join(args[:3])}...: exit {p.returncode}, wanted {expect_rc}: {p.stderr[-400:]!r}")
    return p


def export(model, quant, out, adapter=None, expect_rc=0):
    args = ["export", "--format", "gguf", "--quant", quant, "--model", model, "--out", out]
    if adapter:
        args += ["--adapter", adapter]
    p = run(args, expect_rc)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    check(events and events[0]["event"] == "hello", f"{out}: first line is hello")
    check(events and events[-1]["event"] == "done", f"{out}: last line is done")
    return events


GGUF_NAMES = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm",
              "self_attn.k_norm": "attn_k_norm", "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
              "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def expected_names(model_dir):
    """tensor_mapping.py's names for the HF tensors the folder holds."""
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    names = set()
    for hf in header:
        if hf == "__metadata__":
            continue
        if hf == "model.embed_tokens.weight":
            names.add("token_embd.weight")
        elif hf == "model.norm.weight":
            names.add("output_norm.weight")
        elif hf == "lm_head.weight":
            names.add("output.weight")
        else:
            _, _, layer, rest = hf.split(".", 3)
            stem, kind = rest.rsplit(".", 1)
            names.add(f"blk.{layer}.{GGUF_NAMES[stem]}.{kind}")
    return names


def field(reader, key):
    f = reader.fields.get(key)
    return None if f is None else f.contents()


def check_metadata(path, model_dir, cfg, arch, quant, pre):
    r = gguf.GGUFReader(path)
    where = os.path.basename(path)
    garch = "llama" if arch == "llama" else arch
    check(field(r, "general.architecture") == garch, f"{where}: general.architecture {field(r, 'general.architecture')}")
    for key, want in (("block_count", cfg["num_hidden_layers"]), ("embedding_length", cfg["hidden_size"]),
                      ("feed_forward_length", cfg["intermediate_size"]), ("context_length", cfg["max_position_embeddings"]),
                      ("attention.head_count", cfg["num_attention_heads"]),
                      ("attention.head_count_kv", cfg["num_key_value_heads"])):
        check(field(r, f"{garch}.{key}") == want, f"{where}: {garch}.{key} = {field(r, f'{garch}.{key}')}, wanted {want}")
    check(abs(field(r, f"{garch}.rope.freq_base") - cfg["rope_theta"]) < 1e-3 * cfg["rope_theta"], f"{where}: rope.freq_base")
    if "head_dim" in cfg:
        check(field(r, f"{garch}.attention.key_length") == cfg["head_dim"], f"{where}: attention.key_length")
    check(field(r, "general.file_type") == {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "bf16": 32}[quant], f"{where}: file_type")
    check(field(r, "tokenizer.ggml.model") == "gpt2" and field(r, "tokenizer.ggml.pre") == pre,
          f"{where}: tokenizer {field(r, 'tokenizer.ggml.model')}/{field(r, 'tokenizer.ggml.pre')}, wanted gpt2/{pre}")
    tokens = field(r, "tokenizer.ggml.tokens")
    check(len(tokens) == cfg["vocab_size"] and tokens[-1] == f"[PAD{cfg['vocab_size'] - 1}]", f"{where}: tokens")
    check(field(r, "tokenizer.ggml.eos_token_id") == tokens.index("<|im_end|>"), f"{where}: eos id")
    check(field(r, "tokenizer.chat_template") == tiny_models.CHATML, f"{where}: chat template")
    names = {t.name for t in r.tensors}
    check(names == expected_names(model_dir), f"{where}: tensor names {sorted(names ^ expected_names(model_dir))} differ")
    matrix = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "Q8_0", "q4_0": "Q4_0"}[quant]
    for t in r.tensors:
        want = "F32" if len(t.shape) == 1 else matrix
        check(t.tensor_type.name == want, f"{where}: {t.name} is {t.tensor_type.name}, wanted {want}")
    return r


def check_reference_quantizer(q_reader, f32_reader, quant):
    """Our q8_0/q4_0 bytes against gguf-py's quantizer run on the same f32 values."""
    qtype = getattr(gguf.GGMLQuantizationType, quant.upper())
    f32 = {t.name: t for t in f32_reader.tensors}
    worst = 0.0
    for t in q_reader.tensors:
        if t.tensor_type != qtype:
            continue
        src = np.asarray(f32[t.name].data, dtype=np.float32).reshape(-1, int(t.shape[0]))
        ref = gguf.quants.quantize(src, qtype)
        ours = np.asarray(t.data).reshape(ref.shape)
        worst = max(worst, float(np.mean(ours != ref)))
    # Equal bytes, but for a rounding tie numpy breaks the other way (none expected).
    check(worst <= 1e-3, f"{quant}: {worst:.2%} of the bytes differ from gguf-py's quantizer")


_LOADED = {}


def llama_model(path):
    """One llama.cpp context per file, kept for all its prompts (loading is most of the cost)."""
    if path not in _LOADED:
        _LOADED.clear()
        # One thread: on a loaded machine ggml's spinning workers wait for each other (3 s for 12
        # tokens with two threads here, 1 ms with one).
        _LOADED[path] = llama_cpp.Llama(model_path=path, n_ctx=256, n_threads=1, n_threads_batch=1, logits_all=True,
                                        verbose=False, seed=0)
    return _LOADED[path]


def greedy_llama_cpp(path, prompt):
    llm = llama_model(path)
    ids = llm.tokenize(prompt.encode(), add_bos=bool(llm.metadata.get("tokenizer.ggml.add_bos_token") == "true"),
                       special=False)
    llm.reset()
    llm.eval(ids)
    prompt_logits = np.array(llm.scores[:len(ids)], dtype=np.float64)
    out = []
    for _ in range(NEW_TOKENS):
        nxt = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        if nxt == llm.token_eos():
            break
        out.append(nxt)
        llm.eval([nxt])
    return ids, out, llm.detokenize(out), prompt_logits   # bytes: a random model's tokens need not be whole UTF-8


@functools.lru_cache(maxsize=None)
def greedy_wingspan(model_dir, prompt, adapter=None):
    args = ["generate", "--model", model_dir, "--prompt", prompt, "--temperature", "0", "--max-tokens", str(NEW_TOKENS)]
    if adapter:
        args += ["--adapter", adapter]
    p = run(args, text=False)
    count = int(p.stderr.strip().splitlines()[-1].split()[0])
    return p.stdout[:-1] if p.stdout.endswith(b"\n") else p.stdout, count


def wingspan_ids(model_dir, prompt, add_bos, bos):
    p = subprocess.run([BIN, "tokenize", "--tokenizer", os.path.join(model_dir, "tokenizer.json")], input=prompt,
                       capture_output=True, text=True, timeout=60)
    ids = json.loads(p.stdout.splitlines()[-1])
    return ([bos] if add_bos else []) + ids


def check_decoding(path, model_dir, label, adapter=None):
    meta = gguf.GGUFReader(path)
    add_bos, bos = bool(field(meta, "tokenizer.ggml.add_bos_token")), field(meta, "tokenizer.ggml.bos_token_id")
    for prompt in PROMPTS:
        ids, out, text, _ = greedy_llama_cpp(path, prompt)
        check(ids == wingspan_ids(model_dir, prompt, add_bos, bos), f"{label}: prompt ids for {prompt!r} differ")
        ws_text, ws_count = greedy_wingspan(model_dir, prompt, adapter)
        check(text == ws_text and len(out) == ws_count,
              f"{label}: {prompt!r}: llama.cpp {text!r} ({len(out)} tokens), wingspan-train {ws_text!r} ({ws_count})")


def check_logits(q_path, f32_path, quant):
    """The quantized file's logits at every prompt position against the f32 file's: the RMS of the
    difference over the vocabulary, relative to the f32 logits' standard deviation there."""
    ref = [greedy_llama_cpp(f32_path, p)[3] for p in PROMPTS]
    got = [greedy_llama_cpp(q_path, p)[3] for p in PROMPTS]
    worst = max(float(np.max(np.sqrt(np.mean((g - r) ** 2, axis=1)) / r.std(axis=1))) for g, r in zip(got, ref))
    print(f"{quant}: largest RMS(logit - f32 logit) / std(f32 logits) = {worst:.4f} (tolerance {TOLERANCE[quant]})",
          flush=True)
    check(worst <= TOLERANCE[quant], f"{quant}: logits off by {worst:.4f}, tolerance {TOLERANCE[quant]}")


def hf_name(gguf_name):
    """The inverse of expected_names' mapping."""
    fixed = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    if gguf_name in fixed:
        return fixed[gguf_name]
    _, layer, stem, kind = gguf_name.split(".")
    return f"model.layers.{layer}.{next(k for k, v in GGUF_NAMES.items() if v == stem)}.{kind}"


def check_dequantized(q_path, model_dir, cfg, arch, quant):
    """How llama.cpp reads the quantized blocks, apart from what quantizing costs: the quantized
    file's logits against an f32 export of its own weights dequantized by gguf-py (a model folder
    wingspan-train exports again). What remains is llama.cpp quantizing activations to q8_0."""
    folder = os.path.join(WORK, f"dequantized-{arch}-{quant}")
    os.makedirs(folder, exist_ok=True)
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(model_dir, f), "rb") as src, open(os.path.join(folder, f), "wb") as dst:
            dst.write(src.read())
    tensors = {}
    for t in gguf.GGUFReader(q_path).tensors:
        w = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(tuple(int(d) for d in reversed(t.shape)))
        if arch == "llama" and t.name.split(".")[-2:-1] in (["attn_q"], ["attn_k"]):   # undo LlamaModel.permute
            heads = cfg["num_attention_heads"] if ".attn_q." in t.name else cfg["num_key_value_heads"]
            w = w.reshape(heads, w.shape[0] // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        tensors[hf_name(t.name)] = w
    tiny_models.write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
    f32 = os.path.join(WORK, "out", f"dequantized-{arch}-{quant}.gguf")
    export(folder, "f32", f32)
    check_logits(q_path, f32, quant + " (dequantized weights)")


def llama_cpp_prints(path, n_ctx, kv_type):
    """What llama.cpp prints about its buffers when it loads `path` (MiB, two decimals)."""
    code = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
            f"import llama_cpp, llama_cpp_plain; llama_cpp.Llama(model_path={path!r}, n_ctx={n_ctx}, n_threads=1, n_batch=32, "
            f"n_ubatch=32, type_k={kv_type}, type_v={kv_type}, flash_attn={kv_type != 1}, verbose=True)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    printed = {}
    for line in p.stderr.splitlines():
        if "model buffer size" in line:
            printed["model"] = float(line.split("=")[1].split()[0])
        if line.startswith("llama_kv_cache: size"):
            parts = line.replace("(", " ").replace(")", " ").replace(",", " ").split()
            printed["cells"] = int(parts[parts.index("cells") - 1])
            printed["k"] = float(line.split("K (")[1].split(":")[1].split()[0])
            printed["v"] = float(line.split("V (")[1].split(":")[1].split()[0])
        if "compute buffer size is" in line:
            printed["compute"] = float(line.split(" is ")[1].split()[0])
    return printed


def check_serve_terms(path, kv_types):
    """Core's reader and KV cache terms against llama.cpp's own figures, within 2 % (or the
    0.005 MiB its two printed decimals hide)."""
    mib = 1024.0 * 1024.0
    r = gguf.GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    probe = json.loads(subprocess.run([PROBE, path], capture_output=True, text=True, timeout=60).stdout)
    check(probe["types"] == {t.name: t.tensor_type.name for t in r.tensors}, f"{path}: probe's tensor types")
    check(probe["tensor_bytes"] == sum(int(t.n_bytes) for t in r.tensors), f"{path}: probe's tensor bytes")
    for n_ctx in (4000, 16384, 32768):
        for kv_type, name in kv_types:
            printed = llama_cpp_prints(path, n_ctx, kv_type)
            ours = json.loads(subprocess.run([PROBE, path, str(n_ctx), str(kv_type), str(kv_type), "32",
                                              "1" if kv_type != 1 else "0"], capture_output=True, text=True,
                                             timeout=60).stdout)
            if not check({"model", "cells", "k", "v"} <= printed.keys(), f"{path}: llama.cpp printed {printed}"):
                continue
            close = lambda a, b: abs(a - b) <= max(0.02 * b, 0.005)  # noqa: E731
            print(f"{os.path.basename(path)} n_ctx {n_ctx} KV {name}: llama.cpp {printed['cells']} cells K "
                  f"{printed['k']} V {printed['v']} MiB, model {printed['model']} MiB; core {ours['kv_cells']} cells K "
                  f"{ours['kv_k_bytes'] / mib:.4f} V {ours['kv_v_bytes'] / mib:.4f}, tensors "
                  f"{ours['tensor_bytes'] / mib:.4f} MiB", flush=True)
            if check("compute" in printed, f"{path}: llama.cpp printed no compute buffer"):
                # Issue 30: within 2 % of what llama.cpp prints for the exported files (measured
                # -0.3 .. +1.0 %, README "Serving with llama.cpp").
                err = ours["compute_bytes"] / mib / printed["compute"] - 1
                print(f"  compute buffer: llama.cpp {printed['compute']:.4f} MiB, core "
                      f"{ours['compute_bytes'] / mib:.4f} MiB ({100 * err:+.1f} %)", flush=True)
                check(abs(err) <= 0.02, f"{path} n_ctx {n_ctx} {name}: compute buffer {100 * err:+.1f} %")
                # A llama-architecture file without flash attention (the f16 cache) is replayed
                # through ggml's allocator (core/src/serving/llama_cpp_graph.cpp): the printed MiB exactly.
                if arch == "llama" and kv_type == 1:
                    check(abs(ours["compute_bytes"] / mib - printed["compute"]) < 0.0001,
                          f"{path} n_ctx {n_ctx}: replayed compute buffer {ours['compute_bytes'] / mib:.5f} MiB, "
                          f"llama.cpp {printed['compute']:.4f}")
            check(ours["kv_cells"] == printed["cells"] and close(ours["kv_k_bytes"] / mib, printed["k"])
                  and close(ours["kv_v_bytes"] / mib, printed["v"]) and close(ours["tensor_bytes"] / mib, printed["model"]),
                  f"{path} n_ctx {n_ctx} {name}: core's KV/weights differ from llama.cpp's")
    for cut in (3, 24, 200):   # truncated inside the magic, the counts, the metadata
        bad = os.path.join(WORK, f"truncated-{cut}.gguf")
        with open(path, "rb") as src, open(bad, "wb") as dst:
            dst.write(src.read(cut))
        p = subprocess.run([PROBE, bad], capture_output=True, text=True, timeout=60)
        check(p.returncode == 2 and "GGUF" in p.stderr, f"truncated at {cut}: exit {p.returncode} {p.stderr!r}")
    huge = os.path.join(WORK, "huge-counts.gguf")
    with open(huge, "wb") as f:
        f.write(b"GGUF" + (3).to_bytes(4, "little") + (1 << 60).to_bytes(8, "little") + (1 << 60).to_bytes(8, "little"))
    p = subprocess.run([PROBE, huge], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "more entries" in p.stderr, f"2^60 entries: exit {p.returncode} {p.stderr!r}")


def check_135m_class():
    """A 135M-class export (SmolLM2-135M's shape, tiny_models.SMOL_135M): llama.cpp decodes the f32 and
    f16 files as wingspan-train generates, and core's weight, KV cache and compute buffer bytes are
    within 2 % of what llama.cpp prints for the f16 file at three context lengths, f16 and q8_0 caches."""
    model_dir = os.path.join(WORK, "smol-135m")
    tiny_models.make_model(model_dir, "llama", dims=tiny_models.SMOL_135M)
    for quant in ("f32", "f16"):
        path = os.path.join(WORK, "out", f"smol-135m-{quant}.gguf")
        done = export(model_dir, quant, path)[-1]
        check(done.get("reason") == "completed" and os.path.getsize(path) == done.get("bytes"),
              f"135M-class {quant}: done {done} vs {os.path.getsize(path)} bytes")
        check_decoding(path, model_dir, f"135M-class {quant}")
        _LOADED.clear()
    check_serve_terms(os.path.join(WORK, "out", "smol-135m-f16.gguf"), ((1, "f16"), (8, "q8_0")))
    print("135M-class: checked", flush=True)


def check_gemma():
    """Gemma (GeGLU, embeddings × sqrt(hidden), RMSNorm by 1 + weight, tied head): the converter's
    norm + 1, no output.weight, and llama.cpp's greedy bytes equal wingspan-train's."""
    folder = os.path.join(WORK, "gemma-model")
    tiny_models.make_model(folder, "gemma", seed=7)
    for quant in ("f32", "f16"):
        path = os.path.join(WORK, "out", f"gemma-{quant}.gguf")
        export(folder, quant, path)
        r = gguf.GGUFReader(path)
        tensors = {t.name: t for t in r.tensors}
        check(field(r, "general.architecture") == "gemma" and "output.weight" not in tensors, f"gemma {quant}: keys")
        check(field(r, "gemma.attention.key_length") == 16, f"gemma {quant}: key_length")
        with open(os.path.join(folder, "model.safetensors"), "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            h = json.loads(f.read(n))["model.norm.weight"]
            f.seek(8 + n + h["data_offsets"][0])
            src = np.frombuffer(f.read(h["data_offsets"][1] - h["data_offsets"][0]), dtype=np.float32)
        check(np.array_equal(np.asarray(tensors["output_norm.weight"].data), src + 1), f"gemma {quant}: norm + 1")
        check_decoding(path, folder, f"gemma {quant}")


def check_sentencepiece():
    """A Llama with a SentencePiece-style tokenizer (Llama 2's kind: byte fallback, a prepended ▁)
    from tests/trainer/fixtures: tokenizer.ggml.model "llama" with merge-rank scores tokenizes and
    decodes as wingspan-train does."""
    folder = os.path.join(WORK, "llama-spm")
    tiny_models.make_model(folder, "llama", seed=5)
    fixture = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "trainer", "fixtures", "sentencepiece",
                           "small-llama")
    tiny_models.use_tokenizer(folder, fixture)
    path = os.path.join(WORK, "out", "llama-spm-f32.gguf")
    export(folder, "f32", path)
    r = gguf.GGUFReader(path)
    check(field(r, "tokenizer.ggml.model") == "llama" and field(r, "tokenizer.ggml.add_space_prefix") is True,
          "sentencepiece: tokenizer.ggml.model llama with add_space_prefix")
    check_decoding(path, folder, "llama + SentencePiece f32")
    for prompt in (" leading space and   three", "über café 123"):   # spaces, byte fallback
        ids = greedy_llama_cpp(path, prompt)[0]
        check(ids == wingspan_ids(folder, prompt, True, field(r, "tokenizer.ggml.bos_token_id")),
              f"sentencepiece: ids of {prompt!r}")


def render_ollama(template, messages):
    """The subset of Go's text/template our Modelfiles use for ChatML: one range over .Messages."""
    head, rest = template.split("{{- range .Messages }}", 1)
    body, tail = rest.split("{{ end }}", 1)
    text = head
    for m in messages:
        text += body.replace("{{ .Role }}", m["role"]).replace("{{ .Content }}", m["content"])
    return text + tail


def check_modelfile(out_dir, gguf_name):
    import jinja2
    with open(os.path.join(out_dir, "Modelfile")) as f:
        text = f.read()
    check(f"FROM ./{gguf_name}\n" in text, "Modelfile: FROM names the file")
    check('PARAMETER stop "<|im_end|>"' in text, "Modelfile: stops at <|im_end|>")
    template = text.split('TEMPLATE """', 1)[1].split('"""', 1)[0]
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi there"},
                {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Name an owl."}]
    jinja = jinja2.Environment().from_string(tiny_models.CHATML).render(messages=messages, add_generation_prompt=True)
    check(render_ollama(template, messages) == jinja, "Modelfile: its TEMPLATE renders the chat template's text")


def check_bad_input(model_dir, qwen3_dir, adapter):
    out = os.path.join(WORK, "bad", "x.gguf")
    for args in (["--quant", "q5_k", "--model", model_dir], ["--quant", "f16", "--model", os.path.join(WORK, "nothing")],
                 ["--quant", "f16", "--model", qwen3_dir, "--adapter", adapter]):
        p = run(["export", "--format", "gguf", *args, "--out", out], expect_rc=2)
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
        check(any(e["event"] == "error" for e in lines), f"bad input {args}: an error line")
        check(not os.path.exists(out), f"bad input {args}: no file written")
    gemma = os.path.join(WORK, "gemma")
    os.makedirs(gemma, exist_ok=True)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    cfg["model_type"] = "gemma2"
    with open(os.path.join(gemma, "config.json"), "w") as f:
        json.dump(cfg, f)
    p = run(["export", "--format", "gguf", "--model", gemma, "--out", out], expect_rc=2)
    check("cannot be exported to GGUF yet" in p.stdout, "gemma2: says it cannot be exported yet")


def main():
    os.makedirs(WORK, exist_ok=True)
    dirs = {}
    for arch, pre in (("llama", "gpt-2"), ("qwen2", "qwen2"), ("qwen3", "llama-bpe")):
        model_dir = os.path.join(WORK, arch)
        cfg = tiny_models.make_model(model_dir, arch)
        dirs[arch] = (model_dir, cfg)
        readers = {}
        for quant in ("f32", "f16", "bf16", "q8_0", "q4_0"):
            path = os.path.join(WORK, "out", f"{arch}-{quant}.gguf")
            events = export(model_dir, quant, path)
            done = events[-1]
            progress = [e["export"] for e in events if e["event"] == "log" and "export" in e]
            check(done.get("reason") == "completed" and os.path.getsize(path) == done.get("bytes"),
                  f"{arch} {quant}: done {done} vs {os.path.getsize(path)} bytes")
            check(progress and progress[-1]["tensor"] == progress[-1]["tensors"] == done.get("tensors"),
                  f"{arch} {quant}: one progress line per tensor")
            readers[quant] = check_metadata(path, model_dir, cfg, arch, quant, pre)
        for quant in ("q8_0", "q4_0"):
            check_reference_quantizer(readers[quant], readers["f32"], quant)
        for quant in ("f32", "f16"):
            check_decoding(os.path.join(WORK, "out", f"{arch}-{quant}.gguf"), model_dir, f"{arch} {quant}")
        for quant in ("bf16", "q8_0", "q4_0"):
            check_logits(os.path.join(WORK, "out", f"{arch}-{quant}.gguf"), os.path.join(WORK, "out", f"{arch}-f32.gguf"), quant)
        for quant in ("q8_0", "q4_0"):
            check_dequantized(os.path.join(WORK, "out", f"{arch}-{quant}.gguf"), model_dir, cfg, arch, quant)
        print(f"{arch}: checked", flush=True)

    model_dir, cfg = dirs["llama"]
    adapter = os.path.join(WORK, "adapter")
    tiny_models.make_adapter(adapter, cfg)
    merged = os.path.join(WORK, "out", "llama-lora-f32.gguf")
    done = export(model_dir, "f32", merged, adapter=adapter)[-1]
    check(done.get("merged_adapters") == 2 * cfg["num_hidden_layers"], f"adapter: merged {done.get('merged_adapters')}")
    check_decoding(merged, model_dir, "llama + adapter f32", adapter=adapter)
    check_modelfile(os.path.join(WORK, "out"), "llama-lora-f32.gguf")
    check_bad_input(model_dir, dirs["qwen3"][0], adapter)
    check_sentencepiece()
    check_gemma()
    check_serve_terms(os.path.join(WORK, "out", "qwen3-f16.gguf"), ((1, "f16"), (8, "q8_0")))
    check_135m_class()
    llama_q8 = os.path.join(WORK, "out", "llama-q8_0.gguf")
    check_serve_terms(llama_q8, ((1, "f16"),))
    # A q8_0 cache needs heads of whole 32-value blocks: llama.cpp refuses it for 16-value heads,
    # and so does core.
    check(llama_cpp_prints(llama_q8, 4096, 8) == {"model": llama_cpp_prints(llama_q8, 4096, 1)["model"]},
          "llama.cpp refuses a q8_0 cache for 16-value heads")
    p = subprocess.run([PROBE, llama_q8, "4096", "8", "8"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "do not divide a head of 16" in p.stderr, f"core refuses it too: {p.stderr!r}")

    print(f"{len(FAILURES)} failed" if FAILURES else "all GGUF checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
