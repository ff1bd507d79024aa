"""The one `check`, `wait_for` and `main` of the end-to-end tests.

check(cond, what)   logs "ok   what" or "FAIL what"; a failed check is recorded and the
                    story goes on (later checks still report); it returns cond.
fail(what)          records the failure and stops the story (raises Failure).
wait_for(predicate, timeout, what)
                    calls predicate until it returns a true value, which it returns; on
                    timeout it fails the story with "timed out after N s waiting for
                    <what> (last value: ...)".
main(story)         runs story() (or story(cluster) with cluster=...), catches any
                    exception as a failure, prints every failed check and exits 0 only
                    when nothing failed.
"""
import os
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NW_BIN = os.environ.get("NW_BIN", os.path.join(ROOT, "build", "nodewarden"))

FAILED = []


class Failure(AssertionError):
    """A story cannot go on (fail(), a wait_for that timed out, a command that failed)."""


def log(*a):
    print(*a, flush=True)


def check(cond, what):
    log(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILED.append(what)
    return cond


def fail(what):
    log("FAIL " + what)
    FAILED.append(what)
    raise Failure(what)


def wait_for(predicate, timeout, what, interval=0.2):
    deadline = time.monotonic() + timeout
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() >= deadline:
            shown = repr(last)
            fail("timed out after %g s waiting for %s (last value: %s)"
                 % (timeout, what, shown if len(shown) < 300 else shown[:300] + "..."))
        time.sleep(interval)


def main(story, cluster=None):
    """Run one story and exit. cluster=None: story(); cluster={...} (options of
    harness.cluster.new, {} for the defaults): story(c) on a fresh cluster that is
    closed afterwards (its files kept when the story failed or NW_E2E_KEEP is set)."""
    t0 = time.time()
    c = None
    try:
        if cluster is None:
            story()
        else:
            from . import cluster as clusters
            c = clusters.new(**cluster)
            story(c)
    except Failure as e:
        # fail() recorded and logged it; a Failure raised directly (harness.Unsupported:
        # the backend cannot do what the story asked) must fail the story too
        if str(e) not in FAILED:
            log("FAIL " + str(e))
            FAILED.append(str(e))
    except Exception as e:  # a crash is a failure with its reason
        traceback.print_exc()
        FAILED.append("exception: %r" % e)
    finally:
        if c is not None:
            try:
                c.close(keep=bool(FAILED))
            except Exception as e:
                traceback.print_exc()
                FAILED.append("closing the cluster: %r" % e)
    dt = time.time() - t0
    if FAILED:
        log("FAIL: %d check(s) failed (%.1f s):" % (len(FAILED), dt))
        for f in FAILED:
            log("  - " + f)
        sys.exit(1)
    log("PASS (%.1f s)" % dt)
    sys.exit(0)
