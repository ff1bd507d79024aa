#!/usr/bin/env python3
"""The real-cluster tier: a real Kubernetes control plane with nodewarden installed by
Helm, EC2/SQS/STS/IMDS from the simulator, and a node agent for the instances.

    python3 tests/cluster/realcluster.py --dir build/cluster     # = make cluster (foreground)

Brings up, in order (docs/testing-real-cluster.md says what is real and what stands in):
1. a network namespace of this run (nwc-<pid>-<n>) with a veth pair: the host side
   gets 10.X.Y.1/30, the namespace 10.X.Y.2/30. Everything on the host listens on
   10.X.Y.1; nodewarden runs inside the namespace, so the webhook has an address of
   its own, as a pod has;
2. etcd, kube-apiserver (RBAC + Node authorization, admission webhooks,
   --enable-aggregator-routing so it calls webhooks at a Service's endpoints,
   --enable-bootstrap-token-auth for kubeadm join tokens),
   kube-controller-manager and kube-scheduler (tests/k8s/controlplane.py, the
   binaries pinned in tests/k8s/versions);
3. the AWS half of the simulator (tests/sim/aws.py: EC2, SQS, STS, IMDS) and its
   control API (/aws/...), on 10.X.Y.1;
4. the node agent (tests/cluster/nodeagent.py) for the simulated instances;
5. `helm install` of manifests/chart/nodewarden (CRDs, RBAC, webhooks, Service,
   ConfigMap, certificates) with the endpoints of this cluster as values (its
   Deployment's pods stay Pending: no kubelet runs containers); an EndpointSlice for the chart's Service pointing at 10.X.Y.2:8443;
   a token of the chart's ServiceAccount (TokenRequest); the chart's ConfigMap and
   TLS Secret read back from the API server.
Then it writes <dir>/kubeconfig (admin), <dir>/env, <dir>/nodewarden.yaml (the
chart's config.yaml with the kubeconfig of the ServiceAccount token and the TLS
files in <dir>) and <dir>/ports.json (last: it means "ready"); with --nodewarden it
also runs `nodewarden serve --config <dir>/nodewarden.yaml` in the namespace.
SIGTERM or SIGINT stops everything; no process or namespace is left behind.
"""
import argparse
import base64
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'sim'))
sys.path.insert(0, os.path.join(ROOT, 'tests', 'k8s'))

import aws as aws_mod  # noqa: E402  (tests/sim/aws.py)
import faults  # noqa: E402  (tests/cluster/faults.py)
import control as control_mod  # noqa: E402  (tests/sim/control.py)
from controlplane import ControlPlane  # noqa: E402  (tests/k8s/controlplane.py)
from nodeagent import NodeAgent  # noqa: E402
from rest import Api  # noqa: E402

CHART = os.path.join(ROOT, 'manifests', 'chart', 'nodewarden')
NAMESPACE = RELEASE = 'nodewarden'
CLUSTER_NAME = 'sim-cluster'   # the discovery tag the test manifests select by
WEBHOOK_PORT = 8443
CLOUD_USER = 'nodewarden-tests:cloud-node-lifecycle'
CLOUD_ROLE = 'system:controller:node-controller'


