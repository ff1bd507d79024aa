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

With --objects it also checks the names (issue 32): every exported symbol of a product
file starts with one prefix that names the file, so a name says where it lives. For
dir/stem.c the prefix is nw_<stem> or nw_<folder>_<stem> (folder: the last part of dir;
nw_<stem> alone when stem is the folder's name, e.g. config/config.c, scaler/cloud/cloud.c;
nw_<stem> only while no other file has that stem); the symbol is the prefix itself or the
prefix, "_" and more (any case: NW_KMETRICS_X counts). One file, one prefix; and read
backwards a name must lead to its file: the longest prefix of any file that a symbol
starts with must be its own file's (admission/gpu.c may not export nw_gpu_pod_x while
admission/gpu_pod.c exists). cli/main.c's main is the one exception.

It also checks that the table of docs/internals/layout.md (under --root; --doc names
another file) is this one: the same folders at the same ranks as LAYERS, a "may
include" cell that says "layer 0" / "layers 0–N" (N the rank below) and names each
FORBIDDEN pair of the row ("not `scaler/aws/`") and no other, and a "what it is".

--self-test builds small trees in a temporary folder and checks that an upward
include, an include of a sibling folder, a link-level cycle and an unknown folder
each fail, that a well-layered tree passes, and that a layout table with a folder at
another rank, a missing or extra folder, or a forbidden pair left out fails.

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


# ---- names: one prefix per file ----------------------------------------------------------

PREFIX_EXEMPT = {("cli/main.c", "main")}


def prefix_candidates(path, stem_count):
    d, base = os.path.split(path)
    stem = base[:-2]
    folder = os.path.basename(d)
    if stem == folder:
        return ["nw_" + stem]
    c = ["nw_" + folder + "_" + stem]
    if stem_count.get(stem, 0) == 1:
        c.insert(0, "nw_" + stem)
    return c


def named_by(sym, prefix):
    low = sym.lower()
    return low == prefix or low.startswith(prefix + "_")


def check_prefixes(objdir, root, layers):
    """Violations of the one-prefix-per-file rule over the product objects of objdir."""
    table = folder_table(layers)
    syms = object_symbols(objdir, root)
    files = {s: d for s, (d, _) in syms.items()
             if folder_of(s, table) is not None and os.path.exists(os.path.join(root, s))}
    stem_count = {}
    for f in files:
        st = os.path.basename(f)[:-2]
        stem_count[st] = stem_count.get(st, 0) + 1
    errs, chosen = [], {}
    for f in sorted(files):
        names = sorted(n for n in files[f] if (f, n) not in PREFIX_EXEMPT)
        if not names:
            continue
        cands = prefix_candidates(f, stem_count)
        fits = [p for p in cands if all(named_by(n, p) for n in names)]
        if fits:
            chosen[f] = fits[0]
            continue
        best = max(cands, key=lambda p: sum(named_by(n, p) for n in names))
        for n in names:
            if not named_by(n, best):
                errs.append("%s:1: exports %s; every symbol of this file must start with %s"
                            % (f, n, " or ".join(p + "_" for p in cands)))
        chosen[f] = best
    owner = {}
    for f, p in sorted(chosen.items()):
        if p in owner:
            errs.append("%s:1: prefix %s is also %s's" % (f, p, owner[p]))
        owner.setdefault(p, f)
    by_len = sorted(owner, key=len, reverse=True)
    for f in sorted(files):
        for n in sorted(files[f]):
            if (f, n) in PREFIX_EXEMPT or not named_by(n, chosen.get(f, "")):
                continue
            p = next(q for q in by_len if named_by(n, q))
            if owner[p] != f:
                errs.append("%s:1: exports %s, which reads as %s's (prefix %s)" % (f, n, owner[p], p))
    return errs


# ---- the table in docs/internals/layout.md is LAYERS ---------------------------------

LAYOUT_DOC = os.path.join("docs", "internals", "layout.md")
LAYOUT_HEADER = ["layer", "folder", "what it is", "may include"]


