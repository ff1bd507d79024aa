"""The one kubectl wrapper: the binary is $NW_KUBECTL, else `kubectl` on PATH (make test
puts the kubectl built at the pinned Kubernetes version first on PATH)."""
import json
import os
import shutil
import subprocess
import threading

from .core import fail


def binary():
    b = os.environ.get("NW_KUBECTL") or shutil.which("kubectl")
    if not b:
        fail("kubectl not found: set NW_KUBECTL or put kubectl on PATH")
    return b


class Kubectl:
    """kubectl against one kubeconfig, with its own HOME (discovery cache) so parallel
    tests do not share state."""

    def __init__(self, kubeconfig, home, env=None):
        self.kubeconfig = kubeconfig
        self.env = dict(env or os.environ, HOME=home, KUBECONFIG=kubeconfig,
                        KUBECACHEDIR=os.path.join(home, "kcache"))

    def argv(self, *args):
        return [binary(), "--kubeconfig", self.kubeconfig, "--request-timeout=20s"] + list(args)

    def run(self, *args, input=None, ok=True):
        """stdout of `kubectl ARGS`; a non-zero exit fails the story unless ok=False."""
        r = subprocess.run(self.argv(*args), env=self.env, input=input, capture_output=True, text=True,
                           timeout=60)
        if ok and r.returncode != 0:
            fail("kubectl %s: exit %d: %s%s" % (" ".join(args), r.returncode, r.stdout[-500:],
                                                r.stderr[-1500:]))
        return r.stdout

    __call__ = run

    def proc(self, *args, input=None):
        """`kubectl ARGS` as a subprocess.CompletedProcess (text), whatever its exit."""
        return subprocess.run(self.argv(*args), env=self.env, input=input, capture_output=True,
                              text=True, timeout=60)

    def apply(self, what, *flags):
        """what: a dict (one object or a List), a path to a manifest file, or YAML text."""
        if isinstance(what, (dict, list)):
            return self.run("apply", *flags, "-f", "-", input=json.dumps(what))
        if os.path.exists(what):
            return self.run("apply", *flags, "-f", what)
        return self.run("apply", *flags, "-f", "-", input=what)

    def namespace(self, name, ok=True):
        """Create namespace `name` if missing, through `apply` (JSON): since v1.35
        kubectl's typed commands (`kubectl create namespace`) send protobuf, which the
        simulator does not speak."""
        return self.run("apply", "-f", "-", ok=ok, input=json.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))

    def get(self, *args):
        return json.loads(self.run("get", *args, "-o", "json"))

    def items(self, *args):
        return self.get(*args)["items"]

    def events(self):
        return self.items("events", "-A")


class Watch:
    """`kubectl get ARGS -w -o json --output-watch-events` in the background: every
    version of the selected objects is recorded (events: list of (type, object)), so
    stories assert on what happened however slow their own polling is. Subclasses
    override on_event (called under self.lock)."""

    def __init__(self, c, *args):
        """c: a Cluster (or a Kubectl); args: what to get, e.g. "nodes", "-l", "a=b"."""
        kubectl = getattr(c, "kubectl", c)
        self.events = []
        self.lock = threading.Lock()
        self.p = subprocess.Popen(kubectl.argv("get", *args, "-w", "-o", "json",
                                               "--output-watch-events"),
                                  env=kubectl.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def on_event(self, typ, obj):
        pass

    def _run(self):
        dec = json.JSONDecoder()
        buf = ""
        while True:
            chunk = self.p.stdout.read1(65536)
            if not chunk:
                return
            buf += chunk.decode("utf-8", "replace")
            while True:
                buf = buf.lstrip()
                if not buf:
                    break
                try:
                    ev, end = dec.raw_decode(buf)
                except ValueError:
                    break
                buf = buf[end:]
                with self.lock:
                    self.events.append((ev.get("type"), ev.get("object") or {}))
                    self.on_event(ev.get("type"), ev.get("object") or {})

    def versions(self, name=None):
        with self.lock:
            return [o for _, o in self.events
                    if name is None or o.get("metadata", {}).get("name") == name]

    def stop(self):
        self.p.terminate()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.t.join(5)
