"""Test harness for the simulator's own tests: an in-process cluster (store, API
server, admission, controllers, control API) or the sim.py process, and a small
Kubernetes REST client."""
import base64
import http.client
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import admission as admission_mod  # noqa: E402
import certs  # noqa: E402
import control as control_mod  # noqa: E402
import controllers as controllers_mod  # noqa: E402
import kube  # noqa: E402
import sim  # noqa: E402
from store import KubeStore  # noqa: E402

# the pinned kubectl the Makefile puts first on PATH (tests/k8s/build)
KUBECTL = os.environ.get("NW_KUBECTL") or shutil.which("kubectl") or "kubectl"
_CERTS = {}


def server_certs():
    """One CA + apiserver certificate per test process."""
    if not _CERTS:
        d = tempfile.mkdtemp(prefix='simcerts-')
        ca, key = certs.make_ca(d)
        crt, k = certs.make_leaf(d, ca, key, dns=['localhost'], ips=['127.0.0.1'], prefix='apiserver')
        cca, ckey = certs.make_ca(d, 'sim-client-ca', prefix='client-ca')
        ccrt, ck = certs.make_leaf(d, cca, ckey, prefix='client-admin', cn='admin', usage='clientAuth')
        _CERTS.update(dir=d, ca=ca, crt=crt, key=k, client_ca=cca, client_crt=ccrt, client_key=ck)
    return _CERTS


def wait_for(fn, timeout=10.0, interval=0.05, what='condition'):
    end = time.time() + timeout
    last = None
    while time.time() < end:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError('timed out waiting for %s (last: %r)' % (what, last))


class Client:
    def __init__(self, host, port, token, ca_file):
        self.host, self.port, self.token = host, port, token
        self.ctx = ssl.create_default_context(cafile=ca_file)

    def conn(self, timeout=30):
        return http.client.HTTPSConnection(self.host, self.port, context=self.ctx, timeout=timeout)

    def request(self, method, path, body=None, ctype='application/json', token=None, headers=None):
        c = self.conn()
        h = {'Accept': 'application/json'}
        if token is not False:
            h['Authorization'] = 'Bearer %s' % (token or self.token)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            h['Content-Type'] = ctype
        h.update(headers or {})
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        raw = r.read()
        c.close()
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = raw.decode(errors='replace')
        return r.status, r, obj

    def get(self, path):
        return self.request('GET', path)

    def post(self, path, body):
        return self.request('POST', path, body)

    def put(self, path, body):
        return self.request('PUT', path, body)

    def patch(self, path, body, ctype='application/merge-patch+json'):
        return self.request('PATCH', path, body, ctype)

    def delete(self, path, body=None):
        return self.request('DELETE', path, body)

    def watch(self, path, timeout=30):
        """Returns (response, iterator of events). The iterator ends when the stream ends."""
        c = self.conn(timeout=timeout)
        c.request('GET', path, headers={'Authorization': 'Bearer %s' % self.token, 'Accept': 'application/json'})
        r = c.getresponse()

        def events():
            try:
                while True:
                    line = r.readline()
                    if not line:
                        return
                    if line.strip():
                        yield json.loads(line)
            except (http.client.IncompleteRead, ConnectionError, ssl.SSLError, OSError):
                return
            finally:
                c.close()
        return r, events()


class Cluster:
    """In-process simulator: store + HTTPS API + admission + controllers + control API."""

    def __init__(self, history=1000, bookmark_interval=60.0, pod_termination=0.2, services=None):
        cs = server_certs()
        self.token = 'test-token-' + base64.b16encode(os.urandom(6)).decode().lower()
        self.store = KubeStore(history=history)
        sim.bootstrap(self.store)
        self.store.on_reset.append(sim.bootstrap)
        self.admission = admission_mod.Admission(self.store, services)
        self.api = kube.KubeApi(self.store, {self.token: 'admin'}, admission=self.admission,
                                bookmark_interval=bookmark_interval)
        self.api.serve('127.0.0.1', 0, cs['crt'], cs['key'], client_ca=cs['client_ca'])
        self.controllers = controllers_mod.Controllers(self.store, self.admission, interval=0.02,
                                                       pod_termination_seconds=pod_termination)
        self.controllers.start()
        self.control = control_mod.Control()
        control_mod.register_kube(self.control, self.store, self.api, self.admission, self.controllers)
        self.control.serve('127.0.0.1', 0)
        self.port = self.api.address[1]
        self.client = Client('127.0.0.1', self.port, self.token, cs['ca'])
        self.ca = cs['ca']

    def control_call(self, method, path, body=None):
        req = urllib.request.Request('http://127.0.0.1:%d%s' % (self.control.address[1], path),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     method=method, headers={'Content-Type': 'application/json'})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.load(r)

    def kubeconfig(self, path):
        with open(self.ca, 'rb') as f:
            ca = base64.b64encode(f.read()).decode()
        with open(path, 'w') as f:
            json.dump({'apiVersion': 'v1', 'kind': 'Config', 'current-context': 't',
                       'clusters': [{'name': 't', 'cluster': {'server': 'https://127.0.0.1:%d' % self.port,
                                                               'certificate-authority-data': ca}}],
                       'users': [{'name': 't', 'user': {'token': self.token}}],
                       'contexts': [{'name': 't', 'context': {'cluster': 't', 'user': 't', 'namespace': 'default'}}]}, f)
        return path

    def add_node(self, name, cpu='4', memory='16Gi', pods='110', labels=None, taints=None, ready=True):
        node = {'metadata': {'name': name, 'labels': dict({'kubernetes.io/hostname': name}, **(labels or {}))},
                'spec': {'providerID': 'aws:///us-west-2a/i-%s' % name, 'taints': taints or []},
                'status': {'capacity': {'cpu': cpu, 'memory': memory, 'pods': pods},
                           'allocatable': {'cpu': cpu, 'memory': memory, 'pods': pods},
                           'conditions': [{'type': 'Ready', 'status': 'True' if ready else 'False',
                                           'reason': 'KubeletReady'}],
                           'addresses': [{'type': 'InternalIP', 'address': '10.0.0.%d' % (len(name) % 250 + 2)}]}}
        return self.store.create('nodes', None, node)

    def close(self):
        self.controllers.stop()
        self.api.shutdown()
        self.control.shutdown()


def pod(name, cpu='100m', memory='64Mi', labels=None, **spec):
    p = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': name, 'labels': labels or {}},
         'spec': dict({'containers': [{'name': 'c', 'image': 'busybox:1.36',
                                       'resources': {'requests': {'cpu': cpu, 'memory': memory}}}]}, **spec)}
    return p


class SimProcess:
    """tests/sim/sim.py in a child process on free ports."""

    def __init__(self, directory, *extra):
        self.dir = directory
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, 'sim.py'), '--dir', directory,
                                      '--webhook-listen', '127.0.0.1:0'] + list(extra),
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        ports = os.path.join(directory, 'ports.json')
        wait_for(lambda: os.path.exists(ports) or self.proc.poll() is not None, 30, what='sim ports.json')
        if self.proc.poll() is not None:
            raise AssertionError('sim.py exited: %s' % self.proc.stdout.read().decode(errors='replace'))
        with open(ports) as f:
            self.ports = json.load(f)
        with open(os.path.join(directory, 'token')) as f:
            self.token = f.read().strip()
        self.client = Client('127.0.0.1', self.ports['kube'], self.token, os.path.join(directory, 'ca.crt'))

    def stop(self):
        try:
            return self._stop()
        finally:
            self.proc.stdout.close()

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                return None
        return self.proc.returncode
