"""Checks a recipe written with hostile free text (issue 34, class 3): every Python file parses
and calls nothing it should not (no __import__, no .system), every YAML and JSON file parses
with no injected key, each value reads back exactly (bytes that are not UTF-8 through
surrogateescape), and the shell word in torchtune's download line gives the value back when a
shell reads it, with nothing run. Usage: check_hostile_recipe.py FRAMEWORK RECIPE_DIR VALUES.json
(VALUES.json: {"model": hex, "data_path": hex, "data_dir": hex, "output_dir": hex, ...})."""
import ast
import glob
import json
import os
import subprocess
import sys
import tempfile

import yaml

framework, folder, values_file = sys.argv[1:4]
values = {k: bytes.fromhex(v).decode("utf-8", "surrogateescape") for k, v in json.load(open(values_file)).items()}
failures = []


def expect(what, ok):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def walk(node, keys, strings):
    """every mapping key and every string scalar of a parsed YAML or JSON document"""
    if isinstance(node, dict):
        for k, v in node.items():
            keys.add(str(k))
            walk(v, keys, strings)
    elif isinstance(node, list):
        for v in node:
            walk(v, keys, strings)
    elif isinstance(node, str):
        strings.add(node)


strings = {}   # file -> every string it holds
keys = set()
for py in glob.glob(os.path.join(folder, "*.py")):
    tree = ast.parse(open(py, encoding="utf-8").read(), py)
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    expect(os.path.basename(py) + " parses and calls no __import__ / os.system",
           "__import__" not in names and "system" not in attrs and "popen" not in attrs)
    strings[os.path.basename(py)] = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
for y in glob.glob(os.path.join(folder, "*.yaml")):
    s = set()
    walk(yaml.safe_load(open(y, encoding="utf-8")), keys, s)
    strings[os.path.basename(y)] = s
    expect(os.path.basename(y) + " parses", True)
for j in glob.glob(os.path.join(folder, "*.json")):
    s = set()
    walk(json.load(open(j, encoding="utf-8")), keys, s)
    strings[os.path.basename(j)] = s
expect("no injected key (%s)" % sorted(k for k in keys if "injected" in k or "attacker" in k),
       not any("injected" in k or "attacker" in k for k in keys))

# Where each framework writes each free-text value, read back exactly.
WHERE = {
    "hf-transformers": {"config.yaml": ["model", "output_dir"], "train.py": ["data_path"]},
    "unsloth": {"config.yaml": ["model", "output_dir"], "train.py": ["data_path"]},
    "torchtune": {"config.yaml": ["data_path", "output_dir"]},
    "mlx-lm": {"lora_config.yaml": ["model", "data_dir", "output_dir"]},
    "axolotl": {"config.yaml": ["model", "data_path", "output_dir"]},
    "llama-factory": {"config.yaml": ["model", "output_dir"], "dataset_info.json": ["data_path"]},
}
for file, names in WHERE[framework].items():
    for name in names:
        expect("%s holds %s exactly" % (file, name), values[name] in strings.get(file, set()))

# torchtune's comment tells the user a shell command: the word must give the model back in a shell.
if framework == "torchtune":
    prefix, suffix = "# Download the model first:  tune download ", " --output-dir ./model"
    lines = [l for l in open(os.path.join(folder, "config.yaml"), encoding="utf-8").read().split("\n") if l.startswith(prefix)]
    expect("one download line", len(lines) == 1 and lines[0].endswith(suffix))
    if len(lines) == 1:
        word = lines[0][len(prefix):-len(suffix)]
        with tempfile.TemporaryDirectory() as cwd:
            got = subprocess.run(["bash", "-c", "set -- " + word + "; printf %s \"$1\""], cwd=cwd, capture_output=True).stdout
            expect("the shell word reads back as the model", got == os.fsencode(values["model"]))
            expect("the shell ran nothing", os.listdir(cwd) == [])

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