def doc_rows(text):
    """[(line number, [cells])] of the first table whose header is LAYOUT_HEADER."""
    rows, in_table = [], False
    for no, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s.startswith("|"):
            if in_table:
                break
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if not in_table:
            in_table = [c.lower() for c in cells] == LAYOUT_HEADER
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue  # the |---| line
        rows.append((no, cells))
    return rows


def expected_reach(rank):
    """What the "may include" cell of a row of this rank must say (None: rank 0)."""
    if rank == 0:
        return None
    return "layer 0" if rank == 1 else "layers 0\u2013%d" % (rank - 1)


def check_doc(path, layers, forbidden=()):
    """Problems where the table of path differs from layers / forbidden."""
    name = path
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        return ["%s:1: cannot read the layer table: %s" % (name, e.strerror)]
    rows = doc_rows(text)
    if not rows:
        return ["%s:1: no table with the header | %s |" % (name, " | ".join(LAYOUT_HEADER))]
    want = folder_table(layers)
    errs, seen = [], {}
    for no, cells in rows:
        if len(cells) != 4 or not cells[0].isdigit():
            errs.append("%s:%d: a row needs 4 cells, the first a rank" % (name, no))
            continue
        rank = int(cells[0])
        folders = re.findall(r"`([^`]+)/`", cells[1])
        if not folders:
            errs.append("%s:%d: no folder (`name/`) in the folder cell" % (name, no))
        if not cells[2]:
            errs.append("%s:%d: the \"what it is\" cell is empty" % (name, no))
        reach = expected_reach(rank)
        if reach and not re.search(re.escape(reach) + r"(?![0-9])", cells[3]):
            errs.append("%s:%d: the \"may include\" cell of layer %d must say \"%s\""
                        % (name, no, rank, reach))
        if reach is None and "layer" in cells[3]:
            errs.append("%s:%d: layer 0 includes no other layer" % (name, no))
        named = set(re.findall(r"not `([^`]+)/`", cells[3]))
        should = {b for a, b in forbidden if a in folders}
        for b in sorted(should - named):
            errs.append("%s:%d: FORBIDDEN keeps %s from %s/: say \"not `%s/`\""
                        % (name, no, ", ".join(f + "/" for f in folders), b, b))
        for b in sorted(named - should):
            errs.append("%s:%d: says \"not `%s/`\", which FORBIDDEN does not" % (name, no, b))
        peers = any(want.get(f, (0, False))[1] for f in folders)
        if peers and "its own row" not in cells[3]:
            errs.append("%s:%d: a peers row must say it may include \"its own row\"" % (name, no))
        for f in folders:
            if f in seen:
                errs.append("%s:%d: %s/ is listed twice" % (name, no, f))
            seen[f] = (rank, no)
    for f, (rank, no) in sorted(seen.items()):
        if f not in want:
            errs.append("%s:%d: %s/ is not in LAYERS (tools/check_layers.py)" % (name, no, f))
        elif want[f][0] != rank:
            errs.append("%s:%d: %s/ is at layer %d here, %d in LAYERS (tools/check_layers.py)"
                        % (name, no, f, rank, want[f][0]))
    for f in sorted(set(want) - set(seen)):
        errs.append("%s:1: %s/ (layer %d in LAYERS) has no row" % (name, f, want[f][0]))
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
    # the layout table: the right one passes; a rank, a folder, a forbidden pair wrong fails
    doc_layers = [(0, ["low"], False), (1, ["mid", "side"], False), (2, ["top"], False),
                  (3, ["peer", "peer2"], True)]
    doc_forbidden = [("top", "side")]
    good_doc = ("# T\n\n| layer | folder | what it is | may include |\n| --- | --- | --- | --- |\n"
                "| 0 | `low/` | the base | libc |\n"
                "| 1 | `mid/`, `side/` | two | layer 0 |\n"
                "| 2 | `top/` (`x.c`) | top | layers 0\u20131, not `side/` |\n"
                "| 3 | `peer/`, `peer2/` | peers | layers 0\u20132 and its own row |\n\ntext\n")
    doc_cases = [
        ("the layout table", good_doc, 0),
        ("a folder at another rank", good_doc.replace("| 2 | `top/`", "| 1 | `top/`"), 1),
        ("a folder left out", good_doc.replace("`mid/`, `side/`", "`mid/`"), 1),
        ("a folder not in LAYERS", good_doc.replace("`top/` (", "`top/`, `new/` ("), 1),
        ("a forbidden pair left out", good_doc.replace(", not `side/`", ""), 1),
        ("a forbidden pair not in FORBIDDEN", good_doc.replace("| layer 0 |", "| layer 0, not `low/` |"), 1),
        ("a wrong reach", good_doc.replace("layers 0\u20131", "layers 0\u20132"), 1),
        ("a peers row that does not say so", good_doc.replace(" and its own row", ""), 1),
        ("no table", "# T\n\nno table\n", 1),
    ]
    for name, text, want in doc_cases:
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "layout.md")
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)
            n = len(check_doc(p, doc_layers, doc_forbidden))
            if (1 if n else 0) != want:
                print("self-test: layout table, %s: expected %s, got %d problem(s)"
                      % (name, "a problem" if want else "none", n))
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
    # names: one prefix per file, and a name leads back to its file
    with tempfile.TemporaryDirectory() as d:
        cases = [
            ("well named", {"low/a.c": "int nw_a_x(void); int nw_a_x(void) { return 0; }\n",
                            "mid/a_b.c": "int nw_a_b_y(void); int nw_a_b_y(void) { return 0; }\n",
                            "top/top.c": "int nw_top(void); int nw_top(void) { return 0; }\n"}, 0),
            ("foreign prefix", {"low/a.c": "int nw_q_x(void); int nw_q_x(void) { return 0; }\n"}, 1),
            ("two prefixes", {"mid/b.c": "int nw_b_x(void); int nw_mid_b_y(void);\n"
                              "int nw_b_x(void) { return 0; } int nw_mid_b_y(void) { return 0; }\n"}, 1),
            ("reads as another file's", {"low/a.c": "int nw_a_b_z(void); int nw_a_b_z(void) { return 0; }\n",
                                         "mid/a_b.c": "int nw_a_b_y(void); int nw_a_b_y(void) { return 0; }\n"}, 1),
            ("shared stem needs the folder", {"low/x.c": "int nw_x_p(void); int nw_x_p(void) { return 0; }\n",
                                              "mid/x.c": "int nw_mid_x_q(void); int nw_mid_x_q(void) { return 0; }\n"}, 1),
        ]
        for name, src, want in cases:
            sub = os.path.join(d, name.replace(" ", "_").replace("'", ""))
            _tree(sub, src)
            obj = os.path.join(sub, "obj")
            for p in src:
                o = os.path.join(obj, p[:-2] + ".o")
                os.makedirs(os.path.dirname(o), exist_ok=True)
                subprocess.run([cc, "-c", os.path.join(sub, p), "-o", o], check=True)
            n = len(check_prefixes(obj, sub, layers))
            if (1 if n else 0) != want:
                print("self-test: names, %s: expected %s, got %d violation(s)"
                      % (name, "a violation" if want else "none", n))
                failed += 1
    if failed:
        return 1
    print("check_layers self-test: ok")
    return 0


def main(argv):
    root, objdir, tops, doc = ".", None, None, None
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
        elif a == "--doc" and args:
            doc = args.pop(0)
        else:
            print("usage: check_layers.py [--root DIR] [--dirs 'TOP...'] [--objects BUILD/obj] "
                  "[--doc LAYOUT.md] | --self-test",
                  file=sys.stderr)
            return 2
    errs = check_includes(root, LAYERS, tops, KNOWN_UPWARD, FORBIDDEN)
    errs += check_doc(doc or os.path.normpath(os.path.join(root, LAYOUT_DOC)), LAYERS, FORBIDDEN)
    if objdir:
        if not os.path.isdir(objdir):
            print("check_layers: %s: no object files (build first)" % objdir, file=sys.stderr)
            return 2
        errs += check_links(objdir, root, LAYERS, KNOWN_UPWARD, CYCLES_TOLERATED_IN, FORBIDDEN)
        errs += check_prefixes(objdir, root, LAYERS)
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
