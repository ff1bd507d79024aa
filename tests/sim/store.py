"""KubeStore: the simulated etcd + registry. One global resourceVersion counter,
a bounded event history (the "watch cache window"), watchers, subscribers.

Other modules touch cluster state only through KubeStore (see INTERFACE.md). Objects are
plain JSON dicts; they are deep-copied in and out. Writes here skip admission.
"""
import collections
import copy
import json
import queue
import re
import threading
import time
import uuid

import kselectors as sel


class ApiError(Exception):
    """An error answered to the client as a meta/v1 Status."""

    def __init__(self, code, reason, message, details=None, retry_after=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.retry_after = retry_after

    def status(self):
        st = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure',
              'message': self.message, 'reason': self.reason, 'code': self.code}
        if self.details:
            st['details'] = self.details
        return st


def not_found(rt, name):
    return ApiError(404, 'NotFound', '%s "%s" not found' % (rt.gr(), name),
                    {'name': name, 'group': rt.group, 'kind': rt.resource})


def conflict(rt, name, msg='the object has been modified; please apply your changes to the latest version and try again'):
    return ApiError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": %s' % (rt.gr(), name, msg),
                    {'name': name, 'group': rt.group, 'kind': rt.resource})


def invalid(rt, name, causes):
    """causes: list of (field, message)."""
    msg = '%s "%s" is invalid: %s' % (rt.kind, name, ', '.join('%s: %s' % c for c in causes)) \
        if len(causes) > 0 else '%s "%s" is invalid' % (rt.kind, name)
    if len(causes) > 1:
        msg = '%s "%s" is invalid: [%s]' % (rt.kind, name, ', '.join('%s: %s' % c for c in causes))
    return ApiError(422, 'Invalid', msg, {'name': name, 'group': rt.group, 'kind': rt.kind,
                                          'causes': [{'reason': 'FieldValueInvalid', 'message': m, 'field': f}
                                                     for f, m in causes]})


def jcopy(o):
    """A deep copy of a JSON value (dicts, lists, scalars): what copy.deepcopy does for
    the API objects, several times faster (no memo; tuples and scalars are shared)."""
    t = type(o)
    if t is dict:
        return {k: jcopy(v) for k, v in o.items()}
    if t is list:
        return [jcopy(v) for v in o]
    return o


def _check_name_uid(md, omd):
    """An update's metadata against the stored object's: the name must match the URL's, a
    uid given is a precondition."""
    if md.get('name') and md['name'] != omd['name']:
        raise ApiError(400, 'BadRequest', 'the name of the object (%s) does not match the name on the URL (%s)'
                       % (md['name'], omd['name']))
    if md.get('uid') and md['uid'] != omd['uid']:
        raise ApiError(409, 'Conflict', 'Precondition failed: UID in precondition: %s, UID in object meta: %s'
                       % (omd['uid'], md['uid']))


def now_iso(t=None):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(time.time() if t is None else t))


def parse_iso(s):
    import calendar
    m = re.match(r'^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$', s or '')
    if not m:
        return None
    t = calendar.timegm(tuple(int(m.group(i)) for i in range(1, 7)) + (0, 0, 0))
    if m.group(7):
        t += float(m.group(7))
    if m.group(8) != 'Z':
        sign = 1 if m.group(8)[0] == '+' else -1
        t -= sign * (int(m.group(8)[1:3]) * 3600 + int(m.group(8)[4:6]) * 60)
    return t


class RType:
    """One API resource (group/version/plural)."""

    def __init__(self, group, version, resource, kind, namespaced, status=False, cr=False,
                 short=(), create_status='clear', singular=None, subresources=(), generation=True,
                 fields=(), categories=()):
        self.group, self.version, self.resource, self.kind = group, version, resource, kind
        self.namespaced = namespaced
        self.has_status = status            # status subresource: main writes ignore .status
        self.cr = cr                        # custom resource: no strategic merge, items keep kind
        self.short = list(short)
        self.create_status = create_status  # 'clear' | 'keep'
        self.singular = singular or kind.lower()
        self.subresources = list(subresources) + (['status'] if status else [])
        self.generation = generation
        self.fields = {'metadata.name', 'metadata.namespace'} | set(fields)
        self.categories = list(categories)
        self.key = resource

    @property
    def api_version(self):
        return '%s/%s' % (self.group, self.version) if self.group else self.version

    def gr(self):
        return '%s.%s' % (self.resource, self.group) if self.group else self.resource

    def base_path(self, namespace=None):
        root = '/apis/%s/%s' % (self.group, self.version) if self.group else '/api/v1'
        if self.namespaced and namespace:
            return '%s/namespaces/%s/%s' % (root, namespace, self.resource)
        return '%s/%s' % (root, self.resource)


