"""The shape rules of issue 27's "Done when", checked with lint.py's hygiene rules.

  - file-length: a program or test source over 600 lines (one job per file);
  - function-length: a function whose body, braces included, spans over 150 lines;
  - include-order: inside ui/ and trainer/, a file includes a file of a higher layer (LAYERS below), or
    a header that includes the file's own header (the file runs back up to the one that includes it).

Each rule is a function of the source root returning (rule, file, place) findings; lint.py counts them
against scripts/lint_known.txt like its own.
"""
import fnmatch
import re

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 150
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h")
LENGTH_FOLDERS = ("core", "ui", "app", "trainer", "tokenizer", "tests", "bench")

# The layers inside ui/ and trainer/, lowest first, by file stem (x.hpp and x.cpp are one unit). A file
# may include its own layer or a lower one. The order is docs/architecture.md's ("ui renders what core
# computes"; the trainer's model sits on its kernels, a run on the model, the command line on a run)
# checked against the include graph as it stands; a new file must be given a layer here.
LAYERS = {
    "ui": (
        # Chart data and primitives, widgets, exports, and the run session with its data models: none
        # of them knows a view, a dialog or a panel.
        ("primitives", ("chart", "chart_data", "chart_text", "round_ticks", "label_placement",
                        "memory_qchart*", "export", "export_format", "widgets", "pair_grid",
                        "run_status", "run_status_line", "run_session", "run_options", "run_device",
                        "run_ranks", "run_model", "run_controller", "run_history_model", "run_try_it",
                        "run_panel_text", "run_charts", "run_chart", "run_chart_*", "run_live_charts",
                        "run_top_bar")),
        # What a panel is made of: the chart view, the machine grid, result views, forms, dialogs.
        ("views", ("chart_view", "machine_grid", "which_machine_page", "run_results_view", "run_form",
                   "run_form_*", "inputs_panel_items", "*_dialog")),
        # The panels; the run panel's methods are spread over its run_* files.
        ("panels", ("inputs_panel", "inputs_panel_*", "machines_panel", "serve_gguf_panel", "run_panel",
                    "run_compare", "run_download", "run_guard", "run_header", "run_history",
                    "run_live_view", "run_results")),
        # The window assembles the panels (and installs the run tab), and screenshots it.
        ("window", ("main_window", "main_window_*", "screenshot")),
    ),
    "trainer": (
        # No model in sight: events, signals, locks, manifests, data sets, GGUF files.
        ("support", ("emit", "stop_signals", "torch_version", "out_lock", "profile_scopes", "step_trace", "cpu_binding",
                     "checkpoint", "precision_choice",
                     "grad_hooks", "model_source", "data", "preference_data", "gguf_*")),
        # Tensors on a device: devices, ops, kernels, measured memory, process groups, optimizers.
        ("tensors and kernels", ("device", "device_ops", "device_memory", "memory", "memory_snapshot", "tensor_bytes", "kernels_*",
                                 "distributed", "optimizer", "optimizer_in_backward")),
        # The model: linears, the decoder and its variants, weights, adapters, objectives, gradient sync.
        ("model", ("linear", "model", "model_config", "model_variants", "weights_io", "adapter_config",
                   "objective_preference", "distributed_sync")),
        # A run and the other entry points (merge, generate, export).
        ("run", ("run", "run_*", "objective_run", "train", "merge", "generate", "export_gguf")),
        # The command line: main() and the --nproc launcher that starts ranks of a run.
        ("command line", ("main", "launcher")),
    ),
}
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def source_files(root, folders):
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                yield path, path.relative_to(root).as_posix()


def file_length_findings(root):
    found = []
    for path, rel in source_files(root, LENGTH_FOLDERS):
        lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
        if lines > MAX_FILE_LINES:
            found.append(("file-length", rel, f"{lines} lines"))
    return found


def without_preprocessor(code):
    """Directive lines blanked, and every #else/#elif branch (braces in two branches of an #if
    would otherwise count twice); line breaks kept."""
    out, skipping, depth = [], 0, 0
    lines = code.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = re.match(r"\s*#\s*(\w*)", line)
        if directive:
            word = directive.group(1)
            if word.startswith("if"):
                depth += 1
            elif word in ("else", "elif") and not skipping:
                skipping = depth
            elif word == "endif":
                if skipping == depth:
                    skipping = 0
                depth -= 1
            while line.endswith("\\") and i + 1 < len(lines):   # a continued directive
                out.append("")
                i += 1
                line = lines[i]
            out.append("")
        else:
            out.append("" if skipping else line)
        i += 1
    return "\n".join(out)


FUNCTION_HEAD = re.compile(
    r"\)\s*(?:const|noexcept(?:\s*\([^)]*\))?|override|final|mutable|&|->[^{;]*|\s)*$"   # f(...) const
    r"|\)\s*(?:noexcept\s*)?:[^;]*[)}]$")                                                # a constructor's : a_(x)
