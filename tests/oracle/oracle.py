#!/usr/bin/env python3
"""The admission oracle: every NodePool/EC2NodeClass case (tests/oracle/cases.py) sent to

  upstream    a kube-apiserver (+ etcd, tests/k8s/controlplane.py) with Karpenter
              v1.14.1's own CRDs (tests/oracle/upstream.py) and nothing else: no
              nodewarden, no webhooks; its verdict is the API server's own, from the
              CRDs' OpenAPI schema and CEL rules;
  ours        a second kube-apiserver with nodewarden's CRDs (manifests/crds);
  nodewarden  `nodewarden serve`'s webhook over HTTPS, as kube-apiserver calls it:
              /mutate, its JSON patch applied, then /validate (the production path;
              GPU isolation policy at its default, enforce).

CREATE cases go to the API servers as `POST ...?dryRun=All`; an UPDATE case creates its
old object for real, sends the new one as `PUT ...?dryRun=All` and deletes it again
(nodewarden gets the old object as the API server stored it, defaults applied).

One line per case (verdicts, and whether the error messages are the same), then a
summary. Exit 1 when
  - our CRDs and Karpenter's disagree on any case, verdict or messages (parity);
  - nodewarden's verdict differs from Karpenter's CRDs' on a case not marked
    "stricter" (or a case marked stricter is no longer refused by nodewarden alone);
  - a request fails, or fewer cases than expected were found.
Message differences between nodewarden and the API server are reported, not fatal.

    python3 -m tests.oracle.oracle [--json FILE] [--verbose]
"""
import argparse
import base64
import concurrent.futures
import copy
import http.client
import json
import os
import shutil
import ssl
import sys
import tempfile
import threading
import time

from tests.oracle import cases as casemod
from tests.oracle import upstream
from tests.oracle.upstream import ROOT

sys.path.insert(0, os.path.join(ROOT, 'tests', 'k8s'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'e2e'))
from controlplane import ControlPlane  # noqa: E402  (tests/k8s/controlplane.py)
from harness import webhook as webhook_lib  # noqa: E402  (tests/e2e/harness/webhook.py: `nodewarden serve` over TLS)

OURS = os.path.join(ROOT, 'manifests', 'crds')
MIN_CASES = {'nodepool': 150, 'ec2nodeclass': 120, 'gpu': 15, 'examples': 8, 'admission': 2}
WORKERS = 8


class Verdict:
    def __init__(self, allowed, errors=(), error=None, old_refused=False):
        self.allowed = allowed      # True / False / None (request failed)
        self.errors = list(errors)  # "field: message" strings, the API server's order
        self.error = error          # why the request failed
        self.old_refused = old_refused  # UPDATE: the old object could not be stored

    def word(self):
        return 'error' if self.allowed is None else ('allow' if self.allowed else 'deny')


def causes_of(status):
    """'field: message' for each cause of a Status (kube-apiserver's or nodewarden's)."""
    det = (status or {}).get('details') or {}
    out = []
    for c in det.get('causes') or []:
        f = c.get('field')
        out.append('%s: %s' % (f, c.get('message', '')) if f else c.get('message', ''))
    if not out and status and status.get('message'):
        out.append(status['message'])
    return out


def same_messages(a, b):
    return sorted(a.errors) == sorted(b.errors)