def _run(*argv, check=True, **kw):
    p = subprocess.run(list(argv), capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError('%s: exit %d: %s%s' % (' '.join(argv), p.returncode, p.stdout, p.stderr))
    return p


class Netns:
    """A network namespace and veth pair of this process, removed by close() (and by
    the next run if this process died without it: the name carries the pid)."""

    def __init__(self):
        self._sweep()
        used = _run('ip', '-o', '-4', 'addr', 'show').stdout
        for n in range(1, 64):
            a, b = random.randrange(160, 190), random.randrange(0, 64) * 4
            if ' 10.%d.%d.' % (a, b // 4 * 4) not in used and '10.%d.%d.' % (a, b) not in used:
                break
        self.host_ip, self.ns_ip = '10.%d.%d.1' % (a, b), '10.%d.%d.2' % (a, b)
        tag = '%d-%d' % (os.getpid(), n)
        self.name = 'nwc-' + tag
        self.veth = 'nwch%x%x' % (os.getpid() & 0xfffff, n)
        peer = 'nwcn%x%x' % (os.getpid() & 0xfffff, n)
        _run('ip', 'netns', 'add', self.name)
        try:
            _run('ip', 'link', 'add', self.veth, 'type', 'veth', 'peer', 'name', peer)
            _run('ip', 'link', 'set', peer, 'netns', self.name)
            _run('ip', 'addr', 'add', self.host_ip + '/30', 'dev', self.veth)
            _run('ip', 'link', 'set', self.veth, 'up')
            _run('ip', '-n', self.name, 'addr', 'add', self.ns_ip + '/30', 'dev', peer)
            _run('ip', '-n', self.name, 'link', 'set', peer, 'up')
            _run('ip', '-n', self.name, 'link', 'set', 'lo', 'up')
            _run('ip', '-n', self.name, 'route', 'add', 'default', 'via', self.host_ip)
        except BaseException:
            self.close()
            raise

    def exec_prefix(self):
        return ['ip', 'netns', 'exec', self.name]

    def close(self):
        # deleting the namespace deletes its end of the veth pair, and so the pair
        _run('ip', 'netns', 'del', self.name, check=False)
        _run('ip', 'link', 'del', self.veth, check=False)

    @staticmethod
    def _sweep():
        for line in _run('ip', 'netns', 'list', check=False).stdout.splitlines():
            m = re.match(r'nwc-(\d+)-\d+', line)
            if m and not os.path.exists('/proc/' + m.group(1)):
                _run('ip', 'netns', 'del', m.group(0), check=False)


class RealCluster:
    def __init__(self, dir, boot_delay=0.5, region='us-west-2', log=None, check_tokens=False,
                 service_cidr='10.96.0.0/16', cluster_name=CLUSTER_NAME, install=True,
                 etcd_proxy=False, api_proxy=False):
        """install=False: the control plane, the AWS simulator and the node agent only;
        the caller installs the chart (tests/install/walkthrough.py runs docs/install.md's
        own commands), then serve_from_netns() and nodewarden_files() stand in for the
        pod as start() does after its own install. etcd_proxy: kube-apiserver reaches etcd
        through a faults.DelayProxy (self.etcd_delay); api_proxy: nodewarden reaches
        kube-apiserver through a faults.ApiFaultProxy (self.api_proxy), its log in
        <dir>/apiproxy.log."""
        self.dir = os.path.abspath(dir)
        self.cluster_name = cluster_name
        self.install = install
        # the pod's environment also points AWS_ENDPOINT_URL at the simulator (for an
        # install whose values name no aws.endpoints, as a user's do)
        self.aws_endpoint_env = False
        self.want_etcd_proxy, self.want_api_proxy = etcd_proxy, api_proxy
        self.api_proxy = None
        self.service_cidr = service_cidr
        self.boot_delay = boot_delay
        self.check_tokens = check_tokens
        self.region = region
        self.log = log or (lambda *a: print('cluster:', *a, flush=True))
        self.net = self.cp = self.aws = self.aws_server = self.control = self.agent = None
        self.nw = None
        self.timings = {}

    # ---- bring-up --------------------------------------------------------------------
    def start(self):
        t0 = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        try:
            os.unlink(os.path.join(self.dir, 'ports.json'))
        except FileNotFoundError:
            pass
        try:
            self.net = Netns()
            self.host = self.net.host_ip
            self.cp = ControlPlane(os.path.join(self.dir, 'k8s'), bind_address=self.host,
                                   service_cidr=self.service_cidr,
                                   extra_apiserver_args=['--enable-aggregator-routing=true',
                                                         # kubeadm's join tokens (nodewarden.io/bootstrap)
                                                         '--enable-bootstrap-token-auth=true'],
                                   etcd_proxy=(lambda h, p: faults.DelayProxy(h, h, p))
                                   if self.want_etcd_proxy else None)
            self.cp.start()
            self.etcd_delay = self.cp.etcd_proxy
            if self.want_api_proxy:
                crt, key = self.cp.issue_cert('apiproxy', 'nodewarden-tests-apiproxy',
                                              sans=[self.host])
                self.api_proxy = faults.ApiFaultProxy(self.host, self.cp.server, self.cp.ca_file,
                                                      crt, key, os.path.join(self.dir, 'apiproxy.log'))
            self.timings['controlplane'] = time.monotonic() - t0
            self._start_aws()
            self.admin = Api(self.cp.server, self.cp.ca_file,
                             cert=(os.path.join(self.cp.pki, 'admin.crt'), os.path.join(self.cp.pki, 'admin.key')))
            crt, key = self._cloud_identity()
            self.agent = NodeAgent(self.aws, self.cp, Api(self.cp.server, self.cp.ca_file, cert=(crt, key)),
                                   boot_delay=self.boot_delay, log=self.log,
                                   check_tokens=self.check_tokens)
            self.webhook_addr = '%s:%d' % (self.net.ns_ip, WEBHOOK_PORT)
            if self.install:
                t1 = time.monotonic()
                self._helm_install()
                self.timings['helm'] = time.monotonic() - t1
                self.nodewarden_files()
        except BaseException:
            self.stop()
            raise
        self.timings['total'] = time.monotonic() - t0
        self._write_files()
        return self

    def _cloud_identity(self):
        """The node agent's cloud-node-lifecycle identity: a client certificate for the user
        CLOUD_USER (no groups), bound to kube-apiserver's bootstrap ClusterRole
        system:controller:node-controller - the role upstream's cloud-node-lifecycle
        controller runs with (k8s.io/cloud-provider app/controllermanager.go gives it the
        "node-controller" client; k8s.io/kubernetes
        plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go: nodes get/
        list/watch/update/delete/patch, nodes/status and pods/status patch/update, pods
        list/watch/get/delete, events), so a verb that role lacks is a 403 here too."""
        self.admin.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
            'metadata': {'name': CLOUD_USER},
            'roleRef': {'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'ClusterRole',
                        'name': CLOUD_ROLE},
            'subjects': [{'apiGroup': 'rbac.authorization.k8s.io', 'kind': 'User', 'name': CLOUD_USER}]})
        return self.cp.issue_cert('cloud-provider', CLOUD_USER, client=True)

    def _start_aws(self):
        self.aws = aws_mod.AwsSim(region=self.region, cluster=self.cluster_name)
        self.aws_server = aws_mod.serve(self.aws, self.host, 0)
        self.aws_server.handle_error = lambda request, client_address: None
        self.aws_url = 'http://%s:%d' % (self.host, self.aws_server.server_address[1])
        self.control = control_mod.Control()
        self.aws.register_control(self.control)
        self.control.serve(self.host, 0)
        self.control_url = 'http://%s:%d' % (self.host, self.control.address[1])

    def helm(self, *args):
        env = dict(self.cp.env(), HELM_CACHE_HOME=os.path.join(self.dir, 'helm', 'cache'),
                   HELM_CONFIG_HOME=os.path.join(self.dir, 'helm', 'config'),
                   HELM_DATA_HOME=os.path.join(self.dir, 'helm', 'data'))
        return _run(os.path.join(self.cp.bin_dir, 'helm'), '--kubeconfig', self.cp.kubeconfig, *args, env=env)

    def _helm_install(self):
        with open(self.cp.ca_file, 'rb') as f:
            self.ca_b64 = base64.b64encode(f.read()).decode()
        values = {
            'settings.clusterName': self.cluster_name, 'settings.clusterEndpoint': self.cp.server,
            'settings.clusterCABundle': self.ca_b64, 'settings.interruptionQueue': self.aws.queue_name,
            'aws.region': self.region, 'aws.endpoints.ec2': self.aws_url,
            'aws.endpoints.sqs': self.aws_url, 'aws.endpoints.sts': self.aws_url,
            'aws.endpoints.pricing': self.aws_url, 'aws.endpoints.iam': self.aws_url,
            'aws.endpoints.pricing': self.aws_url, 'aws.endpoints.ssm': self.aws_url,
        }
        # the stories with nodewarden's kubeadm bootstrap need its Secrets Role
        sets = ['--set', 'kubeadmBootstrap.enabled=true']
        for k, v in values.items():
            sets += ['--set-string', '%s=%s' % (k, v)]
        self.helm('install', RELEASE, CHART, '--namespace', NAMESPACE, '--create-namespace', *sets)
        self.serve_from_netns()

    def serve_from_netns(self):
        """The chart's Service, served from the address nodewarden has in the namespace."""
        self.admin.create('/apis/discovery.k8s.io/v1/namespaces/%s/endpointslices' % NAMESPACE, {
            'metadata': {'name': RELEASE + '-netns', 'labels': {
                'kubernetes.io/service-name': RELEASE,
                'endpointslice.kubernetes.io/managed-by': 'nodewarden-tests'}},
            'addressType': 'IPv4',
            'ports': [{'name': 'https-webhook', 'port': WEBHOOK_PORT, 'protocol': 'TCP'}],
            'endpoints': [{'addresses': [self.net.ns_ip], 'conditions': {'ready': True}}]})

    def nodewarden_files(self):
        """nodewarden's identity and configuration, as its pod would get them."""
        d = os.path.join(self.dir, 'nodewarden')
        os.makedirs(d, exist_ok=True)
        token = self.cp.create_token(NAMESPACE, RELEASE, duration='24h')
        self.nw_kubeconfig = self.cp.token_kubeconfig(os.path.join(d, 'kubeconfig'), token)
        if self.api_proxy is not None:  # nodewarden's connection only goes through it
            with open(self.nw_kubeconfig) as f:
                text = f.read().replace('server: ' + self.cp.server, 'server: ' + self.api_proxy.url)
            with open(self.nw_kubeconfig, 'w') as f:
                f.write(text)
        os.chmod(self.nw_kubeconfig, 0o600)
        sec = self.admin.get('/api/v1/namespaces/%s/secrets/%s-tls' % (NAMESPACE, RELEASE))
        for k in ('tls.crt', 'tls.key', 'ca.crt'):
            if k in sec['data']:
                with open(os.path.join(d, k), 'wb') as f:
                    f.write(base64.b64decode(sec['data'][k]))
        os.chmod(os.path.join(d, 'tls.key'), 0o600)
        cm = self.admin.get('/api/v1/namespaces/%s/configmaps/%s' % (NAMESPACE, RELEASE))
        text = cm['data']['config.yaml']
        subs = [(r'(\n  kubeconfig: )""', r'\1"%s"' % self.nw_kubeconfig),
                (r'(\n  tlsCert: )"/etc/nodewarden/tls/tls.crt"', r'\1"%s"' % os.path.join(d, 'tls.crt')),
                (r'(\n  tlsKey: )"/etc/nodewarden/tls/tls.key"', r'\1"%s"' % os.path.join(d, 'tls.key'))]
        for rx, rep in subs:
            text, n = re.subn(rx, rep, text)
            if n != 1:
                raise RuntimeError('the chart\'s config.yaml has no %r' % rx)
        self.nodewarden_config = os.path.join(self.dir, 'nodewarden.yaml')
        with open(self.nodewarden_config, 'w') as f:
            f.write('# the chart\'s ConfigMap %s/%s, with the files its pod mounts written to %s\n'
                    % (NAMESPACE, RELEASE, d) + text)

    def nodewarden_env(self):
        """What the chart's pod has: no kubeconfig or AWS keys in the environment
        (aws.credentials=instanceProfile: IMDS), POD_NAME/POD_NAMESPACE."""
        e = {k: v for k, v in os.environ.items()
             if not k.startswith(('AWS_', 'KUBECONFIG', 'KUBERNETES_'))}
        e.update(POD_NAME='nodewarden-0', POD_NAMESPACE=NAMESPACE, AWS_REGION=self.region,
                 AWS_EC2_METADATA_SERVICE_ENDPOINT=self.aws_url)
        if self.aws_endpoint_env:
            e['AWS_ENDPOINT_URL'] = self.aws_url
        return e

    def nodewarden_argv(self, *flags):
        return self.net.exec_prefix() + [os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden')),
                                         'serve', '--config', self.nodewarden_config] + list(flags)

    def _write_files(self):
        def write(name, text, mode=0o644):
            p = os.path.join(self.dir, name)
            with open(p + '.tmp', 'w') as f:
                f.write(text)
            os.chmod(p + '.tmp', mode)
            os.replace(p + '.tmp', p)
        with open(self.cp.kubeconfig) as f:
            write('kubeconfig', f.read(), 0o600)
        self.kubeconfig = os.path.join(self.dir, 'kubeconfig')
        write('env', '\n'.join([
            'export KUBECONFIG=%s' % self.kubeconfig,
            'export AWS_REGION=%s' % self.region,
            'export AWS_ACCESS_KEY_ID=%s' % self.aws.access_key_id,
            'export AWS_SECRET_ACCESS_KEY=%s' % self.aws.secret_access_key,
            'export AWS_ENDPOINT_URL_EC2=%s' % self.aws_url, 'export AWS_ENDPOINT_URL_SQS=%s' % self.aws_url,
            'export AWS_ENDPOINT_URL_STS=%s' % self.aws_url,
            'export AWS_ENDPOINT_URL_PRICING=%s' % self.aws_url,
            'export AWS_ENDPOINT_URL_IAM=%s' % self.aws_url,
            'export AWS_ENDPOINT_URL_SSM=%s' % self.aws_url,
            'export AWS_EC2_METADATA_SERVICE_ENDPOINT=%s' % self.aws_url,
            'export NW_SIM_CONTROL=%s' % self.control_url,
            'export NW_CLUSTER_NETNS=%s' % self.net.name,
            'export PATH=%s:$PATH' % self.cp.bin_dir, '']))
        write('ports.json', json.dumps({
            'kubeURL': self.cp.server, 'aws': self.aws_url, 'control': self.control_url,
            'webhook': self.webhook_addr, 'netns': self.net.name, 'pid': os.getpid(),
            'seconds': {k: round(v, 2) for k, v in self.timings.items()}}) + '\n')

    # ---- nodewarden in the namespace -------------------------------------------------
    def run_nodewarden(self, logfile):
        out = open(logfile, 'ab')
        self.nw = subprocess.Popen(self.nodewarden_argv(), stdout=out, stderr=subprocess.STDOUT,
                                   env=self.nodewarden_env(), cwd=ROOT)
        out.close()
        return self.nw

    # ---- tear-down ---------------------------------------------------------------------
    def stop(self):
        if self.nw is not None and self.nw.poll() is None:
            self.nw.terminate()
            try:
                self.nw.wait(20)
            except subprocess.TimeoutExpired:
                self.nw.kill()
                self.nw.wait()
        if self.agent is not None:
            self.agent.stop()
        if self.control is not None and self.control.server is not None:
            self.control.shutdown()
        if self.aws_server is not None:
            self.aws_server.shutdown()
            self.aws_server.server_close()
        if self.aws is not None:
            self.aws.stop()
        if self.api_proxy is not None:
            self.api_proxy.close()
            self.api_proxy = None
        if self.cp is not None:
            self.cp.stop()
        if self.net is not None:
            self.net.close()
            self.net = None


