#!/usr/bin/env python3
"""tools/check_funcs.py — two habits of the product's C, checked (`make lint`, `make test`).

1. No function is longer than MAX_LINES lines (from the `{` that opens its body at
   column 0 to the `}` that closes it, inclusive): a longer one is split by phase into
   static helpers whose names say the phase.
2. A predicate returns bool: a function declared to return int whose every `return` is
   0, 1, true, false, a comparison, a logical expression or a negation (and at least one
   of them is not a plain 0) answers yes or no, and must say so with bool. Comparators
   (const void * arguments) are not predicates.

The sources are those of the Makefile's SRC_DIRS (or --dirs). Functions are found the way
clang-format lays them out (`make fmt`): the signature starts at column 0, the body's
braces are alone at column 0.

  tools/check_funcs.py [--root DIR] [--dirs 'TOP...']
  tools/check_funcs.py --self-test

Exit status: 0 clean, 1 violations (each printed as `file:line: ...`), 2 usage.
"""
import os
import re
import sys
import tempfile

MAX_LINES = 100
DIRS = ["common", "api", "config", "admission", "scaler", "server", "cli"]
SIG_RE = re.compile(r"^(static\s+)?(inline\s+)?(?:NW_MUST_USE\s+)?([\w\s\*]+?)\s*\b(\w+)\s*\((.*)\)\s*$", re.S)
# callbacks whose int return a library's or another layer's type fixes: (file, name)
FIXED_INT = {
    ("common/yaml.c", "write_cb"): "libyaml's yaml_write_handler_t",
    ("scaler/kube/watch.c", "on_event"): "nw_kube_event_fn (scaler/kube/watch.h), also a test's",
    # nw_kube_mutate_fn (scaler/kube/write.h) is a tri-state: 0 write, 1 nothing to write,
    # -1 give up; these implementations never give up
    ("scaler/controllers/disruption.c", "mutate_cond"): "nw_kube_mutate_fn",
    ("scaler/controllers/driftmark.c", "mutate_drifted"): "nw_kube_mutate_fn",
    ("scaler/controllers/lifecycle.c", "mutate_condition"): "nw_kube_mutate_fn",
    ("scaler/controllers/lifecycle.c", "mutate_status"): "nw_kube_mutate_fn",
    ("scaler/controllers/poolstatus.c", "mutate_status"): "nw_kube_mutate_fn",
    ("scaler/controllers/termination.c", "mutate_cond"): "nw_kube_mutate_fn",
    ("scaler/nodeclaim/nodeclaim.c", "mutate_launched"): "nw_kube_mutate_fn",
}
RET_RE = re.compile(r"\breturn\b([^;]*);")
TRUTH_RE = re.compile(r"==|!=|<=|>=|&&|\|\||(?<![-<])<(?!<)|(?<![->])>(?!>)")


def functions(text):
    """(line of the signature, name, return type, params, body lines, length)."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{" and i > 0:
            j = i - 1
            while j > 0 and lines[j][:1] in (" ", "\t"):
                j -= 1
            k = i
            while k < len(lines) and lines[k] != "}":
                k += 1
            m = SIG_RE.match(" ".join(lines[j:i]))
            if m and "=" not in m.group(0).split("(")[0]:
                yield j + 1, m.group(4), m.group(3).strip(), m.group(5), lines[i:k + 1], k - i + 1
            i = k
        i += 1


def truthy(e):
    e = e.strip()
    if e in ("0", "1", "true", "false"):
        return True
    if re.search(r"\?[^:]*:", e) or re.search(r"\)\s*[-+*/]\s*\(", e):
        return False  # a choice or arithmetic on truth values: (a > b) - (a < b)
    return bool(TRUTH_RE.search(e)) or e.startswith("!")


def check_file(path, text):
    errs = []
    for line, name, rtype, params, body, n in functions(text):
        if n > MAX_LINES:
            errs.append("%s:%d: %s is %d lines (at most %d: split it by phase)"
                        % (path, line, name, n, MAX_LINES))
        if rtype == "int" and "const void *" not in params and (path, name) not in FIXED_INT:
            rets = RET_RE.findall("\n".join(body))
            if rets and all(truthy(r) for r in rets) and any(r.strip() != "0" for r in rets):
                errs.append("%s:%d: %s answers yes or no: return bool" % (path, line, name))
    return errs


def check_tree(root, dirs):
    errs = []
    for top in dirs:
        for dp, dn, fn in os.walk(os.path.join(root, top)):
            dn.sort()
            for f in sorted(fn):
                if f.endswith(".c"):
                    p = os.path.join(dp, f)
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        errs += check_file(os.path.relpath(p, root), fh.read())
    return errs


def self_test():
    long_body = "\n".join("    x++;" for _ in range(MAX_LINES))
    cases = [
        ("short int function", "int f(int x)\n{\n    return x + 1;\n}\n", 0),
        ("bool predicate", "static bool p(int x)\n{\n    return x > 1;\n}\n", 0),
        ("int predicate", "static int p(int x)\n{\n    if (x)\n        return 1;\n    return x == 2;\n}\n", 1),
        ("comparator", "static int c(const void *a, const void *b)\n{\n    return a < b;\n}\n", 0),
        ("three-way compare", "int q(int a, int b)\n{\n    return (a > b) - (a < b);\n}\n", 0),
        ("count", "int n(int x)\n{\n    if (x < 0)\n        return -1;\n    return 0;\n}\n", 0),
        ("long function", "void g(int x)\n{\n" + long_body + "\n}\n", 1),
        ("just short enough", "void g(int x)\n{\n" + "\n".join(long_body.split("\n")[:MAX_LINES - 2]) + "\n}\n", 0),
    ]
    failed = 0
    for name, src, want in cases:
        got = len(check_file("x.c", src))
        if (1 if got else 0) != want:
            print("self-test: %s: expected %s, got %d" % (name, "a violation" if want else "none", got))
            failed += 1
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "common"))
        with open(os.path.join(d, "common", "a.c"), "w") as fh:
            fh.write(cases[2][1])
        if not check_tree(d, ["common"]):
            print("self-test: a tree with an int predicate passed")
            failed += 1
    if failed:
        return 1
    print("check_funcs self-test: ok")
    return 0


def main(argv):
    root, dirs = ".", DIRS
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--self-test":
            return self_test()
        if a == "--root" and args:
            root = args.pop(0)
        elif a == "--dirs" and args:
            dirs = args.pop(0).split()
        else:
            print(__doc__.split("\n\n")[-2], file=sys.stderr)
            return 2
    errs = check_tree(root, dirs)
    for e in errs:
        print(e)
    if errs:
        print("check_funcs: %d violation(s)" % len(errs))
        return 1
    print("check_funcs: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
