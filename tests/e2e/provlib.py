"""Harness for the provisioning end-to-end tests (tests/e2e/t_provision*): the
cluster simulator (tests/sim/sim.py) on free ports with a short boot delay, and
`nodewarden serve --config <sim's nodewarden.yaml>` with the scaler enabled and
short batch windows. Kubernetes is driven with the real kubectl against the
simulator; AWS state is read through the simulator's control API.
"""
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

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NW_BIN = os.environ.get("NW_BIN", os.path.join(ROOT, "build", "nodewarden"))
DATA = os.path.join(ROOT, "tests", "data", "provision")


def log(*a):
    print("  ", *a, flush=True)


def fail(msg):
    raise AssertionError(msg)


def check(cond, msg):
    if not cond:
        fail(msg)
    log("ok:", msg)


class Cluster:
    """One simulator and (started on demand) one nodewarden serve."""

    def __init__(self, boot_delay=0.3, sim_args=()):
        self.dir = tempfile.mkdtemp(prefix="nw-e2e-prov-")
        self.simlog = open(os.path.join(self.dir, "sim.log"), "w")
        self.sim = subprocess.Popen(
            [sys.executable, os.path.join(ROOT, "tests", "sim", "sim.py"), "--dir", self.dir,
             "--webhook-listen", "127.0.0.1:0", "--boot-delay", str(boot_delay)] + list(sim_args),
            stdout=self.simlog, stderr=subprocess.STDOUT, cwd=ROOT)
        ports = os.path.join(self.dir, "ports.json")
        deadline = time.time() + 30
        while not os.path.exists(ports):
            if self.sim.poll() is not None or time.time() > deadline:
                fail("simulator did not start:\n" + open(os.path.join(self.dir, "sim.log")).read())
            time.sleep(0.1)
        time.sleep(0.1)
        self.ports = json.load(open(ports))
        self.control = "http://127.0.0.1:%d" % self.ports["control"]
        self.env = dict(os.environ)
        for line in open(os.path.join(self.dir, "env")):
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                k, v = line[7:].split("=", 1)
                self.env[k] = v.strip('"')
        self.env["KUBECONFIG"] = os.path.join(self.dir, "kubeconfig")
        self.nw = None
        self.nwlogs = []

    # ---- nodewarden ----
    def start_nodewarden(self, *flags, env=None, name="nw"):
        path = os.path.join(self.dir, "%s-%d.log" % (name, len(self.nwlogs)))
        self.nwlogs.append(path)
        e = dict(self.env)
        e.update(env or {})
        args = [NW_BIN, "serve", "--config", os.path.join(self.dir, "nodewarden.yaml"),
                "--scaler.enabled", "true",
                "--settings.batchIdleDuration", "300ms", "--settings.batchMaxDuration", "2s",
                "--scaler.leaderElection.leaseDuration", "3s",
                "--scaler.leaderElection.renewDeadline", "2s",
                "--scaler.leaderElection.retryPeriod", "500ms"] + list(flags)
        self.nw = subprocess.Popen(args, stdout=open(path, "w"), stderr=subprocess.STDOUT, env=e,
                                   cwd=ROOT)
        # the webhook must answer before NodePools can be created (fail-closed)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.nw.poll() is not None:
                fail("nodewarden exited early:\n" + open(path).read()[-3000:])
            if '"listening"' in open(path).read():
                return self.nw
            time.sleep(0.1)
        fail("nodewarden did not start listening")

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

    def close(self, ok):
        try:
            self.stop_nodewarden()
        finally:
            self.sim.send_signal(signal.SIGTERM)
            try:
                self.sim.wait(15)
            except subprocess.TimeoutExpired:
                self.sim.kill()
            self.simlog.close()
            if ok and not os.environ.get("NW_E2E_KEEP"):
                shutil.rmtree(self.dir, ignore_errors=True)
            else:
                log("kept", self.dir)
                for p in self.nwlogs:
                    log("---", p)
                    print("".join(l for l in open(p) if '"comp":"webhook"' not in l)[-6000:])

    def metrics(self):
        """nodewarden's /metrics (on the webhook's TLS port) as {'name{labels}': value}."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        url = "https://127.0.0.1:%d/metrics" % self.ports["webhook"]
        with urllib.request.urlopen(url, context=ctx, timeout=10) as r:
            text = r.read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and " " in line:
                k, v = line.rsplit(" ", 1)
                try:
                    out[k] = float(v)
                except ValueError:
                    pass
        return out

    # ---- Kubernetes ----
    def kubectl(self, *args, input=None, check_rc=True):
        r = subprocess.run(["kubectl"] + list(args), env=self.env, input=input,
                           capture_output=True, text=True, timeout=30)
        if check_rc and r.returncode != 0:
            fail("kubectl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    def apply(self, path_or_text):
        if os.path.exists(path_or_text):
            return self.kubectl("apply", "-f", path_or_text)
        return self.kubectl("apply", "-f", "-", input=path_or_text)

    def items(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json"))["items"]

    def get(self, *args):
        return json.loads(self.kubectl("get", *args, "-o", "json"))

    def events(self):
        return self.items("events", "-A")

    # ---- AWS ----
    def ctl(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.control + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            t = r.read()
            return json.loads(t) if t else None

    def instances(self, live=True):
        out = self.ctl("GET", "/aws/instances")["instances"]
        if live:
            out = [i for i in out if i["State"]["Name"] in ("pending", "running")]
        return out

    def simctl(self, *args):
        r = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "sim", "simctl"),
                            "--dir", self.dir] + list(args), capture_output=True, text=True)
        if r.returncode != 0:
            fail("simctl %s: %s" % (" ".join(args), r.stderr))
        return r.stdout


def wait_for(what, fn, timeout=30, interval=0.25):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    fail("timed out waiting for " + what + " (last: %r)" % (last,))


def tag(inst, key):
    for t in inst.get("Tags", []):
        if t["Key"] == key:
            return t["Value"]
    return None


def cond(obj, typ):
    for c in obj.get("status", {}).get("conditions", []):
        if c.get("type") == typ:
            return c.get("status")
    return None


def main(fn, **cluster_args):
    """Run fn(cluster) against a fresh simulator; exit 0/1. cluster_args go to Cluster()."""
    c = Cluster(**cluster_args)
    ok = False
    t0 = time.time()
    try:
        fn(c)
        ok = True
    except AssertionError as e:
        print("FAIL:", e)
    finally:
        c.close(ok)
    print("%s (%.1f s)" % ("PASS" if ok else "FAIL", time.time() - t0))
    sys.exit(0 if ok else 1)
