"""Per-type defaulting and validation done by kube-apiserver's registry strategies
(the subset the simulator needs)."""
import base64
import ipaddress
import random
import re

import kselectors as sel
from store import ApiError, invalid, now_iso


def on_create(store, rt, obj):
    fn = _CREATE.get(rt.key)
    if fn:
        fn(store, rt, obj)


def on_update(store, rt, new, old):
    fn = _UPDATE.get(rt.key)
    if fn:
        fn(store, rt, new, old)


# ---- pods -----------------------------------------------------------------------------

def _pod_container_defaults(c):
    res = c.setdefault('resources', {})
    lim = res.get('limits') or {}
    req = res.get('requests') or {}
    for k, v in lim.items():              # requests default to limits
        req.setdefault(k, v)
    if req:
        res['requests'] = req
    c.setdefault('imagePullPolicy', 'IfNotPresent' if ':' in (c.get('image') or '') and
                 not (c.get('image') or '').endswith(':latest') else 'Always')
    c.setdefault('terminationMessagePath', '/dev/termination-log')
    c.setdefault('terminationMessagePolicy', 'File')


def _qos(spec):
    cs = (spec.get('containers') or []) + (spec.get('initContainers') or [])
    reqs = [((c.get('resources') or {}).get('requests') or {}) for c in cs]
    lims = [((c.get('resources') or {}).get('limits') or {}) for c in cs]
    if not any(reqs) and not any(lims):
        return 'BestEffort'
    if all(l.get('cpu') and l.get('memory') and r.get('cpu') == l.get('cpu') and r.get('memory') == l.get('memory')
           for r, l in zip(reqs, lims)):
        return 'Guaranteed'
    return 'Burstable'


def _pod_create(store, rt, pod):
    spec = pod.get('spec')
    name = pod['metadata'].get('name', '')
    if not isinstance(spec, dict):
        raise invalid(rt, name, [('spec', 'Required value')])
    cs = spec.get('containers')
    causes = []
    if not isinstance(cs, list) or not cs:
        causes.append(('spec.containers', 'Required value'))
    else:
        for i, c in enumerate(cs + (spec.get('initContainers') or [])):
            if not isinstance(c, dict) or not c.get('name'):
                causes.append(('spec.containers[%d].name' % i, 'Required value'))
            elif not c.get('image'):
                causes.append(('spec.containers[%d].image' % i, 'Required value'))
    for i, t in enumerate(spec.get('tolerations') or []):
        if t.get('operator') == 'Exists' and t.get('value'):
            causes.append(('spec.tolerations[%d].operator' % i, 'Invalid value: "%s": value must be empty when `operator` is \'Exists\'' % t.get('value')))
        if not t.get('key') and t.get('operator', 'Equal') != 'Exists':
            causes.append(('spec.tolerations[%d].operator' % i, 'Invalid value: "%s": operator must be Exists when `key` is empty, which means "match all values and all keys"' % t.get('operator', '')))
    if causes:
        raise invalid(rt, name, causes)
    for c in (spec.get('containers') or []) + (spec.get('initContainers') or []):
        _pod_container_defaults(c)
    spec.setdefault('restartPolicy', 'Always')
    spec.setdefault('terminationGracePeriodSeconds', 30)
    spec.setdefault('dnsPolicy', 'ClusterFirst')
    spec.setdefault('schedulerName', 'default-scheduler')
    spec.setdefault('securityContext', {})
    spec.setdefault('enableServiceLinks', True)
    spec.setdefault('preemptionPolicy', 'PreemptLowerPriority')
    pc = spec.get('priorityClassName')
    spec.setdefault('priority', {'system-node-critical': 2000001000,
                                 'system-cluster-critical': 2000000000}.get(pc, 0))
    if spec.get('serviceAccountName') is None:
        spec['serviceAccountName'] = spec.get('serviceAccount') or 'default'
    tols = spec.setdefault('tolerations', [])
    # DefaultTolerationSeconds admission plugin
    for key in ('node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'):
        if not any(sel.toleration_tolerates(t, {'key': key, 'effect': 'NoExecute'}) for t in tols):
            tols.append({'key': key, 'operator': 'Exists', 'effect': 'NoExecute', 'tolerationSeconds': 300})
    st = {'phase': 'Pending', 'qosClass': _qos(spec)}
    pod['status'] = st


