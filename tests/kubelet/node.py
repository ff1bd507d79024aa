"""A real Kubernetes node for tests: containerd and runc from Debian, the CNI plugins of
containernetworking-plugins, and the kubelet and kube-proxy built at the pinned
Kubernetes version (tests/k8s/build node), joined to a tests/k8s/controlplane.py
control plane. Python standard library only; run as root.

    node = Node(dir, cp, netns=..., node_ip=..., pod_cidr=..., name=...)
    node.start()             # containerd, the kubelet, kube-proxy; returns once the Node is Ready
    node.ctr("images", "import", path)   # ctr -n k8s.io in the node's namespaces
    node.exec_argv(argv)     # argv run in the node's network and mount namespaces
    node.stop()              # everything below removed; leftovers() says what is not

Isolation (docs/testing-kubelet.md). Several runs share this machine with other test
jobs, so a node keeps to what it creates:
- its network: the network namespace `netns` (made by the caller, with a veth to the
  host; the node's address is `node_ip`). The kubelet, containerd, kube-proxy, the
  pods' bridge (cni0), their veths, the kubelet's and kube-proxy's KUBE-* chains and
  the CNI plugins' rules, ip_forward: all in that namespace, gone with it. The host's
  iptables are never touched;
- its files: a mount namespace of its own (held by one `sleep` process, the holder),
  where /run, /var/lib and /var/log are empty tmpfs: /run/containerd (containerd's
  state and sockets, the shims' sockets), /var/lib/containerd (images), /var/lib/kubelet,
  /var/lib/cni (host-local's leases, libcni's cache), /var/log/pods and
  /var/log/containers, the pods' network namespace files in /run/netns and every mount the
  kubelet and containerd make (volumes, root filesystems) exist only there and vanish
  with its last process;
- its cgroups: /<tag> in every cgroup hierarchy (the kubelet's cgroupRoot: kubepods
  and the pods' cgroups below it); the holder is in /<tag>/holder and containerd, the
  kubelet and kube-proxy in /<tag>/node in the pids hierarchy, so the containerd shims
  (which outlive containerd) are found there too;
- the kernel settings a kubelet writes at start (vm.overcommit_memory, vm.panic_on_oom,
  kernel.panic, kernel.panic_on_oops, kernel.keys.root_maxkeys/root_maxbytes) are global:
  they are read before the kubelet starts and written back as soon as it has set them,
  under a lock shared by every run on the machine (SYSCTL_LOCK), with the values kept in
  a file next to it until they are back, so a run that dies in between is undone by the
  next one.

stop() kills every process in /<tag> (containers, shims, containerd, the kubelet,
kube-proxy, the holder), removes the cgroups and puts the kernel settings back; every
process also has PR_SET_PDEATHSIG (it dies with the thread that started it). What a
SIGKILL of the test leaves (the shims and containers, which detach) is removed by the
next Node's sweep: a /<tag> whose holder cgroup is empty belongs to no live run.
"""
import ctypes
import fcntl
import json
import os
import re
import signal
import subprocess
import time

CGROUP_FS = "/sys/fs/cgroup"
PIDS = os.path.join(CGROUP_FS, "pids")
TAG_PREFIX = "nwk-"
SYSCTL_LOCK_DIR = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
SYSCTL_LOCK = os.path.join(SYSCTL_LOCK_DIR, "nodewarden-kubelet.lock")
SYSCTL_SAVED = os.path.join(SYSCTL_LOCK_DIR, "nodewarden-kubelet.sysctls")
# what the kubelet's container manager sets when it starts (protectKernelDefaults false)
KUBELET_SYSCTLS = {"vm/overcommit_memory": 1, "vm/panic_on_oom": 0, "kernel/panic": 10,
                   "kernel/panic_on_oops": 1, "kernel/keys/root_maxkeys": 1000000,
                   "kernel/keys/root_maxbytes": 25000000}
PAUSE_IMAGE = "nodewarden.invalid/pause:test"
CNI_BIN = "/usr/lib/cni"
NS = "k8s.io"


class NodeError(RuntimeError):
    pass


