"""Clusters the end-to-end stories run against, behind one interface.

A Cluster is what a story sees of "a Kubernetes cluster on AWS":
    c.backend                 name of the backend ("sim", ...)
    c.dir                     a private temporary directory (logs, files of the story)
    c.kubeconfig, c.env       the admin kubeconfig; the environment for nodewarden and
                              clients (KUBECONFIG, AWS_REGION, AWS_ENDPOINT_URL_*, keys)
    c.nodewarden_config       a nodewarden.yaml pointing at this cluster
    c.kubectl(...)            harness.kubectl.Kubectl bound to the kubeconfig; also
    c.apply / c.get / c.items / c.events
    c.aws(method, path, body) the AWS simulator's control API (/aws/...: instances, calls,
                              ICE, throttling, interruptions): every backend has it, EC2
                              cannot run here
    c.instances(live=True)    the simulated EC2 instances
    c.start_nodewarden(*flags), c.stop_nodewarden(), c.nwlog(), c.metrics()
    c.close(keep)

What only a simulated API server can do (inject kube errors and 410s, drop watches,
wipe/restore the store, read its request log, tune its kubelets) is not on the Cluster:
it is c.sim, a SimControl, and c.supports("sim-control") says whether the backend has
it. A backend without it raises Unsupported from c.sim, with the story's name of what it
wanted, so a story written for the simulator fails loudly on a real cluster instead of
passing without its faults.

Backends register with register_backend(name, factory); new(backend=None, **options)
makes one (backend default: $NW_E2E_BACKEND, else "sim"). The "sim" backend is
tests/sim/sim.py (API server, scheduler, kubelets, AWS) in a subprocess.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from . import kubectl as kubectl_mod
from .core import NW_BIN, ROOT, Failure, fail, log, wait_for
from .metrics import scrape

BACKENDS = {}


def register_backend(name, factory):
    BACKENDS[name] = factory


def new(backend=None, **options):
    name = backend or os.environ.get("NW_E2E_BACKEND", "sim")
    if name == "real" and name not in BACKENDS:
        sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
        import backend  # noqa: F401  (tests/cluster/backend.py registers "real")
    if name not in BACKENDS:
        fail("no e2e backend %r (known: %s)" % (name, ", ".join(sorted(BACKENDS))))
    return BACKENDS[name](**options)


class Unsupported(Failure):
    """The backend cannot do what the story asked (e.g. kube faults on a real cluster)."""


def http_json(base, method, path, body=None, timeout=30):
    """JSON of METHOD base+path; an HTTP error fails the story with the server's answer."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            t = r.read()
    except urllib.error.HTTPError as e:
        fail("%s %s: HTTP %d: %s" % (method, path, e.code, e.read()[:500]))
    return json.loads(t) if t else None


def read_env_file(path, into):
    for line in open(path):
        line = line.strip()
        if line.startswith("export ") and "=" in line:
            k, v = line[7:].split("=", 1)
            into[k] = v.strip('"')
    return into


class Cluster:
    backend = None
    capabilities = frozenset()
    dir = kubeconfig = nodewarden_config = aws_url = webhook_addr = metrics_port = None

    def __init__(self):
        self.env = dict(os.environ)
        self.nw = None
        self.nwlogs = []

    def _bind(self):
        """Subclasses call this once dir, kubeconfig and env are set."""
        self.env["KUBECONFIG"] = self.kubeconfig
        self.kubectl = kubectl_mod.Kubectl(self.kubeconfig, self.dir, self.env)

    # ---- capabilities ----
    def supports(self, cap):
        return cap in self.capabilities

    @property
    def sim(self):
        raise Unsupported("the %s backend has no simulator control (kube faults, 410s, "
                          "watch drops, store resets)" % self.backend)

    # ---- Kubernetes ----
    def apply(self, what, *flags):
        return self.kubectl.apply(what, *flags)

    def get(self, *args):
        return self.kubectl.get(*args)

    def items(self, *args):
        return self.kubectl.items(*args)

    def events(self):
        return self.kubectl.events()

    # ---- AWS (the simulator's AWS half on every backend) ----
    def aws(self, method, path, body=None):
        return http_json(self.aws_url, method, path, body)

    def instances(self, live=True):
        out = self.aws("GET", "/aws/instances")["instances"]
        if live:
            out = [i for i in out if i["State"]["Name"] in ("pending", "running")]
        return out

    # ---- nodewarden ----
    def start_nodewarden(self, *flags, env=None, name="nw"):
        """`nodewarden serve --config <the cluster's>` with the scaler on and short batch
        windows and leader election timings; returns once its webhook listens."""
        path = os.path.join(self.dir, "%s-%d.log" % (name, len(self.nwlogs)))
        self.nwlogs.append(path)
        args = [NW_BIN, "serve", "--config", self.nodewarden_config,
                "--scaler.enabled", "true",
                "--settings.batchIdleDuration", "300ms", "--settings.batchMaxDuration", "2s",
                "--scaler.leaderElection.leaseDuration", "3s",
                "--scaler.leaderElection.renewDeadline", "2s",
                "--scaler.leaderElection.retryPeriod", "500ms",
                "--metrics.listen", "0.0.0.0:0"] + list(flags)
        argv, e = self.nodewarden_command(args, env)
        with open(path, "w") as out:
            self.nw = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=e,
                                       cwd=ROOT)

        # the webhook must answer before NodePools can be created (fail-closed)
        def listening():
            if self.nw.poll() is not None:
                fail("nodewarden exited early:\n" + open(path).read()[-3000:])
            return '"listening"' in open(path).read()
        wait_for(listening, 20, "nodewarden to listen", interval=0.1)
        for line in open(path):  # the metrics port, picked by the kernel (port 0)
            if '"metrics listening"' in line:
                self.metrics_port = json.loads(line)["port"]
        return self.nw

    def nodewarden_command(self, args, env):
        """(argv, environment) that run nodewarden's args on this backend: the cluster's
        environment plus env here; a backend may wrap the command (tests/cluster/backend.py
        runs it in a network namespace)."""
        e = dict(self.env)
        e.update(env or {})
        return args, e

    def stop_nodewarden(self):
        if self.nw and self.nw.poll() is None:
            self.nw.send_signal(signal.SIGTERM)
            try:
                self.nw.wait(20)
            except subprocess.TimeoutExpired:
                self.nw.kill()
                self.nw.wait()
                fail("nodewarden did not stop within 20 s of SIGTERM")
        self.nw = None

    def nwlog(self):
        return "".join(open(p).read() for p in self.nwlogs)

    def metrics(self):
        """nodewarden's /metrics (plain HTTP on its metrics port, metrics.listen; on the
        webhook's host) as harness.metrics.Metrics."""
        host = self.webhook_addr.rsplit(":", 1)[0]
        return scrape("http://%s:%d/metrics" % (host, self.metrics_port))

    def close(self, keep=False):
        try:
            self.stop_nodewarden()
        finally:
            self._stop_backend()
            if keep or os.environ.get("NW_E2E_KEEP"):
                log("kept", self.dir)
                for p in self.nwlogs:
                    log("---", p)
                    print("".join(l for l in open(p) if '"comp":"webhook"' not in l)[-6000:])
            else:
                shutil.rmtree(self.dir, ignore_errors=True)

    def _stop_backend(self):
        pass


