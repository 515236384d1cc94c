"""What check_recipe.py and check_objective_recipe.py share: the keyword arguments of a recipe's
Python calls, and one printed line per expectation with the failures collected."""
import ast

failures = []


def expect(what, got, want):
    ok = got == want
    print(("ok   " if ok else "FAIL ") + "%s: %r%s" % (what, got, "" if ok else " (expected %r)" % (want,)))
    if not ok:
        failures.append(what)


def calls(path):
    """Keyword arguments of every call in a Python file, by the called name (literals only)."""
    found = {}
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            kw = found.setdefault(name, {})
            for k in node.keywords:
                try:
                    kw[k.arg] = ast.literal_eval(k.value)
                except ValueError:
                    kw[k.arg] = ast.unparse(k.value)
    return found
