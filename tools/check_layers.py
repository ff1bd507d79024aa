#!/usr/bin/env python3
"""tools/check_layers.py — the include direction and the cycles, checked (`make lint`).

The layers are the rows of LAYERS below, bottom up (docs/internals/layout.md says
what each folder is). A source file may include (#include "...") only files of its
own folder and of folders in a LOWER row; a folder of a row marked `peers` may also
include the other folders of that row. A file's folder is the longest folder of the
table that is a prefix of its path, so `scaler` covers the files directly under
scaler/ and any subfolder without a row of its own. A product file may not include
anything under tests/ or build/.

--dirs names the top folders the build compiles (the Makefile's SRC_DIRS): a file in
one of them whose folder has no row fails.

With --objects DIR (the object files of a build, build/obj), it also checks the
link-level graph: file A uses file B when A.o references a symbol B.o defines. That
graph must go down the same table (a header may declare what a lower layer calls,
but the code must live where the include rule says), and it must have no cycle
between files (A uses B uses ... uses A), except among the files of the folders of
CYCLES_TOLERATED_IN. KNOWN_UPWARD lists the folder pairs that may still reach up. Both
lists are what issue 16 is removing; they only shrink.

--self-test builds small trees in a temporary folder and checks that an upward
include, an include of a sibling folder, a link-level cycle and an unknown folder
each fail, and that a well-layered tree passes.

Exit status: 0 clean, 1 violations (each printed as `file:line: ...`), 2 usage.
"""
import os
import re
import subprocess
import sys
import tempfile

# ---- the table: one row per layer, bottom up; adding a folder is one line ------------
# (rank, folders, peers?)  — folders of one row are independent of each other unless
# the row says peers=True.
LAYERS = [
    (0, ["common"], False),                   # log, buf, err, clock, yaml, json, embed
    (1, ["api"], False),                      # the object model, pure
    (2, ["config"], False),                   # the configuration file and its defaults
    (3, ["scaler/cloud"], False),             # the provider-neutral cloud interface, catalog
    # admission; the scheduling simulation; Karpenter's metric families (their names,
    # labels and buckets: the controllers and NodeClaim launch count into them)
    (4, ["admission", "scaler/sched", "scaler/metrics"], False),
    (5, ["scaler/disrupt"], False),           # disruption decisions (use the simulation)
    (6, ["scaler/aws", "scaler/kube"], False),  # clients
    (7, ["scaler/state"], False),             # cache, snapshots, nominations
    (8, ["scaler/ctl"], False),               # what the controllers share: deps, memory, helpers
    (9, ["scaler/nodeclaim"], False),         # NodeClaim create and launch, bootstrap tokens
    (10, ["scaler/controllers"], False),      # the controllers
    (11, ["scaler"], False),                  # scaler/loop.c: builds them, owns the threads
    (12, ["server"], False),                  # HTTPS, certificates, routes, metrics
    (13, ["cli"], False),                     # main and the subcommands
]

# ---- what is still being removed (issue 16); these lists only shrink ------------------
# (lower folder, upper folder): files of the first may still include or call the second.
# Empty: nothing reaches up.
KNOWN_UPWARD = []
# (upper folder, lower folder): pairs the table would allow but the design does not. The
# controllers, NodeClaim launch, what they share and the cluster state reach the cloud
# only through the provider-neutral scaler/cloud/ interface; only scaler/loop.c (which
# builds the AWS cloud) and cli/ see scaler/aws/.
FORBIDDEN = [
    ("scaler/controllers", "scaler/aws"),
    ("scaler/nodeclaim", "scaler/aws"),
    ("scaler/ctl", "scaler/aws"),
    ("scaler/state", "scaler/aws"),
]
# Folders among whose files link cycles (A calls B calls ... calls A) are still
# tolerated; a cycle with a file outside them fails. Empty: no cycle is tolerated.
CYCLES_TOLERATED_IN = []

SRC_EXT = (".c", ".h")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def folder_table(layers):
    t = {}
    for rank, folders, peers in layers:
        for f in folders:
            t[f] = (rank, peers)
    return t


def folder_of(path, table):
    best = None
    for f in table:
        if path == f or path.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def source_files(root, table, tops=None):
    tops = sorted(tops or {f.split("/")[0] for f in table})
    out = []
    for top in tops:
        d = os.path.join(root, top)
        for dp, dn, fn in os.walk(d):
            dn.sort()
            for n in sorted(fn):
                if n.endswith(SRC_EXT):
                    out.append(os.path.relpath(os.path.join(dp, n), root))
    return out


