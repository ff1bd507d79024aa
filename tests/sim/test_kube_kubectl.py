"""Simulator self-tests with the real kubectl, and sim.py as `make sim` runs it:
files written, webhooks registered, faults and the request log through simctl,
SIGTERM stops it."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from simtest import KUBECTL, SimProcess  # noqa: E402

NODEPOOL = """apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: general
  labels: {team: platform}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  limits: {cpu: "%s"}
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web, tier: %s}
spec:
  containers:
  - name: app
    image: nginx:1.25
    resources: {requests: {cpu: 100m, memory: 64Mi}}
"""


@unittest.skipUnless(os.path.exists(KUBECTL), 'kubectl not installed')
class KubectlTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='simkubectl-')
        cls.sim = SimProcess(cls.dir)
        cls.kubeconfig = os.path.join(cls.dir, 'kubeconfig')
        c = cls.sim.client
        # sim.py registered nodewarden's webhooks; nodewarden is not running: NodePool
        # writes fail closed, pods fail open. Then remove them for the kubectl tests.
        st, _, v = c.get('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/nodewarden-validating')
        cls.registered = (st, [w['name'] for w in v.get('webhooks', [])],
                          all(w['clientConfig'].get('caBundle') for w in v.get('webhooks', [])))
        cls.np_without_nodewarden = c.post('/apis/karpenter.sh/v1/nodepools', {'metadata': {'name': 'x'}, 'spec': {}})
        cls.pod_without_nodewarden = c.post('/api/v1/namespaces/default/pods', {
            'metadata': {'name': 'p'}, 'spec': {'containers': [{'name': 'c', 'image': 'x'}]}})
        cls.mutating = c.get('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/nodewarden-mutating')[0]
        c.delete('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/nodewarden-validating')
        c.delete('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/nodewarden-mutating')
        c.delete('/api/v1/namespaces/default/pods/p?gracePeriodSeconds=0')

    @classmethod
    def tearDownClass(cls):
        rc = cls.sim.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert rc == 0, 'sim.py did not stop cleanly on SIGTERM: %r' % rc

    def kubectl(self, *args, stdin=None, ok=True):
        r = subprocess.run([KUBECTL, '--kubeconfig', self.kubeconfig, '--request-timeout=20s'] + list(args),
                           input=stdin.encode() if stdin else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=60, env=dict(os.environ, HOME=self.dir, KUBECACHEDIR=os.path.join(self.dir, 'cache')))
        out, err = r.stdout.decode(), r.stderr.decode()
        if ok:
            self.assertEqual(r.returncode, 0, 'kubectl %s: %s%s' % (' '.join(args), out, err))
        return out, err, r.returncode

    def test_files_written(self):
        for f in ('kubeconfig', 'env', 'nodewarden.yaml', 'ports.json', 'ca.crt', 'token'):
            self.assertTrue(os.path.exists(os.path.join(self.dir, f)), f)
        with open(os.path.join(self.dir, 'nodewarden.yaml')) as f:
            text = f.read()
        for key in ('clusterName:', 'kubeconfig:', 'listen:', 'tlsCert:', 'tlsKey:', 'region:', 'endpoints:'):
            self.assertIn(key, text)
        with open(os.path.join(self.dir, 'env')) as f:
            env = f.read()
        for key in ('AWS_REGION=', 'AWS_ACCESS_KEY_ID=', 'AWS_SECRET_ACCESS_KEY=', 'KUBECONFIG='):
            self.assertIn(key, env)

    def test_registers_nodewarden_webhooks(self):
        st, names, bundles = self.registered
        self.assertEqual(st, 200)
        self.assertEqual(names, ['validate-nodepools.nodewarden.io', 'validate-ec2nodeclasses.nodewarden.io',
                                 'validate-pods.nodewarden.io'])
        self.assertTrue(bundles)
        self.assertEqual(self.mutating, 200)
        st, _, err = self.np_without_nodewarden
        self.assertEqual(st, 500)
        self.assertIn('failed calling webhook "default-nodepools.nodewarden.io"', err['message'])
        self.assertIn('nodewarden.nodewarden.svc', err['message'])
        self.assertEqual(self.pod_without_nodewarden[0], 201)

    def test_get_nodes(self):
        out, err, _ = self.kubectl('get', 'nodes')
        self.assertIn('No resources found', out + err)
        st, _, lst = self.sim.client.get('/api/v1/namespaces')
        names = [i['metadata']['name'] for i in lst['items']]
        self.assertIn('kube-system', names)
        self.assertIn('nodewarden', names)

    def test_apply_nodepool_twice_then_delete(self):
        out, _, _ = self.kubectl('apply', '-f', '-', stdin=NODEPOOL % '100')
        self.assertIn('nodepool.karpenter.sh/general created', out)
        out, _, _ = self.kubectl('apply', '-f', '-', stdin=NODEPOOL % '200')
        self.assertIn('nodepool.karpenter.sh/general configured', out)
        out, _, _ = self.kubectl('get', 'nodepools', '-o', 'json')
        items = json.loads(out)['items']
        self.assertEqual(len(items), 1)
        np = items[0]
        self.assertEqual(np['spec']['limits']['cpu'], '200')
        self.assertEqual(np['metadata']['generation'], 2)
        self.assertIn('kubectl.kubernetes.io/last-applied-configuration', np['metadata']['annotations'])
        out, _, _ = self.kubectl('get', 'nodepools', '-l', 'team=platform', '-o', 'name')
        self.assertEqual(out.strip(), 'nodepool.karpenter.sh/general')
        out, _, _ = self.kubectl('describe', 'nodepool', 'general')
        self.assertIn('general', out)
        out, _, _ = self.kubectl('delete', 'nodepool', 'general')
        self.assertIn('deleted', out)
        out, _, _ = self.kubectl('get', 'nodepools', '-o', 'name')
        self.assertEqual(out.strip(), '')

    def test_pod_apply_strategic_merge_selectors_describe(self):
        self.kubectl('apply', '-f', '-', stdin=POD % 'front')
        out, _, _ = self.kubectl('apply', '-f', '-', stdin=POD % 'back')
        self.assertIn('configured', out)
        out, _, _ = self.kubectl('get', 'pod', 'web', '-o', 'json')
        p = json.loads(out)
        self.assertEqual(p['metadata']['labels'], {'app': 'web', 'tier': 'back'})
        out, _, _ = self.kubectl('get', 'pods', '-l', 'tier=back', '--field-selector', 'status.phase=Pending', '-o', 'name')
        self.assertEqual(out.strip(), 'pod/web')                 # no nodes: it stays Pending
        out, _, _ = self.kubectl('describe', 'pod', 'web')
        self.assertIn('nginx:1.25', out)
        out, _, _ = self.kubectl('delete', 'pod', 'web')
        self.assertIn('deleted', out)

    def test_create_configmap_and_errors(self):
        out, _, _ = self.kubectl('create', '-f', '-', stdin='apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n')
        self.assertIn('configmap/cfg created', out)
        _, err, rc = self.kubectl('create', '-f', '-', stdin='apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n', ok=False)
        self.assertNotEqual(rc, 0)
        self.assertIn('AlreadyExists', err)

    def test_simctl_faults_and_request_log(self):
        simctl = [sys.executable, os.path.join(HERE, 'simctl'), '--dir', self.dir]
        r = subprocess.run(simctl + ['errors', '503', '--count', '1', '--path', '/api/v1/namespaces/default/secrets'],
                           stdout=subprocess.PIPE, timeout=30)
        self.assertEqual(r.returncode, 0)
        st, resp, body = self.sim.client.get('/api/v1/namespaces/default/secrets')
        self.assertEqual((st, body['reason'], resp.getheader('Retry-After')), (503, 'ServiceUnavailable', '1'))
        st, _, body = self.sim.client.get('/api/v1/namespaces/default/secrets')
        self.assertEqual(st, 200)
        r = subprocess.run(simctl + ['requests', '--path', '/api/v1/namespaces/default/secrets'],
                           stdout=subprocess.PIPE, timeout=30)
        log = json.loads(r.stdout)['requests']
        self.assertEqual([e['code'] for e in log[-2:]], [503, 200])
        self.assertEqual(log[-2]['fault'], 'injected 503')
        r = subprocess.run(simctl + ['routes'], stdout=subprocess.PIPE, timeout=30)
        self.assertIn('/kube/drop-watches', r.stdout.decode())


if __name__ == '__main__':
    unittest.main()
