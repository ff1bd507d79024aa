"""Simulator self-tests: authentication, discovery, create/update/patch/delete
semantics (409, generateName, generation, status subresource, finalizers,
preconditions, patch types)."""
import base64
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simtest import Cluster, pod, wait_for  # noqa: E402

NP = '/apis/karpenter.sh/v1/nodepools'
CM = '/api/v1/namespaces/default/configmaps'


def nodepool(name, cpu='10'):
    return {'apiVersion': 'karpenter.sh/v1', 'kind': 'NodePool', 'metadata': {'name': name},
            'spec': {'limits': {'cpu': cpu}, 'template': {'spec': {'requirements': []}}}}


class WritesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Cluster()
        cls.k = cls.c.client

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_unauthenticated_is_401(self):
        st, _, body = self.k.request('GET', '/api/v1/nodes', token=False)
        self.assertEqual((st, body['reason'], body['kind']), (401, 'Unauthorized', 'Status'))
        st, _, body = self.k.request('GET', '/api/v1/nodes', token='wrong')
        self.assertEqual(st, 401)

    def test_client_certificate(self):
        # a certificate of the client CA authenticates its CN; without one and without a
        # token the request is 401
        import http.client
        import ssl
        from simtest import server_certs
        cs = server_certs()
        ctx = ssl.create_default_context(cafile=cs['ca'])
        ctx.load_cert_chain(cs['client_crt'], cs['client_key'])
        conn = http.client.HTTPSConnection('127.0.0.1', self.c.port, context=ctx, timeout=30)
        conn.request('GET', '/api/v1/nodes', headers={'Accept': 'application/json'})
        r = conn.getresponse()
        r.read()
        conn.close()
        self.assertEqual(r.status, 200)
        st, _, _ = self.k.request('GET', '/api/v1/nodes', token=False)
        self.assertEqual(st, 401)

    def test_rbac_for_nodewarden(self):
        # nodewarden's ServiceAccount is held to the chart's ClusterRole and Role; admin is not
        import rbac
        self.c.api.tokens['sa-token'] = rbac.SA_USER
        self.c.api.authorizer = rbac.Authorizer()
        try:
            st, _, _ = self.k.request('GET', '/api/v1/pods', token='sa-token')
            self.assertEqual(st, 200)
            st, _, body = self.k.request('GET', '/api/v1/namespaces/default/secrets', token='sa-token')
            self.assertEqual((st, body['reason']), (403, 'Forbidden'))
            self.assertIn('cannot list resource "secrets" in API group "" in the namespace "default"',
                          body['message'])
            st, _, body = self.k.request('PUT', '/apis/coordination.k8s.io/v1/namespaces/default/leases/l',
                                         {'metadata': {'name': 'l'}}, token='sa-token')
            self.assertEqual(st, 403)          # leases only in nodewarden's namespace
            st, _, _ = self.k.request('GET', '/api/v1/namespaces/default/secrets')
            self.assertEqual(st, 200)
        finally:
            self.c.api.authorizer = None

    def test_discovery(self):
        st, _, apis = self.k.get('/apis')
        names = [g['name'] for g in apis['groups']]
        for g in ('apps', 'policy', 'karpenter.sh', 'karpenter.k8s.aws', 'coordination.k8s.io',
                  'events.k8s.io', 'admissionregistration.k8s.io', 'apiextensions.k8s.io'):
            self.assertIn(g, names)
        st, _, core = self.k.get('/api/v1')
        res = {r['name']: r for r in core['resources']}
        self.assertIn('pods/eviction', res)
        self.assertFalse(res['nodes']['namespaced'])
        st, _, k = self.k.get('/apis/karpenter.sh/v1')
        res = {r['name']: r for r in k['resources']}
        self.assertEqual(res['nodepools']['kind'], 'NodePool')
        self.assertIn('nodepools/status', res)
        st, _, v = self.k.get('/version')
        self.assertEqual(v['major'], '1')

    def test_create_conflict_and_stale_update(self):
        st, _, a = self.k.post(NP, nodepool('occ'))
        self.assertEqual(st, 201)
        self.assertEqual(a['metadata']['generation'], 1)
        self.assertTrue(a['metadata']['uid'] and a['metadata']['creationTimestamp'])
        st, _, err = self.k.post(NP, nodepool('occ'))
        self.assertEqual((st, err['reason']), (409, 'AlreadyExists'))
        a['spec']['limits']['cpu'] = '20'
        st, _, b = self.k.put(NP + '/occ', a)
        self.assertEqual(st, 200)
        self.assertEqual(b['metadata']['generation'], 2)
        self.assertNotEqual(b['metadata']['resourceVersion'], a['metadata']['resourceVersion'])
        a['spec']['limits']['cpu'] = '30'           # still carries the old resourceVersion
        st, _, err = self.k.put(NP + '/occ', a)
        self.assertEqual((st, err['reason'], err['kind']), (409, 'Conflict', 'Status'))
        self.assertIn('the object has been modified', err['message'])
        # metadata-only change: no generation bump
        b['metadata']['labels'] = {'x': 'y'}
        st, _, c = self.k.put(NP + '/occ', b)
        self.assertEqual(c['metadata']['generation'], 2)

    def test_status_subresource(self):
        obj = nodepool('st')
        obj['status'] = {'resources': {'cpu': '1'}}
        st, _, a = self.k.post(NP, obj)
        self.assertNotIn('resources', a.get('status') or {})     # status dropped on create
        a['status'] = {'resources': {'cpu': '2'}}
        a['spec']['limits']['cpu'] = '99'
        st, _, b = self.k.put(NP + '/st/status', a)
        self.assertEqual(st, 200)
        self.assertEqual(b['status']['resources']['cpu'], '2')
        self.assertEqual(b['spec']['limits']['cpu'], '10')        # spec ignored on /status
        self.assertEqual(b['metadata']['generation'], 1)
        st, _, c = self.k.patch(NP + '/st', {'spec': {'limits': {'cpu': '11'}}, 'status': {'resources': {'cpu': '3'}}})
        self.assertEqual(c['status']['resources']['cpu'], '2')   # status ignored on the main resource
        self.assertEqual(c['spec']['limits']['cpu'], '11')
        self.assertEqual(c['metadata']['generation'], 2)
        st, _, d = self.k.patch(NP + '/st/status', {'status': {'conditions': [{'type': 'Ready', 'status': 'True'}]}})
        self.assertEqual(d['status']['conditions'][0]['type'], 'Ready')

    def test_generate_name(self):
        st, _, a = self.k.post(CM, {'metadata': {'generateName': 'gen-'}, 'data': {}})
        self.assertEqual(st, 201)
        self.assertTrue(a['metadata']['name'].startswith('gen-') and len(a['metadata']['name']) == 9)

    def test_finalizers_and_deletion(self):
        obj = nodepool('fin')
        obj['metadata']['finalizers'] = ['karpenter.sh/termination']
        self.k.post(NP, obj)
        st, _, d = self.k.delete(NP + '/fin')
        self.assertEqual(st, 200)
        self.assertTrue(d['metadata']['deletionTimestamp'])
        st, _, g = self.k.get(NP + '/fin')
        self.assertEqual(st, 200)
        st, _, err = self.k.patch(NP + '/fin', {'metadata': {'finalizers': ['karpenter.sh/termination', 'new/one']}})
        self.assertEqual((st, err['reason']), (422, 'Invalid'))
        st, _, lst = self.k.get(NP)
        r, ev = self.k.watch(NP + '?watch=1&timeoutSeconds=10&fieldSelector=metadata.name%3Dfin&resourceVersion='
                             + lst['metadata']['resourceVersion'])
        st, _, _ = self.k.patch(NP + '/fin', [{'op': 'test', 'path': '/metadata/finalizers/0', 'value': 'karpenter.sh/termination'},
                                             {'op': 'remove', 'path': '/metadata/finalizers/0'}], 'application/json-patch+json')
        self.assertEqual(st, 200)
        st, _, _ = self.k.get(NP + '/fin')
        self.assertEqual(st, 404)
        self.assertEqual(next(ev)['type'], 'DELETED')

    def test_delete_preconditions(self):
        st, _, a = self.k.post(CM, {'metadata': {'name': 'pre'}})
        st, _, err = self.k.delete(CM + '/pre', {'preconditions': {'uid': 'not-it'}})
        self.assertEqual(st, 409)
        st, _, err = self.k.delete(CM + '/pre', {'preconditions': {'resourceVersion': '1'}})
        self.assertEqual(st, 409)
        st, _, ok = self.k.delete(CM + '/pre', {'preconditions': {'uid': a['metadata']['uid']}})
        self.assertEqual(st, 200)
        st, _, _ = self.k.delete(CM + '/pre')
        self.assertEqual(st, 404)

    def test_patch_types(self):
        self.c.add_node('patch-node', taints=[{'key': 'a', 'value': '1', 'effect': 'NoSchedule'}])
        path = '/api/v1/nodes/patch-node'
        st, _, n = self.k.patch(path, {'metadata': {'labels': {'x': 'y'}},
                                       'spec': {'taints': [{'key': 'b', 'value': '2', 'effect': 'NoSchedule'}]}},
                                'application/strategic-merge-patch+json')
        self.assertEqual(st, 200)
        self.assertEqual(sorted(t['key'] for t in n['spec']['taints']), ['a', 'b'])   # merged by key
        st, _, n = self.k.patch(path, {'spec': {'taints': [{'key': 'a', '$patch': 'delete'}]}},
                                'application/strategic-merge-patch+json')
        self.assertEqual([t['key'] for t in n['spec']['taints']], ['b'])
        st, _, n = self.k.patch(path, {'spec': {'taints': [{'key': 'c', 'effect': 'NoExecute'}]}})  # merge: replaced
        self.assertEqual([t['key'] for t in n['spec']['taints']], ['c'])
        st, _, n = self.k.patch(path, {'metadata': {'labels': {'x': None}}})
        self.assertNotIn('x', n['metadata'].get('labels', {}))
        st, _, err = self.k.patch(path, [{'op': 'test', 'path': '/metadata/resourceVersion', 'value': '1'},
                                         {'op': 'add', 'path': '/metadata/labels/z', 'value': 'z'}],
                                  'application/json-patch+json')
        self.assertEqual(st, 422)
        st, _, n = self.k.patch(path, [{'op': 'add', 'path': '/metadata/labels/k8s.io~1role', 'value': 'w'}],
                                'application/json-patch+json')
        self.assertEqual(n['metadata']['labels']['k8s.io/role'], 'w')
        st, _, err = self.k.patch(path, {'metadata': {'resourceVersion': '1', 'labels': {'q': 'q'}}})
        self.assertEqual(st, 409)
        st, _, err = self.k.patch(NP + '/x', {}, 'application/strategic-merge-patch+json')
        self.assertEqual(st, 415)
        st, _, err = self.k.patch(path, b'{}', 'text/plain')
        self.assertEqual(st, 415)

    def test_namespace_rules(self):
        st, _, err = self.k.post('/api/v1/namespaces/nope/configmaps', {'metadata': {'name': 'a'}})
        self.assertEqual((st, err['reason']), (404, 'NotFound'))
        st, _, ns = self.k.post('/api/v1/namespaces', {'metadata': {'name': 'doomed'}})
        self.assertEqual(ns['metadata']['labels']['kubernetes.io/metadata.name'], 'doomed')
        self.k.post('/api/v1/namespaces/doomed/configmaps', {'metadata': {'name': 'a'}})
        self.k.delete('/api/v1/namespaces/doomed')
        wait_for(lambda: self.k.get('/api/v1/namespaces/doomed')[0] == 404, what='namespace gone')
        self.assertEqual(self.k.get('/api/v1/namespaces/doomed/configmaps/a')[0], 404)

    def test_validation(self):
        st, _, err = self.k.post(CM, {'metadata': {'name': 'Bad_Name'}})
        self.assertEqual((st, err['reason']), (422, 'Invalid'))
        self.assertEqual(err['details']['causes'][0]['field'], 'metadata.name')
        st, _, err = self.k.post('/api/v1/namespaces/default/pods', {'metadata': {'name': 'p'}, 'spec': {'containers': []}})
        self.assertEqual(st, 422)
        st, _, err = self.k.request('POST', CM, b'{not json', 'application/json')
        self.assertEqual(st, 400)

    def test_pod_defaults_and_immutability(self):
        p = pod('defaults')
        p['spec']['containers'][0]['resources'] = {'limits': {'cpu': '1', 'nvidia.com/gpu': '1'}}
        st, _, a = self.k.post('/api/v1/namespaces/default/pods', p)
        self.assertEqual(st, 201)
        self.assertEqual(a['spec']['containers'][0]['resources']['requests'], {'cpu': '1', 'nvidia.com/gpu': '1'})
        self.assertEqual(a['status']['phase'], 'Pending')
        self.assertEqual(a['spec']['schedulerName'], 'default-scheduler')
        keys = [t['key'] for t in a['spec']['tolerations']]
        self.assertIn('node.kubernetes.io/not-ready', keys)
        st, _, err = self.k.patch('/api/v1/namespaces/default/pods/defaults', {'spec': {'nodeName': 'x'}})
        self.assertEqual(st, 422)

    def test_events_v1_validation(self):
        ev = {'metadata': {'name': 'e1'}, 'regarding': {'kind': 'Node', 'name': 'n'}, 'reason': 'R', 'type': 'Normal',
              'note': 'hello', 'action': 'Act', 'reportingController': 'nodewarden.io/scaler',
              'reportingInstance': 'nw-1', 'eventTime': '2026-01-01T00:00:00.000000Z'}
        st, _, _ = self.k.post('/apis/events.k8s.io/v1/namespaces/default/events', ev)
        self.assertEqual(st, 201)
        del ev['eventTime']
        ev['metadata']['name'] = 'e2'
        st, _, err = self.k.post('/apis/events.k8s.io/v1/namespaces/default/events', ev)
        self.assertEqual(st, 422)
        self.assertEqual(self.k.get('/api/v1/namespaces/default/events/e1')[0], 404)  # separate storage

    def test_lease_update_cycle(self):
        L = '/apis/coordination.k8s.io/v1/namespaces/default/leases'
        st, _, l1 = self.k.post(L, {'metadata': {'name': 'leader'}, 'spec': {'holderIdentity': 'a', 'leaseDurationSeconds': 15}})
        l1['spec']['holderIdentity'] = 'b'
        st, _, l2 = self.k.put(L + '/leader', l1)
        self.assertEqual(st, 200)
        st, _, err = self.k.put(L + '/leader', l1)
        self.assertEqual(st, 409)

    def test_binding(self):
        self.c.add_node('bind-node', ready=False)
        st, _, p = self.k.post('/api/v1/namespaces/default/pods', pod('bindme'))
        body = {'apiVersion': 'v1', 'kind': 'Binding', 'metadata': {'name': 'bindme'},
                'target': {'apiVersion': 'v1', 'kind': 'Node', 'name': 'bind-node'}}
        st, _, res = self.k.post('/api/v1/namespaces/default/pods/bindme/binding', body)
        self.assertEqual((st, res['status']), (201, 'Success'))
        st, _, p = self.k.get('/api/v1/namespaces/default/pods/bindme')
        self.assertEqual(p['spec']['nodeName'], 'bind-node')
        st, _, err = self.k.post('/api/v1/namespaces/default/pods/bindme/binding', body)
        self.assertEqual(st, 409)

    def test_injected_latency_and_errors(self):
        self.c.control_call('POST', '/kube/faults', {'latency': 0.3, 'errorCode': 500, 'errorCount': 2,
                                                     'errorVerbs': ['POST']})
        try:
            st, _, err = self.k.post(CM, {'metadata': {'name': 'fault-a'}})
            self.assertEqual((st, err['reason']), (500, 'InternalError'))
            st, _, _ = self.k.get(CM)                      # GET is not selected
            self.assertEqual(st, 200)
            self.assertEqual(self.k.post(CM, {'metadata': {'name': 'fault-a'}})[0], 500)
            self.assertEqual(self.k.post(CM, {'metadata': {'name': 'fault-a'}})[0], 201)   # count used up
            log = self.c.control_call('GET', '/kube/requests?path=' + CM)['requests'][-4:]
            self.assertEqual([(e['method'], e['code'], e['fault']) for e in log],
                             [('POST', 500, 'injected 500'), ('GET', 200, ''), ('POST', 500, 'injected 500'),
                              ('POST', 201, '')])
            self.assertTrue(all(e['durationMs'] >= 300 for e in log))
        finally:
            self.c.control_call('DELETE', '/kube/faults')

    def test_storage_objects(self):
        # served as kube-apiserver serves them (no attach/detach controller behind them)
        st, _, g = self.k.get('/apis/storage.k8s.io/v1')
        res = {r['name']: r for r in g['resources']}
        self.assertFalse(res['volumeattachments']['namespaced'])
        self.assertIn('volumeattachments/status', res)
        VA = '/apis/storage.k8s.io/v1/volumeattachments'
        va = {'apiVersion': 'storage.k8s.io/v1', 'kind': 'VolumeAttachment', 'metadata': {'name': 'csi-1'},
              'spec': {'attacher': 'ebs.csi.aws.com', 'nodeName': 'n1', 'source': {'persistentVolumeName': 'pv-1'}},
              'status': {'attached': True}}
        st, _, o = self.k.post(VA, va)
        self.assertEqual(st, 201)
        self.assertNotIn('attached', o.get('status') or {})   # status is the attacher's to write
        st, _, l = self.k.get(VA)
        self.assertEqual([i['spec']['nodeName'] for i in l['items']], ['n1'])
        st, _, pvc = self.k.post('/api/v1/namespaces/default/persistentvolumeclaims',
                                 {'metadata': {'name': 'data'}, 'spec': {'volumeName': 'pv-1'}})
        self.assertEqual(st, 201)
        st, _, pvc = self.k.get('/api/v1/namespaces/default/persistentvolumeclaims/data')
        self.assertEqual(pvc['spec']['volumeName'], 'pv-1')
        self.assertEqual(self.k.post('/api/v1/persistentvolumes', {'metadata': {'name': 'pv-1'}})[0], 201)
        self.assertEqual(self.k.delete(VA + '/csi-1')[0], 200)
        self.assertEqual(self.k.get(VA + '/csi-1')[0], 404)

    def test_warning_free_openapi_probe(self):
        st, _, root = self.k.get('/openapi/v3')
        self.assertIn('apis/karpenter.sh/v1', root['paths'])
        st, _, doc = self.k.get(root['paths']['apis/karpenter.sh/v1']['serverRelativeURL'])
        ops = [p['patch'] for p in doc['paths'].values()]
        self.assertIn({'group': 'karpenter.sh', 'version': 'v1', 'kind': 'NodePool'},
                      [o['x-kubernetes-group-version-kind'] for o in ops])
        _ = base64, json


if __name__ == '__main__':
    unittest.main()
