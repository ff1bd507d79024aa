"""Simulator self-test across both halves, through sim.py: an EC2 instance boots,
its kubelet registers a Node, the scheduler binds a pending pod to it, the
instance is terminated and the Node and its pods go; a state reset brings the
Node back (its kubelet registers again)."""
import base64
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from simtest import SimProcess, pod, wait_for  # noqa: E402

try:
    import awsclient  # the AWS half's test client
except ImportError:
    awsclient = None

USERDATA = ('#!/bin/bash\nkubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef '
            '--discovery-token-ca-cert-hash sha256:0000 '
            '--node-name "$(curl -s http://169.254.169.254/latest/meta-data/local-hostname)"\n')
PODS = '/api/v1/namespaces/default/pods'


@unittest.skipIf(awsclient is None, 'AWS half not present')
class ClusterTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix='simcluster-')
        self.sim = SimProcess(self.dir, '--boot-delay', '0.3', '--no-webhooks')
        env = {}
        with open(os.path.join(self.dir, 'env')) as f:
            for line in f:
                k, _, v = line.strip()[len('export '):].partition('=')
                env[k] = v
        self.ec2 = awsclient.Client(env['AWS_ENDPOINT_URL_EC2'], env['AWS_ACCESS_KEY_ID'],
                                    env['AWS_SECRET_ACCESS_KEY'], env['AWS_REGION'])
        self.k = self.sim.client

    def tearDown(self):
        self.assertEqual(self.sim.stop(), 0)
        shutil.rmtree(self.dir, ignore_errors=True)

    def node_for(self, iid):
        for n in self.k.get('/api/v1/nodes')[2]['items']:
            ready = any(c['type'] == 'Ready' and c['status'] == 'True' for c in n['status'].get('conditions', []))
            if n['spec'].get('providerID', '').endswith('/' + iid) and ready:
                return n
        return None

    def test_instance_to_node_to_running_pod_and_back(self):
        self.k.post(PODS, pod('waiting', cpu='500m'))
        wait_for(lambda: any(c.get('reason') == 'Unschedulable' for c in
                             (self.k.get(PODS + '/waiting')[2]['status'].get('conditions') or [])),
                 what='pod unschedulable with no nodes')
        st, root = self.ec2.ec2('RunInstances', {'MinCount': '1', 'MaxCount': '1', 'ImageId': 'ami-0sim0000000000001',
                                                 'InstanceType': 'm6i.large',
                                                 'UserData': base64.b64encode(USERDATA.encode()).decode(),
                                                 'SubnetId': 'subnet-0sim000000000001'})
        self.assertEqual(st, 200)
        iid = root.find('./instancesSet/item/instanceId').text
        node = wait_for(lambda: self.node_for(iid), timeout=20, what='node for %s' % iid)
        self.assertEqual(node['status']['allocatable'].get('pods') is not None, True)
        p = wait_for(lambda: (lambda p: p['status'].get('phase') == 'Running' and p)(self.k.get(PODS + '/waiting')[2]),
                     what='pod running on the new node')
        self.assertEqual(p['spec']['nodeName'], node['metadata']['name'])
        # the API server's state is wiped: the kubelet registers its Node again
        self.sim_control('POST', '/kube/reset', {'mode': 'wipe'})
        self.assertEqual(self.k.get(PODS + '/waiting')[0], 404)
        again = wait_for(lambda: self.node_for(iid), timeout=20, what='node re-registered after reset')
        self.assertNotEqual(again['metadata']['uid'], node['metadata']['uid'])
        self.k.post(PODS, pod('second'))
        wait_for(lambda: self.k.get(PODS + '/second')[2]['status'].get('phase') == 'Running', what='second pod runs')
        st, _ = self.ec2.ec2('TerminateInstances', {'InstanceId.1': iid})
        self.assertEqual(st, 200)
        wait_for(lambda: not [n for n in self.k.get('/api/v1/nodes')[2]['items']
                              if n['spec'].get('providerID', '').endswith('/' + iid)],
                 timeout=20, what='node deleted after termination')
        wait_for(lambda: self.k.get(PODS + '/second')[0] == 404, what='pod of the deleted node gone')

    def sim_control(self, method, path, body):
        import json
        import urllib.request
        req = urllib.request.Request('http://127.0.0.1:%d%s' % (self.sim.ports['control'], path),
                                     data=json.dumps(body).encode(), method=method,
                                     headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)


if __name__ == '__main__':
    unittest.main()
