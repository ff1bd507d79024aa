"""Simulator self-tests: scheduler, kubelet stand-in, controllers, eviction + PDB."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simtest import Cluster, pod, wait_for  # noqa: E402

PODS = '/api/v1/namespaces/default/pods'


class SchedulerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.k = cls.c.client
        cls.c.add_node('small', cpu='1', memory='1Gi', labels={'size': 'small'})
        cls.c.add_node('big', cpu='8', memory='32Gi', labels={'size': 'big'})
        cls.c.add_node('gpu', cpu='8', memory='32Gi', labels={'node.accelerator': 'nvidia-gpu'},
                       taints=[{'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'}])
        cls.c.add_node('down', cpu='64', memory='256Gi', labels={'size': 'huge'}, ready=False)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def get(self, name):
        return self.k.get(PODS + '/' + name)[2]

    def wait_phase(self, name, phase='Running'):
        return wait_for(lambda: (self.get(name).get('status') or {}).get('phase') == phase and self.get(name),
                        what='%s %s' % (name, phase))

    def unschedulable(self, name):
        def f():
            p = self.get(name)
            for c in (p.get('status') or {}).get('conditions') or []:
                if c['type'] == 'PodScheduled' and c['status'] == 'False' and c.get('reason') == 'Unschedulable':
                    return c
            return None
        return wait_for(f, what='%s unschedulable' % name)

    def test_binds_by_resources_and_selector(self):
        self.k.post(PODS, pod('needs-2cpu', cpu='2'))
        p = self.wait_phase('needs-2cpu')
        self.assertEqual(p['spec']['nodeName'], 'big')
        ready = [c for c in p['status']['conditions'] if c['type'] == 'Ready']
        self.assertEqual(ready[0]['status'], 'True')
        self.assertTrue(p['status']['podIP'])
        self.k.post(PODS, pod('wants-small', nodeSelector={'size': 'small'}))
        self.assertEqual(self.wait_phase('wants-small')['spec']['nodeName'], 'small')

    def test_pod_summary(self):
        self.k.post(PODS, pod('summary-bound', cpu='100m'))
        self.wait_phase('summary-bound')
        self.k.post(PODS, pod('summary-pending', cpu='500'))
        self.unschedulable('summary-pending')
        items = self.k.get(PODS)[2]['items']
        got = self.c.control_call('GET', '/kube/pod-summary?namespace=default')
        self.assertEqual(got['pods'], len(items))
        self.assertEqual(got['bound'], sum(1 for p in items if p['spec'].get('nodeName')))
        self.assertLess(got['bound'], got['pods'])
        self.k.delete(PODS + '/summary-pending')

    def test_required_affinity_and_tolerations(self):
        aff = {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': [
            {'matchExpressions': [{'key': 'node.accelerator', 'operator': 'In', 'values': ['nvidia-gpu']}]}]}}}
        self.k.post(PODS, pod('gpu-no-tol', affinity=aff))
        c = self.unschedulable('gpu-no-tol')
        self.assertIn('0/4 nodes are available', c['message'])
        self.assertIn('untolerated taint {gpu: true}', c['message'])
        self.k.post(PODS, pod('gpu-tol', affinity=aff,
                              tolerations=[{'key': 'gpu', 'operator': 'Equal', 'value': 'true', 'effect': 'NoSchedule'}]))
        self.assertEqual(self.wait_phase('gpu-tol')['spec']['nodeName'], 'gpu')

    def test_unschedulable_insufficient_and_not_ready(self):
        self.k.post(PODS, pod('too-big', cpu='16'))
        c = self.unschedulable('too-big')
        self.assertIn('Insufficient cpu', c['message'])
        self.assertIn('node.kubernetes.io/not-ready', c['message'])     # the 64-cpu node is NotReady
        self.assertFalse(self.get('too-big')['spec'].get('nodeName'))

    def test_init_container_max_rule(self):
        p = pod('init-heavy', cpu='100m')
        p['spec']['initContainers'] = [{'name': 'init', 'image': 'busybox',
                                        'resources': {'requests': {'cpu': '6'}}}]
        self.k.post(PODS, p)
        self.assertEqual(self.wait_phase('init-heavy')['spec']['nodeName'], 'big')

    def test_deployment_scale_and_node_deletion(self):
        dep = {'apiVersion': 'apps/v1', 'kind': 'Deployment', 'metadata': {'name': 'web'},
               'spec': {'replicas': 3, 'selector': {'matchLabels': {'app': 'web'}},
                        'template': {'metadata': {'labels': {'app': 'web'}},
                                     'spec': {'containers': [{'name': 'c', 'image': 'nginx',
                                                              'resources': {'requests': {'cpu': '10m'}}}]}}}}
        st, _, _ = self.k.post('/apis/apps/v1/namespaces/default/deployments', dep)
        self.assertEqual(st, 201)

        def running(n):
            items = self.k.get(PODS + '?labelSelector=app%3Dweb&fieldSelector=status.phase%3DRunning')[2]['items']
            live = [p for p in items if not p['metadata'].get('deletionTimestamp')]
            return len(live) == n and live
        pods = wait_for(lambda: running(3), what='3 web pods')
        self.assertTrue(all(p['metadata']['ownerReferences'][0]['kind'] == 'ReplicaSet' for p in pods))
        st, _, sc = self.k.get('/apis/apps/v1/namespaces/default/deployments/web/scale')
        self.assertEqual((sc['kind'], sc['spec']['replicas'], sc['status']['selector']), ('Scale', 3, 'app=web'))
        st, _, sc = self.k.patch('/apis/apps/v1/namespaces/default/deployments/web/scale', {'spec': {'replicas': 1}})
        self.assertEqual((st, sc['spec']['replicas']), (200, 1))
        wait_for(lambda: len(self.k.get(PODS + '?labelSelector=app%3Dweb')[2]['items']) == 1, what='scale down')
        d = wait_for(lambda: (self.k.get('/apis/apps/v1/namespaces/default/deployments/web')[2].get('status') or {})
                     .get('readyReplicas') == 1, what='deployment status')
        self.assertTrue(d)
        # delete the deployment: the GC removes the ReplicaSet and its pods
        self.k.delete('/apis/apps/v1/namespaces/default/deployments/web')
        wait_for(lambda: not self.k.get(PODS + '?labelSelector=app%3Dweb')[2]['items'], what='gc of pods')
        self.assertEqual(self.k.get('/apis/apps/v1/namespaces/default/replicasets')[2]['items'], [])

    def rs(self, name, replicas=2):
        body = {'apiVersion': 'apps/v1', 'kind': 'ReplicaSet', 'metadata': {'name': name},
                'spec': {'replicas': replicas, 'selector': {'matchLabels': {'rs': name}},
                         'template': {'metadata': {'labels': {'rs': name}},
                                      'spec': {'containers': [{'name': 'c', 'image': 'x',
                                                               'resources': {'requests': {'cpu': '1m'}}}]}}}}
        st, _, obj = self.k.post('/apis/apps/v1/namespaces/default/replicasets', body)
        self.assertEqual(st, 201)
        wait_for(lambda: len(self.k.get(PODS + '?labelSelector=rs%3D' + name)[2]['items']) == replicas,
                 what='%s pods' % name)
        return obj

    def test_delete_orphan_keeps_pods(self):
        self.rs('orphans')
        st, _, _ = self.k.delete('/apis/apps/v1/namespaces/default/replicasets/orphans',
                                 {'propagationPolicy': 'Orphan'})
        self.assertEqual(st, 200)
        self.assertEqual(self.k.get('/apis/apps/v1/namespaces/default/replicasets/orphans')[0], 404)
        items = self.k.get(PODS + '?labelSelector=rs%3Dorphans')[2]['items']
        self.assertEqual(len(items), 2)
        self.assertTrue(all(not p['metadata'].get('ownerReferences') for p in items))

    def test_delete_foreground_waits_for_dependents(self):
        self.rs('fg')
        st, _, obj = self.k.delete('/apis/apps/v1/namespaces/default/replicasets/fg',
                                   {'propagationPolicy': 'Foreground'})
        self.assertEqual(st, 200)
        self.assertIn('foregroundDeletion', obj['metadata']['finalizers'])
        self.assertTrue(obj['metadata']['deletionTimestamp'])
        wait_for(lambda: self.k.get('/apis/apps/v1/namespaces/default/replicasets/fg')[0] == 404, what='rs gone')
        self.assertEqual(self.k.get(PODS + '?labelSelector=rs%3Dfg')[2]['items'], [])

    def test_daemonset_one_pod_per_matching_node(self):
        ds = {'apiVersion': 'apps/v1', 'kind': 'DaemonSet', 'metadata': {'name': 'agent'},
              'spec': {'selector': {'matchLabels': {'app': 'agent'}},
                       'template': {'metadata': {'labels': {'app': 'agent'}},
                                    'spec': {'containers': [{'name': 'c', 'image': 'agent'}]}}}}
        self.k.post('/apis/apps/v1/namespaces/default/daemonsets', ds)

        def placed():
            items = self.k.get(PODS + '?labelSelector=app%3Dagent')[2]['items']
            return sorted(p['spec'].get('nodeName') or '' for p in items)
        # gpu is tainted (not tolerated), every other node gets one; 'down' is NotReady so its pod stays Pending
        wait_for(lambda: placed() == ['', 'big', 'small'], what='daemonset pods')
        st, _, d = self.k.get('/apis/apps/v1/namespaces/default/daemonsets/agent')
        wait_for(lambda: self.k.get('/apis/apps/v1/namespaces/default/daemonsets/agent')[2]['status'].get('desiredNumberScheduled') == 3,
                 what='ds status')

    def test_cordon_taint(self):
        self.c.add_node('cordoned', cpu='1', memory='1Gi', labels={'size': 'cordoned'})
        path = '/api/v1/nodes/cordoned'
        self.k.patch(path, {'spec': {'unschedulable': True}})
        t = wait_for(lambda: [t for t in self.k.get(path)[2]['spec'].get('taints') or []
                              if t['key'] == 'node.kubernetes.io/unschedulable'], what='cordon taint')
        self.assertEqual(t[0]['effect'], 'NoSchedule')
        self.k.post(PODS, pod('to-cordoned', nodeSelector={'size': 'cordoned'}))
        c = self.unschedulable('to-cordoned')
        self.assertIn('node(s) were unschedulable', c['message'])
        self.k.patch(path, {'spec': {'unschedulable': False}})
        self.assertEqual(self.wait_phase('to-cordoned')['spec']['nodeName'], 'cordoned')
        self.assertFalse(self.k.get(path)[2]['spec'].get('taints'))
        self.k.delete('/api/v1/nodes/cordoned')

    def test_pods_on_deleted_node_go_away(self):
        self.c.add_node('doomed', cpu='2', memory='2Gi', labels={'size': 'doomed'})
        self.k.post(PODS, pod('on-doomed', nodeSelector={'size': 'doomed'}))
        self.wait_phase('on-doomed')
        self.k.delete('/api/v1/nodes/doomed')
        wait_for(lambda: self.k.get(PODS + '/on-doomed')[0] == 404, what='pod gc')

    def test_graceful_pod_delete(self):
        self.k.post(PODS, pod('graceful', nodeSelector={'size': 'small'}))
        self.wait_phase('graceful')
        st, _, p = self.k.delete(PODS + '/graceful')
        self.assertEqual(st, 200)
        self.assertTrue(p['metadata']['deletionTimestamp'])
        wait_for(lambda: self.k.get(PODS + '/graceful')[0] == 404, what='pod terminated')


class EvictionTest(unittest.TestCase):
    def test_pdb_blocks_then_allows(self):
        c = Cluster()
        try:
            k = c.client
            c.add_node('n1', cpu='8', memory='8Gi')
            for i in range(2):
                k.post(PODS, pod('db-%d' % i, labels={'app': 'db'}))
            wait_for(lambda: len(k.get(PODS + '?labelSelector=app%3Ddb&fieldSelector=status.phase%3DRunning')[2]['items']) == 2,
                     what='db pods running')
            pdb = {'apiVersion': 'policy/v1', 'kind': 'PodDisruptionBudget', 'metadata': {'name': 'db'},
                   'spec': {'minAvailable': 2, 'selector': {'matchLabels': {'app': 'db'}}}}
            st, _, _ = k.post('/apis/policy/v1/namespaces/default/poddisruptionbudgets', pdb)
            self.assertEqual(st, 201)
            wait_for(lambda: (k.get('/apis/policy/v1/namespaces/default/poddisruptionbudgets/db')[2].get('status') or {})
                     .get('currentHealthy') == 2, what='pdb status')
            ev = {'apiVersion': 'policy/v1', 'kind': 'Eviction', 'metadata': {'name': 'db-0', 'namespace': 'default'}}
            st, r, err = k.post(PODS + '/db-0/eviction', ev)
            self.assertEqual((st, err['reason']), (429, 'TooManyRequests'))
            self.assertEqual(err['details']['causes'][0]['reason'], 'DisruptionBudget')
            self.assertIn('needs 2 healthy pods and has 2 currently', err['details']['causes'][0]['message'])
            self.assertIsNone(r.getheader('Retry-After'))        # as kube-apiserver: none for a spent budget
            c.control_call('POST', '/kube/faults', {'pdbRetryAfter': 5})
            st, r, err = k.post(PODS + '/db-0/eviction', ev)
            self.assertEqual((st, r.getheader('Retry-After')), (429, '5'))
            c.control_call('DELETE', '/kube/faults')
            # relax the budget: right after the change the controller has not observed it yet
            k.patch('/apis/policy/v1/namespaces/default/poddisruptionbudgets/db', {'spec': {'minAvailable': 1}})
            wait_for(lambda: (k.get('/apis/policy/v1/namespaces/default/poddisruptionbudgets/db')[2]['status'])
                     .get('disruptionsAllowed') == 1, what='pdb relaxed')
            st, _, ok = k.post(PODS + '/db-0/eviction', ev)
            self.assertEqual((st, ok['status']), (201, 'Success'))
            wait_for(lambda: k.get(PODS + '/db-0')[0] == 404, what='evicted pod gone')
            st, _, err = k.post(PODS + '/db-1/eviction', dict(ev, metadata={'name': 'db-1'}))
            self.assertEqual(st, 429)
            st, _, err = k.post(PODS + '/db-1/eviction', dict(ev, metadata={'name': 'other'}))
            self.assertEqual(st, 400)
            st, _, err = k.post(PODS + '/nope/eviction', dict(ev, metadata={'name': 'nope'}))
            self.assertEqual(st, 404)
            # a second PDB over the same pod: 500
            k.post('/apis/policy/v1/namespaces/default/poddisruptionbudgets',
                   {'metadata': {'name': 'db2'}, 'spec': {'maxUnavailable': '50%', 'selector': {'matchLabels': {'app': 'db'}}}})
            st, _, err = k.post(PODS + '/db-1/eviction', dict(ev, metadata={'name': 'db-1'}))
            self.assertEqual(st, 500)
            self.assertIn('more than one PodDisruptionBudget', err['message'])
        finally:
            c.close()

    def test_pending_pod_evicted_without_budget(self):
        c = Cluster()
        try:
            k = c.client
            k.post(PODS, pod('pending', labels={'app': 'p'}))
            k.post('/apis/policy/v1/namespaces/default/poddisruptionbudgets',
                   {'metadata': {'name': 'p'}, 'spec': {'minAvailable': 5, 'selector': {'matchLabels': {'app': 'p'}}}})
            st, _, _ = k.post(PODS + '/pending/eviction', {'apiVersion': 'policy/v1', 'kind': 'Eviction',
                                                           'metadata': {'name': 'pending'}})
            self.assertEqual(st, 201)
            self.assertEqual(k.get(PODS + '/pending')[0], 404)
        finally:
            c.close()


class InterPodTest(unittest.TestCase):
    """Required pod (anti-)affinity and DoNotSchedule spread (podtopo.py)."""

    def setUp(self):
        self.c = Cluster()
        self.k = self.c.client
        for name, zone in (('a1', 'zone-a'), ('a2', 'zone-a'), ('b1', 'zone-b')):
            self.c.add_node(name, cpu='8', memory='32Gi', labels={'topology.kubernetes.io/zone': zone})

    def tearDown(self):
        self.c.close()

    def node_of(self, name):
        return self.k.get(PODS + '/' + name)[2]['spec'].get('nodeName')

    def wait_bound(self, names):
        return wait_for(lambda: all(self.node_of(n) for n in names) and [self.node_of(n) for n in names],
                        what='%s bound' % names)

    def reason(self, name):
        def f():
            for c in (self.k.get(PODS + '/' + name)[2].get('status') or {}).get('conditions') or []:
                if c['type'] == 'PodScheduled' and c.get('reason') == 'Unschedulable':
                    return c['message']
            return None
        return wait_for(f, what='%s unschedulable' % name)

    def test_hostname_anti_affinity(self):
        anti = {'podAntiAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': [
            {'topologyKey': 'kubernetes.io/hostname', 'labelSelector': {'matchLabels': {'app': 'solo'}}}]}}
        for i in range(4):
            self.k.post(PODS, pod('solo-%d' % i, labels={'app': 'solo'}, affinity=anti))
        got = self.wait_bound(['solo-0', 'solo-1', 'solo-2'])
        self.assertEqual(sorted(got), ['a1', 'a2', 'b1'])
        self.assertIn("3 node(s) didn't match pod anti-affinity rules", self.reason('solo-3'))
        self.assertFalse(self.node_of('solo-3'))
        # symmetric: a pod without terms, matched by the bound pods' terms, is kept off them
        self.k.post(PODS, pod('plain-solo', labels={'app': 'solo'}))
        self.assertIn("didn't satisfy existing pods anti-affinity rules", self.reason('plain-solo'))

    def test_zone_spread_and_affinity(self):
        tsc = [{'maxSkew': 1, 'topologyKey': 'topology.kubernetes.io/zone', 'whenUnsatisfiable': 'DoNotSchedule',
                'labelSelector': {'matchLabels': {'app': 'web'}}}]
        names = ['web-%d' % i for i in range(4)]
        for n in names:   # one at a time, so the least-allocated choice would put all in zone-a
            self.k.post(PODS, pod(n, labels={'app': 'web'}, topologySpreadConstraints=tsc))
            self.wait_bound([n])
        zones = [{'a1': 'zone-a', 'a2': 'zone-a', 'b1': 'zone-b'}[x] for x in self.wait_bound(names)]
        self.assertEqual(sorted(zones), ['zone-a', 'zone-a', 'zone-b', 'zone-b'])
        # a spread over a key no node has fits nowhere
        bad = [dict(tsc[0], topologyKey='example.com/rack')]
        self.k.post(PODS, pod('no-rack', labels={'app': 'web'}, topologySpreadConstraints=bad))
        self.assertIn('missing required label', self.reason('no-rack'))
        # required zonal affinity to the web pods in zone-b only
        aff = {'podAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': [
            {'topologyKey': 'kubernetes.io/hostname', 'labelSelector': {'matchLabels': {'app': 'web'}}}]}}
        self.k.post(PODS, pod('near-web', affinity=aff))
        self.assertIn(self.wait_bound(['near-web'])[0], {self.node_of(n) for n in names})
        self.k.post(PODS, pod('near-nothing', affinity=dict(aff, podAffinity={
            'requiredDuringSchedulingIgnoredDuringExecution': [
                {'topologyKey': 'kubernetes.io/hostname', 'labelSelector': {'matchLabels': {'app': 'none'}}}]})))
        self.assertIn("didn't match pod affinity rules", self.reason('near-nothing'))


if __name__ == '__main__':
    unittest.main()