POD_FIELDS = ('spec.nodeName', 'spec.restartPolicy', 'spec.schedulerName', 'spec.serviceAccountName',
              'spec.hostNetwork', 'status.phase', 'status.podIP', 'status.nominatedNodeName')
EVENT_FIELDS = ('involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name',
                'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion',
                'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type')


def builtin_types():
    return [
        RType('', 'v1', 'namespaces', 'Namespace', False, status=True, short=['ns'],
              create_status='clear', fields=['status.phase'], subresources=['finalize']),
        RType('', 'v1', 'pods', 'Pod', True, status=True, short=['po'], fields=POD_FIELDS,
              subresources=['binding', 'eviction'], categories=['all']),
        RType('', 'v1', 'nodes', 'Node', False, status=True, short=['no'], create_status='keep',
              fields=['spec.unschedulable']),
        RType('', 'v1', 'events', 'Event', True, short=['ev'], fields=EVENT_FIELDS, generation=False),
        RType('', 'v1', 'services', 'Service', True, status=True, short=['svc'], categories=['all']),
        RType('', 'v1', 'secrets', 'Secret', True, fields=['type'], generation=False),
        RType('', 'v1', 'configmaps', 'ConfigMap', True, short=['cm'], generation=False),
        RType('', 'v1', 'serviceaccounts', 'ServiceAccount', True, short=['sa'], generation=False),
        RType('events.k8s.io', 'v1', 'events', 'Event', True, short=['ev'], generation=False),
        RType('coordination.k8s.io', 'v1', 'leases', 'Lease', True, generation=False),
        RType('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', True, status=True,
              short=['pdb']),
        RType('apps', 'v1', 'daemonsets', 'DaemonSet', True, status=True, short=['ds'], categories=['all']),
        # storage objects are stored for clients that read them (a node drain waits for
        # VolumeAttachments); there is no attach/detach controller or provisioner
        RType('', 'v1', 'persistentvolumeclaims', 'PersistentVolumeClaim', True, status=True,
              short=['pvc']),
        RType('', 'v1', 'persistentvolumes', 'PersistentVolume', False, status=True, short=['pv']),
        RType('storage.k8s.io', 'v1', 'volumeattachments', 'VolumeAttachment', False, status=True),
        # read by nodewarden's volume topology (no provisioner behind them)
        RType('storage.k8s.io', 'v1', 'storageclasses', 'StorageClass', False, short=['sc'],
              generation=False),
        # the attach limits a CSI driver reports per node (no driver behind them)
        RType('storage.k8s.io', 'v1', 'csinodes', 'CSINode', False, generation=False),
        # DRA (resource.k8s.io/v1): claims, claim templates and DeviceClasses are stored for
        # nodewarden's accelerator isolation to read; no scheduler allocates them here
        RType('resource.k8s.io', 'v1', 'resourceclaims', 'ResourceClaim', True, status=True),
        RType('resource.k8s.io', 'v1', 'resourceclaimtemplates', 'ResourceClaimTemplate', True),
        RType('resource.k8s.io', 'v1', 'deviceclasses', 'DeviceClass', False),
        RType('apps', 'v1', 'deployments', 'Deployment', True, status=True, short=['deploy'],
              categories=['all'], subresources=['scale']),
        RType('apps', 'v1', 'replicasets', 'ReplicaSet', True, status=True, short=['rs'],
              fields=['status.replicas'], categories=['all'], subresources=['scale']),
        RType('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition',
              False, status=True, short=['crd', 'crds']),
        # RBAC objects are stored (so install manifests apply) but not enforced
        RType('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', False, generation=False),
        RType('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', False,
              generation=False),
        RType('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', True, generation=False),
        RType('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', True, generation=False),
        # the service CIDR nodewarden gives AL2023's NodeConfig (Kubernetes 1.33+; kube-apiserver
        # makes "kubernetes" from --service-cluster-ip-range, the simulator none by itself)
        RType('networking.k8s.io', 'v1', 'servicecidrs', 'ServiceCIDR', False, status=True,
              generation=False),
        # stored, not enforced (nodewarden doctor names them when the webhook is unreachable)
        RType('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', True, short=['netpol']),
        RType('admissionregistration.k8s.io', 'v1', 'validatingwebhookconfigurations',
              'ValidatingWebhookConfiguration', False),
        RType('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations',
              'MutatingWebhookConfiguration', False),
    ]


