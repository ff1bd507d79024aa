"""nodewarden's webhook server on its own, for the webhook end-to-end tests
(tests/e2e/t_webhook_tls*, t_gpu_webhook).

Starts `$NW_BIN serve` on a free port (listen port 0; the port is read from the
"listening" log line) with certificates made by certs/gen-dev-certs.sh in a temporary
directory, and talks to it over real TLS, verifying the server certificate against the
generated CA and the service name.
"""
import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time

from .core import NW_BIN, ROOT, fail, log
from .metrics import Metrics

SERVICE = "nodewarden"
NAMESPACE = "nodewarden"
HOST = f"{SERVICE}.{NAMESPACE}.svc"


def gen_certs(d, force=False):
    env = dict(os.environ, NW_SERVICE=SERVICE, NW_NAMESPACE=NAMESPACE)
    args = [os.path.join(ROOT, "certs", "gen-dev-certs.sh"), d]
    if force:
        args.append("--force")
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL)


class Server:
    def __init__(self, certdir, *flags, workdir=None):
        self.workdir = workdir or tempfile.mkdtemp(prefix="nw-e2e-")
        self.certdir = certdir
        self.cafile = os.path.join(certdir, "ca.crt")
        self.logpath = os.path.join(self.workdir, "serve.log")
        self.logf = open(self.logpath, "w")
        cmd = [NW_BIN, "serve", "--listen", "127.0.0.1:0", "--metrics.listen", "127.0.0.1:0",
               "--tls-cert", os.path.join(certdir, "tls.crt"),
               "--tls-key", os.path.join(certdir, "tls.key"), *flags]
        log("start:", " ".join(cmd))
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=self.logf)
        self.port = self.metrics_port = None
        deadline = time.time() + 15
        while time.time() < deadline and self.port is None:
            if self.proc.poll() is not None:
                fail("server exited early: " + self.log_text())
            for ev in self.events():
                if ev.get("msg") == "listening":
                    self.port = ev["port"]
                if ev.get("msg") == "metrics listening":
                    self.metrics_port = ev["port"]
            time.sleep(0.05)
        if self.port is None:
            self.proc.kill()
            self.proc.wait()
            fail("server did not start listening: " + self.log_text())

    def log_text(self):
        with open(self.logpath) as f:
            return f.read()

    def events(self):
        out = []
        for line in self.log_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out

    def ctx(self, cafile=None):
        c = ssl.create_default_context(cafile=cafile or self.cafile)
        return c

    def connect(self, cafile=None, timeout=10):
        """A raw TLS socket to the server, verified for HOST."""
        raw = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return self.ctx(cafile).wrap_socket(raw, server_hostname=HOST)

    def conn(self, cafile=None, timeout=10):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout,
                                        context=self.ctx(cafile))
        c._tunnel_host = None
        # verify the service name, not 127.0.0.1
        c.host = HOST
        c._create_connection = lambda addr, timeout=None, source_address=None: \
            socket.create_connection(("127.0.0.1", self.port), timeout)
        return c

    def request(self, method, path, body=None, headers=None, conn=None):
        c = conn or self.conn()
        h = {"Content-Type": "application/json"}
        if headers is not None:
            h = headers
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        if conn is None:
            c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def curl(self, *args, path="/healthz", cafile=None, host=HOST):
        cmd = ["curl", "-sS", "--max-time", "20", "--cacert", cafile or self.cafile,
               "--resolve", f"{host}:{self.port}:127.0.0.1", *args,
               "-o", "-", "-w", "\n%{http_code}", f"https://{host}:{self.port}{path}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        body, _, code = p.stdout.rpartition("\n")
        return p.returncode, int(code or 0), body, p.stderr

    def metrics(self):
        """GET /metrics on the metrics port (plain HTTP, metrics.listen)."""
        c = http.client.HTTPConnection("127.0.0.1", self.metrics_port, timeout=10)
        c.request("GET", "/metrics")
        r = c.getresponse()
        data = r.read()
        c.close()
        if r.status != 200:
            fail("GET /metrics: %d" % r.status)
        return Metrics(data.decode())

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            fail("server did not exit after SIGTERM")
        self.logf.close()
        if rc != 0:  # what the server said last, for the failure that follows
            log("server exit status %d; its log's last lines:" % rc)
            for line in self.log_text().splitlines()[-15:]:
                log("  " + line)
        return rc


def review(kind="Pod", group="", version="v1", uid="e2e-1", op="CREATE", obj=None, old=None,
           name="x", api="admission.k8s.io/v1", extra=None):
    req = {"uid": uid, "kind": {"group": group, "version": version, "kind": kind},
           "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
           "name": name, "operation": op,
           "object": obj if obj is not None else {"metadata": {"name": name}},
           "oldObject": old, "dryRun": False}
    if extra:
        req.update(extra)
    return json.dumps({"apiVersion": api, "kind": "AdmissionReview", "request": req})


def response_of(body):
    j = json.loads(body)
    if j.get("apiVersion") != "admission.k8s.io/v1" or j.get("kind") != "AdmissionReview":
        fail("not an AdmissionReview v1: %r" % body[:300])
    return j["response"]


def decode_patch(resp):
    return json.loads(base64.b64decode(resp["patch"], validate=True))


def has_nodepool_handler():
    """The validation helper's NodePool handlers are registered once
    api/nodepool.h exists (the agreed signal)."""
    return os.path.exists(os.path.join(ROOT, "api", "nodepool.h"))


def cleanup(*dirs):
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