_POD_MUTABLE = ('activeDeadlineSeconds', 'tolerations', 'schedulingGates', 'terminationGracePeriodSeconds')


def _pod_update(store, rt, new, old):
    a = dict(old.get('spec') or {})
    b = dict(new.get('spec') or {})
    # image changes are allowed; tolerations may only be added; gates only removed
    for c1, c2 in zip(a.get('containers') or [], b.get('containers') or []):
        if c1.get('name') == c2.get('name'):
            c2.setdefault('image', c1.get('image'))
    for k in _POD_MUTABLE:
        a.pop(k, None)
        b.pop(k, None)
    strip = lambda cs: [{k: v for k, v in c.items() if k != 'image'} for c in cs or []]
    a['containers'], b['containers'] = strip(a.get('containers')), strip(b.get('containers'))
    a['initContainers'], b['initContainers'] = strip(a.get('initContainers')), strip(b.get('initContainers'))
    if a != b:
        raise invalid(rt, new['metadata'].get('name', ''), [('spec', 'Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)')])
    old_t = (old.get('spec') or {}).get('tolerations') or []
    new_t = (new.get('spec') or {}).get('tolerations') or []
    if any(t not in new_t for t in old_t):
        raise invalid(rt, new['metadata'].get('name', ''), [('spec.tolerations', 'Forbidden: existing toleration can not be modified except its tolerationSeconds')])
    old_g = [g.get('name') for g in (old.get('spec') or {}).get('schedulingGates') or []]
    new_g = [g.get('name') for g in (new.get('spec') or {}).get('schedulingGates') or []]
    if any(g not in old_g for g in new_g):
        raise invalid(rt, new['metadata'].get('name', ''), [('spec.schedulingGates', 'Forbidden: only deletion is allowed, but found new scheduling gate')])


# ---- namespaces, services, secrets ------------------------------------------------------

def _ns_create(store, rt, ns):
    ns['metadata'].setdefault('labels', {})['kubernetes.io/metadata.name'] = ns['metadata'].get('name', '')
    ns['spec'] = {'finalizers': ['kubernetes']}
    ns['status'] = {'phase': 'Active'}


def _ns_update(store, rt, new, old):
    new['metadata'].setdefault('labels', {})['kubernetes.io/metadata.name'] = new['metadata'].get('name', '')
    new['spec'] = old.get('spec') or {'finalizers': ['kubernetes']}


def _svc_create(store, rt, svc):
    spec = svc.setdefault('spec', {})
    spec.setdefault('type', 'ClusterIP')
    spec.setdefault('sessionAffinity', 'None')
    if spec.get('clusterIP') not in ('None',) and not spec.get('clusterIP'):
        used = {(o.get('spec') or {}).get('clusterIP') for o in store.list('services')}
        while True:
            ip = str(ipaddress.ip_address('10.96.0.0') + random.randint(2, 65000))
            if ip not in used:
                break
        spec['clusterIP'] = ip
    spec['clusterIPs'] = [spec['clusterIP']]
    for p in spec.get('ports') or []:
        p.setdefault('protocol', 'TCP')
        p.setdefault('targetPort', p.get('port'))
    svc['status'] = {'loadBalancer': {}}


def _svc_update(store, rt, new, old):
    spec = new.setdefault('spec', {})
    ospec = old.get('spec') or {}
    if spec.get('clusterIP') and spec['clusterIP'] != ospec.get('clusterIP'):
        raise invalid(rt, new['metadata'].get('name', ''), [('spec.clusterIPs[0]', 'Invalid value: field is immutable')])
    spec['clusterIP'] = ospec.get('clusterIP')
    spec['clusterIPs'] = ospec.get('clusterIPs')
    spec.setdefault('type', ospec.get('type', 'ClusterIP'))


def _secret_create(store, rt, s):
    s.setdefault('type', 'Opaque')
    for k, v in (s.get('data') or {}).items():
        try:
            base64.b64decode(v, validate=True)
        except Exception:
            raise invalid(rt, s['metadata'].get('name', ''), [('data[%s]' % k, 'Invalid value: illegal base64 data')])
    if s.get('stringData'):
        data = s.setdefault('data', {})
        for k, v in s.pop('stringData').items():
            data[k] = base64.b64encode(str(v).encode()).decode()


