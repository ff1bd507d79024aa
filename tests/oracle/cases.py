"""The admission cases the oracle sends: every NodePool and EC2NodeClass object in
tests/data and manifests/examples, with what the case data expects.

    from tests.oracle import cases
    all_cases, skipped = cases.load()

Sources (paths relative to the project root):
  tests/data/nodepool/*.yaml, tests/data/ec2nodeclass/*.yaml
        the table-driven cases (format: tests/unit/admitcase.h; written by
        tests/data/nodepool_cases.py and ec2nodeclass_cases.py): header, object, and for
        "op": "UPDATE" the old object
  tests/data/admission/*.json
        AdmissionReview bodies: those carrying a NodePool or EC2NodeClass object for
        CREATE or UPDATE are cases; the rest test the webhook's protocol handling
        (malformed bodies, DELETE, Pods) and are listed as skipped with the reason
  tests/data/gpu/nodepools.json
        NodePools for the GPU isolation policy
  manifests/examples/*.yaml, manifests/examples/invalid/*.yaml
        every NodePool/EC2NodeClass document; `# expect-error: PATH` lines mark the
        invalid ones

An UPDATE case whose old object the API server cannot store (so the transition cannot
be replayed there) says why in "old_invalid"; it is reported, not compared.

A case nodewarden deliberately decides more strictly than the API server (the GPU
isolation policy) carries the reason: "stricter" in a case file's JSON header or a GPU
case, `# oracle-stricter: REASON` in an example. The oracle fails when such a case
stops being stricter, as when any unmarked case disagrees.
"""
import glob
import json
import os

import yaml

from tests.oracle.upstream import ROOT

KINDS = {('karpenter.sh', 'NodePool'): 'nodepools',
         ('karpenter.k8s.aws', 'EC2NodeClass'): 'ec2nodeclasses'}


class Case:
    def __init__(self, name, obj, op='CREATE', old=None, expect=None, stricter=None):
        self.name = name            # e.g. nodepool/001-defaults
        self.obj = obj
        self.op = op
        self.old = old
        self.expect = expect        # 'allowed' | 'denied' | None (unknown)
        self.expect_errors = []     # expected error strings or paths (for the report)
        self.stricter = stricter    # reason nodewarden is stricter, or None
        self.old_invalid = None     # why the old object of an UPDATE cannot be stored
        api = obj.get('apiVersion', '') if isinstance(obj, dict) else ''
        self.group = api.split('/')[0] if '/' in api else ''
        self.kind = obj.get('kind', '') if isinstance(obj, dict) else ''
        self.plural = KINDS.get((self.group, self.kind))


def rel(p):
    return os.path.relpath(p, ROOT)


def load_table(dirname):
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'data', dirname, '*.yaml'))):
        with open(path) as f:
            docs = list(yaml.safe_load_all(f))
        if len(docs) < 2 or not isinstance(docs[0], dict) or 'expect' not in docs[0]:
            raise SystemExit('%s: not a case file (tests/unit/admitcase.h)' % rel(path))
        hdr = docs[0]
        op = hdr.get('op', 'CREATE')
        c = Case('%s/%s' % (dirname, os.path.basename(path)[:-5]), docs[1], op,
                 docs[2] if op == 'UPDATE' and len(docs) > 2 else None,
                 'allowed' if hdr['expect'] == 'allowed' else 'denied', hdr.get('stricter'))
        c.old_invalid = hdr.get('old_invalid')
        if isinstance(hdr['expect'], list):
            c.expect_errors = [e if isinstance(e, str) else '%s: ...%s...' % (e.get('path'), e.get('contains', ''))
                               for e in hdr['expect']]
        out.append(c)
    return out


def load_reviews(skipped):
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, 'tests', 'data', 'admission', '*.json'))):
        name = 'admission/' + os.path.basename(path)[:-5]
        if os.path.basename(path).startswith('bad-'):
            skipped.append((name, 'a malformed AdmissionReview (webhook protocol case, see cases.tsv)'))
            continue
        try:
            with open(path) as f:
                rv = json.load(f)
            req = rv['request']
            kind = req['kind']
            op = req['operation']
        except (ValueError, KeyError, TypeError):
            skipped.append((name, 'not a well-formed AdmissionReview (webhook protocol case)'))
            continue
        if (kind.get('group'), kind.get('kind')) not in KINDS:
            skipped.append((name, 'a %s, not a Karpenter object' % kind.get('kind')))
            continue
        if op not in ('CREATE', 'UPDATE') or not isinstance(req.get('object'), dict):
            skipped.append((name, '%s: no object to validate' % op))
            continue
        out.append(Case(name, req['object'], op, req.get('oldObject') if op == 'UPDATE' else None))
    return out


def load_gpu():
    out = []
    path = os.path.join(ROOT, 'tests', 'data', 'gpu', 'nodepools.json')
    with open(path) as f:
        entries = json.load(f)
    for i, e in enumerate(entries):
        obj = dict({'apiVersion': 'karpenter.sh/v1', 'kind': 'NodePool'}, **e['nodepool'])
        c = Case('gpu/%02d %s' % (i + 1, e['name']), obj, stricter=e.get('stricter'))
        # nodewarden's verdict after its own mutating webhook ran: "after"
        c.expect = 'allowed' if e.get('after', 'allow') == 'allow' else 'denied'
        out.append(c)
    return out


def load_examples():
    out = []
    files = sorted(glob.glob(os.path.join(ROOT, 'manifests', 'examples', '*.yaml')) +
                   glob.glob(os.path.join(ROOT, 'manifests', 'examples', 'invalid', '*.yaml')))
    for path in files:
        with open(path) as f:
            text = f.read()
        errs = [l.split(':', 1)[1].strip() for l in text.splitlines() if l.startswith('# expect-error:')]
        stricter = [l.split(':', 1)[1].strip() for l in text.splitlines() if l.startswith('# oracle-stricter:')]
        for i, d in enumerate(yaml.safe_load_all(text)):
            if not isinstance(d, dict):
                continue
            c = Case('examples/%s#%d' % (rel(path)[len('manifests/examples/'):], i + 1), d,
                     expect='denied' if errs else 'allowed',
                     stricter=stricter[0] if stricter else None)
            c.expect_errors = errs
            if c.plural:
                out.append(c)
    return out


def load():
    skipped = []
    out = (load_table('nodepool') + load_table('ec2nodeclass') + load_reviews(skipped) +
           load_gpu() + load_examples())
    for c in out:
        if not c.plural:
            raise SystemExit('%s: not a NodePool or EC2NodeClass' % c.name)
        if c.op == 'UPDATE' and not isinstance(c.old, dict):
            raise SystemExit('%s: UPDATE without an old object' % c.name)
    return out, skipped
