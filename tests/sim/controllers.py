"""Control-plane stand-ins: kube-scheduler, a kubelet stand-in for pod status, the
DaemonSet, Deployment and ReplicaSet controllers, the garbage collector, the
namespace controller, the disruption (PDB) controller, the NoExecute taint manager,
the pod GC for deleted nodes; and the binding / eviction logic of the registry."""
import decimal
import hashlib
import json
import math
import threading
import time

import kselectors as sel
import podtopo
from store import ApiError, jcopy, now_iso, parse_iso

# ---- quantities -------------------------------------------------------------------------

_SUFFIX = {'n': decimal.Decimal('1e-9'), 'u': decimal.Decimal('1e-6'), 'm': decimal.Decimal('1e-3'), '': 1,
           'k': 10 ** 3, 'M': 10 ** 6, 'G': 10 ** 9, 'T': 10 ** 12, 'P': 10 ** 15, 'E': 10 ** 18,
           'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60}



BROKEN_GPU_LABEL = 'sim.nodewarden.io/broken-gpu'


def _asks_nvidia(pod):
    """does a container of the pod request or limit an NVIDIA GPU or MIG slice"""
    for c in (pod.get('spec') or {}).get('containers') or []:
        r = c.get('resources') or {}
        for part in ('requests', 'limits'):
            if any(k == 'nvidia.com/gpu' or k.startswith('nvidia.com/mig-') for k in (r.get(part) or {})):
                return True
    return False


def quantity(v):
    """resource.Quantity (string or JSON number) -> Decimal. Bad input -> ValueError."""
    if isinstance(v, bool):
        raise ValueError('bad quantity %r' % (v,))
    if isinstance(v, (int, float)):
        return decimal.Decimal(str(v))
    s = str(v).strip()
    import re
    m = re.match(r'^([+-]?(?:\d+\.?\d*|\.\d+))(?:([eE][+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$', s)
    if not m:
        raise ValueError('quantities must match the regular expression \'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$\': %r' % s)
    num = decimal.Decimal(m.group(1))
    if m.group(2):
        return num * decimal.Decimal(10) ** int(m.group(2)[1:])
    return num * decimal.Decimal(_SUFFIX[m.group(3) or ''])


def _reqs(container):
    out = {}
    for k, v in (((container or {}).get('resources') or {}).get('requests') or {}).items():
        try:
            out[k] = quantity(v)
        except ValueError:
            pass
    return out


def pod_requests(pod):
    """Effective requests (sidecar-aware, as k8s.io/component-helpers resource/helpers.go
    PodRequests) as {resource: Decimal}."""
    spec = pod.get('spec') or {}
    apps = {}
    for c in spec.get('containers') or []:
        for k, v in _reqs(c).items():
            apps[k] = apps.get(k, 0) + v
    sidecars = {}
    peak = {}
    for c in spec.get('initContainers') or []:
        r = _reqs(c)
        if c.get('restartPolicy') == 'Always':
            for k, v in r.items():
                sidecars[k] = sidecars.get(k, 0) + v
            cand = dict(sidecars)
        else:
            cand = dict(sidecars)
            for k, v in r.items():
                cand[k] = cand.get(k, 0) + v
        for k, v in cand.items():
            peak[k] = max(peak.get(k, 0), v)
    out = {}
    for k in set(apps) | set(sidecars) | set(peak):
        out[k] = max(apps.get(k, 0) + sidecars.get(k, 0), peak.get(k, 0))
    for k, v in ((spec.get('resources') or {}).get('requests') or {}).items():
        if k in ('cpu', 'memory') or k.startswith('hugepages-'):
            out[k] = quantity(v)
    for k, v in (spec.get('overhead') or {}).items():
        out[k] = out.get(k, 0) + quantity(v)
    return out


def _cond(obj, ctype):
    for c in (obj.get('status') or {}).get('conditions') or []:
        if c.get('type') == ctype:
            return c
    return None


def node_ready(node):
    c = _cond(node, 'Ready')
    return c is not None and c.get('status') == 'True'


def pod_ready(pod):
    c = _cond(pod, 'Ready')
    return c is not None and c.get('status') == 'True'


def _set_cond(obj, cond):
    st = obj.setdefault('status', {})
    conds = st.setdefault('conditions', [])
    for i, c in enumerate(conds):
        if c.get('type') == cond['type']:
            if c.get('status') == cond['status']:
                cond['lastTransitionTime'] = c.get('lastTransitionTime', cond.get('lastTransitionTime'))
            conds[i] = cond
            return
    conds.append(cond)


def _owned_by(obj, uid):
    return any(r.get('uid') == uid and r.get('controller') for r in obj['metadata'].get('ownerReferences') or [])


def _owner_ref(owner, kind):
    return {'apiVersion': 'apps/v1', 'kind': kind, 'name': owner['metadata']['name'],
            'uid': owner['metadata']['uid'], 'controller': True, 'blockOwnerDeletion': True}


def _terminal(pod):
    return (pod.get('status') or {}).get('phase') in ('Succeeded', 'Failed')


# ---- binding and eviction (registry logic, called by the HTTP layer and controllers) --------

def bind_pod(store, ns, name, node_name):
    rt = store.rtype('pods')
    with store.lock:
        pod = store.get('pods', ns, name)
        if pod is None:
            raise ApiError(404, 'NotFound', 'pods "%s" not found' % name, {'name': name, 'kind': 'pods'})
        if pod['metadata'].get('deletionTimestamp'):
            raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on pods/binding "%s": pod %s is being deleted, cannot be assigned to a host' % (name, name))
        cur = (pod.get('spec') or {}).get('nodeName')
        if cur:
            raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on pods/binding "%s": pod %s is already assigned to node "%s"' % (name, name, cur))
        pod['spec']['nodeName'] = node_name
        # the binding clears status.nominatedNodeName (kube-apiserver's
        # ClearingNominatedNodeNameAfterBinding, on by default since 1.35)
        (pod.get('status') or {}).pop('nominatedNodeName', None)
        _set_cond(pod, {'type': 'PodScheduled', 'status': 'True', 'lastProbeTime': None,
                        'lastTransitionTime': now_iso(store.clock())})
        # pod is this function's copy: handed to the store (the result is read only)
        return store.commit_update(rt, pod, expect_rv=pod['metadata']['resourceVersion'], owned=True)


def pdb_numbers(store, pdb, pods=None):
    """(expected, currentHealthy, desiredHealthy, disruptionsAllowed) as the disruption
    controller computes them."""
    ns = pdb['metadata']['namespace']
    spec = pdb.get('spec') or {}
    selector = spec.get('selector')
    disrupted = (pdb.get('status') or {}).get('disruptedPods') or {}
    if pods is None:
        pods = store.peek('pods', ns)
    matched = [p for p in pods if selector is not None and
               sel.selector_matches(selector, p['metadata'].get('labels') or {}) and not _terminal(p)]
    healthy = sum(1 for p in matched if pod_ready(p) and not p['metadata'].get('deletionTimestamp')
                  and p['metadata']['name'] not in disrupted)
    expected = len(matched)
    scales = {}
    ok = True
    for p in matched:
        ref = next((r for r in p['metadata'].get('ownerReferences') or [] if r.get('controller')), None)
        if ref is None:
            ok = False
            break
        if ref.get('kind') == 'ReplicaSet':
            rs = next((r for r in store.peek('replicasets', ns) if r['metadata']['uid'] == ref.get('uid')), None)
            if rs is None:
                ok = False
                break
            scales[ref['uid']] = int((rs.get('spec') or {}).get('replicas', 1))
        elif ref.get('kind') == 'DaemonSet':
            ds = next((d for d in store.peek('daemonsets', ns) if d['metadata']['uid'] == ref.get('uid')), None)
            scales[ref['uid']] = int(((ds or {}).get('status') or {}).get('desiredNumberScheduled', 0))
        else:
            ok = False
            break
    mn, mx = spec.get('minAvailable'), spec.get('maxUnavailable')
    if (mx is not None or isinstance(mn, str)) and ok and scales:
        expected = sum(scales.values())

    def pct(v):
        return math.ceil(int(v[:-1]) * expected / 100.0)
    if mn is not None:
        desired = pct(mn) if isinstance(mn, str) else int(mn)
    elif mx is not None:
        desired = max(0, expected - (pct(mx) if isinstance(mx, str) else int(mx)))
    else:
        desired = 0
    return expected, healthy, desired, max(0, healthy - desired)


def _delete_pod(store, ns, name, opts):
    return store.delete('pods', ns, name, grace=opts.get('gracePeriodSeconds'),
                        preconditions=opts.get('preconditions'))


def evict_pod(store, ns, name, opts, dry, retry_after=0):
    with store.lock:
        pod = store.get('pods', ns, name)
        if pod is None:
            raise ApiError(404, 'NotFound', 'pods "%s" not found' % name, {'name': name, 'kind': 'pods'})
        pre = opts.get('preconditions') or {}
        if pre.get('uid') and pre['uid'] != pod['metadata']['uid'] or \
                pre.get('resourceVersion') and pre['resourceVersion'] != pod['metadata']['resourceVersion']:
            raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on pods "%s": the object has been modified; please apply your changes to the latest version and try again' % name)
        phase = (pod.get('status') or {}).get('phase')
        if pod['metadata'].get('deletionTimestamp') or phase in ('Succeeded', 'Failed', 'Pending'):
            if not dry:
                _delete_pod(store, ns, name, opts)
            return
        labels = pod['metadata'].get('labels') or {}
        pdbs = [p for p in store.peek('poddisruptionbudgets', ns)
                if (p.get('spec') or {}).get('selector') is not None and
                sel.selector_matches(p['spec']['selector'], labels)]
        if len(pdbs) > 1:
            raise ApiError(500, 'InternalError', 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.')
        if not pdbs:
            if not dry:
                _delete_pod(store, ns, name, opts)
            return
        pdb = pdbs[0]
        st = pdb.get('status') or {}
        pname = pdb['metadata']['name']
        if st.get('observedGeneration') is None or st['observedGeneration'] < pdb['metadata'].get('generation', 1):
            raise ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.",
                           {'causes': [{'reason': 'DisruptionBudget', 'message': 'The disruption budget %s is still being processed by the server.' % pname}],
                            'retryAfterSeconds': 10}, retry_after=10)
        expected, healthy, desired, allowed = pdb_numbers(store, pdb)
        if not pod_ready(pod):
            policy = (pdb.get('spec') or {}).get('unhealthyPodEvictionPolicy') or 'IfHealthyBudget'
            if policy == 'AlwaysAllow' or healthy >= desired:
                if not dry:
                    _delete_pod(store, ns, name, opts)
                return
        allowed = st.get('disruptionsAllowed', 0)
        if allowed < 0:
            raise ApiError(403, 'Forbidden', 'pdb disruptions allowed is negative')
        if allowed == 0:
            raise ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.",
                           {'causes': [{'reason': 'DisruptionBudget',
                                        'message': 'The disruption budget %s needs %d healthy pods and has %d currently'
                                        % (pname, st.get('desiredHealthy', desired), st.get('currentHealthy', healthy))}],
                            **({'retryAfterSeconds': retry_after} if retry_after else {})},
                           retry_after=retry_after or None)
        if dry:
            return
        new = jcopy(pdb)
        nst = new.setdefault('status', {})
        nst['disruptionsAllowed'] = allowed - 1
        nst.setdefault('disruptedPods', {})[name] = now_iso(store.clock())
        store.commit_update(store.rtype('poddisruptionbudgets'), new, expect_rv=pdb['metadata']['resourceVersion'])
        _delete_pod(store, ns, name, opts)