# ---- the API servers -------------------------------------------------------------
class Api:
    """REST client for one control plane (admin client certificate), one keep-alive
    connection per thread."""

    def __init__(self, cp, label):
        self.cp = cp
        self.label = label
        host, port = cp.server[len('https://'):].rsplit(':', 1)
        self.host, self.port = host.strip('[]'), int(port)
        self.ctx = ssl.create_default_context(cafile=cp.ca_file)
        self.ctx.load_cert_chain(os.path.join(cp.pki, 'admin.crt'), os.path.join(cp.pki, 'admin.key'))
        self.local = threading.local()

    def request(self, method, path, body=None):
        for attempt in range(2):
            c = getattr(self.local, 'conn', None)
            if c is None:
                c = self.local.conn = http.client.HTTPSConnection(self.host, self.port, timeout=30,
                                                                 context=self.ctx)
            try:
                c.request(method, path, body=json.dumps(body) if body is not None else None,
                          headers={'Content-Type': 'application/json', 'Accept': 'application/json'})
                r = c.getresponse()
                data = r.read()
                try:
                    return r.status, json.loads(data) if data else {}
                except ValueError:
                    return r.status, {'message': data.decode(errors='replace')}
            except (http.client.HTTPException, OSError):
                c.close()
                self.local.conn = None
                if attempt:
                    raise

    def install(self, crd_dir):
        files = sorted(os.path.join(crd_dir, f) for f in os.listdir(crd_dir) if f.endswith('.yaml'))
        self.cp.kubectl('create', *sum((['-f', f] for f in files), []), timeout=60)
        self.cp.kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all', timeout=70)
        # Established, then served: the REST handlers follow the CRD informer
        deadline = time.monotonic() + 30
        for path in ('/apis/karpenter.sh/v1/nodepools', '/apis/karpenter.k8s.aws/v1/ec2nodeclasses'):
            while self.request('GET', path)[0] != 200:
                if time.monotonic() > deadline:
                    raise RuntimeError('%s: %s not served 30 s after Established' % (self.label, path))
                time.sleep(0.1)

    def verdict(self, case, idx):
        base = '/apis/%s/%s' % (case.obj.get('apiVersion'), case.plural)
        if case.op == 'CREATE':
            st, body = self.request('POST', base + '?dryRun=All', case.obj)
            return self.decode(st, body), None
        name = 'oracle-update-%d' % idx
        old = copy.deepcopy(case.old)
        old.setdefault('metadata', {})['name'] = name
        st, stored = self.request('POST', base, old)
        if st != 201:
            return Verdict(None, error='the old object was refused (%d): %s' % (
                st, '; '.join(causes_of(stored))), old_refused=True), None
        new = copy.deepcopy(case.obj)
        new.setdefault('metadata', {})['name'] = name
        new['metadata']['resourceVersion'] = stored['metadata']['resourceVersion']
        try:
            st, body = self.request('PUT', '%s/%s?dryRun=All' % (base, name), new)
            return self.decode(st, body), stored
        finally:
            self.request('DELETE', '%s/%s' % (base, name))

    @staticmethod
    def decode(st, body):
        if st in (200, 201):
            return Verdict(True)
        if st in (400, 404, 422):
            return Verdict(False, causes_of(body))
        return Verdict(None, error='HTTP %d: %s' % (st, body.get('message', body)))


class HeldControlPlane:
    """A ControlPlane started and stopped by a thread of its own that lives until
    stop(), so two start side by side (their processes die with the starting thread)."""

    def __init__(self, d):
        self.cp = ControlPlane(d, components=('etcd', 'apiserver'))
        self.ready = threading.Event()
        self.done = threading.Event()
        self.exc = None
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def run(self):
        try:
            self.cp.start()
        except BaseException as e:   # reported by wait()
            self.exc = e
            self.ready.set()
            return
        self.ready.set()
        self.done.wait()
        self.cp.stop()

    def wait(self):
        self.ready.wait()
        if self.exc:
            raise self.exc
        return self.cp

    def stop(self):
        self.done.set()
        self.t.join(30)


# ---- nodewarden ----------------------------------------------------------------------
class Nodewarden:
    def __init__(self, workdir):
        certs = os.path.join(workdir, 'certs')
        webhook_lib.gen_certs(certs)
        os.makedirs(os.path.join(workdir, 'nodewarden'))
        self.srv = webhook_lib.Server(certs, workdir=os.path.join(workdir, 'nodewarden'))
        self.local = threading.local()

    def post(self, route, review):
        c = getattr(self.local, 'conn', None)
        if c is None:
            c = self.local.conn = self.srv.conn(timeout=30)
        st, _, data = self.srv.request('POST', route, body=json.dumps(review), conn=c)
        if st != 200:
            raise RuntimeError('nodewarden %s: HTTP %d: %s' % (route, st, data[:300]))
        return json.loads(data)['response']

    def verdict(self, case, idx, stored_old):
        api = case.obj.get('apiVersion', '')
        group, _, version = api.rpartition('/')
        obj = copy.deepcopy(case.obj)
        req = {'uid': 'oracle-%d' % idx, 'kind': {'group': group, 'version': version, 'kind': case.kind},
               'resource': {'group': group, 'version': version, 'resource': case.plural},
               'name': (obj.get('metadata') or {}).get('name', ''), 'operation': case.op,
               'userInfo': {'username': 'oracle'}, 'object': obj, 'oldObject': None, 'dryRun': True}
        if case.op == 'UPDATE':
            old = copy.deepcopy(stored_old if stored_old is not None else case.old)
            req['oldObject'] = old
        review = {'apiVersion': 'admission.k8s.io/v1', 'kind': 'AdmissionReview', 'request': req}
        m = self.post('/mutate', review)
        if not m.get('allowed'):
            return Verdict(False, causes_of(m.get('status')))
        if m.get('patch'):
            req['object'] = apply_patch(obj, json.loads(base64.b64decode(m['patch'])))
        v = self.post('/validate', review)
        return Verdict(bool(v.get('allowed')), [] if v.get('allowed') else causes_of(v.get('status')))

    def stop(self):
        self.srv.stop()


