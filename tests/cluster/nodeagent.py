"""The node agent of the real-cluster tier: what the kubelets and the cloud provider's
node-lifecycle controller would do for the simulated EC2 instances, against a real
kube-apiserver.

For every instance of the AWS simulator (tests/sim/aws.py) that reaches 'running':
- after a boot delay its userData is read exactly as the simulator's kubelets read it
  (tests/sim/kubelet.py: parse_user_data, build_node): node name, providerID, labels,
  taints, capacity. An instance whose userData a kubelet could not use never joins;
- the Node is registered with the node's own identity: a client certificate for
  system:node:<name> in group system:nodes, signed by the cluster CA, so the API
  server's Node authorizer and NodeRestriction admission judge every write as they
  judge a kubelet's (a kubelet may create its own Node with its labels and taints,
  write its status and Lease, and the status of pods bound to it - nothing else);
- it reports Ready a moment later (extended resources such as nvidia.com/gpu appear
  then, as when a device plugin starts; N per GPU with the label nvidia.com/gpu.replicas=N,
  as the time-slicing device plugin advertises them), renews its Lease in kube-node-lease every
  few seconds and its status heartbeat every 30 s, so kube-controller-manager's
  node-lifecycle controller keeps it healthy;
- pods bound to it become Running (status written as the node: podIP, hostIP,
  conditions, container statuses); a deleted pod is removed once its containers
  would have stopped (min(grace period, 1 s); at once for grace 0), as the kubelet
  does with a uid-preconditioned delete with grace period 0;
- when the instance shuts down the node reports NotReady and stops heartbeating;
  when it is terminated the Node is deleted with the agent's cloud-provider
  identity (as the cloud node-lifecycle controller does; finalizers are the API
  server's business). A Node deleted while its instance still runs registers again.

Reads (one watch of all pods, a Node before deleting it) use the agent's cloud-provider
identity, which has only what upstream's cloud-node-lifecycle controller has
(tests/cluster/realcluster.py RealCluster._cloud_identity); every write a kubelet
makes uses that node's certificate.
"""
import http.client
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'sim'))

import kubelet  # noqa: E402  (tests/sim/kubelet.py: the userData parser and Node builder)
from rest import Api, ApiError  # noqa: E402

LEASE_EVERY = 5.0
STATUS_EVERY = 30.0


def _now():
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())


def _micro():
    t = time.time()
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%06dZ' % int((t % 1) * 1e6)