def allowed(src_folder, dst_folder, table, known=(), forbidden=()):
    if src_folder == dst_folder or (src_folder, dst_folder) in known:
        return True
    if (src_folder, dst_folder) in forbidden:
        return False
    (sr, speers), (dr, _) = table[src_folder], table[dst_folder]
    if dr < sr:
        return True
    return dr == sr and speers


def check_includes(root, layers, tops=None, known=(), forbidden=()):
    table = folder_table(layers)
    errs = []
    for path in source_files(root, table, tops):
        f = folder_of(path, table)
        if f is None:
            errs.append("%s:1: folder not in the layer table (tools/check_layers.py LAYERS)" % path)
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as fh:
            for no, line in enumerate(fh, 1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                inc = m.group(1)
                if inc.startswith(("tests/", "build/")):
                    errs.append("%s:%d: product code includes %s" % (path, no, inc))
                    continue
                if not os.path.exists(os.path.join(root, inc)):
                    # relative to the including file (same folder)
                    rel = os.path.normpath(os.path.join(os.path.dirname(path), inc))
                    if os.path.exists(os.path.join(root, rel)):
                        inc = rel
                    else:
                        continue  # a generated or system header; the compiler judges
                g = folder_of(inc, table)
                if g is None:
                    errs.append("%s:%d: includes %s, outside the layer table" % (path, no, inc))
                elif not allowed(f, g, table, known, forbidden):
                    r1, r2 = table[f][0], table[g][0]
                    what = "upward" if r2 > r1 else "sideways" if r2 == r1 else "forbidden"
                    errs.append("%s:%d: %s include: %s (layer %d) may not include %s (%s, layer %d)"
                                % (path, no, what, f, r1, inc, g, r2))
    return errs


# ---- link level ------------------------------------------------------------------------

def object_symbols(objdir, root):
    """{source path: (defined set, undefined set)} from nm over objdir/**.o."""
    objs = []
    for dp, dn, fn in os.walk(objdir):
        for n in fn:
            if n.endswith(".o"):
                objs.append(os.path.join(dp, n))
    syms = {}
    if not objs:
        return syms
    out = subprocess.run(["nm", "-A", "--defined-only", "-g"] + objs, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    und = subprocess.run(["nm", "-A", "-u"] + objs, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True).stdout

    def src(obj):
        rel = os.path.relpath(obj, objdir)
        return rel[:-2] + ".c"

    for text, idx in ((out, 0), (und, 1)):
        for line in text.splitlines():
            obj, _, rest = line.partition(":")
            parts = rest.split()
            if not parts:
                continue
            name = parts[-1]
            s = src(obj)
            syms.setdefault(s, (set(), set()))[idx].add(name)
    return syms


def sccs(graph):
    """Tarjan; returns the strongly connected components with more than one node."""
    index, low, on, stack, res, counter = {}, {}, set(), [], [], [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                res.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return res


def check_links(objdir, root, layers, known=(), tolerated=(), forbidden=()):
    table = folder_table(layers)
    syms = object_symbols(objdir, root)
    definer = {}
    # objects of sources that no longer exist (a stale build) are left out
    syms = {s: v for s, v in syms.items() if os.path.exists(os.path.join(root, s))}
    for s, (d, _) in syms.items():
        if folder_of(s, table) is None:
            continue  # tests, embedded data, main of other programs
        for name in d:
            definer.setdefault(name, s)
    graph, errs = {}, []
    for s, (_, u) in sorted(syms.items()):
        f = folder_of(s, table)
        if f is None:
            continue
        for name in sorted(u):
            t = definer.get(name)
            if t is None or t == s:
                continue
            graph.setdefault(s, set()).add(t)
            g = folder_of(t, table)
            if not allowed(f, g, table, known, forbidden):
                errs.append("%s:1: calls %s, defined in %s (%s, layer %d), not allowed from %s (layer %d)"
                            % (s, name, t, g, table[g][0], f, table[f][0]))
    for comp in sccs(graph):
        if all(folder_of(c, table) in tolerated for c in comp):
            continue
        errs.append("%s:1: link cycle between files: %s" % (comp[0], " <-> ".join(comp)))
    return errs


# ---- self-test -------------------------------------------------------------------------

def _tree(root, files):
    for p, text in files.items():
        full = os.path.join(root, p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(text)


def self_test():
    layers = [(0, ["low"], False), (1, ["mid", "side"], False), (2, ["top"], False)]
    good = {"low/a.h": "", "low/a.c": '#include "low/a.h"\n',
            "mid/b.h": '#include "low/a.h"\n', "mid/b.c": '#include "mid/b.h"\n',
            "top/c.c": '#include "mid/b.h"\n#include "low/a.h"\n#include <stdio.h>\n'}
    cases = [
        ("well layered", {}, 0),
        ("upward include", {"low/a.c": '#include "mid/b.h"\n'}, 1),
        ("sideways include", {"side/d.c": '#include "mid/b.h"\n'}, 1),
        ("unknown folder", {"other/e.c": ""}, 1),
        ("include from tests", {"mid/b.c": '#include "tests/unit/x.h"\n'}, 1),
    ]
    failed = 0
    for name, extra, want in cases:
        with tempfile.TemporaryDirectory() as d:
            files = dict(good)
            files.update(extra)
            _tree(d, files)
            n = len(check_includes(d, layers, ["low", "mid", "side", "top", "other"]))
            got = 1 if n else 0
            if got != want:
                print("self-test: %s: expected %s, got %d violation(s)"
                      % (name, "a violation" if want else "none", n))
                failed += 1
    # a pair the table allows but FORBIDDEN names fails
    with tempfile.TemporaryDirectory() as d:
        _tree(d, good)
        if check_includes(d, layers):
            print("self-test: the good tree should pass without a forbidden pair")
            failed += 1
        if not check_includes(d, layers, forbidden=[("top", "low")]):
            print("self-test: a forbidden include was not found")
            failed += 1
    # an unknown subfolder of a known top folder is covered by the top folder's row;
    # a top folder that exists in the table but a file whose folder is unlisted fails:
    with tempfile.TemporaryDirectory() as d:
        _tree(d, dict(good, **{"top/x/f.c": '#include "mid/b.h"\n'}))
        if check_includes(d, layers):
            print("self-test: subfolder of a listed folder should inherit its row")
            failed += 1
    # link level: two objects calling each other form a cycle; a call upward fails
    cc = os.environ.get("CC", "cc")
    with tempfile.TemporaryDirectory() as d:
        src = {"mid/p.c": "void q(void); void p(void); void p(void) { q(); }\n",
               "mid/q.c": "void p(void); void q(void); void q(void) { p(); }\n",
               "low/r.c": "void s(void); void r(void); void r(void) { s(); }\n",
               "top/s.c": "void s(void); void s(void) {}\n"}
        _tree(d, src)
        obj = os.path.join(d, "obj")
        ok = True
        for p in src:
            o = os.path.join(obj, p[:-2] + ".o")
            os.makedirs(os.path.dirname(o), exist_ok=True)
            if subprocess.run([cc, "-c", os.path.join(d, p), "-o", o]).returncode != 0:
                ok = False
        if not ok:
            print("self-test: could not compile the link-level tree with %s" % cc)
            failed += 1
        else:
            errs = check_links(obj, d, layers)
            if not any("link cycle" in e for e in errs):
                print("self-test: a link cycle was not found")
                failed += 1
            if not any("calls s" in e for e in errs):
                print("self-test: an upward call was not found")
                failed += 1
            if any("link cycle" in e for e in check_links(obj, d, layers, tolerated=["mid"])):
                print("self-test: a tolerated cycle was not accepted")
                failed += 1
            if any("calls s" in e for e in check_links(obj, d, layers, known=[("low", "top")])):
                print("self-test: a known upward call was not accepted")
                failed += 1
    if failed:
        return 1
    print("check_layers self-test: ok")
    return 0


def main(argv):
    root, objdir, tops = ".", None, None
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--self-test":
            return self_test()
        if a == "--objects" and args:
            objdir = args.pop(0)
        elif a == "--root" and args:
            root = args.pop(0)
        elif a == "--dirs" and args:
            tops = args.pop(0).split()
        else:
            print("usage: check_layers.py [--root DIR] [--dirs 'TOP...'] [--objects BUILD/obj] | --self-test",
                  file=sys.stderr)
            return 2
    errs = check_includes(root, LAYERS, tops, KNOWN_UPWARD, FORBIDDEN)
    if objdir:
        if not os.path.isdir(objdir):
            print("check_layers: %s: no object files (build first)" % objdir, file=sys.stderr)
            return 2
        errs += check_links(objdir, root, LAYERS, KNOWN_UPWARD, CYCLES_TOLERATED_IN, FORBIDDEN)
    for e in errs:
        print(e)
    if errs:
        print("check_layers: %d violation(s); the layers are in tools/check_layers.py "
              "(docs/internals/layout.md)" % len(errs))
        return 1
    print("check_layers: ok (%d folders)" % sum(len(r[1]) for r in LAYERS))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