def apply_patch(doc, ops):
    """RFC 6902 add/replace/remove, what nodewarden's mutate handlers emit."""
    for op in ops:
        parts = [p.replace('~1', '/').replace('~0', '~') for p in op['path'].split('/')[1:]]
        if not parts:
            doc = op.get('value')
            continue
        parent = doc
        for p in parts[:-1]:
            parent = parent[int(p)] if isinstance(parent, list) else parent[p]
        last = parts[-1]
        if op['op'] in ('add', 'replace'):
            if isinstance(parent, list):
                if last == '-':
                    parent.append(op['value'])
                elif op['op'] == 'add':
                    parent.insert(int(last), op['value'])
                else:
                    parent[int(last)] = op['value']
            else:
                parent[last] = op['value']
        elif op['op'] == 'remove':
            del parent[int(last) if isinstance(parent, list) else last]
        else:
            raise ValueError('unsupported patch op %r' % op['op'])
    return doc


# ---- the run ---------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--json', help='also write the per-case results here')
    ap.add_argument('--verbose', action='store_true', help='print both error lists on every message difference')
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    allcases, skipped = casemod.load()
    counts = {}
    for c in allcases:
        counts[c.name.split('/')[0]] = counts.get(c.name.split('/')[0], 0) + 1
    problems = ['too few %s cases: %d (expected at least %d)' % (k, counts.get(k, 0), n)
                for k, n in MIN_CASES.items() if counts.get(k, 0) < n]
    up_dir = os.path.dirname(upstream.crd_paths()[upstream.NAMES[0]])

    work = tempfile.mkdtemp(prefix='nw-oracle-')
    held = []
    nw = None
    try:
        held = [HeldControlPlane(os.path.join(work, 'upstream')), HeldControlPlane(os.path.join(work, 'ours'))]
        nw = Nodewarden(work)
        apis = [Api(held[0].wait(), 'upstream'), Api(held[1].wait(), 'ours')]
        t_up = time.monotonic() - t0
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            list(ex.map(lambda a, d: a.install(d), apis, [up_dir, OURS]))

        def run_case(i):
            c = allcases[i]
            (vu, stored), (vo, _) = apis[0].verdict(c, i), apis[1].verdict(c, i)
            return vu, vo, nw.verdict(c, i, stored)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            results = list(ex.map(run_case, range(len(allcases))))
    finally:
        if nw:
            nw.stop()
        for h in held:
            h.stop()
        shutil.rmtree(work, ignore_errors=True)

    rows = []
    n = len(allcases)
    agree = stricter = msg_same = both_deny = parity_ok = expect_ok = na = 0
    w = max(len(c.name) for c in allcases)
    print('%-*s  %-6s  %-8s %-8s %-10s  %s' % (w, 'case', 'op', 'upstream', 'ours', 'nodewarden', 'messages'))
    for c, (vu, vo, vn) in zip(allcases, results):
        notes = []
        if vu.old_refused and vo.old_refused and c.old_invalid:
            na += 1
            print('%-*s  %-6s  %-8s %-8s %-10s  %-6s %s  # %s' % (
                w, c.name, c.op, 'n/a', 'n/a', vn.word(), '-', 'n/a', 'old object cannot be stored: ' + c.old_invalid))
            rows.append({'case': c.name, 'op': c.op, 'verdict': 'n/a', 'nodewarden': vn.word(),
                         'why': c.old_invalid})
            continue
        if c.old_invalid:
            problems.append('%s: marked old_invalid but the API servers stored the old object' % c.name)
        for label, v in (('upstream', vu), ('ours', vo), ('nodewarden', vn)):
            if v.allowed is None:
                problems.append('%s: %s: %s' % (c.name, label, v.error))
        if vu.allowed == vo.allowed and same_messages(vu, vo):
            parity_ok += 1
        else:
            problems.append('%s: our CRDs say %s %s, Karpenter\'s %s %s' % (
                c.name, vo.word(), vo.errors, vu.word(), vu.errors))
        if c.expect is None or c.stricter or (c.expect == 'allowed') == vu.allowed:
            expect_ok += 1
        if vn.allowed == vu.allowed:
            agree += 1
            verdict = 'agree'
            if c.stricter:
                problems.append('%s: marked stricter (%s) but nodewarden and the API server agree (%s)'
                                % (c.name, c.stricter, vu.word()))
        elif c.stricter and vu.allowed and vn.allowed is False:
            stricter += 1
            verdict = 'stricter'
            notes.append('stricter by design: ' + c.stricter)
        else:
            verdict = 'DISAGREE'
            problems.append('%s: nodewarden says %s %s, Karpenter\'s CRDs %s %s' % (
                c.name, vn.word(), vn.errors, vu.word(), vu.errors))
        if vu.allowed is False and vn.allowed is False:
            both_deny += 1
            if same_messages(vu, vn):
                msg_same += 1
                mword = 'same'
            else:
                mword = 'differ'
                only_up = [e for e in vu.errors if e not in vn.errors]
                only_nw = [e for e in vn.errors if e not in vu.errors]
                notes.append('api-server only: %s; nodewarden only: %s' % (only_up, only_nw)
                             if args.verbose or len(str(only_up) + str(only_nw)) < 400 else
                             '%d vs %d errors differ' % (len(only_up), len(only_nw)))
        else:
            mword = '-'
        print('%-*s  %-6s  %-8s %-8s %-10s  %-6s %s%s' % (
            w, c.name, c.op, vu.word(), vo.word(), vn.word(), mword, verdict,
            ('  # ' + '; '.join(notes)) if notes else ''))
        rows.append({'case': c.name, 'op': c.op, 'upstream': vu.word(), 'ours': vo.word(),
                     'nodewarden': vn.word(), 'verdict': verdict, 'messages': mword,
                     'upstream_errors': vu.errors, 'nodewarden_errors': vn.errors,
                     'stricter': c.stricter})
    for name, why in skipped:
        print('skipped %s: %s' % (name, why))
    m = n - na   # cases compared
    summary = {
        'cases': n, 'by_source': counts, 'skipped_files': len(skipped), 'not_replayable': na,
        'compared': m, 'verdicts_agree': agree, 'stricter_by_design': stricter,
        'verdicts_disagree': m - agree - stricter,
        'both_refuse': both_deny, 'messages_same': msg_same,
        'our_crds_agree': parity_ok, 'case_data_agrees_with_api_server': expect_ok,
        'seconds': round(time.monotonic() - t0, 1), 'control_planes_up_seconds': round(t_up, 1),
    }
    print('oracle: %d cases (%s), %d compared (%d UPDATE not replayable; %d files skipped); '
          'against Karpenter v%s\'s CRDs on kube-apiserver: nodewarden\'s verdict agrees on %d/%d, '
          'stricter by design on %d, disagrees on %d; error messages the same on %d of the %d '
          'both refuse; our CRDs agree with Karpenter\'s on %d/%d (verdicts and messages); case '
          'data expectations agree on %d/%d; %.1f s (control planes up after %.1f s)' % (
              n, ', '.join('%s %d' % kv for kv in sorted(counts.items())), m, na, len(skipped),
              upstream.VERSION.lstrip('v'), agree, m, stricter, m - agree - stricter, msg_same,
              both_deny, parity_ok, m, expect_ok, m, summary['seconds'], t_up))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump({'summary': summary, 'cases': rows}, f, indent=1)
    for p in problems:
        print('FAIL: ' + p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