def _secret_update(store, rt, new, old):
    _secret_create(store, rt, new)


# ---- workloads -----------------------------------------------------------------------------

def _workload(store, rt, obj, old=None):
    spec = obj.setdefault('spec', {})
    name = obj['metadata'].get('name', '')
    selector = spec.get('selector')
    if rt.key == 'poddisruptionbudgets':
        if 'minAvailable' in spec and 'maxUnavailable' in spec:
            raise invalid(rt, name, [('spec', 'Invalid value: minAvailable and maxUnavailable cannot be both set')])
        for f in ('minAvailable', 'maxUnavailable'):
            v = spec.get(f)
            if v is not None and not (isinstance(v, int) and v >= 0 or
                                      isinstance(v, str) and re.match(r'^\d+%$', v)):
                raise invalid(rt, name, [('spec.%s' % f, 'Invalid value: "%s": must be a non-negative integer or a percentage' % v)])
        return
    if not isinstance(selector, dict) or (not selector.get('matchLabels') and not selector.get('matchExpressions')):
        raise invalid(rt, name, [('spec.selector', 'Required value')])
    labels = ((spec.get('template') or {}).get('metadata') or {}).get('labels') or {}
    try:
        ok = sel.selector_matches(selector, labels)
    except sel.SelectorError as e:
        raise invalid(rt, name, [('spec.selector', 'Invalid value: %s' % e)])
    if not ok:
        raise invalid(rt, name, [('spec.template.metadata.labels', 'Invalid value: %s: `selector` does not match template `labels`' % labels)])
    if old is not None and (old.get('spec') or {}).get('selector') != selector:
        raise invalid(rt, name, [('spec.selector', 'Invalid value: field is immutable')])
    if rt.key in ('deployments', 'replicasets'):
        spec.setdefault('replicas', 1)
    spec.setdefault('revisionHistoryLimit', 10)
    if rt.key == 'deployments':
        spec.setdefault('strategy', {'type': 'RollingUpdate',
                                     'rollingUpdate': {'maxUnavailable': '25%', 'maxSurge': '25%'}})
    if rt.key == 'daemonsets':
        spec.setdefault('updateStrategy', {'type': 'RollingUpdate',
                                           'rollingUpdate': {'maxUnavailable': 1, 'maxSurge': 0}})


# ---- events ----------------------------------------------------------------------------------

def _event_v1_create(store, rt, ev):
    name = ev['metadata'].get('name', '')
    causes = []
    for f in ('eventTime', 'reportingController', 'reportingInstance', 'action', 'reason', 'type'):
        if not ev.get(f):
            causes.append((f, 'Required value'))
    for f in ('deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount', 'deprecatedSource'):
        if ev.get(f):
            causes.append((f, 'Invalid value: needs to be unset'))
    if ev.get('type') and ev['type'] not in ('Normal', 'Warning'):
        causes.append(('type', 'Invalid value: "%s": has invalid value' % ev['type']))
    if len(ev.get('note') or '') > 1024:
        causes.append(('note', 'Too long: may not be more than 1024 bytes'))
    if causes:
        raise invalid(rt, name, causes)


def _event_core_create(store, rt, ev):
    name = ev['metadata'].get('name', '')
    causes = []
    if ev.get('eventTime'):
        for f in ('reportingComponent', 'reportingInstance', 'action', 'reason'):
            if not ev.get(f):
                causes.append((f, 'Required value'))
        if len(ev.get('message') or '') > 1024:
            causes.append(('message', 'Too long: may not be more than 1024 bytes'))
    io = ev.get('involvedObject') or {}
    if io.get('namespace') and io['namespace'] != ev['metadata'].get('namespace'):
        causes.append(('involvedObject.namespace', 'Invalid value: "%s": does not match event.namespace' % io['namespace']))
    if ev.get('type') and ev['type'] not in ('Normal', 'Warning'):
        causes.append(('type', 'Unsupported value: "%s"' % ev['type']))
    if causes:
        raise invalid(rt, name, causes)
    ev.setdefault('firstTimestamp', None)
    ev.setdefault('lastTimestamp', None)