def main(argv=None):
    ap = argparse.ArgumentParser(description='real control plane + nodewarden installed by Helm')
    ap.add_argument('--dir', default='build/cluster')
    ap.add_argument('--boot-delay', type=float, default=0.5)
    ap.add_argument('--no-nodewarden', action='store_true', help='do not run nodewarden serve')
    args = ap.parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    c = RealCluster(args.dir, boot_delay=args.boot_delay)
    try:
        c.start()
        if not args.no_nodewarden:
            c.run_nodewarden(os.path.join(c.dir, 'nodewarden.log'))
        print('cluster: kube-apiserver %s, AWS %s, control %s, nodewarden %s in netns %s '
              '(log %s); up in %.1f s (control plane %.1f s, helm install %.1f s)\n'
              'cluster: kubectl --kubeconfig %s get nodes; . %s'
              % (c.cp.server, c.aws_url, c.control_url, c.webhook_addr, c.net.name,
                 os.path.join(c.dir, 'nodewarden.log'), c.timings['total'], c.timings['controlplane'],
                 c.timings['helm'], c.kubeconfig, os.path.join(c.dir, 'env')), flush=True)
        while not done.wait(1.0):
            if c.nw is not None and c.nw.poll() is not None:
                print('cluster: nodewarden exited (%d); see its log' % c.nw.returncode, flush=True)
                c.nw = None
    finally:
        c.stop()
    print('cluster: stopped', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