def karpenter_crds():
    def crd(group, plural, kind, singular, short, categories):
        return {
            'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
            'metadata': {'name': '%s.%s' % (plural, group)},
            'spec': {
                'group': group, 'scope': 'Cluster',
                'names': {'plural': plural, 'singular': singular, 'kind': kind, 'listKind': kind + 'List',
                          'shortNames': short, 'categories': categories},
                'versions': [{'name': 'v1', 'served': True, 'storage': True,
                              'subresources': {'status': {}},
                              'schema': {'openAPIV3Schema': {'type': 'object',
                                                             'x-kubernetes-preserve-unknown-fields': True}}}],
            },
        }
    return [
        crd('karpenter.sh', 'nodepools', 'NodePool', 'nodepool', [], ['karpenter']),
        crd('karpenter.sh', 'nodeclaims', 'NodeClaim', 'nodeclaim', [], ['karpenter']),
        crd('karpenter.k8s.aws', 'ec2nodeclasses', 'EC2NodeClass', 'ec2nodeclass', ['ec2nc', 'ec2ncs'],
            ['karpenter']),
    ]


def rtypes_from_crd(crd):
    spec = crd.get('spec') or {}
    names = spec.get('names') or {}
    out = []
    for v in spec.get('versions') or []:
        if not v.get('served', True):
            continue
        subs = v.get('subresources') or {}
        sel_fields = [f.get('jsonPath', '').lstrip('.') for f in v.get('selectableFields') or []]
        out.append(RType(spec.get('group'), v.get('name'), names.get('plural'), names.get('kind'),
                         spec.get('scope') == 'Namespaced', status='status' in subs, cr=True,
                         short=names.get('shortNames') or [], singular=names.get('singular'),
                         fields=sel_fields, categories=names.get('categories') or []))
    return out


class Watcher:
    def __init__(self, rt, namespace, label_reqs, field_reqs):
        self.rt = rt
        self.namespace = namespace
        self.label_reqs = label_reqs
        self.field_reqs = field_reqs
        self.q = queue.Queue()
        self.closed = False

    def matches(self, obj):
        if obj is None:
            return False
        md = obj.get('metadata') or {}
        if self.namespace and md.get('namespace') != self.namespace:
            return False
        return sel.labels_match(self.label_reqs, md.get('labels')) and sel.fields_match(self.field_reqs, obj)

    def offer(self, etype, obj, old):
        """Translate a store event for this watcher's filter (kube-apiserver's watch
        cache does the same: an object leaving the selection is DELETED for it)."""
        new_m = self.matches(obj)
        old_m = self.matches(old) if old is not None else False
        if etype == 'ADDED' and new_m:
            self.q.put(('ADDED', obj))
        elif etype == 'MODIFIED':
            if new_m and old_m:
                self.q.put(('MODIFIED', obj))
            elif new_m:
                self.q.put(('ADDED', obj))
            elif old_m:
                self.q.put(('DELETED', obj))
        elif etype == 'DELETED' and new_m:
            self.q.put(('DELETED', obj))

    def close(self):
        self.closed = True
        self.q.put(None)


