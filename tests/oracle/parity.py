#!/usr/bin/env python3
"""CRD parity: nodewarden's CRDs against Karpenter's own, field by field.

    python3 -m tests.oracle.parity [--ours DIR]...   (default: manifests/crds and the chart's crds/)

Every validation-relevant part of each CustomResourceDefinition is compared with
upstream's (tests/oracle/upstream.py fetches Karpenter's CRDs through the Go module
proxy): group, names, scope, each version's served/storage flags, subresources and
printer columns, and in the openAPIV3Schema every keyword at every node (type, format,
enum in order, pattern, min/max*, required, default, nullable, list and map types, list
map keys, x-kubernetes-* markers and every x-kubernetes-validations rule with its
message, messageExpression, reason, fieldPath and optionalOldSelf, in order). Only
descriptions are left out of that comparison, because ours are written in our own words;
instead the check fails when a node upstream describes has no description of ours, or
when one of ours is upstream's text verbatim.

Every difference is printed with its exact path, e.g.
  nodepools.karpenter.sh v1: spec.template.spec.requirements[*].key: pattern: ours '...' upstream '...'
and the exit status is 1 when there is any.
"""
import argparse
import json
import os
import sys

import yaml

from tests.oracle import upstream

ROOT = upstream.ROOT
DEFAULT_DIRS = (os.path.join(ROOT, 'manifests', 'crds'),
                os.path.join(ROOT, 'manifests', 'chart', 'nodewarden', 'crds'))
RULE_KEYS = ('rule', 'message', 'messageExpression', 'reason', 'fieldPath', 'optionalOldSelf')
# keywords holding sub-schemas; everything else at a schema node is compared as a value
SUB = ('properties', 'items', 'additionalProperties', 'anyOf', 'allOf', 'oneOf', 'not')
SET_KEYWORDS = ('required',)   # order carries no meaning


def j(v):
    return json.dumps(v, sort_keys=True)


def norm_text(t):
    return ' '.join((t or '').split())


class Diff:
    def __init__(self, crd):
        self.crd = crd
        self.out = []
        self.rules = 0
        self.nodes = 0
        self.described = 0
        self.want_desc = 0

    def add(self, path, what, ours, theirs):
        self.out.append('%s: %s: %s: ours %s upstream %s' % (
            self.crd, path or '<root>', what, ours, theirs))


def child_path(path, key, sub):
    if key == 'properties':
        return (path + '.' if path else '') + sub
    if key == 'items':
        return path + '[*]'
    if key == 'additionalProperties':
        return path + '{*}'
    return '%s(%s[%s])' % (path, key, sub)


def cmp_schema(d, path, ours, theirs):
    d.nodes += 1
    if not isinstance(ours, dict) or not isinstance(theirs, dict):
        if j(ours) != j(theirs):
            d.add(path, 'schema', j(ours), j(theirs))
        return
    if 'description' in theirs:
        d.want_desc += 1
        if 'description' not in ours:
            d.add(path, 'description', 'missing', 'present')
        elif norm_text(ours['description']) == norm_text(theirs['description']):
            d.add(path, 'description', 'copied verbatim from upstream', '(write our own)')
        else:
            d.described += 1
    d.rules += len(theirs.get('x-kubernetes-validations') or [])
    keys = sorted((set(ours) | set(theirs)) - {'description'})
    for k in keys:
        a, b = ours.get(k), theirs.get(k)
        if k not in ours or k not in theirs:
            d.add(path, k, 'absent' if k not in ours else j(a), 'absent' if k not in theirs else j(b))
            continue
        if k == 'properties':
            for name in sorted(set(a) | set(b)):
                p = child_path(path, k, name)
                if name not in a:
                    d.add(p, 'field', 'absent', 'present')
                elif name not in b:
                    d.add(p, 'field', 'present', 'absent')
                else:
                    cmp_schema(d, p, a[name], b[name])
        elif k in ('items', 'additionalProperties', 'not') and isinstance(a, dict) and isinstance(b, dict):
            cmp_schema(d, child_path(path, k, ''), a, b)
        elif k in ('anyOf', 'allOf', 'oneOf'):
            if len(a) != len(b):
                d.add(path, k, '%d branches' % len(a), '%d branches' % len(b))
            for i, (x, y) in enumerate(zip(a, b)):
                cmp_schema(d, child_path(path, k, i), x, y)
        elif k == 'x-kubernetes-validations':
            if len(a) != len(b):
                d.add(path, k, '%d rules' % len(a), '%d rules' % len(b))
            for i in range(max(len(a), len(b))):
                x = a[i] if i < len(a) else {}
                y = b[i] if i < len(b) else {}
                for rk in sorted(set(x) | set(y) | set(RULE_KEYS)):
                    if j(x.get(rk)) != j(y.get(rk)):
                        d.add(path, '%s[%d].%s' % (k, i, rk), j(x.get(rk)), j(y.get(rk)))
        elif k in SET_KEYWORDS:
            if sorted(a) != sorted(b):
                d.add(path, k, j(sorted(a)), j(sorted(b)))
        elif j(a) != j(b):
            d.add(path, k, j(a), j(b))


