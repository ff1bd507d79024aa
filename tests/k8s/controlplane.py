"""A real Kubernetes control plane for tests: etcd, kube-apiserver, and optionally
kube-controller-manager and kube-scheduler, at the versions pinned in
tests/k8s/versions (binaries from tests/k8s/build, i.e. `make k8s-bins`).
Python standard library only; certificates and keys are made with the openssl CLI.

    import sys; sys.path.insert(0, "tests/k8s")
    from controlplane import ControlPlane

    cp = ControlPlane(dir, components=("etcd", "apiserver", "kcm", "scheduler"),
                      extra_apiserver_args=["--enable-aggregator-routing=true"])
    cp.start()                  # returns when every component is healthy (a few s)
    cp.kubeconfig               # admin kubeconfig (client cert in group system:masters)
    cp.kubectl("get", "ns")     # CompletedProcess; raises KubectlError unless check=False
    cp.stop()                   # SIGTERM, then SIGKILL after 1 s: no process is left

    with ControlPlane(dir) as cp: ...   # start() and stop()

Constructor arguments (all keywords but dir):
  dir                   working directory (created); everything is written there:
                        pki/, etcd/ (data), logs/<component>.log, *.kubeconfig
  components            a subset of ("etcd", "apiserver", "kcm", "scheduler"), in that
                        order; "apiserver" needs "etcd", "kcm"/"scheduler" need "apiserver"
  bin_dir               where the binaries are: default $NW_K8S_BIN, else the
                        directory `tests/k8s/build --print-bin` names
  bind_address          the API server's --bind-address (default 127.0.0.1)
  advertise_address     the API server's --advertise-address (default: bind_address,
                        or 127.0.0.1 when that is 0.0.0.0); put in the serving cert
  extra_sans            more subject alternative names for the serving cert
                        ("DNS:x" / "IP:a.b.c.d", or plain names / addresses)
  service_cidr          --service-cluster-ip-range (default 10.96.0.0/16)
  extra_apiserver_args, extra_kcm_args, extra_scheduler_args, extra_etcd_args
                        appended to the command lines (a later flag wins)
  kcm_controllers       --controllers for kube-controller-manager (default KCM_CONTROLLERS)
  timeout               seconds each component may take to become healthy (default 90)
  etcd_proxy            None, or a callable (host, port) -> an object with .url and .close():
                        kube-apiserver reaches etcd at that url (tests/cluster/faults.py
                        DelayProxy: etcd slowed); closed by stop()

After start():
  server                https://<advertise or 127.0.0.1>:<port>  (url clients use)
  port, etcd_url        the API server's secure port; etcd's client url
  kubeconfig            admin kubeconfig path; ca_file, ca_key (the cluster CA)
  env()                 os.environ + KUBECONFIG and PATH with the pinned binaries first
  kubectl(*args, input=None, check=True, kubeconfig=None, timeout=60)
  create_token(namespace, serviceaccount, duration="1h") -> str (TokenRequest)
  token_kubeconfig(path, token)        writes a kubeconfig authenticating with a token
  issue_cert(name, cn, sans=(), orgs=(), client=False) -> (crt, key) signed by the CA,
                        with a random serial; safe to call from several threads at once
  cert_kubeconfig(name) a kubeconfig for the certificate issue_cert(name, ...) made
  pids()                {component: pid} of the running processes
  restart_apiserver(down=0.0, grace=5.0)  stop kube-apiserver (SIGTERM, SIGKILL after
                        grace s), wait `down` s, start it again with the same flags and
                        port; returns the seconds it was away; restarts lists (start, ready)

What runs: etcd serves plain HTTP on loopback only (--unsafe-no-fsync: test data).
The API server has RBAC and Node authorization (--authorization-mode=Node,RBAC), the
default admission plugins plus NodeRestriction, MutatingAdmissionWebhook and
ValidatingAdmissionWebhook, service-account tokens signed with an EC P-256 key pair,
client-certificate auth against the CA, and a front-proxy (requestheader) CA so that
aggregated APIs work. It reaches kubelets (logs, exec) at their InternalIP with a client
certificate in system:masters, verifying their serving certificates against the CA. kube-controller-manager runs KCM_CONTROLLERS and signs
service-account tokens for each controller (--use-service-account-credentials).
Its node-lifecycle-controller marks nodes whose heartbeats stop NotReady/Unknown and
taints them as upstream does, but taint-eviction-controller is NOT run: a node agent
that misses a heartbeat on this loaded machine never gets pods evicted behind a
test's back (a test that wants NoExecute eviction adds it through kcm_controllers).
Leader election is off for kcm and the scheduler (one replica each).

stop() is also registered with atexit, runs on SIGTERM when the caller has no
SIGTERM handler of its own (it then exits with 143), and each component gets
PR_SET_PDEATHSIG=SIGKILL, so it dies with the thread that started it even if the
test process is killed with SIGKILL (start() from the thread that lives longest).
"""
import atexit
import ctypes
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