class KubeStore:
    def __init__(self, history=1000, clock=time.time):
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.clock = clock
        self.history_max = max(1, int(history))
        self._subs = []
        self._notify_q = queue.Queue()
        self._notifier = threading.Thread(target=self._notify_loop, name='kube-notify', daemon=True)
        self._notifier.start()
        self.rv = 0
        self.watchers = set()
        self.on_reset = []      # fn(store) run under the lock after the bootstrap objects exist
        self._reset_state()

    # ---- registry ---------------------------------------------------------------------
    def _reset_state(self):
        self.types = {}
        self.objs = {}
        self.history = collections.deque()
        self.compacted = self.rv          # watches from an rv below this get 410
        for rt in builtin_types():
            self.register_type(rt)
        self.types_by_gvr = {(rt.group, rt.version, rt.resource): rt for rt in self.types.values()}
        for c in karpenter_crds():
            self.create('customresourcedefinitions', None, c)
        # what kube-apiserver itself creates at start
        for ns in ('default', 'kube-system', 'kube-public', 'kube-node-lease'):
            self.create('namespaces', None, {'metadata': {'name': ns}})
        for fn in getattr(self, 'on_reset', []):
            fn(self)

    def register_type(self, rt):
        key = rt.resource
        existing = self.types.get(key)
        if existing is not None and existing.group != rt.group:
            key = '%s.%s' % (rt.resource, rt.group)
        rt.key = key
        self.types[key] = rt
        self.objs.setdefault(key, {})
        if hasattr(self, 'types_by_gvr'):
            self.types_by_gvr[(rt.group, rt.version, rt.resource)] = rt
        return rt

    def rtype(self, resource):
        """resource: a store key ('pods', 'events.events.k8s.io') or plural.group."""
        rt = self.types.get(resource)
        if rt is not None:
            return rt
        for t in self.types.values():
            if t.gr() == resource:
                return t
        raise ApiError(404, 'NotFound', 'the server could not find the requested resource (%s)' % resource)

    def by_gvr(self, group, version, resource):
        return self.types_by_gvr.get((group, version, resource))

    # ---- subscribers ----------------------------------------------------------------------
    def subscribe(self, fn):
        """fn(event_type, resource_key, obj) after each change, on a notifier thread,
        outside the lock. event_type: ADDED, MODIFIED, DELETED; after reset():
        ('RESET', None, None)."""
        self._subs.append(fn)

    def _notify_loop(self):
        while True:
            item = self._notify_q.get()
            for fn in list(self._subs):
                try:
                    fn(*item)
                except Exception as e:  # a subscriber bug must not stop the store
                    print('kube store subscriber error: %r' % (e,), flush=True)

    # ---- low level --------------------------------------------------------------------
    def _commit(self, rt, etype, obj, old):
        self.rv += 1
        md = obj['metadata']
        md['resourceVersion'] = str(self.rv)
        k = (md.get('namespace') or None, md['name'])
        if etype == 'DELETED':
            self.objs[rt.key].pop(k, None)
        else:
            self.objs[rt.key][k] = obj
        self.history.append((self.rv, rt.key, etype, obj, old))
        while len(self.history) > self.history_max:
            self.compacted = self.history.popleft()[0]
        # one copy for every watcher and subscriber: they only read it
        shared = jcopy(obj)
        for w in list(self.watchers):
            if w.rt.key == rt.key and not w.closed:
                w.offer(etype, shared, old)
        self._notify_q.put((etype, rt.key, shared))
        self.changed.notify_all()
        return obj

    def _key(self, rt, namespace, name):
        return ((namespace or None) if rt.namespaced else None, name)

    # ---- reads ----------------------------------------------------------------------------
    def get(self, resource, namespace, name):
        with self.lock:
            rt = self.rtype(resource)
            o = self.objs[rt.key].get(self._key(rt, namespace, name))
            return jcopy(o) if o is not None else None

    def get_shared(self, resource, namespace, name):
        """The stored object itself, not a copy (None if absent): for a writer that only
        reads it and builds a new dict from it (peek's rule: stored objects are never
        modified in place)."""
        with self.lock:
            rt = self.rtype(resource)
            return self.objs[rt.key].get(self._key(rt, namespace, name))

    def list(self, resource, namespace=None):
        with self.lock:
            rt = self.rtype(resource)
            return [jcopy(o) for k, o in sorted(self.objs[rt.key].items(), key=lambda kv: (kv[0][0] or '', kv[0][1]))
                    if namespace is None or k[0] == namespace]

    def peek(self, resource, namespace=None):
        """The stored objects themselves, not copies: for read-only scans by the
        controllers. Stored objects are never modified in place (every write commits
        a new dict), so a caller may keep and read them; it must copy before changing."""
        with self.lock:
            rt = self.rtype(resource)
            return [o for k, o in self.objs[rt.key].items() if namespace is None or k[0] == namespace]

    def _raw(self, rt, namespace, name):
        return self.objs[rt.key].get(self._key(rt, namespace, name))

    def state_at(self, rt, rv):
        """Objects of one type as they were at resourceVersion rv (needs rv >= compacted)."""
        cur = {k: o for k, o in self.objs[rt.key].items()}
        for (erv, key, etype, obj, old) in reversed(self.history):
            if erv <= rv:
                break
            if key != rt.key:
                continue
            md = obj['metadata']
            k = (md.get('namespace') or None, md['name'])
            if etype == 'ADDED':
                cur.pop(k, None)
            else:
                cur[k] = old
        return cur

    # ---- writes ---------------------------------------------------------------------------
    def prepare_create(self, rt, namespace, obj):
        """Defaults and validation for a new object (no commit)."""
        if not isinstance(obj, dict):
            raise ApiError(400, 'BadRequest', 'the body of the request was not a JSON object')
        obj = jcopy(obj)
        md = obj.setdefault('metadata', {})
        if not isinstance(md, dict):
            raise ApiError(400, 'BadRequest', 'metadata must be an object')
        obj['apiVersion'] = rt.api_version
        obj['kind'] = rt.kind
        if rt.namespaced:
            ns = namespace or md.get('namespace') or 'default'
            if md.get('namespace') and namespace and md['namespace'] != namespace:
                raise ApiError(400, 'BadRequest', 'the namespace of the provided object does not match the namespace sent on the request')
            md['namespace'] = ns
        else:
            md.pop('namespace', None)
        if not md.get('name') and not md.get('generateName'):
            raise invalid(rt, '', [('metadata.name', 'Required value: name or generateName is required')])
        for f in ('uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp',
                  'deletionGracePeriodSeconds', 'selfLink', 'managedFields'):
            md.pop(f, None)
        import defaults
        defaults.on_create(self, rt, obj)
        return obj

    def finalize_create(self, rt, obj):
        """System fields (generated name, uid, timestamps, generation), status reset
        and validation: what kube-apiserver does after mutating admission."""
        obj = jcopy(obj)
        md = obj.setdefault('metadata', {})
        if not md.get('name'):
            if not md.get('generateName'):
                raise invalid(rt, '', [('metadata.name', 'Required value: name or generateName is required')])
            md['name'] = md['generateName'] + uuid.uuid4().hex[:5]
        md['uid'] = str(uuid.uuid4())
        md['creationTimestamp'] = now_iso(self.clock())
        md.pop('resourceVersion', None)
        if rt.generation:
            md['generation'] = 1
        if rt.has_status and rt.create_status == 'clear' and rt.cr:
            obj.pop('status', None)
        elif rt.has_status and rt.create_status == 'clear' and rt.key not in ('pods', 'namespaces', 'services'):
            obj['status'] = {}
        validate_meta(rt, obj)
        return obj

    def commit_create(self, rt, obj):
        with self.lock:
            md = obj['metadata']
            if rt.namespaced:
                nso = self._raw(self.types['namespaces'], None, md['namespace'])
                if nso is None:
                    raise ApiError(404, 'NotFound', 'namespaces "%s" not found' % md['namespace'],
                                   {'name': md['namespace'], 'kind': 'namespaces'})
                if nso['metadata'].get('deletionTimestamp'):
                    raise ApiError(403, 'Forbidden', '%s "%s" is forbidden: unable to create new content in namespace %s because it is being terminated'
                                   % (rt.gr(), md['name'], md['namespace']),
                                   {'name': md['name'], 'group': rt.group, 'kind': rt.resource,
                                    'causes': [{'reason': 'NamespaceTerminating', 'message': 'namespace %s is being terminated' % md['namespace'], 'field': 'metadata.namespace'}]})
            if self._raw(rt, md.get('namespace'), md['name']) is not None:
                if md.get('generateName') and md['name'].startswith(md['generateName']):
                    md['name'] = md['generateName'] + uuid.uuid4().hex[:5]
                    return self.commit_create(rt, obj)
                raise ApiError(409, 'AlreadyExists', '%s "%s" already exists' % (rt.gr(), md['name']),
                               {'name': md['name'], 'group': rt.group, 'kind': rt.resource})
            obj = jcopy(obj)
            self._commit(rt, 'ADDED', obj, None)
            if rt.key == 'customresourcedefinitions':
                self._crd_changed(obj)
            return jcopy(obj)

    def create(self, resource, namespace, obj):
        rt = self.rtype(resource)
        return self.commit_create(rt, self.finalize_create(rt, self.prepare_create(rt, namespace, obj)))

    def _crd_changed(self, crd):
        for t in rtypes_from_crd(crd):
            if self.by_gvr(t.group, t.version, t.resource) is None:
                self.register_type(t)
        # report Established, as the apiextensions controller would
        st = {'conditions': [{'type': 'NamesAccepted', 'status': 'True', 'reason': 'NoConflicts',
                              'message': 'no conflicts found', 'lastTransitionTime': now_iso(self.clock())},
                             {'type': 'Established', 'status': 'True', 'reason': 'InitialNamesAccepted',
                              'message': 'the initial names have been accepted',
                              'lastTransitionTime': now_iso(self.clock())}],
              'acceptedNames': (crd.get('spec') or {}).get('names') or {},
              'storedVersions': [v.get('name') for v in (crd.get('spec') or {}).get('versions') or []
                                 if v.get('storage')]}
        if crd.get('status') != st:
            cur = self._raw(self.types['customresourcedefinitions'], None, crd['metadata']['name'])
            if cur is not None and cur.get('status', {}).get('conditions') is None:
                new = jcopy(cur)
                new['status'] = st
                self._commit(self.types['customresourcedefinitions'], 'MODIFIED', new, cur)

    def prepare_update(self, rt, old, new, subresource=None):
        """Carry server-owned fields from old to new; status/spec split; generation."""
        if not isinstance(new, dict):
            raise ApiError(400, 'BadRequest', 'the body of the request was not a JSON object')
        if subresource == 'status':
            return self._prepare_status(old, new)
        new = jcopy(new)
        md = new.setdefault('metadata', {})
        omd = old['metadata']
        _check_name_uid(md, omd)
        new['apiVersion'] = rt.api_version
        new['kind'] = rt.kind
        for f in ('name', 'namespace', 'uid', 'creationTimestamp', 'deletionTimestamp',
                  'deletionGracePeriodSeconds', 'generation', 'generateName'):
            if f in omd:
                md[f] = omd[f]
            else:
                md.pop(f, None)
        if rt.has_status:
            if 'status' in old:
                new['status'] = jcopy(old['status'])
            else:
                new.pop('status', None)
        if omd.get('deletionTimestamp'):
            added = set(md.get('finalizers') or []) - set(omd.get('finalizers') or [])
            if added:
                raise invalid(rt, omd['name'], [('metadata.finalizers', 'Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers %s' % json.dumps(sorted(added)))])
        if rt.generation:
            a = {k: v for k, v in old.items() if k not in ('metadata', 'status', 'apiVersion', 'kind')}
            b = {k: v for k, v in new.items() if k not in ('metadata', 'status', 'apiVersion', 'kind')}
            if a != b or (md.get('deletionTimestamp') and not omd.get('deletionTimestamp')):
                md['generation'] = int(omd.get('generation') or 1) + 1
        validate_meta(rt, new)
        import defaults
        defaults.on_update(self, rt, new, old)
        return new

    @staticmethod
    def _prepare_status(old, new):
        """A write of the status subresource: the stored object with new's status (of new
        only the status is copied, and its name and uid checked)."""
        md = new.get('metadata')
        md = md if isinstance(md, dict) else {}
        omd = old['metadata']
        _check_name_uid(md, omd)
        out = jcopy({k: v for k, v in old.items() if k != 'status'})
        if 'status' in new:
            out['status'] = jcopy(new['status'])
        out['metadata']['resourceVersion'] = md.get('resourceVersion', '')
        return out

    def commit_update(self, rt, new, expect_rv=None, owned=False):
        """Commit new over the stored object. expect_rv: the rv the change was computed
        from (used when the client gave none); the client's metadata.resourceVersion,
        if set, must match the stored one (409 otherwise). owned: the caller hands new
        over (it keeps no reference it would change): it is stored as it is, and the
        object returned is the stored one, for reading only (else both are copies)."""
        with self.lock:
            md = new['metadata']
            cur = self._raw(rt, md.get('namespace'), md['name'])
            if cur is None:
                raise not_found(rt, md['name'])
            want = md.get('resourceVersion') or expect_rv
            if want and want != cur['metadata']['resourceVersion']:
                raise conflict(rt, md['name'])
            if cur['metadata']['uid'] != md.get('uid', cur['metadata']['uid']):
                raise conflict(rt, md['name'])
            if not owned:
                new = jcopy(new)
            if _same_but_rv(new, cur):
                return cur if owned else jcopy(cur)   # no-op writes do not bump the rv
            nmd = new['metadata']
            if nmd.get('deletionTimestamp') and not nmd.get('finalizers') and rt.key != 'namespaces':
                pod_running = rt.key == 'pods' and (new.get('spec') or {}).get('nodeName') and \
                    (new.get('status') or {}).get('phase') not in ('Succeeded', 'Failed')
                if not pod_running:        # last finalizer removed: the object goes away
                    self._commit(rt, 'DELETED', new, cur)
                    return new if owned else jcopy(new)
            self._commit(rt, 'MODIFIED', new, cur)
            if rt.key == 'customresourcedefinitions':
                self._crd_changed(new)
            return new if owned else jcopy(new)

    def update(self, resource, namespace, obj):
        with self.lock:
            rt = self.rtype(resource)
            md = obj.get('metadata') or {}
            old = self._raw(rt, namespace if rt.namespaced else None, md.get('name'))
            if old is None:
                raise not_found(rt, md.get('name'))
            return self.commit_update(rt, self.prepare_update(rt, old, obj),
                                      expect_rv=None)

    def update_status(self, resource, namespace, obj):
        with self.lock:
            rt = self.rtype(resource)
            md = obj.get('metadata') or {}
            old = self._raw(rt, namespace if rt.namespaced else None, md.get('name'))
            if old is None:
                raise not_found(rt, md.get('name'))
            return self.commit_update(rt, self.prepare_update(rt, old, obj, 'status'))

    def delete(self, resource, namespace, name, grace=None, preconditions=None, propagation=None):
        """Delete honouring finalizers (sets deletionTimestamp), graceful pod deletion,
        preconditions and propagationPolicy. Returns the last state of the object."""
        with self.lock:
            rt = self.rtype(resource)
            cur = self._raw(rt, namespace, name)
            if cur is None:
                raise not_found(rt, name)
            pre = preconditions or {}
            if pre.get('uid') and pre['uid'] != cur['metadata']['uid']:
                raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": Precondition failed: UID in precondition: %s, UID in object meta: %s'
                               % (rt.gr(), name, pre['uid'], cur['metadata']['uid']))
            if pre.get('resourceVersion') and pre['resourceVersion'] != cur['metadata']['resourceVersion']:
                raise ApiError(409, 'Conflict', 'Operation cannot be fulfilled on %s "%s": Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %s'
                               % (rt.gr(), name, pre['resourceVersion'], cur['metadata']['resourceVersion']))
            new = jcopy(cur)
            md = new['metadata']
            fins = list(md.get('finalizers') or [])
            if propagation == 'Orphan':
                self._orphan_dependents(md['uid'])
            elif propagation == 'Foreground' and 'foregroundDeletion' not in fins and \
                    self._has_dependents(md['uid']):
                fins.append('foregroundDeletion')
                md['finalizers'] = fins
            now = self.clock()
            if rt.key == 'pods':
                bound = bool((new.get('spec') or {}).get('nodeName'))
                phase = (new.get('status') or {}).get('phase')
                if grace is None:
                    grace = (new.get('spec') or {}).get('terminationGracePeriodSeconds', 30)
                if bound and grace > 0 and phase not in ('Succeeded', 'Failed'):
                    if md.get('deletionTimestamp'):
                        old_dl = parse_iso(md['deletionTimestamp']) or now
                        if now + grace >= old_dl and new == cur:
                            return jcopy(cur)
                    md['deletionTimestamp'] = now_iso(now + grace)
                    md['deletionGracePeriodSeconds'] = int(grace)
                    return jcopy(self._commit(rt, 'MODIFIED', new, cur))
            if rt.key == 'namespaces':
                if not md.get('deletionTimestamp'):
                    md['deletionTimestamp'] = now_iso(now)
                    md['deletionGracePeriodSeconds'] = 0
                    new.setdefault('status', {})['phase'] = 'Terminating'
                    return jcopy(self._commit(rt, 'MODIFIED', new, cur))
                return jcopy(cur)
            if fins:
                if not md.get('deletionTimestamp'):
                    md['deletionTimestamp'] = now_iso(now)
                    md['deletionGracePeriodSeconds'] = 0
                    if rt.generation:
                        md['generation'] = int(md.get('generation') or 1) + 1
                if new != cur:
                    return jcopy(self._commit(rt, 'MODIFIED', new, cur))
                return jcopy(cur)
            return jcopy(self._commit(rt, 'DELETED', new, cur))

    def finish_delete(self, resource, namespace, name):
        """Remove an object outright (kubelet confirming a pod's termination,
        namespace controller finishing). No finalizer check."""
        with self.lock:
            rt = self.rtype(resource)
            cur = self._raw(rt, namespace, name)
            if cur is None:
                return None
            return jcopy(self._commit(rt, 'DELETED', jcopy(cur), cur))

    def _has_dependents(self, uid):
        for objs in self.objs.values():
            for o in objs.values():
                if any(r.get('uid') == uid for r in o['metadata'].get('ownerReferences') or []):
                    return True
        return False

    def _orphan_dependents(self, uid):
        for key, objs in self.objs.items():
            rt = self.types[key]
            for o in list(objs.values()):
                refs = o['metadata'].get('ownerReferences') or []
                if any(r.get('uid') == uid for r in refs):
                    new = jcopy(o)
                    new['metadata']['ownerReferences'] = [r for r in refs if r.get('uid') != uid]
                    if not new['metadata']['ownerReferences']:
                        del new['metadata']['ownerReferences']
                    self._commit(rt, 'MODIFIED', new, o)

    # ---- watches --------------------------------------------------------------------------
    def add_watcher(self, w, since_rv):
        """Register w and queue the events it must see first. since_rv None: synthetic
        ADDED for every current object. Raises ApiError 410 if since_rv is compacted."""
        with self.lock:
            if since_rv is None:
                for o in self.list(w.rt.key, w.namespace):
                    if w.matches(o):
                        w.q.put(('ADDED', o))
            else:
                if since_rv < self.compacted:
                    raise ApiError(410, 'Expired', 'too old resource version: %d (%d)' % (since_rv, self.compacted + 1))
                for (erv, key, etype, obj, old) in self.history:
                    if erv > since_rv and key == w.rt.key:
                        w.offer(etype, jcopy(obj), old)
            self.watchers.add(w)

    def remove_watcher(self, w):
        with self.lock:
            self.watchers.discard(w)

    def drop_watches(self):
        with self.lock:
            ws = list(self.watchers)
            self.watchers.clear()
        for w in ws:
            w.close()
        return len(ws)

    def reset(self, mode='wipe'):
        """'wipe': all objects gone (bootstrap objects recreated with new uids), history
        compacted; 'restore': same objects (same uids), every object re-stamped with a
        new resourceVersion and the history compacted, as after an etcd restore.
        Either way every open watch is dropped and old resourceVersions get 410."""
        n = self.drop_watches()
        with self.lock:
            self.rv += 1000
            if mode == 'restore':
                self.history.clear()
                for key, objs in self.objs.items():
                    for k, o in list(objs.items()):
                        self.rv += 1
                        o = jcopy(o)
                        o['metadata']['resourceVersion'] = str(self.rv)
                        objs[k] = o
                self.compacted = self.rv
            else:
                self._reset_state()
                self.history.clear()
                self.compacted = self.rv
            self.changed.notify_all()
        self._notify_q.put(('RESET', None, None))
        return n


