"""Fixture for nodewarden's AWS end-to-end tests (tests/e2e/t_aws_*): the simulator's
AWS half (tests/sim/aws.py) in this process, and helpers to run $NW_BIN against it.
Waiting is harness.wait_for.

The tests talk to the simulator object directly (call log, instances, faults
through its control handler) and to nodewarden only through its command line.
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import unittest

from .core import NW_BIN, ROOT

sys.path.insert(0, os.path.join(ROOT, 'tests', 'sim'))
import aws  # noqa: E402

CLUSTER = 'e2e'


def jwt(sub='system:serviceaccount:nodewarden:nodewarden', exp=None):
    def b64(d):
        return base64.urlsafe_b64encode(json.dumps(d).encode()).decode().rstrip('=')
    claims = {'sub': sub, 'aud': 'sts.amazonaws.com', 'iss': 'https://oidc.example.com'}
    if exp:
        claims['exp'] = exp
    return '%s.%s.%s' % (b64({'alg': 'RS256', 'typ': 'JWT'}), b64(claims), 'c2ln')


NODECLASS = """apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: default
spec:
  amiFamily: Custom
  role: nodewarden-node
  userData: |
    #!/bin/bash
    kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef
  subnetSelectorTerms:
    - tags:
        karpenter.sh/discovery: e2e
  securityGroupSelectorTerms:
    - tags:
        karpenter.sh/discovery: e2e
  amiSelectorTerms:
    - tags:
        karpenter.sh/discovery: e2e
  tags:
    team: platform
"""


class Sim(unittest.TestCase):
    """Starts one simulated AWS account per test class."""
    sim_kw = {}

    @classmethod
    def setUpClass(cls):
        kw = dict(cluster=CLUSTER, pending_seconds=0.05, shutdown_seconds=0.05)
        kw.update(cls.sim_kw)
        cls.sim = aws.AwsSim(**kw)
        cls.srv = aws.serve(cls.sim)
        # clients that time out on purpose leave broken pipes: not worth a traceback
        cls.srv.handle_error = lambda request, client_address: None
        cls.tmp = tempfile.mkdtemp(prefix='nw-e2e-aws-')
        cls.nodeclass = cls.write('nodeclass.yaml', NODECLASS)

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.sim.stop()

    @classmethod
    def write(cls, name, text):
        p = os.path.join(cls.tmp, name)
        with open(p, 'w') as f:
            f.write(text)
        return p

    def setUp(self):
        self.ctl('DELETE', 'faults')
        self.ctl('DELETE', 'calls')

    # -- simulator control ----------------------------------------------------
    def ctl(self, method, sub, body=None, query=None):
        st, out = self.sim.control(method, '/aws/' + sub, query or {}, body or {})
        self.assertEqual(st, 200, out)
        return out

    def calls(self, action=None):
        return self.ctl('GET', 'calls', query={'action': action} if action else {})['calls']

    # -- running nodewarden -------------------------------------------------------
    def env(self, source='env', **extra):
        e = {k: v for k, v in os.environ.items() if not k.startswith('AWS_')}
        e.update({'AWS_REGION': self.sim.region,
                  'AWS_ENDPOINT_URL_EC2': self.srv.url,
                  'AWS_ENDPOINT_URL_STS': self.srv.url,
                  'AWS_ENDPOINT_URL_PRICING': self.srv.url,
                  'AWS_ENDPOINT_URL_IAM': self.srv.url,
                  'AWS_EC2_METADATA_SERVICE_ENDPOINT': self.srv.url})
        if source == 'env':
            e['AWS_ACCESS_KEY_ID'] = self.sim.access_key
            e['AWS_SECRET_ACCESS_KEY'] = self.sim.secret_key
        elif source == 'web-identity':
            tok = self.write('token', jwt())
            e['AWS_ROLE_ARN'] = 'arn:aws:iam::%s:role/nodewarden' % self.sim.account
            e['AWS_WEB_IDENTITY_TOKEN_FILE'] = tok
            e['AWS_ROLE_SESSION_NAME'] = 'e2e'
        elif source == 'imds':
            pass
        e.update(extra)
        return e

    def nw(self, *args, env=None, expect=0, timeout=120):
        cmd = [NW_BIN] + list(args)
        p = subprocess.run(cmd, env=env or self.env(), capture_output=True, text=True,
                           timeout=timeout)
        if expect is not None and p.returncode != expect:
            self.fail('%s exited %d, want %d\nstdout: %s\nstderr: %s' % (
                ' '.join(cmd), p.returncode, expect, p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def nwj(self, *args, **kw):
        p = self.nw(*args, **kw)
        try:
            return json.loads(p.stdout)
        except ValueError:
            self.fail('not JSON: %r (stderr %s)' % (p.stdout[:500], p.stderr[-2000:]))

    def launch(self, claim, types, cts='on-demand', zones=None, env=None, expect=0, extra=()):
        args = ['aws', 'launch', '--settings.clusterName', CLUSTER, '--nodeclass', self.nodeclass,
                '--nodepool', 'default', '--nodeclaim', claim, '--types', types,
                '--capacity-types', cts, *extra]
        if zones:
            args += ['--zones', zones]
        return self.nwj(*args, env=env, expect=expect)