def _pdeathsig():
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def cgroup_mounts():
    """Mount points of the cgroup hierarchies (v1 controllers, name=systemd, unified)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype = right.split()[0]
            mnt = left.split()[4]
            if fstype in ("cgroup", "cgroup2") and mnt.startswith(CGROUP_FS + "/"):
                out.append(mnt)
    return sorted(set(out))


def _read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def tree_pids(top):
    """Every process in the cgroup tree `top` (a directory in one hierarchy)."""
    pids = set()
    for d, _, _ in os.walk(top):
        for line in _read(os.path.join(d, "cgroup.procs")).split():
            pids.add(int(line))
    return pids


def kill_tree(tag, timeout=20):
    """SIGKILL every process in /<tag> of the pids hierarchy until none is left."""
    top = os.path.join(PIDS, tag)
    deadline = time.monotonic() + timeout
    while True:
        pids = tree_pids(top)
        if not pids:
            return True
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def remove_cgroups(tag, timeout=20):
    """rmdir /<tag> and everything below it in every hierarchy (deepest first); a cgroup
    whose last task is still exiting is busy for a moment, so retry."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for mnt in cgroup_mounts():
            top = os.path.join(mnt, tag)
            if not os.path.isdir(top):
                continue
            for d, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
                try:
                    os.rmdir(d)
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(d)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def sweep(log=lambda *a: None):
    """Remove what killed runs left: a /nwk-<pid>-* tree of the pids hierarchy whose
    holder cgroup has no process (the holder dies with its run) and whose <pid> (the
    test that made it) is gone. Both, because the holder joins a moment after the tree
    is made, and a pid says nothing across PID namespaces (tests/fresh/run). The holder
    is counted by pids.current, which counts every task: cgroup.procs, read from another
    PID namespace, leaves out the tasks that namespace cannot see."""
    if not os.path.isdir(PIDS):
        return
    for name in os.listdir(PIDS):
        top = os.path.join(PIDS, name)
        m = re.match(re.escape(TAG_PREFIX) + r"(\d+)-[0-9a-f]+$", name)
        if not m or not os.path.isdir(top):
            continue
        if os.path.exists("/proc/" + m.group(1)) or _read(os.path.join(top, "holder", "pids.current"), "0").strip() != "0":
            continue
        log("sweeping %s, left by a run that is gone" % name)
        kill_tree(name)
        remove_cgroups(name)
    _sysctl_restore_leftover(log)


# ---- the kubelet's kernel settings ----------------------------------------------------

def sysctl_values():
    return {k: _read("/proc/sys/" + k).strip() for k in KUBELET_SYSCTLS}


def _sysctl_put(values):
    for k, v in values.items():
        try:
            _write("/proc/sys/" + k, v)
        except OSError:
            pass


