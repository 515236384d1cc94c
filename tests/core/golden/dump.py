#!/usr/bin/env python3
# Dumps `wingspan plan --json` for a fixed random sample of setups (models × frameworks × methods ×
# precisions × attention × sharding × objectives × techniques), to check that a refactor of the
# planner keeps every byte: dump before, dump after, then compare.py the two files.
#   python3 tests/core/golden/dump.py build/bin/wingspan /tmp/before.txt
# or, without building the window, build/tests/golden_plan_dump (with WINGSPAN_PROFILES=profiles).
import random, subprocess, sys, concurrent.futures as cf
exe, out = sys.argv[1], sys.argv[2]
rng = random.Random(25)
models = ["llama-3.1-8b","qwen2.5-0.5b","gemma-2-2b","smollm2-135m","qwen1.5-moe-a2.7b","gpt2","phi-3-mini-4k","qwen3-0.6b","mixtral-8x7b"]
fws = ["hf-transformers","libtorch-cpu","libtorch-cuda","libtorch-mps","litgpt","mlx-lm","torchtune","unsloth"]
cases = []
for i in range(800):
    a = ["plan","--json","--model",rng.choice(models),"--framework",rng.choice(fws)]
    m = rng.choice(["full","lora","qlora","serve","lora","qlora"])
    a += ["--method",m]
    a += ["--seq",str(rng.choice([128,512,1024,2048,4096])),"--batch",str(rng.choice([1,2,4]))]
    if rng.random()<.5: a += ["--grad-checkpointing",rng.choice(["on","off"])]
    if rng.random()<.5: a += ["--precision",rng.choice(["fp32","bf16-mixed","bf16","fp16-mixed"])]
    if rng.random()<.4: a += ["--attention",rng.choice(["eager","sdpa","flash"])]
    if rng.random()<.3: a += ["--optimizer",rng.choice(["adamw","adamw8bit","paged-adamw8bit","paged-adamw","sgd","adafactor"])]
    if rng.random()<.2: a += ["--loss-chunk",str(rng.choice([256,1024]))]
    if rng.random()<.2: a += ["--grad-accum","4"]
    if rng.random()<.25:
        a += ["--devices",str(rng.choice([2,4])),"--sharding",rng.choice(["ddp","zero1","zero2","zero3","fsdp"])]
    if rng.random()<.1: a += ["--offload"]
    if m in ("lora","qlora"):
        if rng.random()<.2: a += ["--dropout","0.05"]
        if rng.random()<.1: a += ["--dora"]
        if rng.random()<.1: a += ["--train-embeddings"]
        if rng.random()<.2: a += ["--targets",rng.choice(["q,v","attention","mlp"])]
        if rng.random()<.1: a += ["--lora-layers","4"]
    if m=="qlora" and rng.random()<.3: a += ["--quant",rng.choice(["nf4","nf4-dq","int8"])]
    if m!="serve" and rng.random()<.15:
        o = rng.choice(["dpo","orpo","kto","grpo","simpo"]); a += ["--objective",o]
        if o=="grpo" and rng.random()<.5: a += ["--beta","0.04"]
    # the techniques of issue 25
    if m!="serve":
        if rng.random()<.15: a += ["--optimizer-in-backward"]
        if rng.random()<.15: a += ["--activation-offload"]
        if rng.random()<.15: a += ["--compile"]
    cases.append(a)
if exe.endswith("plan_dump"):   # the in-process driver: all cases on its stdin, one process
    p = subprocess.run([exe], input="\n".join(" ".join(a) for a in cases) + "\n", capture_output=True, text=True)
    open(out, "w").write(p.stdout)
    sys.exit(p.returncode)
def run(a):
    p = subprocess.run([exe]+a, capture_output=True, text=True)
    return " ".join(a) + "\n" + str(p.returncode) + "\n" + p.stdout + p.stderr
with cf.ThreadPoolExecutor(2) as ex: res = list(ex.map(run, cases))
open(out,"w").write("\n====\n".join(res))