class SimControl:
    """What only the simulator can do: its kube control routes (/kube/...: faults, 410s
    through history compaction, drop-watches, reset, request log) and simctl."""

    def __init__(self, cluster, url):
        self.cluster = cluster
        self.url = url

    def kube(self, method, path, body=None):
        return http_json(self.url, method, path, body)

    def simctl(self, *args):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sim", "simctl"),
                            "--url", self.url] + list(args), capture_output=True, text=True)
        if r.returncode != 0:
            fail("simctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout


class SimCluster(Cluster):
    """tests/sim/sim.py on free ports. webhooks=False: the simulated API server does not
    call nodewarden's webhooks."""
    backend = "sim"
    capabilities = frozenset({"sim-control"})

    def __init__(self, boot_delay=0.3, webhooks=True, sim_args=(), bootstrap_tokens=False,
                 service_cidr=None):
        """bootstrap_tokens: the kubelets join with a kubeadm token only when it would
        authenticate (sim.py --kubelet-bootstrap-tokens). service_cidr (the real backend's
        service ranges) is taken and not used: the simulated API server allocates IPv4
        ClusterIPs and keeps any ClusterIP a Service is given."""
        super().__init__()
        if bootstrap_tokens:
            sim_args = list(sim_args) + ["--kubelet-bootstrap-tokens"]
        self.dir = tempfile.mkdtemp(prefix="nw-e2e-")
        self.simlog = open(os.path.join(self.dir, "sim.log"), "w")
        argv = [sys.executable, os.environ.get("NW_SIM_PY", os.path.join(ROOT, "tests", "sim", "sim.py")),
                "--dir", self.dir, "--webhook-listen", "127.0.0.1:0",
                "--boot-delay", str(boot_delay)] + ([] if webhooks else ["--no-webhooks"]) + list(sim_args)
        self.proc = subprocess.Popen(argv, stdout=self.simlog, stderr=subprocess.STDOUT, cwd=ROOT)
        ports = os.path.join(self.dir, "ports.json")

        def up():
            if self.proc.poll() is not None:
                fail("simulator exited:\n" + open(self.simlog.name).read()[-3000:])
            return os.path.exists(ports)
        wait_for(up, 60, "the simulator to write ports.json", interval=0.1)
        time.sleep(0.1)
        with open(ports) as f:
            self.ports = json.load(f)
        host = self.ports.get("host", "127.0.0.1")
        self.control_url = "http://%s:%d" % (host, self.ports["control"])
        self.aws_url = self.control_url
        self.webhook_addr = "127.0.0.1:%d" % self.ports["webhook"]
        self.kubeconfig = os.path.join(self.dir, "kubeconfig")
        self.nodewarden_config = os.path.join(self.dir, "nodewarden.yaml")
        read_env_file(os.path.join(self.dir, "env"), self.env)
        self._bind()

    @property
    def sim(self):
        return SimControl(self, self.control_url)

    def _stop_backend(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.simlog.close()


register_backend("sim", SimCluster)