def strip_desc(cols):
    return [{k: v for k, v in c.items() if k != 'description'} for c in cols or []]


def cmp_crd(ours, theirs):
    name = theirs['metadata']['name']
    d = Diff(name)
    if ours['metadata']['name'] != name:
        d.add('metadata.name', 'value', j(ours['metadata']['name']), j(name))
    os_, ts = ours['spec'], theirs['spec']
    for k in sorted((set(os_) | set(ts)) - {'versions'}):
        if j(os_.get(k)) != j(ts.get(k)):
            d.add('spec.' + k, 'value', j(os_.get(k)), j(ts.get(k)))
    ov = {v['name']: v for v in os_.get('versions', [])}
    tv = {v['name']: v for v in ts.get('versions', [])}
    if list(ov) != list(tv):
        d.add('spec.versions', 'names', j(list(ov)), j(list(tv)))
    for vn in tv:
        if vn not in ov:
            continue
        a, b = ov[vn], tv[vn]
        vd = Diff('%s %s' % (name, vn))
        for k in sorted((set(a) | set(b)) - {'schema', 'additionalPrinterColumns', 'name'}):
            if j(a.get(k)) != j(b.get(k)):
                vd.add('spec.versions[%s].%s' % (vn, k), 'value', j(a.get(k)), j(b.get(k)))
        if j(strip_desc(a.get('additionalPrinterColumns'))) != j(strip_desc(b.get('additionalPrinterColumns'))):
            vd.add('spec.versions[%s].additionalPrinterColumns' % vn, 'value',
                   j(strip_desc(a.get('additionalPrinterColumns'))),
                   j(strip_desc(b.get('additionalPrinterColumns'))))
        cmp_schema(vd, '', a['schema']['openAPIV3Schema'], b['schema']['openAPIV3Schema'])
        d.out += vd.out
        for f in ('rules', 'nodes', 'described', 'want_desc'):
            setattr(d, f, getattr(d, f) + getattr(vd, f))
    return d


def load(path):
    with open(path) as f:
        docs = [x for x in yaml.safe_load_all(f) if x]
    if len(docs) != 1 or docs[0].get('kind') != 'CustomResourceDefinition':
        raise SystemExit('%s: expected one CustomResourceDefinition' % path)
    return docs[0]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--ours', action='append', help='directory of our CRDs (repeatable)')
    args = ap.parse_args(argv)
    dirs = args.ours or list(DEFAULT_DIRS)
    up = upstream.crd_paths()
    total = rules = nodes = described = want = 0
    for dr in dirs:
        for fname, upath in up.items():
            opath = os.path.join(dr, fname)
            if not os.path.isfile(opath):
                print('%s: missing (upstream has %s)' % (opath, fname))
                total += 1
                continue
            d = cmp_crd(load(opath), load(upath))
            for line in d.out:
                print('%s: %s' % (os.path.relpath(opath, ROOT), line))
            total += len(d.out)
            if dr == dirs[0]:
                rules += d.rules
                nodes += d.nodes
                described += d.described
                want += d.want_desc
            print('parity %s: %d schema nodes, %d CEL rules, %d differences' % (
                os.path.relpath(opath, ROOT), d.nodes, d.rules, len(d.out)))
    print('parity: %d CRD files in %d directories against %s@%s; %d schema nodes and %d CEL rules '
          'compared per copy; descriptions of ours on %d of the %d nodes upstream describes; '
          '%d differences' % (len(up) * len(dirs), len(dirs), upstream.MODULE, upstream.VERSION,
                              nodes, rules, described, want, total))
    return 1 if total else 0


if __name__ == '__main__':
    sys.exit(main())