# ---- the controller loop -----------------------------------------------------------------------

DS_TOLERATIONS = [
    {'key': 'node.kubernetes.io/not-ready', 'operator': 'Exists', 'effect': 'NoExecute'},
    {'key': 'node.kubernetes.io/unreachable', 'operator': 'Exists', 'effect': 'NoExecute'},
    {'key': 'node.kubernetes.io/disk-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/memory-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/pid-pressure', 'operator': 'Exists', 'effect': 'NoSchedule'},
    {'key': 'node.kubernetes.io/unschedulable', 'operator': 'Exists', 'effect': 'NoSchedule'},
]


class Controllers:
    def __init__(self, store, admission=None, interval=0.1, pod_termination_seconds=1.0,
                 scheduler=True):
        self.store = store
        self.admission = admission
        self.interval = interval
        self.pod_termination_seconds = pod_termination_seconds
        self.scheduler_enabled = scheduler
        self.wake = threading.Event()
        self.stop_ev = threading.Event()
        self.taint_seen = {}
        self._req_cache = {}
        self.errors = []
        self.thread = None
        store.subscribe(lambda *a: self.wake.set())

    def start(self):
        self.thread = threading.Thread(target=self.loop, name='kube-controllers', daemon=True)
        self.thread.start()

    def stop(self):
        self.stop_ev.set()
        self.wake.set()

    def loop(self):
        while not self.stop_ev.is_set():
            self.wake.wait(0.5)
            self.wake.clear()
            try:
                self.run_once()
            except Exception as e:   # keep the control plane alive; record for inspection
                import traceback
                traceback.print_exc()
                self.errors.append(repr(e))
                del self.errors[:-100]
            time.sleep(self.interval)

    def _try(self, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except ApiError as e:
            if e.code in (404, 409):
                return None               # raced with another writer; next pass fixes it
            raise

    def run_once(self):
        # the workload controllers twice: a Deployment created while the first round made
        # hundreds of pods (a second or more) gets its ReplicaSet and pods in this pass, not
        # after the scheduling pass (kube-controller-manager runs them side by side)
        steps = [self.node_lifecycle, self.namespaces, self.gc, self.deployments, self.replicasets,
                 self.deployments, self.replicasets, self.daemonsets,
                 self.pod_gc, self.taint_manager] + ([self.schedule] if self.scheduler_enabled else []) + \
            [self.kubelet, self.pdbs]
        failed = None
        for step in steps:           # one controller's bug must not stop the others
            try:
                step()
            except Exception as e:
                failed = e
                import traceback
                traceback.print_exc()
                self.errors.append('%s: %r' % (step.__name__, e))
                del self.errors[:-100]
        return failed

    # admitted pod creation, as a controller calling the API would get
    def create_pod(self, ns, pod):
        store = self.store
        rt = store.rtype('pods')
        obj = store.prepare_create(rt, ns, pod)
        user = 'system:serviceaccount:kube-system:replicaset-controller'
        warnings = []
        if self.admission is not None:
            obj = self.admission.mutate('CREATE', rt, None, ns, '', obj, None, False, user,
                                        {'kind': 'CreateOptions', 'apiVersion': 'meta.k8s.io/v1'}, warnings)
        obj = store.finalize_create(rt, obj)
        if self.admission is not None:
            self.admission.validate('CREATE', rt, None, ns, '', obj, None, False, user,
                                    {'kind': 'CreateOptions', 'apiVersion': 'meta.k8s.io/v1'}, warnings)
        return store.commit_create(rt, obj)

    def _create_pod_logged(self, ns, pod):
        try:
            return self.create_pod(ns, pod)
        except ApiError as e:
            self.errors.append('create pod in %s: %s' % (ns, e.message))
            del self.errors[:-100]
            return None

    # ---- namespaces, GC -----------------------------------------------------------------------
    def namespaces(self):
        store = self.store
        for ns in store.peek('namespaces'):
            if not ns['metadata'].get('deletionTimestamp'):
                continue
            name = ns['metadata']['name']
            left = 0
            for key, rt in list(store.types.items()):
                if not rt.namespaced:
                    continue
                for o in store.peek(key, name):
                    left += 1
                    if not o['metadata'].get('deletionTimestamp'):
                        self._try(store.delete, key, name, o['metadata']['name'])
            if left == 0:
                store.finish_delete('namespaces', None, name)

    def gc(self):
        store = self.store
        uids = set()
        all_objs = []
        for key in list(store.types):
            for o in store.peek(key):
                uids.add(o['metadata']['uid'])
                all_objs.append((key, o))
        deps = {}
        for key, o in all_objs:
            for r in o['metadata'].get('ownerReferences') or []:
                deps.setdefault(r.get('uid'), []).append((key, o))
        for key, o in all_objs:
            md = o['metadata']
            refs = md.get('ownerReferences') or []
            if refs and not any(r.get('uid') in uids for r in refs) and not md.get('deletionTimestamp'):
                self._try(store.delete, key, md.get('namespace'), md['name'])
            if md.get('deletionTimestamp') and 'foregroundDeletion' in (md.get('finalizers') or []):
                mine = deps.get(md['uid'], [])
                if mine:
                    for dkey, d in mine:
                        if not d['metadata'].get('deletionTimestamp'):
                            self._try(store.delete, dkey, d['metadata'].get('namespace'), d['metadata']['name'],
                                      propagation='Foreground')
                else:
                    new = jcopy(o)
                    new['metadata']['finalizers'] = [f for f in md['finalizers'] if f != 'foregroundDeletion']
                    self._try(store.commit_update, store.rtype(key), new, md['resourceVersion'])

    # ---- workloads -----------------------------------------------------------------------------
    @staticmethod
    def _template_hash(template):
        h = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
        alphabet = 'bcdfghjklmnpqrstvwxz2456789'
        n = int(h[:16], 16)
        out = ''
        while len(out) < 10:
            out += alphabet[n % len(alphabet)]
            n //= len(alphabet)
        return out

    def deployments(self):
        store = self.store
        for d in store.peek('deployments'):
            md = d['metadata']
            if md.get('deletionTimestamp'):
                continue
            spec = d.get('spec') or {}
            ns = md['namespace']
            tmpl = spec.get('template') or {}
            h = self._template_hash(tmpl)
            owned = [rs for rs in store.peek('replicasets', ns) if _owned_by(rs, md['uid'])]
            cur = next((rs for rs in owned if (rs['metadata'].get('labels') or {}).get('pod-template-hash') == h), None)
            want = int(spec.get('replicas', 1)) if not spec.get('paused') else None
            if cur is None and want is not None:
                t = jcopy(tmpl)
                t.setdefault('metadata', {}).setdefault('labels', {})['pod-template-hash'] = h
                selector = jcopy(spec.get('selector') or {})
                selector.setdefault('matchLabels', {})['pod-template-hash'] = h
                rs = {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet',
                      'metadata': {'name': '%s-%s' % (md['name'], h), 'namespace': ns,
                                   'labels': dict(t['metadata']['labels']),
                                   'annotations': {'deployment.kubernetes.io/revision': str(len(owned) + 1)},
                                   'ownerReferences': [_owner_ref(d, 'Deployment')]},
                      'spec': {'replicas': want, 'selector': selector, 'template': t}}
                cur = self._try(store.create, 'replicasets', ns, rs)
            elif cur is not None and want is not None and int((cur.get('spec') or {}).get('replicas', 1)) != want:
                new = jcopy(cur)
                new['spec']['replicas'] = want
                cur = self._try(store.update, 'replicasets', ns, new)
            for rs in owned:
                if cur is not None and rs['metadata']['uid'] == cur['metadata']['uid']:
                    continue
                if want is not None and int((rs.get('spec') or {}).get('replicas', 0)) != 0:
                    new = jcopy(rs)
                    new['spec']['replicas'] = 0
                    self._try(store.update, 'replicasets', ns, new)
            rss = [rs for rs in store.peek('replicasets', ns) if _owned_by(rs, md['uid'])]
            tot = sum(int((rs.get('status') or {}).get('replicas', 0)) for rs in rss)
            ready = sum(int((rs.get('status') or {}).get('readyReplicas', 0)) for rs in rss)
            upd = int(((cur or {}).get('status') or {}).get('replicas', 0))
            st = {'observedGeneration': md.get('generation', 1), 'replicas': tot, 'updatedReplicas': upd,
                  'readyReplicas': ready, 'availableReplicas': ready,
                  'unavailableReplicas': max(0, (want or 0) - ready)}
            for k in ('readyReplicas', 'availableReplicas', 'unavailableReplicas', 'replicas', 'updatedReplicas'):
                if not st[k]:
                    del st[k]
            old_conds = (d.get('status') or {}).get('conditions') or []
            avail = 'True' if ready >= (want or 0) else 'False'
            cond = next((c for c in old_conds if c.get('type') == 'Available'), None)
            if cond is None or cond.get('status') != avail:
                cond = {'type': 'Available', 'status': avail,
                        'reason': 'MinimumReplicasAvailable' if avail == 'True' else 'MinimumReplicasUnavailable',
                        'message': 'Deployment has minimum availability.' if avail == 'True' else 'Deployment does not have minimum availability.',
                        'lastUpdateTime': now_iso(store.clock()), 'lastTransitionTime': now_iso(store.clock())}
            st['conditions'] = [cond]
            if d.get('status') != st:
                new = jcopy(d)
                new['status'] = st
                self._try(store.update_status, 'deployments', ns, new)

    def replicasets(self):
        store = self.store
        for rs in store.peek('replicasets'):
            md = rs['metadata']
            if md.get('deletionTimestamp'):
                continue
            ns = md['namespace']
            spec = rs.get('spec') or {}
            want = int(spec.get('replicas', 1))
            pods = [p for p in store.peek('pods', ns) if _owned_by(p, md['uid'])]
            active = [p for p in pods if not p['metadata'].get('deletionTimestamp') and not _terminal(p)]
            for p in pods:
                if (p.get('status') or {}).get('phase') == 'Failed' and not p['metadata'].get('deletionTimestamp'):
                    self._try(store.delete, 'pods', ns, p['metadata']['name'])
            if len(active) < want:
                for _ in range(want - len(active)):
                    t = jcopy(spec.get('template') or {})
                    pmd = t.setdefault('metadata', {})
                    pmd['generateName'] = md['name'] + '-'
                    pmd.pop('name', None)
                    pmd['ownerReferences'] = [_owner_ref(rs, 'ReplicaSet')]
                    t['apiVersion'], t['kind'] = 'v1', 'Pod'
                    self._create_pod_logged(ns, t)
            elif len(active) > want:
                def rank(p):
                    return (bool((p.get('spec') or {}).get('nodeName')),
                            (p.get('status') or {}).get('phase') == 'Running', pod_ready(p),
                            [-ord(c) for c in p['metadata'].get('creationTimestamp', '')])
                for p in sorted(active, key=rank)[:len(active) - want]:
                    self._try(store.delete, 'pods', ns, p['metadata']['name'])
            pods = [p for p in store.peek('pods', ns) if _owned_by(p, md['uid'])
                    and not p['metadata'].get('deletionTimestamp') and not _terminal(p)]
            ready = sum(1 for p in pods if pod_ready(p))
            st = {'replicas': len(pods), 'fullyLabeledReplicas': len(pods), 'readyReplicas': ready,
                  'availableReplicas': ready, 'observedGeneration': md.get('generation', 1)}
            for k in ('fullyLabeledReplicas', 'readyReplicas', 'availableReplicas'):
                if not st[k]:
                    del st[k]
            if rs.get('status') != st:
                new = jcopy(rs)
                new['status'] = st
                self._try(store.update_status, 'replicasets', ns, new)

    def daemonsets(self):
        store = self.store
        nodes = store.peek('nodes')
        for ds in store.peek('daemonsets'):
            md = ds['metadata']
            if md.get('deletionTimestamp'):
                continue
            ns = md['namespace']
            tmpl = (ds.get('spec') or {}).get('template') or {}
            probe = {'spec': jcopy(tmpl.get('spec') or {})}
            tols = probe['spec'].setdefault('tolerations', [])
            for t in DS_TOLERATIONS:
                if t not in tols:
                    tols.append(t)
            if probe['spec'].get('hostNetwork'):
                tols.append({'key': 'node.kubernetes.io/network-unavailable', 'operator': 'Exists', 'effect': 'NoSchedule'})
            eligible = {n['metadata']['name'] for n in nodes
                        if not n['metadata'].get('deletionTimestamp') and sel.pod_matches_node_selection(probe, n)
                        and not sel.untolerated_taints(probe, n)}
            pods = [p for p in store.peek('pods', ns) if _owned_by(p, md['uid'])]
            by_node = {}
            for p in pods:
                target = (p.get('spec') or {}).get('nodeName') or _ds_target(p)
                if p['metadata'].get('deletionTimestamp'):
                    continue
                if (p.get('status') or {}).get('phase') == 'Failed' or target not in eligible \
                        or target in by_node:
                    self._try(store.delete, 'pods', ns, p['metadata']['name'])
                    continue
                by_node[target] = p
            h = self._template_hash(tmpl)
            for n in sorted(eligible - set(by_node)):
                t = jcopy(tmpl)
                pmd = t.setdefault('metadata', {})
                pmd['generateName'] = md['name'] + '-'
                pmd.pop('name', None)
                pmd.setdefault('labels', {})['controller-revision-hash'] = h
                pmd['labels']['pod-template-generation'] = str(md.get('generation', 1))
                pmd['ownerReferences'] = [_owner_ref(ds, 'DaemonSet')]
                t['apiVersion'], t['kind'] = 'v1', 'Pod'
                t['spec'] = jcopy(probe['spec'])
                aff = t['spec'].setdefault('affinity', {}).setdefault('nodeAffinity', {})
                aff['requiredDuringSchedulingIgnoredDuringExecution'] = {'nodeSelectorTerms': [
                    {'matchFields': [{'key': 'metadata.name', 'operator': 'In', 'values': [n]}]}]}
                created = self._create_pod_logged(ns, t)
                if created is not None:
                    by_node[n] = created
            ready = sum(1 for p in by_node.values() if pod_ready(p))
            sched = sum(1 for p in by_node.values() if (p.get('spec') or {}).get('nodeName'))
            st = {'desiredNumberScheduled': len(eligible), 'currentNumberScheduled': sched,
                  'numberMisscheduled': 0, 'numberReady': ready, 'numberAvailable': ready,
                  'updatedNumberScheduled': sched, 'observedGeneration': md.get('generation', 1)}
            if len(eligible) - ready:
                st['numberUnavailable'] = len(eligible) - ready
            if not ready:
                del st['numberAvailable']
            if ds.get('status') != st:
                new = jcopy(ds)
                new['status'] = st
                self._try(store.update_status, 'daemonsets', ns, new)

    # ---- pods and nodes -------------------------------------------------------------------------
    def node_lifecycle(self):
        """The node lifecycle controller's cordon taint: node.kubernetes.io/unschedulable:NoSchedule
        while spec.unschedulable is true."""
        store = self.store
        key = 'node.kubernetes.io/unschedulable'
        for n in store.peek('nodes'):
            spec = n.get('spec') or {}
            taints = spec.get('taints') or []
            has = any(t.get('key') == key and t.get('effect') == 'NoSchedule' for t in taints)
            want = bool(spec.get('unschedulable'))
            if has == want or n['metadata'].get('deletionTimestamp'):
                continue
            new = jcopy(n)
            if want:
                new['spec']['taints'] = taints + [{'key': key, 'effect': 'NoSchedule', 'timeAdded': now_iso(store.clock())}]
            else:
                new['spec']['taints'] = [t for t in taints if not (t.get('key') == key and t.get('effect') == 'NoSchedule')]
                if not new['spec']['taints']:
                    del new['spec']['taints']
            self._try(store.commit_update, store.rtype('nodes'), new, n['metadata']['resourceVersion'])

    def pod_gc(self):
        store = self.store
        names = {n['metadata']['name'] for n in store.peek('nodes')}
        for p in store.peek('pods'):
            node = (p.get('spec') or {}).get('nodeName')
            if node and node not in names:
                store.finish_delete('pods', p['metadata']['namespace'], p['metadata']['name'])

    def taint_manager(self):
        store = self.store
        now = store.clock()
        nodes = {n['metadata']['name']: n for n in store.peek('nodes')}
        for p in store.peek('pods'):
            node = nodes.get((p.get('spec') or {}).get('nodeName') or '')
            if node is None or p['metadata'].get('deletionTimestamp'):
                continue
            taints = [t for t in (node.get('spec') or {}).get('taints') or [] if t.get('effect') == 'NoExecute']
            evict = False
            for t in taints:
                tols = [tol for tol in (p.get('spec') or {}).get('tolerations') or []
                        if sel.toleration_tolerates(tol, t)]
                if not tols:
                    evict = True
                    break
                secs = [tol.get('tolerationSeconds') for tol in tols]
                if any(s is None for s in secs):
                    continue
                key = (node['metadata']['name'], t.get('key'), t.get('value'))
                since = parse_iso(t.get('timeAdded') or '') or self.taint_seen.setdefault(key, now)
                if now >= since + min(secs):
                    evict = True
                    break
            if evict:
                self._try(store.delete, 'pods', p['metadata']['namespace'], p['metadata']['name'])

    def _requests(self, p):
        md = p['metadata']
        key = (md.get('uid'), md.get('resourceVersion'))
        r = self._req_cache.get(key)
        if r is None:
            if len(self._req_cache) > 50000:
                self._req_cache.clear()
            r = self._req_cache[key] = pod_requests(p)
        return r

    def schedule(self):
        store = self.store
        nodes = [n for n in store.peek('nodes') if not n['metadata'].get('deletionTimestamp')]
        pods = store.peek('pods')
        used = {n['metadata']['name']: {} for n in nodes}
        info = {n['metadata']['name']: self._node_info(n) for n in nodes}
        counts = {n['metadata']['name']: 0 for n in nodes}
        for p in pods:
            nn = (p.get('spec') or {}).get('nodeName')
            if nn in used and not _terminal(p):
                counts[nn] += 1
                for k, v in self._requests(p).items():
                    used[nn][k] = used[nn].get(k, 0) + v
        pending = [p for p in pods if not (p.get('spec') or {}).get('nodeName')
                   and (p.get('spec') or {}).get('schedulerName', 'default-scheduler') == 'default-scheduler'
                   and not p['metadata'].get('deletionTimestamp') and not _terminal(p)]
        pending.sort(key=lambda p: (-int((p.get('spec') or {}).get('priority') or 0),
                                    p['metadata'].get('creationTimestamp', ''), p['metadata']['name']))
        topo = None
        bound = [(p, (p.get('spec') or {}).get('nodeName')) for p in pods
                 if (p.get('spec') or {}).get('nodeName') in used and not _terminal(p)]
        if pending and (any(podtopo.constrained(p) for p in pending) or
                        any(podtopo.has_anti(p) for p, _ in bound)):
            topo = podtopo.Topo(nodes, bound, {n['metadata']['name']: (n['metadata'].get('labels') or {})
                                               for n in store.peek('namespaces')})
        # status.nominatedNodeName (kube-scheduler 1.35, KEP-5278: whoever wrote it): the
        # pods nominated to a node take its room for pods of no higher priority, and a
        # nominated pod tries its node first
        prio = lambda p: int((p.get('spec') or {}).get('priority') or 0)  # noqa: E731
        nominated = {}   # node -> {uid: (priority, requests)}
        for p in pending:
            nn = (p.get('status') or {}).get('nominatedNodeName')
            if nn in used:
                nominated.setdefault(nn, {})[p['metadata'].get('uid')] = (prio(p), self._requests(p))
        lowest = {nn: min(q[0] for q in v.values()) for nn, v in nominated.items()}
        # per node: the room and pod count with every nominated pod's share added
        # (recomputed for a node when one of its nominated pods binds)
        eff = {}

        def effective(nn):
            if nn not in eff:
                u, c = dict(used[nn]), counts[nn]
                for _, qreq in nominated[nn].values():
                    c += 1
                    for k, v in qreq.items():
                        u[k] = u.get(k, 0) + v
                eff[nn] = (u, c)
            return eff[nn]

        def with_reserved(pod, nn):
            """(used, count) of nn for pod: the bound pods' and those of the pods nominated
            there that pod must leave room for (the others of at least its priority)."""
            noms = nominated.get(nn)
            if not noms:
                return used[nn], counts[nn]
            uid, pp = pod['metadata'].get('uid'), prio(pod)
            skip = [noms[uid]] if uid in noms else []
            if pp > lowest[nn]:
                skip = [q for quid, q in noms.items() if quid == uid or q[0] < pp]
            u, c = effective(nn)
            if not skip:
                return u, c
            u = dict(u)
            for _, qreq in skip:
                c -= 1
                for k, v in qreq.items():
                    u[k] = u.get(k, 0) - v
            return u, c

        # a pod that fit nowhere in this pass: the next one asking the same fits nowhere
        # either (binds only take room; its own anti-affinity only rejects more), unless
        # it has pod affinity or a spread, which more bound pods can satisfy. A nominated
        # pod whose node does not take it is asked the same as one nominated nowhere (its
        # nomination was the only difference): on the other nodes nothing differs, and on
        # its own node a pod not nominated there has no more room than it had (the share
        # of a nominated pod is left out only for that pod)
        failed = {}
        by_name = {n['metadata']['name']: n for n in nodes}
        for p in pending:
            ns, name = p['metadata']['namespace'], p['metadata']['name']
            if (p.get('spec') or {}).get('schedulingGates'):
                self._unschedulable(p, 'SchedulingGated', 'Scheduling is blocked due to non-empty scheduling gates')
                continue
            req = self._requests(p)
            reasons = {}
            best = None
            nom = (p.get('status') or {}).get('nominatedNodeName')
            order = nodes
            if nom in used:
                u, c = with_reserved(p, nom)
                why = self._filter(p, by_name[nom], req, u, c, info[nom])
                if not why and topo is not None:
                    t = topo.why_not(p, nom)
                    why = [t] if t else why
                if not why:
                    order = ()
                    best = ((0, nom), nom)
            sig = None
            if best is None and not podtopo.monotone_unsafe(p):
                ps = dict(p.get('spec') or {})
                sig = json.dumps([ns, sorted((k, str(v)) for k, v in req.items()), ps.get('nodeSelector'),
                                  ps.get('affinity'), ps.get('tolerations'),
                                  p['metadata'].get('labels') if topo is not None else None, prio(p)],
                                 sort_keys=True)
                if sig in failed:
                    self._unschedulable(p, 'Unschedulable', failed[sig])
                    continue
            for n in order:
                nn = n['metadata']['name']
                u, c = with_reserved(p, nn)
                why = self._filter(p, n, req, u, c, info[nn])
                if not why and topo is not None:
                    t = topo.why_not(p, nn)
                    why = [t] if t else why
                if why:
                    for r in why:
                        reasons[r] = reasons.get(r, 0) + 1
                    continue
                free = 0
                for k in ('cpu', 'memory'):
                    cap = info[nn]['alloc'].get(k, 0)
                    if cap:
                        free += float((cap - u.get(k, 0) - req.get(k, 0)) / cap)
                score = (free, nn)
                if best is None or score[0] > best[0][0] or (score[0] == best[0][0] and nn < best[1]):
                    best = (score, nn)
            if best is None:
                parts = ', '.join('%d %s' % (c, r) for r, c in sorted(reasons.items(), key=lambda rc: rc[0]))
                msg = '0/%d nodes are available' % len(nodes) + (': ' + parts if parts else '') + \
                    '. preemption: 0/%d nodes are available: %d Preemption is not helpful for scheduling.' % (len(nodes), len(nodes))
                self._unschedulable(p, 'Unschedulable', msg)
                if sig is not None:
                    failed[sig] = msg
                continue
            nn = best[1]
            try:
                bind_pod(store, ns, name, nn)
            except ApiError:
                continue
            counts[nn] += 1
            for k, v in req.items():
                used[nn][k] = used[nn].get(k, 0) + v
            if nom in nominated:
                nominated[nom].pop(p['metadata'].get('uid'), None)
                eff.pop(nom, None)
            eff.pop(nn, None)
            if topo is not None:
                topo.bind(p, nn)

    def _node_info(self, node):
        """What the filters read of a node, parsed once per scheduling pass."""
        alloc = (node.get('status') or {}).get('allocatable') or (node.get('status') or {}).get('capacity') or {}
        parsed = {}
        for k, v in alloc.items():
            try:
                parsed[k] = quantity(v)
            except ValueError:
                parsed[k] = 0
        try:
            max_pods = int(quantity(alloc.get('pods', 110)))
        except ValueError:
            max_pods = 110
        return {'ready': node_ready(node), 'alloc': parsed, 'max_pods': max_pods}

    def _filter(self, pod, node, req, used, count, info=None):
        spec = node.get('spec') or {}
        info = info or self._node_info(node)
        if not info['ready']:
            return ['node(s) had untolerated taint {node.kubernetes.io/not-ready: }']
        if spec.get('unschedulable') and not any(
                sel.toleration_tolerates(t, {'key': 'node.kubernetes.io/unschedulable', 'effect': 'NoSchedule'})
                for t in (pod.get('spec') or {}).get('tolerations') or []):
            return ['node(s) were unschedulable']
        if not sel.pod_matches_node_selection(pod, node):
            return ["node(s) didn't match Pod's node affinity/selector"]
        bad = sel.untolerated_taints(pod, node)
        if bad:
            t = bad[0]
            return ['node(s) had untolerated taint {%s: %s}' % (t.get('key'), t.get('value') or '')]
        out = []
        if count + 1 > info['max_pods']:
            out.append('Too many pods')
        alloc = info['alloc']
        for k, v in sorted(req.items()):
            if v <= 0:
                continue
            if used.get(k, 0) + v > alloc.get(k, 0):
                out.append('Insufficient %s' % k)
        return out

    def _unschedulable(self, pod, reason, msg):
        c = _cond(pod, 'PodScheduled')
        if c and c.get('status') == 'False' and c.get('reason') == reason and c.get('message') == msg:
            return
        new = jcopy(pod)
        _set_cond(new, {'type': 'PodScheduled', 'status': 'False', 'reason': reason, 'message': msg,
                        'lastProbeTime': None, 'lastTransitionTime': now_iso(self.store.clock())})
        self._try(self.store.commit_update, self.store.rtype('pods'), new, pod['metadata']['resourceVersion'],
                  owned=True)

    def kubelet(self):
        """Pod status on nodes: bound pods start Running and Ready on a Ready node; terminating
        pods finish after min(grace, pod_termination_seconds) once their finalizers are gone."""
        store = self.store
        rt = store.rtype('pods')
        now = store.clock()
        nodes = {n['metadata']['name']: n for n in store.peek('nodes')}
        for p in store.peek('pods'):
            md = p['metadata']
            nn = (p.get('spec') or {}).get('nodeName')
            if not nn or nn not in nodes:
                continue
            if md.get('deletionTimestamp'):
                dl = parse_iso(md['deletionTimestamp']) or now
                grace = md.get('deletionGracePeriodSeconds') or 0
                started = dl - grace
                if not md.get('finalizers') and now >= min(dl, started + self.pod_termination_seconds):
                    store.finish_delete('pods', md['namespace'], md['name'])
                continue
            st = p.get('status') or {}
            if st.get('phase') in (None, '', 'Pending') and node_ready(nodes[nn]):
                new = jcopy(p)
                nst = new.setdefault('status', {})
                ts = now_iso(now)
                nst['phase'] = 'Running'
                nst['hostIP'] = _node_ip(nodes[nn])
                nst['hostIPs'] = [{'ip': nst['hostIP']}]
                if (p.get('spec') or {}).get('hostNetwork'):
                    nst['podIP'] = nst['hostIP']
                else:
                    hsh = int(hashlib.sha256(md['uid'].encode()).hexdigest()[:6], 16)
                    nst['podIP'] = '10.244.%d.%d' % ((hsh >> 8) % 256, hsh % 254 + 1)
                nst['podIPs'] = [{'ip': nst['podIP']}]
                nst['startTime'] = ts
                # a node labelled sim.nodewarden.io/broken-gpu=true stands for a bad GPU driver
                # or AMI: pods that ask for an NVIDIA GPU run there but never get Ready
                ready = not (nodes[nn]['metadata'].get('labels', {}).get(BROKEN_GPU_LABEL) == 'true'
                             and _asks_nvidia(p))
                for t in ('Initialized', 'Ready', 'ContainersReady', 'PodScheduled'):
                    ok = ready or t in ('Initialized', 'PodScheduled')
                    _set_cond(new, {'type': t, 'status': 'True' if ok else 'False', 'lastProbeTime': None,
                                    'lastTransitionTime': ts, **({} if ok else {'reason': 'ContainersNotReady'})})
                nst['containerStatuses'] = [
                    {'name': c.get('name'), 'image': c.get('image'), 'imageID': '', 'ready': ready,
                     'restartCount': 0, 'started': True, 'containerID': 'containerd://' + hashlib.sha256(
                         (md['uid'] + c.get('name', '')).encode()).hexdigest(),
                     'state': {'running': {'startedAt': ts}}, 'lastState': {}}
                    for c in (p.get('spec') or {}).get('containers') or []]
                self._try(store.commit_update, rt, new, md['resourceVersion'], owned=True)

    def pdbs(self):
        store = self.store
        now = store.clock()
        for pdb in store.peek('poddisruptionbudgets'):
            md = pdb['metadata']
            pods = store.peek('pods', md['namespace'])
            names = {p['metadata']['name']: p for p in pods}
            old = pdb.get('status') or {}
            disrupted = {k: v for k, v in (old.get('disruptedPods') or {}).items()
                         if k in names and not names[k]['metadata'].get('deletionTimestamp')
                         and (parse_iso(v) or now) + 120 > now}
            probe = jcopy(pdb)
            probe.setdefault('status', {})['disruptedPods'] = disrupted
            expected, healthy, desired, allowed = pdb_numbers(store, probe, pods)
            st = {'observedGeneration': md.get('generation', 1), 'disruptionsAllowed': allowed,
                  'currentHealthy': healthy, 'desiredHealthy': desired, 'expectedPods': expected}
            if disrupted:
                st['disruptedPods'] = disrupted
            cstatus = 'True' if allowed > 0 else 'False'
            oc = next((c for c in old.get('conditions') or [] if c.get('type') == 'DisruptionAllowed'), None)
            if oc is None or oc.get('status') != cstatus:
                oc = {'type': 'DisruptionAllowed', 'status': cstatus,
                      'reason': 'SufficientPods' if allowed > 0 else 'InsufficientPods', 'message': '',
                      'observedGeneration': md.get('generation', 1), 'lastTransitionTime': now_iso(now)}
            st['conditions'] = [dict(oc, observedGeneration=md.get('generation', 1))]
            if old != st:
                new = jcopy(pdb)
                new['status'] = st
                self._try(store.commit_update, store.rtype('poddisruptionbudgets'), new, md['resourceVersion'])


def _ds_target(pod):
    req = ((((pod.get('spec') or {}).get('affinity') or {}).get('nodeAffinity') or {})
           .get('requiredDuringSchedulingIgnoredDuringExecution') or {})
    for t in req.get('nodeSelectorTerms') or []:
        for f in t.get('matchFields') or []:
            if f.get('key') == 'metadata.name' and f.get('operator') == 'In' and f.get('values'):
                return f['values'][0]
    return None


def _node_ip(node):
    for a in (node.get('status') or {}).get('addresses') or []:
        if a.get('type') == 'InternalIP':
            return a.get('address')
    return '10.0.0.1'