COMPONENTS = ("etcd", "apiserver", "kcm", "scheduler")
BINARIES = {"etcd": "etcd", "apiserver": "kube-apiserver",
            "kcm": "kube-controller-manager", "scheduler": "kube-scheduler"}

# kube-controller-manager's controllers (names from k8s.io/kubernetes
# cmd/kube-controller-manager/names/controller_names.go). Not run: taint-eviction
# (see above), node-ipam (no pod CIDRs), volumes, CSR signing, jobs/cronjobs/HPA/
# statefulsets, bootstrap tokens.
KCM_CONTROLLERS = (
    "namespace-controller", "garbage-collector-controller",
    "serviceaccount-controller", "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller", "clusterrole-aggregation-controller",
    "deployment-controller", "replicaset-controller", "daemonset-controller",
    "disruption-controller", "endpoints-controller", "endpointslice-controller",
    "endpointslice-mirroring-controller", "node-lifecycle-controller",
    "pod-garbage-collector-controller", "resourcequota-controller",
    "service-cidr-controller",
    # binds PersistentVolumes and claims (provisioning itself is a CSI external-provisioner's
    # job, which no test runs: a story stands in for it by creating the PV)
    "persistentvolume-binder-controller",
    # DRA: makes a pod's ResourceClaims from its ResourceClaimTemplates (and deletes them
    # with the pod), so kube-scheduler can allocate them (tests/cluster/t_real_dra)
    "resourceclaim-controller",
)

ADMISSION_PLUGINS = "NodeRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook"


class _Background:
    """fn() on a thread of its own; join() waits for it and raises what it raised."""

    def __init__(self, fn):
        self._error = None

        def run():
            try:
                fn()
            except BaseException as e:  # handed to join()
                self._error = e
        self._t = threading.Thread(target=run, daemon=True)
        self._t.start()

    def join(self, raise_error=True):
        self._t.join()
        if self._error is not None and raise_error:
            raise self._error


class ControlPlaneError(RuntimeError):
    pass


class KubectlError(RuntimeError):
    def __init__(self, args, proc):
        self.proc = proc
        super().__init__("kubectl %s: exit %d: %s%s" % (
            " ".join(args), proc.returncode, proc.stdout, proc.stderr))