def _sysctl_restore_leftover(log):
    with open(SYSCTL_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            saved = json.loads(_read(SYSCTL_SAVED) or "null")
        except ValueError:
            saved = None
        if saved:
            log("putting back the kernel settings a killed run's kubelet changed: %s" % saved)
            _sysctl_put(saved)
        if os.path.exists(SYSCTL_SAVED):
            os.unlink(SYSCTL_SAVED)


# ---- the node ---------------------------------------------------------------------------

# The node's mount namespace has the root of this process as its own root. On a machine
# that is /, and nothing is done. In a chroot (tests/fresh/run's root) the namespace's
# root is still the machine's /, and entering the namespace (setns: nsenter, and runc
# exec into a container whose namespace is a copy of it) puts a process there, outside
# the chroot: containerd would not find its configuration under the chroot's /tmp, and
# `kubectl exec` would run in the machine's root instead of the container's. So the
# holder, still in the chroot, finds where the chroot is (its root as fd 3, read as a path
# from the namespace's root) and makes it the namespace's root with pivot_root; the
# machine's root, below it, is detached. The chroot is a mount point (tests/fresh/run
# binds it onto itself), as pivot_root needs.
PIVOT_TO_CHROOT = (
    "exec 3</; r=$(nsenter --mount=/proc/self/ns/mnt -- readlink /proc/self/fd/3); exec 3<&-; "
    "if [ \"$r\" != / ]; then nsenter --mount=/proc/self/ns/mnt -- sh -c "
    "'cd \"$0\" && mkdir run/nwk-oldroot && pivot_root . run/nwk-oldroot && "
    "umount -l /run/nwk-oldroot && rmdir /run/nwk-oldroot' \"$r\"; fi; ")


class Node:
    def __init__(self, dir, cp, netns, node_ip, pod_cidr, name, bin_dir, log=None, timeout=120):
        self.dir = os.path.abspath(dir)
        self.cp = cp
        self.netns = netns
        self.node_ip = node_ip
        self.pod_cidr = pod_cidr
        self.name = name
        self.bin_dir = bin_dir
        self.log = log or (lambda *a: print("node:", *a, flush=True))
        self.timeout = timeout
        self.tag = "%s%d-%x" % (TAG_PREFIX, os.getpid(), int(time.time() * 1000) & 0xffffff)
        self.holder = None
        self.procs = {}
        self.logs = os.path.join(self.dir, "logs")
        self.timings = {}

    # ---- lifecycle ---------------------------------------------------------------------
    def start(self):
        for b in ("kubelet", "kube-proxy"):
            if not os.access(os.path.join(self.bin_dir, b), os.X_OK):
                raise NodeError("%s is not built in %s: run `tests/k8s/build node`" % (b, self.bin_dir))
        for b in ("containerd", "ctr", "runc", "containerd-shim-runc-v2", "iptables", "nsenter", "unshare"):
            if not any(os.access(os.path.join(d, b), os.X_OK) for d in ("/usr/bin", "/usr/sbin", "/bin", "/sbin")):
                raise NodeError("%s is not installed (make deps: containerd, runc, iptables)" % b)
        for b in ("bridge", "host-local", "loopback", "portmap"):
            if not os.access(os.path.join(CNI_BIN, b), os.X_OK):
                raise NodeError("the CNI plugin %s is not in %s (make deps: containernetworking-plugins)"
                                % (b, CNI_BIN))
        if os.geteuid() != 0:
            raise NodeError("a kubelet needs root")
        t0 = time.monotonic()
        os.makedirs(self.logs, exist_ok=True)
        sweep(self.log)
        try:
            self._cgroups()
            self._start_holder()
            self._write_configs()
            self._start_containerd()
            self.timings["containerd"] = time.monotonic() - t0
            self._start_kubelet()
            self.timings["kubelet"] = time.monotonic() - t0
            self._start_kube_proxy()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        for comp in ("kube-proxy", "kubelet"):
            p = self.procs.pop(comp, None)
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # containers, shims, containerd and the holder: all in /<tag>; the mounts of the
        # node's mount namespace go with its last process
        kill_tree(self.tag)
        for p in list(self.procs.values()) + ([self.holder] if self.holder else []):
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        self.procs = {}
        self.holder = None
        remove_cgroups(self.tag)
        self._sysctl_done()

    def leftovers(self):
        """What of this node is still on the machine (empty after stop())."""
        left = [os.path.join(m, self.tag) for m in cgroup_mounts() if os.path.exists(os.path.join(m, self.tag))]
        mine = self.dir + "/"
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                cmd = _read("/proc/%s/cmdline" % pid).replace("\0", " ")
                if mine in cmd:
                    left.append("process %s: %s" % (pid, cmd[:200]))
        return left

    # ---- cgroups and the holder -------------------------------------------------------
    def _cgroups(self):
        mounts = cgroup_mounts()
        if PIDS not in mounts:
            raise NodeError("no pids cgroup hierarchy at %s (the tests expect cgroup v1, as this "
                            "machine kind has)" % PIDS)
        for mnt in mounts:
            d = os.path.join(mnt, self.tag)
            os.mkdir(d)
            if mnt.endswith("/cpuset"):
                # a new cpuset has no CPUs or memory nodes until given its parent's
                for f in ("cpuset.cpus", "cpuset.mems"):
                    _write(os.path.join(d, f), _read(os.path.join(mnt, f)).strip())
        for sub in ("holder", "node"):
            os.mkdir(os.path.join(PIDS, self.tag, sub))

    def _join(self, sub):
        procs = os.path.join(PIDS, self.tag, sub, "cgroup.procs")

        def pre():
            _pdeathsig()
            _write(procs, "0")
        return pre

    def _start_holder(self):
        script = ("set -e; for d in /run /var/lib /var/log; do mount -t tmpfs -o mode=0755 nwk $d; done; "
                  + PIVOT_TO_CHROOT +
                  "echo 1 > /proc/sys/net/ipv4/ip_forward; mkdir -p /run/containerd /run/netns /var/lib/kubelet /var/lib/containerd /var/lib/cni "
                  "/var/log/pods /var/log/containers; echo ready; exec sleep infinity")
        self.holder = subprocess.Popen(
            ["nsenter", "--net=/run/netns/" + self.netns, "--", "unshare", "--mount", "--propagation",
             "private", "--", "sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=open(os.path.join(self.logs, "holder.log"), "ab"), preexec_fn=self._join("holder"))
        line = self.holder.stdout.readline()
        if line.strip() != b"ready":
            raise NodeError("the node's mount namespace could not be set up: %s"
                            % _read(os.path.join(self.logs, "holder.log"))[-2000:])

    def exec_argv(self, argv, cwd="/"):
        """argv run in the node's network and mount namespaces, in the directory cwd
        (entering a mount namespace puts a process at its root, so the directory is
        given to nsenter, which resolves it there: --wdns)."""
        return ["nsenter", "--target", str(self.holder.pid), "--mount", "--net", "--wdns=" + cwd,
                "--"] + list(argv)

    def _spawn(self, comp, argv):
        log = open(os.path.join(self.logs, comp + ".log"), "ab")
        log.write(("+ %s\n" % " ".join(argv)).encode())
        log.flush()
        p = subprocess.Popen(self.exec_argv(argv, cwd=self.dir), stdin=subprocess.DEVNULL, stdout=log,
                             stderr=subprocess.STDOUT, preexec_fn=self._join("node"))
        log.close()
        self.procs[comp] = p
        return p

    def log_tail(self, comp, n=40):
        return "".join(_read(os.path.join(self.logs, comp + ".log")).splitlines(True)[-n:])

    def _wait(self, comp, ok, what, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            p = self.procs.get(comp)
            if p is not None and p.poll() is not None:
                raise NodeError("%s exited (%d) before %s; its log (%s):\n%s" % (
                    comp, p.returncode, what, os.path.join(self.logs, comp + ".log"), self.log_tail(comp)))
            try:
                if ok():
                    return
            except (OSError, subprocess.SubprocessError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise NodeError("%s: no %s after %d s; its log (%s):\n%s" % (
                    comp, what, timeout or self.timeout, os.path.join(self.logs, comp + ".log"),
                    self.log_tail(comp)))
            time.sleep(0.3)

    # ---- configuration ------------------------------------------------------------------
    def _write_configs(self):
        d = self.dir
        os.makedirs(os.path.join(d, "cni"), exist_ok=True)
        self.containerd_config = os.path.join(d, "containerd.toml")
        _write(self.containerd_config, CONTAINERD_TOML % {"pause": PAUSE_IMAGE, "cni_bin": CNI_BIN,
                                                          "cni_conf": os.path.join(d, "cni")})
        _write(os.path.join(d, "cni", "10-nodewarden.conflist"), json.dumps({
            "cniVersion": "1.0.0", "name": self.tag, "plugins": [
                {"type": "bridge", "bridge": "cni0", "isGateway": True, "ipMasq": True, "hairpinMode": True,
                 "ipam": {"type": "host-local", "ranges": [[{"subnet": self.pod_cidr}]],
                          "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "portmap", "capabilities": {"portMappings": True}}]}, indent=1))
        # the node's identities: the kubelet's client certificate (system:node:<name> in
        # system:nodes: the Node authorizer and NodeRestriction judge it), its serving
        # certificate (kube-apiserver verifies it for logs and exec), kube-proxy's
        # (system:kube-proxy, bound to system:node-proxier by the API server's bootstrap policy)
        self.cp.issue_cert("node-" + self.name, "system:node:" + self.name, orgs=["system:nodes"], client=True)
        self.kubelet_kubeconfig = self.cp.cert_kubeconfig("node-" + self.name)
        crt, key = self.cp.issue_cert("node-serving-" + self.name, "system:node:" + self.name,
                                      sans=[self.node_ip, self.name], orgs=["system:nodes"])
        self.cp.issue_cert("kube-proxy-" + self.name, "system:kube-proxy", client=True)
        self.proxy_kubeconfig = self.cp.cert_kubeconfig("kube-proxy-" + self.name)
        self.kubelet_config = os.path.join(d, "kubelet.yaml")
        _write(self.kubelet_config, KUBELET_YAML % {
            "cgroup_root": "/" + self.tag, "address": self.node_ip, "crt": crt, "key": key,
            "ca": self.cp.ca_file})
        self.proxy_config = os.path.join(d, "kube-proxy.yaml")
        _write(self.proxy_config, PROXY_YAML % {"kubeconfig": self.proxy_kubeconfig, "name": self.name,
                                                "cidr": self.pod_cidr})

    # ---- the processes ---------------------------------------------------------------------
    def ctr(self, *args, check=True, timeout=120):
        p = subprocess.run(self.exec_argv(["ctr", "-n", NS] + list(args)), capture_output=True, text=True,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise NodeError("ctr %s: exit %d: %s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def _start_containerd(self):
        self._spawn("containerd", ["containerd", "--config", self.containerd_config])
        self._wait("containerd", lambda: self.ctr("version", check=False, timeout=10).returncode == 0,
                   "answer to ctr version")

    def _start_kubelet(self):
        with open(SYSCTL_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            saved = _read(SYSCTL_SAVED)
            if saved.strip():
                _sysctl_put(json.loads(saved))    # a run died with the kubelet's values set
            self._sysctls = sysctl_values()
            _write(SYSCTL_SAVED, json.dumps(self._sysctls))
            try:
                self._spawn("kubelet", [
                    os.path.join(self.bin_dir, "kubelet"), "--config", self.kubelet_config,
                    "--kubeconfig", self.kubelet_kubeconfig, "--hostname-override", self.name,
                    "--node-ip", self.node_ip, "--v=1"])
                want = {k: str(v) for k, v in KUBELET_SYSCTLS.items()}
                self._wait("kubelet", lambda: sysctl_values() == want,
                           "kernel settings of its container manager (%s)" % want)
            finally:
                _sysctl_put(self._sysctls)
                os.unlink(SYSCTL_SAVED)
                self._sysctls = None
        self._wait("kubelet", self._node_ready, "Ready Node %s" % self.name)

    def _sysctl_done(self):
        if getattr(self, "_sysctls", None):
            _sysctl_put(self._sysctls)

    def _node_ready(self):
        p = self.cp.kubectl("get", "node", self.name, "-o", "json", check=False, timeout=10)
        if p.returncode != 0:
            return False
        conds = json.loads(p.stdout).get("status", {}).get("conditions", [])
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)

    def _start_kube_proxy(self):
        self._spawn("kube-proxy", [os.path.join(self.bin_dir, "kube-proxy"), "--config", self.proxy_config,
                                   "--v=1"])

        def healthy():
            out = subprocess.run(self.exec_argv(["iptables-save", "-t", "nat"]), capture_output=True,
                                 text=True, timeout=10).stdout
            return ":KUBE-SERVICES" in out and "default/kubernetes:https" in out
        self._wait("kube-proxy", healthy, "KUBE-SERVICES chain with the kubernetes Service")

    def iptables_nat(self):
        return subprocess.run(self.exec_argv(["iptables-save", "-t", "nat"]), capture_output=True,
                              text=True, timeout=20).stdout


CONTAINERD_TOML = """# containerd for one test node (tests/kubelet/node.py): every path is containerd's
# default, which the node's own mount namespace puts on a tmpfs of its own
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
oom_score = 0
# not needed, and "opt" would create /opt/containerd on the host
disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "/run/containerd/containerd.sock"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%(pause)s"
  # this VM has no CAP_SYS_RESOURCE: a sandbox that lowers its oom_score_adj makes runc
  # fail ("can't get final child's PID")
  restrict_oom_score_adj = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "%(cni_bin)s"
    conf_dir = "%(cni_conf)s"
    max_conf_num = 1
"""

KUBELET_YAML = """# the kubelet of one test node (tests/kubelet/node.py)
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# this machine kind runs cgroup v1, which the kubelet refuses unless told otherwise
failCgroupV1: false
cgroupDriver: cgroupfs
# a cgroup tree of this node's own, made before the kubelet starts
cgroupRoot: %(cgroup_root)s
cgroupsPerQOS: true
containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
address: %(address)s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: %(crt)s
tlsPrivateKeyFile: %(key)s
rotateCertificates: false
serverTLSBootstrap: false
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %(ca)s}
authorization: {mode: Webhook}
registerNode: true
# nodewarden runs on the cluster's fixed nodes, never on those it manages: this node is
# the control-plane node of the install (its label is added by the test; NodeRestriction
# forbids a kubelet to set node-role labels on itself)
registerWithTaints:
  - {key: node-role.kubernetes.io/control-plane, effect: NoSchedule}
failSwapOn: false
# the node's filesystems are tmpfs and the machine is shared: no image garbage
# collection, and eviction only when nearly nothing is left
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
# no cluster DNS runs; the pods need none (the API server and the AWS stand-in are addresses)
resolvConf: ""
maxPods: 16
"""

PROXY_YAML = """# kube-proxy of one test node (tests/kubelet/node.py): iptables mode, in the node's
# network namespace
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %(kubeconfig)s}
hostnameOverride: %(name)s
clusterCIDR: %(cidr)s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# nf_conntrack_max and the conntrack timeouts are global: leave them as they are
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, syncPeriod: 30s, minSyncPeriod: 1s}
"""