SCOPE_HEAD = re.compile(r"\b(?:namespace|class|struct|union|enum|extern)\b")


def function_name(head):
    """The name before the first parameter list outside template brackets."""
    depth = 0
    for i, ch in enumerate(head):
        depth += (ch == "<") - (ch == ">")
        if ch == "(" and depth <= 0:
            name = re.search(r"(operator\s*\S+|[~\w:]+)\s*$", head[:i])
            return name.group(1) if name else "?"
    return "?"


def initialiser(head):
    """A head with a top-level `=` (not ==, <=, operator=) opens an initialiser's braces."""
    top = re.sub(r"operator\s*\S+", "", outside_parentheses(head))
    return re.search(r"(?<![=!<>])=(?!=)", top) is not None


def outside_parentheses(head):
    depth, kept = 0, []
    for ch in head:
        depth += ch == "("
        if depth == 0:
            kept.append(ch)
        depth -= ch == ")" and depth > 0
    return "".join(kept)


def long_functions(code):
    """(first line, name, lines) of each function body over the limit, in stripped `code`: a brace
    block opened at namespace or class scope whose head reads like a function's. Blocks inside a
    function are its own; brace initialisers at namespace or class scope stay part of the next head."""
    found = []
    scopes = []           # "scope" (namespace, class, extern), "init" (an initialiser's braces)
    head_start = 0
    i, n = 0, len(code)
    while i < n:
        ch = code[i]
        if ch == ";" and "init" not in scopes:
            head_start = i + 1
        elif ch == "{":
            head = " ".join(code[head_start:i].split())
            if "init" in scopes:
                scopes.append("init")
            elif SCOPE_HEAD.search(outside_parentheses(head)) and not FUNCTION_HEAD.search(head):
                scopes.append("scope")
                head_start = i + 1
            elif FUNCTION_HEAD.search(head) and not initialiser(head):
                end, depth = i, 0
                while end < n:
                    depth += (code[end] == "{") - (code[end] == "}")
                    if depth == 0:
                        break
                    end += 1
                first, last = code.count("\n", 0, i) + 1, code.count("\n", 0, end) + 1
                if last - first + 1 > MAX_FUNCTION_LINES:
                    found.append((first, function_name(head), last - first + 1))
                i, head_start = end, end + 1
            else:
                scopes.append("init")
        elif ch == "}":
            kind = scopes.pop() if scopes else "scope"
            if kind == "scope":
                head_start = i + 1
        i += 1
    return found


def function_length_findings(root, strip_comments):
    found = []
    for path, rel in source_files(root, LENGTH_FOLDERS):
        code = without_preprocessor(strip_comments(path.read_text(encoding="utf-8", errors="replace")))
        for line, name, lines in long_functions(code):
            found.append(("function-length", rel, f"{line} {name} ({lines} lines)"))
    return found


def layer_of(folder, stem):
    for rank, (_, patterns) in enumerate(LAYERS[folder]):
        if any(fnmatch.fnmatchcase(stem, pattern) for pattern in patterns):
            return rank
    return None


def local_file(root, folder, including, name):
    """The ui/ or trainer/ file an #include "name" names, or None (core's, the tokenizer's, Qt's)."""
    candidates = [including.parent / name, root / folder / "src" / name, root / folder / "include" / name]
    return next((c.resolve() for c in candidates if c.is_file() and (root / folder).resolve() in c.resolve().parents), None)


def include_order_findings(root, strip_comments):
    found = []
    for folder in LAYERS:
        files = {path.resolve(): rel for path, rel in source_files(root, (folder,))}
        includes = {}
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            code = strip_comments(text)   # an #include inside a comment is blanked there
            includes[path] = [(text.count("\n", 0, m.start()) + 1, local_file(root, folder, path, m.group(1)))
                              for m in INCLUDE.finditer(text) if code[m.start():m.end()].lstrip().startswith("#")]
        for path, rel in files.items():
            stem = path.stem
            layer = layer_of(folder, stem)
            if layer is None:
                found.append(("include-order", rel, f"1 ({stem} has no layer in scripts/lint_structure.py)"))
                continue
            for line, target in includes[path]:
                if target is None or target.stem == stem:
                    continue
                target_layer = layer_of(folder, target.stem)
                if target_layer is not None and target_layer > layer:
                    found.append(("include-order", rel, f"{line} ({LAYERS[folder][layer][0]} includes "
                                  f"{LAYERS[folder][target_layer][0]}: {files[target]})"))
                elif any(inner is not None and inner.stem == stem and inner.suffix != ".cpp"
                         for _, inner in includes.get(target, [])):
                    found.append(("include-order", rel, f"{line} ({files[target]} includes this file's header)"))
    return found