def default_bin_dir():
    d = os.environ.get("NW_K8S_BIN")
    if d:
        return d
    r = subprocess.run([os.path.join(HERE, "build"), "--print-bin"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise ControlPlaneError("tests/k8s/build --print-bin failed: " + r.stderr)
    return r.stdout.strip()


def free_port(host="127.0.0.1"):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _pdeathsig():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _san(s):
    if s.startswith(("DNS:", "IP:")):
        return s
    try:
        socket.inet_pton(socket.AF_INET6 if ":" in s else socket.AF_INET, s)
        return "IP:" + s
    except OSError:
        return "DNS:" + s


class ControlPlane:
    def __init__(self, dir, components=COMPONENTS, bin_dir=None, bind_address="127.0.0.1",
                 advertise_address=None, extra_sans=(), service_cidr="10.96.0.0/16",
                 extra_apiserver_args=(), extra_kcm_args=(), extra_scheduler_args=(),
                 extra_etcd_args=(), kcm_controllers=KCM_CONTROLLERS, timeout=90,
                 etcd_proxy=None):
        unknown = [c for c in components if c not in COMPONENTS]
        if unknown:
            raise ValueError("components: unknown %s (known: %s)" % (unknown, COMPONENTS))
        for c, needs in (("apiserver", "etcd"), ("kcm", "apiserver"), ("scheduler", "apiserver")):
            if c in components and needs not in components:
                raise ValueError("components: %s needs %s" % (c, needs))
        self.dir = os.path.abspath(dir)
        self.components = tuple(c for c in COMPONENTS if c in components)
        self.bin_dir = bin_dir or default_bin_dir()
        self.bind_address = bind_address
        self.advertise_address = advertise_address or (
            "127.0.0.1" if bind_address in ("0.0.0.0", "::") else bind_address)
        self.extra_sans = tuple(extra_sans)
        self.service_cidr = service_cidr
        self.extra = {"etcd": list(extra_etcd_args), "apiserver": list(extra_apiserver_args),
                      "kcm": list(extra_kcm_args), "scheduler": list(extra_scheduler_args)}
        self.kcm_controllers = tuple(kcm_controllers)
        self.timeout = timeout
        self.etcd_proxy_factory = etcd_proxy
        self.etcd_proxy = None
        self.restarts = []
        self.pki = os.path.join(self.dir, "pki")
        self.logs = os.path.join(self.dir, "logs")
        self.kubeconfig = os.path.join(self.dir, "admin.kubeconfig")
        self.ca_file = os.path.join(self.pki, "ca.crt")
        self.ca_key = os.path.join(self.pki, "ca.key")
        self.procs = {}
        self.port = None
        self.server = None
        self.etcd_url = None
        self.startup_seconds = None
        self._lock = threading.Lock()
        self._stopped = False

    # ---- lifecycle ---------------------------------------------------------------
    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        missing = [BINARIES[c] for c in self.components
                   if not os.access(os.path.join(self.bin_dir, BINARIES[c]), os.X_OK)]
        if missing:
            raise ControlPlaneError("%s not built in %s: run `make k8s-bins` (tests/k8s/build)"
                                    % (", ".join(missing), self.bin_dir))
        t0 = time.monotonic()
        os.makedirs(self.pki, exist_ok=True)
        os.makedirs(self.logs, exist_ok=True)
        atexit.register(self.stop)
        self._install_sigterm()
        # the certificates (a dozen openssl runs) are made while etcd starts: neither needs
        # the other, and each took a second or two of every start
        pki = _Background(self._make_pki) if "apiserver" in self.components else None
        try:
            self._start_etcd()
            if self.etcd_proxy_factory is not None:
                port = int(self.etcd_url.rsplit(":", 1)[1])
                self.etcd_proxy = self.etcd_proxy_factory("127.0.0.1", port)
            if pki is not None:
                pki.join()
                self._start_apiserver()
            waiters = []
            for c in ("kcm", "scheduler"):
                if c in self.components:
                    waiters.append(getattr(self, "_start_" + c)())
            for w in waiters:
                w()
            if "kcm" in self.components:
                # the serviceaccount controller at work: pods can be created
                self._wait("kcm", lambda: self.kubectl(
                    "get", "serviceaccount", "default", "-n", "default",
                    check=False, timeout=10).returncode == 0, "default ServiceAccount")
        except BaseException:
            if pki is not None:
                pki.join(raise_error=False)
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    # how long stop() lets the components end on SIGTERM before SIGKILL: the controllers
    # and etcd end within a fraction of a second, kube-apiserver's graceful shutdown takes
    # about 10 s (it drains its requests for nobody: the cluster is being thrown away), which
    # every story of the real tier paid at its end
    STOP_GRACE = 1.0

    def stop(self):
        with self._lock:
            procs = [(c, self.procs[c]) for c in reversed(COMPONENTS) if c in self.procs]
            self.procs = {}
        for _, p in procs:
            if p.poll() is None:
                try:
                    p.terminate()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + self.STOP_GRACE
        for _, p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for _, p in procs:
            if p.stdout:
                p.stdout.close()
        if self.etcd_proxy is not None:
            self.etcd_proxy.close()
            self.etcd_proxy = None

    def pids(self):
        return {c: p.pid for c, p in self.procs.items() if p.poll() is None}

    def _install_sigterm(self):
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
            return

        def on_term(signum, frame):
            self.stop()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            raise SystemExit(128 + signum)
        signal.signal(signal.SIGTERM, on_term)

    # ---- helpers -----------------------------------------------------------------
    def env(self):
        e = dict(os.environ)
        e["KUBECONFIG"] = self.kubeconfig
        e["PATH"] = self.bin_dir + os.pathsep + e.get("PATH", "/usr/bin:/bin")
        return e

    def kubectl(self, *args, input=None, check=True, kubeconfig=None, timeout=60):
        cmd = [os.path.join(self.bin_dir, "kubectl"), "--kubeconfig",
               kubeconfig or self.kubeconfig] + list(args)
        p = subprocess.run(cmd, input=input, capture_output=True, text=True,
                           timeout=timeout, env=self.env())
        if check and p.returncode != 0:
            raise KubectlError(args, p)
        return p

    def create_token(self, namespace, serviceaccount, duration="1h"):
        return self.kubectl("create", "token", serviceaccount, "-n", namespace,
                            "--duration", duration).stdout.strip()

    def token_kubeconfig(self, path, token):
        self._write_kubeconfig(path, "user", ["    token: " + token])
        return path

    def _openssl(self, *args, input=None):
        p = subprocess.run(["openssl"] + list(args), input=input, capture_output=True,
                           text=True, cwd=self.pki)
        if p.returncode != 0:
            raise ControlPlaneError("openssl %s: %s" % (" ".join(args), p.stderr))
        return p.stdout

    def _eckey(self, path):
        self._openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                      "-out", path)

    def issue_cert(self, name, cn, sans=(), orgs=(), client=False, ca=None):
        """A certificate and key pki/<name>.{crt,key} signed by the cluster CA (or
        ca=(crt, key)); server auth unless client=True. Returns (crt, key) paths."""
        ca_crt, ca_key = ca or (self.ca_file, self.ca_key)
        crt, key = (os.path.join(self.pki, name + ext) for ext in (".crt", ".key"))
        self._eckey(key)
        subj = "".join("/O=" + o for o in orgs) + "/CN=" + cn
        csr = self._openssl("req", "-new", "-key", key, "-subj", subj)
        ext = ["basicConstraints=critical,CA:FALSE",
               "keyUsage=critical,digitalSignature,keyEncipherment",
               "extendedKeyUsage=" + ("clientAuth" if client else "serverAuth,clientAuth")]
        if sans:
            ext.append("subjectAltName=" + ",".join(_san(s) for s in sans))
        extfile = os.path.join(self.pki, name + ".ext")
        with open(extfile, "w") as f:
            f.write("\n".join(ext) + "\n")
        # a random 127-bit serial per certificate: no serial file (-CAcreateserial) that
        # concurrent signings (several node agents) would read and rewrite at once
        self._openssl("x509", "-req", "-CA", ca_crt, "-CAkey", ca_key,
                      "-set_serial", str(secrets.randbits(127) | 1 << 126),
                      "-days", "30", "-sha256", "-extfile", extfile, "-out", crt, input=csr)
        return crt, key

    def _make_ca(self, name, cn):
        crt, key = (os.path.join(self.pki, name + ext) for ext in (".crt", ".key"))
        self._eckey(key)
        self._openssl("req", "-x509", "-new", "-key", key, "-subj", "/CN=" + cn, "-days", "30",
                      "-sha256", "-addext", "basicConstraints=critical,CA:TRUE",
                      "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
                      "-out", crt)
        return crt, key

    def _make_pki(self):
        self._make_ca("ca", "nodewarden-test-ca")
        # the kubernetes Service's ClusterIP: the first address of each service range
        # (IPv4, IPv6, or a dual-stack pair "a,b")
        first_service_ips = [str(ipaddress.ip_network(c.strip(), strict=False)[1])
                             for c in self.service_cidr.split(",")]
        sans = ["127.0.0.1", "localhost", self.advertise_address] + first_service_ips + [
                "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                "kubernetes.default.svc.cluster.local"] + list(self.extra_sans)
        if self.bind_address not in ("0.0.0.0", "::"):
            sans.append(self.bind_address)
        self.issue_cert("apiserver", "kube-apiserver", sans=list(dict.fromkeys(sans)))
        self.issue_cert("admin", "nodewarden-test-admin", orgs=["system:masters"], client=True)
        self.issue_cert("kcm", "system:kube-controller-manager", client=True)
        self.issue_cert("scheduler", "system:kube-scheduler", client=True)
        # what kube-apiserver presents to a kubelet (logs, exec, port-forward), as kubeadm's
        # apiserver-kubelet-client; only a real kubelet (tests/kubelet) ever asks for it
        self.issue_cert("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                        orgs=["system:masters"], client=True)
        fp = self._make_ca("front-proxy-ca", "front-proxy-ca")
        self.issue_cert("front-proxy-client", "front-proxy-client", client=True, ca=fp)
        self._eckey("sa.key")
        self._openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub")

    def _write_kubeconfig(self, path, user, user_lines):
        with open(path, "w") as f:
            f.write("\n".join([
                "apiVersion: v1", "kind: Config",
                "clusters:", "- name: nodewarden-test", "  cluster:",
                "    server: " + self.server,
                "    certificate-authority: " + self.ca_file,
                "users:", "- name: " + user, "  user:"] + user_lines + [
                "contexts:", "- name: default", "  context:",
                "    cluster: nodewarden-test", "    user: " + user,
                "current-context: default", ""]))

    def cert_kubeconfig(self, name):
        """A kubeconfig <dir>/<name>.kubeconfig for the certificate pki/<name>.crt/.key
        (from issue_cert)."""
        return self._cert_kubeconfig(name)

    def _cert_kubeconfig(self, name):
        path = os.path.join(self.dir, name + ".kubeconfig")
        self._write_kubeconfig(path, name, [
            "    client-certificate: " + os.path.join(self.pki, name + ".crt"),
            "    client-key: " + os.path.join(self.pki, name + ".key")])
        return path

    # ---- processes ---------------------------------------------------------------
    def _spawn(self, comp, args):
        log = open(os.path.join(self.logs, comp + ".log"), "ab")
        cmd = [os.path.join(self.bin_dir, BINARIES[comp])] + args + self.extra[comp]
        log.write(("+ %s\n" % " ".join(cmd)).encode())
        log.flush()
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                             cwd=self.dir, preexec_fn=_pdeathsig)
        log.close()
        with self._lock:
            self.procs[comp] = p
        return p

    def log_tail(self, comp, n=30):
        try:
            with open(os.path.join(self.logs, comp + ".log"), errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def _wait(self, comp, ok, what):
        deadline = time.monotonic() + self.timeout
        while True:
            p = self.procs.get(comp)
            if p is None or p.poll() is not None:
                raise ControlPlaneError("%s exited (%s) before %s; its log (%s):\n%s" % (
                    BINARIES[comp], None if p is None else p.returncode, what,
                    os.path.join(self.logs, comp + ".log"), self.log_tail(comp)))
            try:
                if ok():
                    return
            except (OSError, subprocess.SubprocessError):
                pass
            if time.monotonic() > deadline:
                raise ControlPlaneError("%s: no %s after %d s; its log (%s):\n%s" % (
                    BINARIES[comp], what, self.timeout, os.path.join(self.logs, comp + ".log"),
                    self.log_tail(comp)))
            time.sleep(0.1)

    def _get(self, url, client=True):
        ctx = ssl.create_default_context(cafile=self.ca_file) if url.startswith("https") else None
        if ctx is not None:
            ctx.check_hostname = False  # kcm/scheduler serve the apiserver cert on 127.0.0.1
            if client:
                ctx.load_cert_chain(os.path.join(self.pki, "admin.crt"),
                                    os.path.join(self.pki, "admin.key"))
        try:
            with urllib.request.urlopen(url, timeout=5, context=ctx) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def _start_with_ports(self, comp, start, ready, what, nports=1):
        """Start with fresh free ports; retry twice if a port was taken meanwhile."""
        for attempt in range(3):
            ports = [free_port() for _ in range(nports)]
            start(*ports)
            try:
                self._wait(comp, ready, what)
                return
            except ControlPlaneError:
                if attempt < 2 and "address already in use" in self.log_tail(comp, 60):
                    self.procs.pop(comp).wait()
                    continue
                raise

    def _start_etcd(self):
        data = os.path.join(self.dir, "etcd")

        def start(cport, pport):
            self.etcd_url = "http://127.0.0.1:%d" % cport
            peer = "http://127.0.0.1:%d" % pport
            shutil.rmtree(data, ignore_errors=True)
            self._spawn("etcd", [
                "--name", "default", "--data-dir", data,
                "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "default=" + peer, "--initial-cluster-state", "new",
                "--unsafe-no-fsync", "--log-level", "warn"])
        self._start_with_ports("etcd", start,
                               lambda: '"health":"true"' in self._get(self.etcd_url + "/health")[1],
                               "healthy /health", nports=2)

    def _start_apiserver(self):
        pki = self.pki.rstrip("/") + "/"

        def start(port):
            self.port = port
            host = self.advertise_address
            self.server = "https://%s:%d" % ("[%s]" % host if ":" in host else host, port)
            for n in ("admin", "kcm", "scheduler"):
                self._cert_kubeconfig(n)
            self._apiserver_args = [
                "--etcd-servers", self.etcd_proxy.url if self.etcd_proxy else self.etcd_url,
                "--bind-address", self.bind_address, "--secure-port", str(port),
                "--advertise-address", self.advertise_address,
                "--tls-cert-file", pki + "apiserver.crt", "--tls-private-key-file", pki + "apiserver.key",
                "--client-ca-file", pki + "ca.crt",
                "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
                "--service-account-key-file", pki + "sa.pub",
                "--service-account-signing-key-file", pki + "sa.key",
                "--service-cluster-ip-range", self.service_cidr,
                "--authorization-mode", "Node,RBAC",
                "--enable-admission-plugins", ADMISSION_PLUGINS,
                "--allow-privileged=true",
                "--requestheader-client-ca-file", pki + "front-proxy-ca.crt",
                "--requestheader-allowed-names", "front-proxy-client",
                "--requestheader-username-headers", "X-Remote-User",
                "--requestheader-group-headers", "X-Remote-Group",
                "--requestheader-extra-headers-prefix", "X-Remote-Extra-",
                "--proxy-client-cert-file", pki + "front-proxy-client.crt",
                "--proxy-client-key-file", pki + "front-proxy-client.key",
                "--kubelet-client-certificate", pki + "apiserver-kubelet-client.crt",
                "--kubelet-client-key", pki + "apiserver-kubelet-client.key",
                "--kubelet-certificate-authority", pki + "ca.crt",
                # a kubelet's node name is no DNS name here: its InternalIP first
                "--kubelet-preferred-address-types", "InternalIP,Hostname",
                "--profiling=false", "--v=1"]
            self._spawn("apiserver", self._apiserver_args)
        self._start_with_ports("apiserver", start, self._apiserver_ready, "ok /readyz")

    def _apiserver_ready(self):
        return self._get(
            "https://127.0.0.1:%d/readyz" % self.port if self.bind_address in ("0.0.0.0", "::")
            else self.server + "/readyz")[0] == 200

    def restart_apiserver(self, down=0.0, grace=5.0):
        """Stop kube-apiserver (SIGTERM, as a rollout does; SIGKILL after `grace` s: its
        graceful shutdown waits for long-running requests), keep it down `down` seconds,
        start it again with the same flags and port and wait for /readyz. Returns the
        seconds it was unavailable; self.restarts gets (wall-clock start, ready)."""
        t0, w0 = time.monotonic(), time.time()
        with self._lock:
            p = self.procs.get("apiserver")
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if p is not None and p.stdout:
            p.stdout.close()
        time.sleep(down)
        self._spawn("apiserver", self._apiserver_args)
        self._wait("apiserver", self._apiserver_ready, "ok /readyz after a restart")
        self.restarts.append((w0, time.time()))
        return time.monotonic() - t0

    def _common_args(self, name, port):
        kc = os.path.join(self.dir, name + ".kubeconfig")
        return ["--kubeconfig", kc, "--authentication-kubeconfig", kc,
                "--authorization-kubeconfig", kc, "--bind-address", "127.0.0.1",
                "--secure-port", str(port), "--leader-elect=false",
                "--tls-cert-file", os.path.join(self.pki, "apiserver.crt"),
                "--tls-private-key-file", os.path.join(self.pki, "apiserver.key"), "--v=1"]

    def _start_kcm(self):
        port = free_port()
        self._spawn("kcm", self._common_args("kcm", port) + [
            "--service-account-private-key-file", os.path.join(self.pki, "sa.key"),
            "--root-ca-file", self.ca_file, "--use-service-account-credentials=true",
            "--service-cluster-ip-range", self.service_cidr,
            "--controllers", ",".join(self.kcm_controllers)])
        return lambda: self._wait("kcm", lambda: self._get(
            "https://127.0.0.1:%d/healthz" % port, client=False)[0] == 200, "ok /healthz")

    def _start_scheduler(self):
        port = free_port()
        self._spawn("scheduler", self._common_args("scheduler", port))
        return lambda: self._wait("scheduler", lambda: self._get(
            "https://127.0.0.1:%d/readyz" % port, client=False)[0] == 200, "ok /readyz")
