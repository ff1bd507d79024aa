"""The kubelet tier: the real-cluster tier (tests/cluster/realcluster.py) with a real node
where the chart's pods run from the release's image.

    c = KubeletCluster(dir, release)      # release: a Release (below)
    c.start()   # control plane, AWS stand-in, node agent, the node, images, helm install
    c.stop()

What differs from RealCluster (docs/testing-kubelet.md):
- a node (tests/kubelet/node.py: containerd, runc, CNI, the kubelet, kube-proxy) in
  the run's network namespace, at its address; it registers as `control-plane`,
  tainted node-role.kubernetes.io/control-plane:NoSchedule and labelled as such by the
  test, as a kubeadm control-plane node is, so the stories' workloads never land there;
- kube-apiserver runs without --enable-aggregator-routing: it calls the webhooks at the
  chart's Service's ClusterIP, which reaches the pods through kube-proxy's rules in the
  node's namespace (the host routes the run's service range to the node's address);
  the service range and the pods' range are picked for the run (10.200-249.x.0/24);
- the release's image archive and a pause image imported into the node's containerd
  (`ctr -n k8s.io images import`), and `helm install` of the release's packaged chart
  with the install of README.md (the control-plane nodeSelector and toleration); no
  nodewarden process on the host and no EndpointSlice made by the test: the chart's
  two pods serve the webhooks and one of them, the Lease holder, scales.
"""
import base64
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'cluster'))

from controlplane import ControlPlane  # noqa: E402  (tests/k8s/controlplane.py)
from nodeagent import NodeAgent  # noqa: E402
from realcluster import NAMESPACE, RELEASE, Netns, RealCluster, _run  # noqa: E402
from rest import Api  # noqa: E402
import node as node_mod  # noqa: E402  (tests/kubelet/node.py)

NODE_NAME = 'control-plane'
CONTROL_PLANE = 'node-role.kubernetes.io/control-plane'


def host_arch():
    return subprocess.run(['dpkg', '--print-architecture'], capture_output=True, text=True,
                          check=True).stdout.strip()


class Release:
    """A release directory: nodewarden-<version>-oci.tar (an image index), the packaged
    chart nodewarden-<version>.tgz, image.json (the index digest); and the pause image."""

    def __init__(self, dir, pause_archive):
        self.dir = os.path.abspath(dir)
        if not os.path.isfile(os.path.join(self.dir, 'image.json')):
            raise RuntimeError('%s is not a release directory (no image.json): `make release` writes '
                               'build/release/<version>/' % self.dir)
        with open(os.path.join(self.dir, 'image.json')) as f:
            self.image = json.load(f)
        self.version = self.image['version']
        self.digest = self.image['index_digest']
        self.archive = os.path.join(self.dir, self.image['archive'])
        self.chart = os.path.join(self.dir, 'nodewarden-%s.tgz' % self.version)
        self.pause = pause_archive
        for p in (self.archive, self.chart):
            if not os.path.exists(p):
                raise RuntimeError('the release in %s has no %s' % (self.dir, os.path.basename(p)))
        arch = host_arch()
        if arch not in self.image['images']:
            raise RuntimeError('the release in %s has no linux/%s image (it has %s)'
                               % (self.dir, arch, ', '.join(sorted(self.image['images']))))
        self.manifest_digest = self.image['images'][arch]['manifest_digest']


def pick_cidrs():
    """A service range and a pods' range for this run: 10.A.B.0/24 and 10.A.B+1.0/24 that
    no address or route of the host uses (other runs' ranges included)."""
    used = _run('ip', '-o', '-4', 'addr', 'show').stdout + _run('ip', '-4', 'route', 'show', 'table', 'all').stdout
    for _ in range(500):
        a, b = random.randrange(200, 250), random.randrange(0, 128) * 2
        if '10.%d.%d.' % (a, b) not in used and '10.%d.%d.' % (a, b + 1) not in used:
            return '10.%d.%d.0/24' % (a, b), '10.%d.%d.0/24' % (a, b + 1)
    raise RuntimeError('no free 10.200-249.x.0/24 pair for the service and pod ranges')