# ---- webhook configurations ---------------------------------------------------------------------

_SEG = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


def _webhooks(store, rt, obj, old=None):
    name = obj['metadata'].get('name', '')
    causes = []
    mutating = rt.key == 'mutatingwebhookconfigurations'
    seen = set()
    for i, wh in enumerate(obj.get('webhooks') or []):
        p = 'webhooks[%d]' % i
        n = wh.get('name') or ''
        if len(n.split('.')) < 3 or not _SEG.match(n):
            causes.append((p + '.name', 'Invalid value: "%s": should be a domain with at least three segments separated by dots' % n))
        if n in seen:
            causes.append((p + '.name', 'Duplicate value: "%s"' % n))
        seen.add(n)
        if wh.get('sideEffects') not in ('None', 'NoneOnDryRun'):
            causes.append((p + '.sideEffects', 'Unsupported value: %r: supported values: "None", "NoneOnDryRun"' % wh.get('sideEffects')))
        if not wh.get('admissionReviewVersions'):
            causes.append((p + '.admissionReviewVersions', 'Required value: must specify one of v1, v1beta1'))
        cc = wh.get('clientConfig') or {}
        if bool(cc.get('url')) == bool(cc.get('service')):
            causes.append((p + '.clientConfig', 'Required value: exactly one of url or service is required'))
        if cc.get('url') and not str(cc['url']).startswith('https://'):
            causes.append((p + '.clientConfig.url', 'Invalid value: "%s": \'https\' is the only allowed URL scheme' % cc['url']))
        svc = cc.get('service')
        if svc:
            path = svc.get('path')
            if path is not None and (not path.startswith('/') or
                                     any(not _SEG.match(s) for s in path[1:].split('/') if path != '/')):
                causes.append((p + '.clientConfig.service.path', 'Invalid value: "%s": segment[0]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\'' % path))
            svc.setdefault('port', 443)
        if cc.get('caBundle'):
            try:
                base64.b64decode(cc['caBundle'], validate=True)
            except Exception:
                causes.append((p + '.clientConfig.caBundle', 'Invalid value: illegal base64 data'))
        ts = wh.setdefault('timeoutSeconds', 10)
        if not isinstance(ts, int) or ts < 1 or ts > 30:
            causes.append((p + '.timeoutSeconds', 'Invalid value: %r: the timeout value must be between 1 and 30 seconds' % ts))
        wh.setdefault('failurePolicy', 'Fail')
        wh.setdefault('matchPolicy', 'Equivalent')
        wh.setdefault('namespaceSelector', {})
        wh.setdefault('objectSelector', {})
        if wh['failurePolicy'] not in ('Fail', 'Ignore'):
            causes.append((p + '.failurePolicy', 'Unsupported value: "%s"' % wh['failurePolicy']))
        if mutating:
            wh.setdefault('reinvocationPolicy', 'Never')
        for r in wh.get('rules') or []:
            r.setdefault('scope', '*')
    if causes:
        raise invalid(rt, name, causes)


_CREATE = {
    'pods': _pod_create, 'namespaces': _ns_create, 'services': _svc_create, 'secrets': _secret_create,
    'deployments': _workload, 'replicasets': _workload, 'daemonsets': _workload,
    'poddisruptionbudgets': _workload,
    'events.events.k8s.io': _event_v1_create, 'events': _event_core_create,
    'validatingwebhookconfigurations': _webhooks, 'mutatingwebhookconfigurations': _webhooks,
}
_UPDATE = {
    'pods': _pod_update, 'namespaces': _ns_update, 'services': _svc_update, 'secrets': _secret_update,
    'deployments': lambda s, rt, n, o: _workload(s, rt, n, o),
    'replicasets': lambda s, rt, n, o: _workload(s, rt, n, o),
    'daemonsets': lambda s, rt, n, o: _workload(s, rt, n, o),
    'poddisruptionbudgets': lambda s, rt, n, o: _workload(s, rt, n, o),
    'validatingwebhookconfigurations': _webhooks, 'mutatingwebhookconfigurations': _webhooks,
}
_ = now_iso, ApiError
