# The Python half of canary.RewritePython: it finds, in each trusted hidden test
# module, the check of every test that a canary can invert, and prints the edit
# that inverts it. It only parses (ast), never imports or runs what it reads.
#
# stdin:  {"seed": N, "files": {"tests/test_x.py": "source", ...}}
# stdout: {"tests/test_x.py": {"error": "...", "tests": [
#            {"cls": "TestC" or "", "name": "test_m", "edit": [start, end, "text"] or null,
#             "why": "why there is no edit"}, ...]}, ...}
# Offsets are UTF-8 byte offsets into the source.
import ast
import copy
import json
import re
import random
import sys

# unittest's assertions and their negations: A passes exactly when its negation
# fails, with the same arguments.
NEGATION = {
    "assertEqual": "assertNotEqual", "assertEquals": "assertNotEqual",
    "assertNotEqual": "assertEqual", "assertNotEquals": "assertEqual",
    "assertTrue": "assertFalse", "assertFalse": "assertTrue",
    "assertIs": "assertIsNot", "assertIsNot": "assertIs",
    "assertIsNone": "assertIsNotNone", "assertIsNotNone": "assertIsNone",
    "assertIn": "assertNotIn", "assertNotIn": "assertIn",
    "assertIsInstance": "assertNotIsInstance", "assertNotIsInstance": "assertIsInstance",
    "assertRegex": "assertNotRegex", "assertNotRegex": "assertRegex",
    "assertAlmostEqual": "assertNotAlmostEqual", "assertNotAlmostEqual": "assertAlmostEqual",
}
EQUALS = ("assertEqual", "assertEquals")
# Comparisons whose negation is exact for every value: == and != (Python 3's
# default __ne__ is the negation of __eq__), is, in.
COMPARE = {ast.Eq: "!=", ast.NotEq: "==", ast.Is: "is not", ast.IsNot: "is", ast.In: "not in", ast.NotIn: "in"}


def main():
    req = json.load(sys.stdin)
    rng = random.Random(req["seed"])
    out = {}
    for name in sorted(req["files"]):
        src = req["files"][name].encode("utf-8")
        try:
            out[name] = {"tests": rewrite(src, rng)}
        except (SyntaxError, ValueError, RecursionError) as e:
            out[name] = {"error": "%s: %s" % (type(e).__name__, e), "tests": []}
    json.dump(out, sys.stdout)


def rewrite(src, rng):
    tree = ast.parse(src)
    starts = [0]
    for line in src.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line, col):
        return starts[line - 1] + col

    def span(node):
        return offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)

    def text(node):
        a, b = span(node)
        return src[a:b].decode("utf-8")

    def raw(a, b):
        return src[a:b].decode("utf-8")

    # An expected failure passes when a check fails: its canary could pass too.
    module_xfail = any(isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
                       and xfail(text(s.value)) for s in tree.body)
    # A class another class of the module derives from runs its tests under the
    # other's name too, where a canary of its own would count as that test.
    bases = {b.id for n in tree.body if isinstance(n, ast.ClassDef) for b in n.bases if isinstance(b, ast.Name)}
    tests = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            tests.append(("", node, module_xfail or decorated_xfail(node, text)))
        elif isinstance(node, ast.ClassDef):
            cls_xfail = module_xfail or decorated_xfail(node, text) or any(
                isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)
                and xfail(text(s.value)) for s in node.body)
            for fn in node.body:
                if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name.startswith("test"):
                    tests.append((node.name, fn, "a base class" if node.name in bases else cls_xfail or decorated_xfail(fn, text)))
    out = []
    for cls, fn, expect_fail in tests:
        t = {"cls": cls, "name": fn.name, "edit": None}
        if expect_fail == "a base class":
            t["why"] = "its class is a base of another class of the module"
        elif expect_fail:
            t["why"] = "an expected failure"
        elif generator(fn):
            t["why"] = "a generator"
        else:
            self_name = fn.args.args[0].arg if cls and fn.args.args else None
            candidates = []
            for i, st in enumerate(fn.body):
                e = invert(st, self_name, span, text, raw, rng)
                if e is not None:
                    candidates.append((i, st, e))
                if returns(st):
                    break  # a passing test may never reach what follows
            # A perturbed literal reads like any check: prefer it, then the last.
            candidates.sort(key=lambda c: (c[2][0][3], c[0]), reverse=True)
            t["edit"] = next((list(e[0][:3]) for _, st, e in candidates if verified(src, span, st, *e)), None)
            if t["edit"] is None:
                t["why"] = "no check a canary can invert at the top level of its body"
        out.append(t)
    return out


