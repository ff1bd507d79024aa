"""The AWS half inside sim.py: the env file's endpoints and keys work, an instance
launched through the EC2 API joins the Kubernetes API as a Node with the userData's
labels and taints, and leaves it when terminated; simctl's AWS verbs reach the
control API."""

import base64
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import awsclient  # noqa: E402

try:
    import simtest  # the kube half's harness (SimProcess, Client)
except ImportError:
    simtest = None

SEED_UD = ('#!/bin/bash\ncat > /etc/default/kubelet <<EOF\n'
           'KUBELET_EXTRA_ARGS="--register-with-taints=karpenter.sh/unregistered:NoExecute,gpu=true:NoSchedule '
           '--node-labels=node.lifecycle=karpenter,node.accelerator=nvidia-gpu"\nEOF\n'
           'kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef '
           '--discovery-token-ca-cert-hash sha256:00\n')


def read_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith('export ') and '=' in line:
                k, v = line[7:].split('=', 1)
                env[k] = v.strip('"\'')
    return env


@unittest.skipIf(simtest is None or not os.path.exists(os.path.join(HERE, 'sim.py')),
                 'sim.py (kube half) not present')
class AwsInSim(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='simaws-')
        cls.sim = simtest.SimProcess(cls.dir, '--boot-delay', '0.3', '--cluster-name', 'it-cluster')
        cls.env = read_env(os.path.join(cls.dir, 'env'))
        cls.ec2 = awsclient.Client(cls.env['AWS_ENDPOINT_URL_EC2'], cls.env['AWS_ACCESS_KEY_ID'],
                                   cls.env['AWS_SECRET_ACCESS_KEY'], cls.env['AWS_REGION'])

    @classmethod
    def tearDownClass(cls):
        cls.sim.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def nodes(self):
        st, _, out = self.sim.client.get('/api/v1/nodes')
        self.assertEqual(st, 200)
        return out['items']

    def node_of(self, iid):
        for n in self.nodes():
            if n['spec'].get('providerID', '').endswith('/' + iid):
                return n
        return None

    def test_env_and_config_point_at_aws(self):
        for k in ('AWS_ENDPOINT_URL_EC2', 'AWS_ENDPOINT_URL_SQS', 'AWS_ENDPOINT_URL_STS',
                  'AWS_EC2_METADATA_SERVICE_ENDPOINT', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY',
                  'AWS_REGION'):
            self.assertTrue(self.env.get(k), k)
        with open(os.path.join(self.dir, 'nodewarden.yaml')) as f:
            cfg = f.read()
        self.assertIn(self.env['AWS_ENDPOINT_URL_EC2'], cfg)
        self.assertIn('interruptionQueue: "it-cluster"', cfg)
        st, root = self.ec2.ec2('DescribeSubnets', awsclient.filters(('tag:karpenter.sh/discovery',
                                                                      ['it-cluster'])))
        self.assertEqual(st, 200)
        self.assertEqual(len(root.findall('./subnetSet/item')), 3)
        sqs = awsclient.Client(self.env['AWS_ENDPOINT_URL_SQS'], self.env['AWS_ACCESS_KEY_ID'],
                               self.env['AWS_SECRET_ACCESS_KEY'], self.env['AWS_REGION'])
        st, out = sqs.sqs('GetQueueUrl', {'QueueName': 'it-cluster'})
        self.assertEqual(st, 200, out)

    def test_instance_joins_and_leaves(self):
        st, root = self.ec2.ec2('RunInstances', {
            'MinCount': '1', 'MaxCount': '1', 'ImageId': 'ami-0sim0000000000001', 'InstanceType': 'g6.xlarge',
            'SubnetId': 'subnet-0sim000000000002', 'UserData': base64.b64encode(SEED_UD.encode()).decode()})
        self.assertEqual(st, 200)
        iid = root.find('./instancesSet/item/instanceId').text
        n = simtest.wait_for(lambda: (lambda x: x and any(
            c['type'] == 'Ready' and c['status'] == 'True' for c in x['status']['conditions']) and x)(
            self.node_of(iid)), timeout=20, what='node Ready')
        self.assertEqual(n['spec']['providerID'], 'aws:///us-west-2b/' + iid)
        self.assertEqual(n['spec']['taints'], [{'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'},
                                               {'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'}])
        self.assertEqual(n['metadata']['labels']['node.lifecycle'], 'karpenter')
        self.assertEqual(n['metadata']['labels']['node.accelerator'], 'nvidia-gpu')
        self.assertEqual(n['status']['allocatable']['nvidia.com/gpu'], '1')
        st, _ = self.ec2.ec2('TerminateInstances', {'InstanceId.1': iid})
        self.assertEqual(st, 200)
        simtest.wait_for(lambda: self.node_of(iid) is None, timeout=20, what='node deleted')

    def test_simctl_aws_verbs(self):
        simctl = os.path.join(HERE, 'simctl')
        out = subprocess.run([sys.executable, simctl, '--dir', self.dir, 'ice', 'm6i.large', 'us-west-2a',
                              'spot'], capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn('m6i.large', out.stdout)
        out = subprocess.run([sys.executable, simctl, '--dir', self.dir, 'clear-aws-faults'],
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


if __name__ == '__main__':
    unittest.main()
