"""The "real" backend of the end-to-end harness (tests/e2e/harness): a story run with
NW_E2E_BACKEND=real, or main(story, cluster={"backend": "real"}), gets a
tests/cluster/realcluster.py RealCluster - real etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, nodewarden installed by `helm install`
and run in a network namespace with the chart's ServiceAccount token and
ConfigMap, EC2/SQS/STS/IMDS from the simulator, Nodes from the node agent.

What only the simulated API server can do (c.sim: kube faults, 410s, watch drops,
store resets) raises harness.Unsupported here (the real tier's own faults are
tests/cluster/faults.py's proxies: options etcd_proxy, api_proxy). Every story on this
backend also fails when nodewarden met a 403 (its request counter before it stops, its
log at the end): the chart's RBAC must grant whatever the story made it do; only while
kube-apiserver restarted (cp.restart_apiserver) is a 403 allowed.
"""
import calendar
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'e2e'))

from harness import cluster as hc  # noqa: E402
from harness.core import check, fail  # noqa: E402
from realcluster import CLOUD_USER, RealCluster  # noqa: E402,F401

SIM_ONLY = ('sim_args', 'webhooks')
# what nodewarden's kube client adds to a 403 (scaler/kube/client.c)
RBAC_HINT = 'RBAC: grant this verb on this resource'


class RealBackend(hc.Cluster):
    backend = 'real'
    capabilities = frozenset({'real-apiserver', 'rbac'})

    def __init__(self, boot_delay=0.3, bootstrap_tokens=False, service_cidr='10.96.0.0/16',
                 etcd_proxy=False, api_proxy=False, **options):
        """service_cidr: kube-apiserver's --service-cluster-ip-range ("v4,v6" is a
        dual-stack cluster, where a Service may ask for an IPv6 ClusterIP); etcd_proxy,
        api_proxy: the fault proxies of tests/cluster/faults.py (self.real.etcd_delay,
        self.real.api_proxy)."""
        super().__init__()
        for k, v in options.items():
            if k == 'webhooks' and v:
                continue            # the real API server always calls the chart's webhooks
            if k in SIM_ONLY and v:
                raise hc.Unsupported('the real backend has no %s=%r (simulator only)' % (k, v))
            if k not in SIM_ONLY:
                fail('real backend: unknown option %s' % k)
        self.dir = tempfile.mkdtemp(prefix='nw-e2e-real-')
        agent_log = os.path.join(self.dir, 'agent.log')

        def log(*a):
            with open(agent_log, 'a') as f:
                f.write(' '.join(str(x) for x in a) + '\n')
        self.real = RealCluster(os.path.join(self.dir, 'cluster'), boot_delay=boot_delay, log=log,
                                check_tokens=bootstrap_tokens, service_cidr=service_cidr,
                                etcd_proxy=etcd_proxy, api_proxy=api_proxy)
        try:
            self.real.start()
        except BaseException:
            self.real.stop()
            raise
        self.kubeconfig = self.real.kubeconfig
        self.nodewarden_config = self.real.nodewarden_config
        self.aws_url = self.real.control_url
        self.webhook_addr = self.real.webhook_addr
        hc.read_env_file(os.path.join(self.real.dir, 'env'), self.env)
        self._bind()

    def nodewarden_command(self, args, env):
        """nodewarden in the cluster's network namespace, with what the chart's pod has in
        its environment (no kubeconfig, no AWS keys: IMDS) plus the story's env."""
        e = self.real.nodewarden_env()
        e.update(env or {})
        return self.real.net.exec_prefix() + list(args), e

    def stop_nodewarden(self):
        """Before it stops: nothing nodewarden asked for was refused by the chart's RBAC
        (its own counter of 403 answers), whatever the story checked itself."""
        if self.nw is not None and self.nw.poll() is None:
            try:
                denied = self.metrics().sum('nodewarden_kube_requests_total', code='403')
            except OSError:
                denied = None     # no /metrics: the log check below still runs
            if denied and self.real.cp.restarts:
                denied = None     # the log check below allows those of a restart
            if denied:
                check(False, 'real backend: no request of nodewarden refused with 403 (%g refused)'
                      % denied)
        super().stop_nodewarden()

    def _restarting(self, line, slack=5.0):
        """True when a log line was written while kube-apiserver restarted (from its stop
        until `slack` s after /readyz): a starting API server answers 403 until its RBAC
        authorizer has synced, whatever the chart grants."""
        try:
            ts = json.loads(line)['ts']
            t = calendar.timegm(time.strptime(ts[:19], '%Y-%m-%dT%H:%M:%S')) + float('0' + ts[19:-1])
        except (ValueError, KeyError):
            return False
        return any(a <= t <= b + slack for a, b in self.real.cp.restarts)

    def _stop_backend(self):
        # runs that ended otherwise (killed by the story) too: a 403 nodewarden logged
        for p in self.nwlogs:
            try:
                with open(p) as f:
                    bad = [line for line in f if RBAC_HINT in line or
                           (self.real.cp.restarts and '"code":403' in line)]
            except OSError:
                continue
            bad = [line for line in bad if not self._restarting(line)]
            if bad:
                check(False, 'real backend: %s logged %d request(s) refused by RBAC, first: %s'
                      % (os.path.basename(p), len(bad), bad[0].strip()[:400]))
        self.real.stop()


hc.register_backend('real', RealBackend)