def verified(src, span, st, edit, want):
    """Whether statement st with edit applied parses to want: the inversion is
    exactly the one intended, whatever the source's layout. A simple statement
    continues only inside brackets or after a backslash, so its own text parses
    alone."""
    a, b, new, _ = edit
    a0, b0 = span(st)
    if not a0 <= a <= b <= b0:
        return False
    try:
        tree = ast.parse(src[a0:a] + new.encode("utf-8") + src[b:b0])
    except (SyntaxError, ValueError):
        return False
    return len(tree.body) == 1 and ast.dump(tree.body[0]) == ast.dump(want)


def xfail(s):
    return "xfail" in s or "expectedFailure" in s


def decorated_xfail(node, text):
    return any(xfail(text(d)) for d in node.decorator_list)


def generator(fn):
    for n in walk_body(fn):
        if isinstance(n, (ast.Yield, ast.YieldFrom)):
            return True
    return False


def walk_body(node):
    """The nodes of node's body, not entering nested functions, lambdas or classes."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        n = stack.pop()
        yield n
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(n))


def returns(st):
    if isinstance(st, ast.Return):
        return True
    return any(isinstance(n, ast.Return) for n in walk_body(st))


def literal(node):
    """A literal whose perturbed value never equals what equalled it: a number,
    string or bytes constant (not a bool or None)."""
    return isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bytes)


def perturb(value, rng):
    if isinstance(value, bool):
        raise ValueError("bool")
    if isinstance(value, int):
        return value - 1 if value > 0 else value + 1
    if isinstance(value, float):
        return value / 2 if value != 0 else 1.0
    if isinstance(value, str):
        return value + rng.choice("abcdefghijklmnopqrstuvwxyz")
    return value + bytes([rng.choice(b"abcdefghijklmnopqrstuvwxyz")])


def invert(st, self_name, span, text, raw, rng):
    """The edit (start, end, text, same_shape) that makes statement st fail exactly
    when it passed, and the statement it must parse to, or None when st is no check
    that can be inverted."""
    want = copy.deepcopy(st)
    if isinstance(st, ast.Assert):
        test = st.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in COMPARE:
            if isinstance(test.ops[0], ast.Eq):
                for i, side in enumerate((test.comparators[0], test.left)):
                    if literal(side):
                        v = perturb(side.value, rng)
                        (want.test.comparators[0] if i == 0 else want.test.left).value = v
                        a, b = span(side)
                        return (a, b, repr(v), True), want
            # The operator sits between the operands' spans, with parentheses,
            # spaces or line continuations around it.
            a, b = span(test.left)[1], span(test.comparators[0])[0]
            seg = raw(a, b)
            m = OPERATOR[type(test.ops[0])].search(seg)
            if not m:
                return None
            want.test.ops[0] = NEGATED_OP[type(test.ops[0])]()
            return (a + len(seg[:m.start()].encode()), a + len(seg[:m.end()].encode()), COMPARE[type(test.ops[0])], False), want
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            want.test = copy.deepcopy(test.operand)
            a, b = span(test)
            return (a, b, "(%s)" % text(test.operand), False), want
        want.test = ast.UnaryOp(op=ast.Not(), operand=copy.deepcopy(test))
        a, b = span(test)
        return (a, b, "not (%s)" % text(test), False), want
    if self_name and isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        call = st.value
        f = call.func
        if not (isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == self_name and f.attr in NEGATION):
            return None
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return None
        if f.attr in EQUALS and len(call.args) >= 2:
            for i, side in enumerate((call.args[1], call.args[0])):
                if literal(side):
                    v = perturb(side.value, rng)
                    want.value.args[1 - i].value = v
                    a, b = span(side)
                    return (a, b, repr(v), True), want
        want.value.func.attr = NEGATION[f.attr]
        _, end = span(f)
        return (end - len(f.attr.encode("utf-8")), end, NEGATION[f.attr], False), want
    return None


OPERATOR = {
    ast.Eq: re.compile(r"=="), ast.NotEq: re.compile(r"!="),
    ast.IsNot: re.compile(r"\bis\s+not\b"), ast.Is: re.compile(r"\bis\b"),
    ast.NotIn: re.compile(r"\bnot\s+in\b"), ast.In: re.compile(r"\bin\b"),
}
NEGATED_OP = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is, ast.In: ast.NotIn, ast.NotIn: ast.In}


if __name__ == "__main__":
    main()