class NodeAgent:
    def __init__(self, aws, cp, cloud_api, boot_delay=0.5, ready_delay=0.3, log=None, check_tokens=False):
        self.aws = aws
        self.cp = cp                    # tests/k8s/controlplane.ControlPlane (issue_cert)
        self.cloud = cloud_api          # rest.Api with the cloud-provider identity
        self.boot_delay = boot_delay
        self.ready_delay = ready_delay
        self.log = log or (lambda *a: print('nodeagent:', *a, flush=True))
        self.lock = threading.RLock()
        self.nodes = {}                 # instance id -> state dict
        self.pods = {}                  # uid -> pod (cache from the watch)
        self.done_pods = set()          # uids marked Running / deleted already
        self.stop_ev = threading.Event()
        self.nets = 0
        # check_tokens: a kubeadm join joins only once its bootstrap token authenticates
        # against kube-apiserver (a SelfSubjectReview with the token, as kubeadm's TLS
        # bootstrap would use it) and its CA pin is the cluster CA's
        self.check_tokens = check_tokens
        self.ca_pin = None
        if check_tokens:
            with open(cp.ca_file) as f:
                self.ca_pin = kubelet.ca_pin(f.read())
        self.auth = {}                  # token id -> the username it authenticated as
        aws.kubelets = self             # GET /aws/kubelets on the control API
        aws.subscribe(self._on_instance)
        self.threads = [threading.Thread(target=f, name=n, daemon=True) for f, n in (
            (self._pod_watch, 'agent-pods'), (self._loop, 'agent-sync'))]
        for t in self.threads:
            t.start()

    def stop(self):
        self.stop_ev.set()

    def _after(self, seconds, fn, *args):
        """fn(*args) on a thread of its own (never on the AWS simulator's scheduler, which
        an API call of a kubelet must not hold up)."""
        t = threading.Timer(seconds, lambda: None if self.stop_ev.is_set() else fn(*args))
        t.daemon = True
        t.start()

    def status(self):
        with self.lock:
            return [{'instanceId': i, 'nodeName': k.get('name'), 'state': k['state'],
                     'error': k.get('error')} for i, k in sorted(self.nodes.items())]

    # ---- instances ----------------------------------------------------------
    def _on_instance(self, event, inst):
        iid = inst['InstanceId']
        if event == 'running':
            with self.lock:
                self.nodes[iid] = {'state': 'booting', 'inst': inst}
            self._after(self.boot_delay, self._boot, iid)
        elif event == 'shutting-down':
            with self.lock:
                k = self.nodes.get(iid)
                if k:
                    k['state'] = 'stopped'
            if k and k.get('api'):
                self._after(0, self._status, k, False)
        elif event == 'terminated':
            with self.lock:
                k = self.nodes.pop(iid, None)
            if k and k.get('name'):
                self._after(0, self._cloud_delete, k['name'], iid)

    def _boot(self, iid):
        with self.lock:
            k = self.nodes.get(iid)
            if not k or k['state'] != 'booting':
                return
        inst = self.aws.instance(iid) or k['inst']
        if inst['State']['Name'] != 'running':
            return
        try:
            cfg = kubelet.parse_user_data(inst.get('UserData'))
        except kubelet.UserDataError as e:
            with self.lock:
                k.update(state='failed', error=str(e))
            self.log('%s never joins: %s' % (iid, e))
            return
        name = cfg['node_name'] or inst['PrivateDnsName']
        if self.check_tokens:
            why = self._token_refused(cfg)
            if why:
                with self.lock:
                    k['error'] = why
                self._after(1.0, self._boot, iid)
                return
        try:
            crt, key = self.cp.issue_cert('node-' + name, 'system:node:' + name,
                                          orgs=['system:nodes'], client=True)
        except Exception as e:
            self.log('%s: no client certificate for %s: %s; retrying' % (iid, name, e))
            self._after(1.0, self._boot, iid)
            return
        with self.lock:
            self.nets += 1
            k.update(cfg=cfg, inst=inst, name=name, state='registering', net=self.nets % 250 + 1,
                     api=Api(self.cp.server, self.cp.ca_file, cert=(crt, key)), next_lease=0,
                     next_status=0, pod_ips=0)
        self._register(k)

    def _token_refused(self, cfg):
        """None when kubeadm join's discovery and TLS bootstrap would get past the API
        server with cfg's token and CA pin; else why not."""
        tok = cfg.get('bootstrap_token')
        if not tok:
            return 'kubeadm join has no bootstrap token'
        if self.ca_pin not in cfg.get('ca_cert_hashes', []):
            return 'the CA pin %s is not the cluster CA\'s %s' % (cfg.get('ca_cert_hashes'), self.ca_pin)
        try:
            code, body = Api(self.cp.server, self.cp.ca_file, token=tok).request(
                'POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews',
                {'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'})
        except OSError as e:
            return 'cannot reach the API server: %s' % e
        if code != 201:
            return 'the bootstrap token does not authenticate (HTTP %d)' % code
        user = body.get('status', {}).get('userInfo', {})
        with self.lock:
            self.auth[tok.split('.')[0]] = user
        return None

    def _register(self, k):
        inst, cfg, api = k['inst'], k['cfg'], k['api']
        node = kubelet.build_node(inst, cfg, self.aws.region,
                                  self.aws.zone_ids[inst['Placement']['AvailabilityZone']], time.time())
        try:
            code, cur = api.request('GET', '/api/v1/nodes/' + k['name'])
            if code == 404:
                cur = api.create('/api/v1/nodes', node)
            elif code != 200:
                raise ApiError(code, cur)
            elif cur['spec'].get('providerID') != node['spec']['providerID']:
                k.update(state='failed', error='a Node named %s exists for another instance' % k['name'])
                return
            k['uid'] = cur['metadata']['uid']
            k['labels'] = node['metadata'].get('labels') or {}
            api.merge('/api/v1/nodes/%s/status' % k['name'], {'status': node['status']})
            self._lease(k)
        except (ApiError, OSError) as e:
            self.log('%s: register failed: %s' % (k['name'], e))
            self._after(1.0, self._retry_register, k)
            return
        with self.lock:
            k['state'] = 'registered'
        self._after(self.ready_delay, self._ready, k)

    def _retry_register(self, k):
        if k.get('state') in ('registering', 'ready', 'registered') and not self.stop_ev.is_set():
            self._register(k)

    def _ready(self, k):
        if k.get('state') != 'registered':
            return
        if self._status(k, ready=True):
            with self.lock:
                k['state'] = 'ready'
        else:
            self._after(1.0, self._ready, k)

    def _status(self, k, ready):
        """Write the node's conditions (and, when Ready, capacity with devices)."""
        cap, alloc = kubelet.resources(k['inst'], k['cfg'], with_devices=ready)
        if ready:  # time-sliced GPUs, as the simulator's kubelets advertise them
            kubelet.time_slice(cap, alloc, k.get('labels'))
        ts = _now()
        st, reason, msg = (('True', 'KubeletReady', 'kubelet is posting ready status') if ready else
                           ('False', 'KubeletNotReady', 'node is shutting down'))
        conds = [{'type': t, 'status': 'False', 'reason': r, 'message': m, 'lastHeartbeatTime': ts}
                 for t, r, m in (('MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
                                 ('DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
                                 ('PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'))]
        conds.append({'type': 'Ready', 'status': st, 'reason': reason, 'message': msg,
                      'lastHeartbeatTime': ts})
        if k.get('ready_reported') != ready:
            for c in conds:
                c['lastTransitionTime'] = ts
        body = {'status': {'conditions': conds}}
        if ready:
            body['status'].update(capacity=cap, allocatable=alloc)
        try:
            # strategic merge: conditions merge by type, keeping transition times
            k['api'].call('PATCH', '/api/v1/nodes/%s/status' % k['name'], body,
                          'application/strategic-merge-patch+json')
        except (ApiError, OSError) as e:
            self.log('%s: status update failed: %s' % (k['name'], e))
            return False
        k['ready_reported'] = ready
        k['next_status'] = time.monotonic() + STATUS_EVERY
        return True

    def _lease(self, k):
        path = '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/' + k['name']
        spec = {'holderIdentity': k['name'], 'leaseDurationSeconds': 40, 'renewTime': _micro()}
        code, _ = k['api'].request('PATCH', path, {'spec': spec}, 'application/merge-patch+json')
        if code == 404:
            k['api'].create('/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', {
                'metadata': {'name': k['name'], 'ownerReferences': [{
                    'apiVersion': 'v1', 'kind': 'Node', 'name': k['name'], 'uid': k['uid']}]},
                'spec': spec})
        k['next_lease'] = time.monotonic() + LEASE_EVERY

    def _cloud_delete(self, name, iid):
        try:
            n = self.cloud.get('/api/v1/nodes/' + name)
            if n['spec'].get('providerID', '').endswith('/' + iid):
                self.cloud.delete('/api/v1/nodes/' + name)
        except (ApiError, OSError, http.client.HTTPException) as e:
            if getattr(e, 'code', None) != 404:
                self.log('delete node %s failed: %s' % (name, e))

    # ---- the periodic part ----------------------------------------------------
    def _loop(self):
        while not self.stop_ev.wait(0.5):
            try:
                self._sync()
            except Exception as e:  # keep the agent alive; say what happened
                self.log('sync failed: %r' % (e,))

    def _sync(self):
        now = time.monotonic()
        with self.lock:
            mine = [k for k in self.nodes.values() if k['state'] in ('registered', 'ready')]
        for k in mine:
            if now >= k['next_lease']:
                try:
                    self._lease(k)
                except (ApiError, OSError) as e:
                    if getattr(e, 'code', None) in (403, 404):
                        # the Node is gone (nodes may write only their own Lease): register again
                        self._gone(k)
                        continue
                    self.log('%s: lease renewal failed: %s' % (k['name'], e))
            if k['state'] == 'ready' and now >= k['next_status']:
                self._status(k, ready=True)
            elif k['state'] == 'ready' and not k.get('labels_synced'):
                self._gpu_replicas(k)
        self._pods_sync()

    def _gpu_replicas(self, k):
        """The NodePool's template labels reach the Node when nodewarden registers it
        (karpenter.sh/registered); a GPU node labelled nvidia.com/gpu.replicas=N then
        advertises N nvidia.com/gpu per GPU, as the time-slicing device plugin does once
        GPU feature discovery has labelled the node."""
        if 'nvidia.com/gpu' not in kubelet.resources(k['inst'], k['cfg'], with_devices=True)[1]:
            k['labels_synced'] = True
            return
        code, n = k['api'].request('GET', '/api/v1/nodes/' + k['name'])
        labels = (n.get('metadata', {}).get('labels') or {}) if code == 200 else {}
        if labels.get('karpenter.sh/registered') != 'true':
            return
        k['labels'], k['labels_synced'] = labels, True
        if labels.get('nvidia.com/gpu.replicas'):
            self._status(k, ready=True)

    def _gone(self, k):
        code, _ = self.cloud.request('GET', '/api/v1/nodes/' + k['name'])
        inst = self.aws.instance(k['inst']['InstanceId'])
        if code == 404 and inst and inst['State']['Name'] == 'running':
            self.log('%s: Node deleted while its instance runs: registering again' % k['name'])
            with self.lock:
                k['state'] = 'registering'
                k.pop('ready_reported', None)
            self._register(k)

    # ---- pods -------------------------------------------------------------------
    def _pod_watch(self):
        rv = None
        while not self.stop_ev.is_set():
            try:
                if rv is None:
                    lst = self.cloud.get('/api/v1/pods')
                    rv = lst['metadata']['resourceVersion']
                    with self.lock:
                        self.pods = {p['metadata']['uid']: p for p in lst['items']}
                for typ, obj in self.cloud.watch('/api/v1/pods?resourceVersion=%s' % rv, self.stop_ev):
                    if typ == 'ERROR':
                        rv = None
                        break
                    rv = obj['metadata'].get('resourceVersion', rv)
                    if typ == 'BOOKMARK':
                        continue
                    with self.lock:
                        if typ == 'DELETED':
                            self.pods.pop(obj['metadata']['uid'], None)
                        else:
                            self.pods[obj['metadata']['uid']] = obj
            except (ApiError, OSError, ValueError, http.client.HTTPException) as e:
                # HTTPException: the API server ended the stream mid-chunk (it stopped)
                if not self.stop_ev.is_set():
                    self.log('pod watch: %r' % e)
                    rv = None
                    time.sleep(0.5)

    def _pods_sync(self):
        with self.lock:
            by_name = {k['name']: k for k in self.nodes.values() if k['state'] == 'ready'}
            pods = list(self.pods.values())
        for p in pods:
            k = by_name.get(p['spec'].get('nodeName'))
            uid = p['metadata']['uid']
            if k is None:
                continue
            if p['metadata'].get('deletionTimestamp'):
                key = ('del', uid)
                if key in self.done_pods:
                    continue
                self.done_pods.add(key)
                grace = p['metadata'].get('deletionGracePeriodSeconds') or 0
                self._after(min(float(grace), 1.0), self._remove_pod, k, p)
            elif p.get('status', {}).get('phase') in (None, 'Pending') and ('run', uid) not in self.done_pods:
                self.done_pods.add(('run', uid))
                self._run_pod(k, p)

    def _run_pod(self, k, p):
        ts = _now()
        k['pod_ips'] += 1
        n = k['pod_ips']
        ip = '10.%d.%d.%d' % (128 + k['net'] // 64, (k['net'] % 64) * 4 + n // 250, n % 250 + 2)
        conds = [{'type': t, 'status': 'True', 'lastTransitionTime': ts} for t in
                 ('PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled')]
        cs = [{'name': c['name'], 'image': c.get('image', ''), 'imageID': '', 'ready': True,
               'started': True, 'restartCount': 0, 'containerID': 'containerd://%032x' % (hash((p['metadata']['uid'], c['name'])) & (2 ** 128 - 1)),
               'state': {'running': {'startedAt': ts}}} for c in p['spec'].get('containers', [])]
        status = {'phase': 'Running', 'conditions': conds, 'hostIP': k['inst']['PrivateIpAddress'],
                  'hostIPs': [{'ip': k['inst']['PrivateIpAddress']}], 'podIP': ip, 'podIPs': [{'ip': ip}],
                  'startTime': ts, 'containerStatuses': cs}
        path = '/api/v1/namespaces/%s/pods/%s/status' % (p['metadata']['namespace'], p['metadata']['name'])
        try:
            k['api'].call('PATCH', path, {'metadata': {'uid': p['metadata']['uid']}, 'status': status},
                          'application/strategic-merge-patch+json')
        except (ApiError, OSError) as e:
            if getattr(e, 'code', None) not in (404, 409):
                self.log('pod %s: status failed: %s' % (path, e))
                self.done_pods.discard(('run', p['metadata']['uid']))

    def _remove_pod(self, k, p):
        path = '/api/v1/namespaces/%s/pods/%s' % (p['metadata']['namespace'], p['metadata']['name'])
        try:
            k['api'].delete(path, {'apiVersion': 'v1', 'kind': 'DeleteOptions', 'gracePeriodSeconds': 0,
                                   'preconditions': {'uid': p['metadata']['uid']}})
        except (ApiError, OSError) as e:
            if getattr(e, 'code', None) not in (404, 409):
                self.log('pod %s: delete failed: %s' % (path, e))
                self.done_pods.discard(('del', p['metadata']['uid']))

