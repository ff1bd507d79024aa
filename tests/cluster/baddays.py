"""What the bad-day stories of the real tier (t_real_apiserver_restart, t_real_api_faults)
check after each fault: nothing lost (every pod bound and Running), nothing written
twice (one NodeClaim per needed node, one instance per NodeClaim, no instance without a
NodeClaim), and nodewarden resumed by itself (the same process all along)."""
import json
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import backend  # noqa: E402,F401  (registers the "real" backend)
import harness.disrupt as dl  # noqa: E402
from harness import check, log, tag, wait_for  # noqa: E402
from rest import ApiError  # noqa: E402

# tests/data/disrupt/pools.yaml's `drift`: m6i.large only, so one 1500m pod a node, and
# consolidation off (consolidateAfter: Never). With consolidation on, a drain that a PDB
# holds for longer than the 10 s nomination window loses its pre-spun node to emptiness
# and gets a second one (docs/robustness.md: found by these stories, not fixed here); the
# stories are about the API server, so they keep that out of the count.
POOL = "drift"
CPU = "1500m"


def quiet(fn, default=None):
    """fn() or default while the API server is away (the admin connection fails)."""
    try:
        return fn()
    except (OSError, ApiError, ValueError):
        return default


def pods(c, app):
    code, pl = c.real.admin.request("GET", "/api/v1/namespaces/default/pods?labelSelector=app%3D" + app)
    if code != 200:
        raise ApiError(code, str(pl))
    return pl.get("items", [])


def running(c, app, n):
    """The nodes of n Running pods of app (no more, none deleting), else None. Read
    through the admin connection: kubectl failing while the API server restarts would
    fail the story."""
    def get():
        ps = [p for p in pods(c, app) if not p["metadata"].get("deletionTimestamp")]
        up = [p for p in ps if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
        return {p["spec"]["nodeName"] for p in up} if len(up) == n == len(ps) else None
    return quiet(get)


def scale(c, app, n):
    wait_for(lambda: quiet(lambda: c.real.admin.merge(
        "/apis/apps/v1/namespaces/default/deployments/" + app, {"spec": {"replicas": n}}) or True),
        60, "%s scaled to %d" % (app, n), interval=0.5)


def nodeclaims(c):
    """Every NodeClaim, or None while the API server is away."""
    return quiet(lambda: c.real.admin.get("/apis/karpenter.sh/v1/nodeclaims")["items"])


def instances_by_claim(c):
    """{NodeClaim name: [instance ids]} over every instance ever launched (terminated too)."""
    out = {}
    for i in c.instances(live=False):
        out.setdefault(tag(i, "karpenter.sh/nodeclaim"), []).append(i["InstanceId"])
    return out


def pool_claim_names(c):
    """The names of the pool's NodeClaims, or None while the API server is away."""
    ncs = nodeclaims(c)
    return None if ncs is None else {nc["metadata"]["name"] for nc in ncs
                                     if nc["metadata"].get("labels", {}).get("karpenter.sh/nodepool") == POOL}


def account(c, what, expect_claims):
    """After a fault: every NodeClaim ever launched for the pool (from the simulator's
    instances: each carries its NodeClaim's name) numbers expect_claims, one instance
    each; every live instance belongs to a NodeClaim."""
    by = instances_by_claim(c)
    pool = {n: v for n, v in by.items() if n and n.startswith(POOL + "-")}
    twice = {n: v for n, v in pool.items() if len(v) > 1}
    check(not twice, "%s: one instance per NodeClaim (twice: %s)" % (what, twice))
    check(len(pool) == expect_claims, "%s: exactly %d NodeClaims launched for %d needed nodes (%s)"
          % (what, len(pool), expect_claims, sorted(pool)))
    ncs = wait_for(lambda: (lambda n: None if n is None else (n,))(nodeclaims(c)), 60, "the NodeClaims")[0]
    owned = {nc.get("status", {}).get("providerID", "").rsplit("/", 1)[-1] for nc in ncs}
    live = {i["InstanceId"] for i in c.instances()}
    check(live <= owned, "%s: every running instance belongs to a NodeClaim (orphans: %s)"
          % (what, sorted(live - owned)))
    return pool


def same_nodewarden(c, pid):
    check(c.nw is not None and c.nw.poll() is None and c.nw.pid == pid,
          "nodewarden resumed by itself: the same process (pid %d) all along" % pid)


class PdbGuard:
    """Polls app's ready pods every 0.2 s (through the admin connection, ignoring the
    moments the API server is away) and keeps the fewest seen while armed."""

    def __init__(self, c, app):
        self.c, self.app = c, app
        self.fewest = None
        self.samples = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.wait(0.2):
            ps = quiet(lambda: pods(self.c, self.app))
            if ps is None:
                continue
            ready = 0
            for p in ps:
                conds = {x.get("type"): x.get("status") for x in p.get("status", {}).get("conditions", []) or []}
                if conds.get("Ready") == "True" and not p["metadata"].get("deletionTimestamp"):
                    ready += 1
            self.samples += 1
            self.fewest = ready if self.fewest is None else min(self.fewest, ready)

    def stop(self):
        self._stop.set()
        self._t.join(5)


def nwlog_lines(c, needle):
    return [json.loads(line) for line in c.nwlog().splitlines()
            if needle in line and line.startswith("{")]


def elapsed(t0):
    return "%.1f s" % (time.monotonic() - t0)


__all__ = ["quiet", "pods", "nodeclaims", "running", "scale", "account", "same_nodewarden", "PdbGuard", "nwlog_lines",
           "pool_claim_names", "elapsed", "log", "POOL", "CPU", "dl"]
