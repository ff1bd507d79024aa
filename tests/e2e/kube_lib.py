"""Helpers for the Kubernetes-client end-to-end tests: start the cluster simulator
(tests/sim/sim.py, or $NW_SIM_PY), run kubectl and the control API against it, run
`nodewarden kube-dump --follow` and read what it prints."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIM_PY = os.environ.get('NW_SIM_PY', os.path.join(ROOT, 'tests', 'sim', 'sim.py'))
NW_BIN = os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden'))
KUBECTL = shutil.which('kubectl')

# resource name as kubectl knows it -> key in kube-dump's output
RESOURCES = [
    ('pods', 'pods', True),
    ('nodes', 'nodes', False),
    ('nodepools.karpenter.sh', 'nodepools', False),
    ('ec2nodeclasses.karpenter.k8s.aws', 'ec2nodeclasses', False),
    ('nodeclaims.karpenter.sh', 'nodeclaims', False),
    ('poddisruptionbudgets', 'poddisruptionbudgets', True),
    ('daemonsets', 'daemonsets', True),
]

FAILED = []


def log(msg):
    sys.stdout.write(msg + '\n')
    sys.stdout.flush()


def check(cond, what):
    log(('ok   ' if cond else 'FAIL ') + what)
    if not cond:
        FAILED.append(what)
    return cond


def wait_for(fn, timeout=30.0, interval=0.1):
    """Call fn until it returns a true value or timeout passes; returns the last value."""
    end = time.time() + timeout
    v = fn()
    while not v and time.time() < end:
        time.sleep(interval)
        v = fn()
    return v


class Sim:
    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix='nw-e2e-sim-')
        self.logf = open(os.path.join(self.dir, 'sim.log'), 'w')
        self.proc = subprocess.Popen([sys.executable, SIM_PY, '--dir', self.dir, '--no-webhooks',
                                      '--webhook-listen', '127.0.0.1:0', '--boot-delay', '0.2'] + list(extra),
                                     stdout=self.logf, stderr=subprocess.STDOUT, cwd=ROOT)
        ports = os.path.join(self.dir, 'ports.json')
        if not wait_for(lambda: os.path.exists(ports) or self.proc.poll() is not None, 60):
            raise RuntimeError('simulator did not start')
        if self.proc.poll() is not None:
            raise RuntimeError('simulator exited: see ' + self.logf.name)
        with open(ports) as f:
            self.ports = json.load(f)
        self.kubeconfig = os.path.join(self.dir, 'kubeconfig')
        self.control = 'http://%s:%d' % (self.ports.get('host', '127.0.0.1'), self.ports['control'])

    def kubectl(self, *args, stdin=None, ok=True, kubeconfig=None):
        r = subprocess.run([KUBECTL, '--kubeconfig', kubeconfig or self.kubeconfig,
                            '--request-timeout=20s'] + list(args),
                           input=stdin.encode() if stdin else None, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60,
                           env=dict(os.environ, HOME=self.dir,
                                    KUBECACHEDIR=os.path.join(self.dir, 'kcache')))
        if ok and r.returncode != 0:
            raise RuntimeError('kubectl %s: %s%s' % (' '.join(args), r.stdout.decode(),
                                                     r.stderr.decode()))
        return r.stdout.decode()

    def apply(self, obj):
        return self.kubectl('apply', '--validate=false', '-f', '-', stdin=json.dumps(obj))

    def ctl(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.control + path, data=data, method=method,
                                     headers={'Content-Type': 'application/json'})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def expected_dump(self):
        """What kube-dump must print, from kubectl (one `kubectl get` of every kind)."""
        kinds = {'Pod': 'pods', 'Node': 'nodes', 'NodePool': 'nodepools',
                 'EC2NodeClass': 'ec2nodeclasses', 'NodeClaim': 'nodeclaims',
                 'PodDisruptionBudget': 'poddisruptionbudgets', 'DaemonSet': 'daemonsets'}
        namespaced = {key: ns for _, key, ns in RESOURCES}
        out = {key: [] for _, key, _ in RESOURCES}
        items = json.loads(self.kubectl('get', ','.join(r for r, _, _ in RESOURCES), '-A',
                                        '-o', 'json'))['items']
        for it in items:
            key = kinds[it['kind']]
            m = it['metadata']
            out[key].append('%s/%s' % (m['namespace'], m['name']) if namespaced[key] else m['name'])
        return {k: sorted(v) for k, v in out.items()}

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Follower:
    """`nodewarden kube-dump --follow --metrics`; collects the JSON lines it prints."""

    def __init__(self, kubeconfig, *extra):
        self.errf = tempfile.NamedTemporaryFile(prefix='nw-e2e-follow-', suffix='.log', delete=False)
        # short back-off steps (100 ms..2 s instead of 800 ms..30 s): the retries are
        # the same, the test waits less for them
        self.proc = subprocess.Popen([NW_BIN, 'kube-dump', '--kubeconfig', kubeconfig, '--follow',
                                      '--metrics', '--backoff', '100', '--backoff-max', '2000']
                                     + list(extra),
                                     stdout=subprocess.PIPE, stderr=self.errf)
        self.lines = []
        self.lock = threading.Lock()
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self):
        for line in self.proc.stdout:
            with self.lock:
                self.lines.append(json.loads(line))

    def last(self):
        with self.lock:
            return self.lines[-1] if self.lines else None

    def converges_to(self, want, timeout=30.0):
        return wait_for(lambda: self.last() == want, timeout, 0.2)

    def stop(self):
        """SIGTERM; returns (exit code, stderr text)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.t.join(5)
        self.errf.close()
        with open(self.errf.name) as f:
            err = f.read()
        os.unlink(self.errf.name)
        return self.proc.returncode, err


def metric(text, name, resource):
    """Value of a nodewarden_kube_* series with resource=... (first match), or 0."""
    for line in text.splitlines():
        if line.startswith(name + '{') and ('resource="%s"' % resource) in line:
            return int(line.rsplit(' ', 1)[1])
    return 0


def main(run):
    if not os.path.exists(SIM_PY):
        log('FAIL the cluster simulator %s is missing' % SIM_PY)
        sys.exit(1)
    try:
        run()
    except Exception as e:  # a crash is a failure with its reason
        import traceback
        traceback.print_exc()
        FAILED.append('exception: %r' % e)
    if FAILED:
        log('%d check(s) failed: %s' % (len(FAILED), '; '.join(FAILED)))
        sys.exit(1)
    log('all checks passed')