class KubeletCluster(RealCluster):
    def __init__(self, dir, release, log=None, boot_delay=0.5):
        super().__init__(dir, boot_delay=boot_delay, log=log)
        self.release = release
        self.node = None

    def start(self):
        t0 = time.monotonic()
        os.makedirs(self.dir, exist_ok=True)
        try:
            self.net = Netns()
            self.host = self.net.host_ip
            self.service_cidr, self.pod_cidr = pick_cidrs()
            # the API server (on the host) reaches ClusterIPs through the node's kube-proxy
            _run('ip', 'route', 'add', self.service_cidr, 'via', self.net.ns_ip, 'dev', self.net.veth)
            self.cp = ControlPlane(os.path.join(self.dir, 'k8s'), bind_address=self.host,
                                   service_cidr=self.service_cidr)
            self.cp.start()
            self.timings['controlplane'] = time.monotonic() - t0
            self._start_aws()
            self.admin = Api(self.cp.server, self.cp.ca_file,
                             cert=(os.path.join(self.cp.pki, 'admin.crt'), os.path.join(self.cp.pki, 'admin.key')))
            crt, key = self._cloud_identity()
            self.agent = NodeAgent(self.aws, self.cp, Api(self.cp.server, self.cp.ca_file, cert=(crt, key)),
                                   boot_delay=self.boot_delay, log=self.log)
            t1 = time.monotonic()
            bin_dir = os.environ.get('NW_K8S_NODE_BIN') or subprocess.run(
                [os.path.join(ROOT, 'tests', 'k8s', 'build'), '--print-bin', 'node'],
                capture_output=True, text=True, check=True).stdout.strip()
            self.node = node_mod.Node(os.path.join(self.dir, 'node'), self.cp, self.net.name, self.net.ns_ip,
                                      self.pod_cidr, NODE_NAME, bin_dir, log=self.log)
            self.node.start()
            self.cp.kubectl('label', 'node', NODE_NAME, CONTROL_PLANE + '=')
            self.timings['node'] = time.monotonic() - t1
            t1 = time.monotonic()
            for archive in (self.release.pause, self.release.archive):
                self.import_image(archive)
            self.timings['import'] = time.monotonic() - t1
            t1 = time.monotonic()
            self._helm_install_release()
            self.timings['helm'] = time.monotonic() - t1
        except BaseException:
            self.stop()
            raise
        self.timings['total'] = time.monotonic() - t0
        with open(self.cp.kubeconfig) as f:
            text = f.read()
        self.kubeconfig = os.path.join(self.dir, 'kubeconfig')
        with open(self.kubeconfig, 'w') as f:
            f.write(text)
        os.chmod(self.kubeconfig, 0o600)
        return self

    def _helm_install_release(self):
        self.helm('install', RELEASE, self.release.chart, '--namespace', NAMESPACE, '--create-namespace',
                  *self.helm_sets())

    def helm_sets(self):
        """The install's values as helm flags (a user's values file): the upgrade passes
        them again rather than --reuse-values (docs/upgrading.md)."""
        with open(self.cp.ca_file, 'rb') as f:
            ca_b64 = base64.b64encode(f.read()).decode()
        values = {
            'settings.clusterName': 'sim-cluster', 'settings.clusterEndpoint': self.cp.server,
            'settings.clusterCABundle': ca_b64, 'settings.interruptionQueue': self.aws.queue_name,
            'aws.region': self.region,
            # one node: the chart's default anti-affinity (required) would leave the second
            # replica Pending; preferred is the one-node cluster's setting (docs/install.md)
            'podAntiAffinity': 'preferred',
        }
        for svc in ('ec2', 'sqs', 'sts', 'pricing', 'iam', 'ssm', 'imds'):
            values['aws.endpoints.' + svc] = self.aws_url
        sets = []
        for k, v in values.items():
            sets += ['--set-string', '%s=%s' % (k, v)]
        # README.md's install: on the control-plane nodes
        sets += ['--set-json', 'nodeSelector={"%s":""}' % CONTROL_PLANE,
                 '--set-json', 'tolerations=[{"key":"%s","operator":"Exists","effect":"NoSchedule"}]'
                 % CONTROL_PLANE]
        return sets

    def import_image(self, archive):
        """An image archive into the node's containerd, as `ctr -n k8s.io images import`."""
        self.node.ctr('images', 'import', '--platform', 'linux/' + host_arch(), archive)

    def pods(self):
        out = self.cp.kubectl('get', 'pods', '-n', NAMESPACE, '-l', 'app.kubernetes.io/name=nodewarden',
                              '-o', 'json').stdout
        return json.loads(out)['items']

    def stop(self):
        if self.node is not None:
            self.node.stop()
        if not getattr(self, '_stopped', False):
            self._stopped = True
            super().stop()