def _same_but_rv(a, b):
    a = copy.copy(a)
    b = copy.copy(b)
    a['metadata'] = {k: v for k, v in a['metadata'].items() if k != 'resourceVersion'}
    b['metadata'] = {k: v for k, v in b['metadata'].items() if k != 'resourceVersion'}
    return a == b


_NAME_RE = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_LABEL_NAME_RE = re.compile(r'^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$')


def validate_meta(rt, obj):
    md = obj['metadata']
    name = md.get('name', '')
    causes = []
    if not isinstance(name, str) or len(name) > 253 or not _NAME_RE.match(name):
        if not (rt.key in ('events', 'events.events.k8s.io') and isinstance(name, str) and name):
            causes.append(('metadata.name', 'Invalid value: "%s": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or \'.\', and must start and end with an alphanumeric character' % name))
    if rt.key == 'namespaces' and (len(name) > 63 or '.' in name):
        causes.append(('metadata.name', 'Invalid value: "%s": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \'-\'' % name))
    labels = md.get('labels') or {}
    if not isinstance(labels, dict):
        causes.append(('metadata.labels', 'Invalid value: must be a map of strings'))
    else:
        for k, v in labels.items():
            if not isinstance(v, str) or (v and (len(v) > 63 or not _LABEL_NAME_RE.match(v))):
                causes.append(('metadata.labels', 'Invalid value: "%s": a valid label must be an empty string or consist of alphanumeric characters, \'-\', \'_\' or \'.\', and must start and end with an alphanumeric character' % (v,)))
            prefix, _, nm = k.rpartition('/')
            if not nm or len(nm) > 63 or not _LABEL_NAME_RE.match(nm) or (prefix and not _NAME_RE.match(prefix)):
                causes.append(('metadata.labels', 'Invalid value: "%s": name part must consist of alphanumeric characters, \'-\', \'_\' or \'.\'' % k))
    ann = md.get('annotations') or {}
    if not isinstance(ann, dict) or any(not isinstance(v, str) for v in ann.values()):
        causes.append(('metadata.annotations', 'Invalid value: annotations must be a map of strings'))
    if causes:
        raise invalid(rt, name, causes)
