"""Releases for the kubelet tier: this tree's, and a tagged one built from its commit.

    current(tmp, nw_bin, log)      # this machine's architecture, from build/nodewarden
    previous(log)                  # the release before this one: (tag, directory), cached
    pause(tmp)                     # the pause image (tests/kubelet/pause.c)

Each is a directory as `make release` writes it (tools/release/build), for this machine's
architecture only: nodewarden-<version>-oci.tar, nodewarden-<version>.tgz (the chart,
stamped with the index digest), crds/, image.json.

The previous release is the newest release whose version is not VERSION, from the
clone's v* tags on HEAD's history and from tools/release/tags, which records every
release's tag and commit for clones made without tags (NW_UPGRADE_FROM names another). It is built the way tools/release/build
builds a release, from the tag's own tree (git archive): the compile with the same
flags, SOURCE_DATE_EPOCH the commit's time, its own tools/release/image.py and
chart.py, `helm package` and the repack; only the second architecture and the checks
of tools/release/verify are left out. The result is kept in
~/.cache/nodewarden/old-releases/<commit>-<arch> (NW_OLD_RELEASE_CACHE), so only the
first run on a machine compiles it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# the smoke job's epoch (tests/release/smoke): the same packages' layer, cached once
EPOCH = 1700000000

sys.path.insert(0, HERE)
import node as node_mod  # noqa: E402  (tests/kubelet/node.py)


class ReleaseError(RuntimeError):
    pass


def run(*argv, **kw):
    p = subprocess.run(list(argv), capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise ReleaseError("%s: exit %d: %s%s" % (" ".join(argv), p.returncode, p.stdout[-2000:],
                                                  p.stderr[-2000:]))
    return p.stdout


def host_arch():
    return run("dpkg", "--print-architecture").strip()


def helm_bin():
    d = os.environ.get("NW_K8S_BIN") or run(os.path.join(ROOT, "tests", "k8s", "build"), "--print-bin").strip()
    return os.path.join(d, "helm")


def layer_cache():
    return os.environ.get("NW_LAYER_CACHE", os.path.expanduser("~/.cache/nodewarden/release-layers"))


def current(tmp, nw_bin, log=lambda *a: None):
    """This architecture's release from nw_bin, as tools/release/build makes it."""
    out = os.path.join(tmp, "release")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    rev = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    binary = os.path.join(tmp, "nodewarden")
    run("strip", "-o", binary, nw_bin)
    digest = run("python3", os.path.join(ROOT, "tools", "release", "image.py"), "build", "--out", out,
                 "--version", version, "--revision", rev or "unknown", "--epoch", str(EPOCH),
                 "--layer-cache", layer_cache(), "%s=%s" % (host_arch(), binary)).strip()
    chart = os.path.join(tmp, "chart", "nodewarden")
    src = os.path.join(ROOT, "manifests", "chart", "nodewarden")
    run("python3", os.path.join(ROOT, "tools", "release", "chart.py"), "stamp", src, chart, "--version", version,
        "--digest", digest)
    run(helm_bin(), "package", chart, "-d", out)
    shutil.copytree(os.path.join(src, "crds"), os.path.join(out, "crds"))
    log("release %s: linux/%s image index %s, chart nodewarden-%s.tgz (%s)"
        % (version, host_arch(), digest, version, out))
    return out


def pause(tmp):
    binary = os.path.join(tmp, "pause")
    run("cc", "-static", "-O2", "-o", binary, os.path.join(HERE, "pause.c"))
    archive = os.path.join(tmp, "pause-oci.tar")
    run("python3", os.path.join(ROOT, "tools", "release", "image.py"), "pause", "--arch", host_arch(),
        "--binary", binary, "--name", node_mod.PAUSE_IMAGE, "--out", archive)
    return archive


def _git(*args):
    return run("git", "-C", ROOT, *args).strip()


def recorded_tags():
    """[(tag, commit)] from tools/release/tags, the releases made so far in the order written."""
    path = os.path.join(ROOT, "tools", "release", "tags")
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2 or not parts[0].startswith("v") or len(parts[1]) != 40:
                raise ReleaseError("%s:%d: want `v<version> <40-hex commit>`, got %r" % (path, n, line))
            out.append((parts[0], parts[1]))
    return out


def _version_key(tag):
    return [(1, int(x), "") if x.isdigit() else (0, 0, x) for x in tag[1:].replace("-", ".").split(".")]


def previous_tag():
    """(tag, commit) of the release before VERSION: NW_UPGRADE_FROM, or the newest release
    whose version is not VERSION's, from the clone's v* tags on HEAD's history and from
    tools/release/tags (a clone without tags still has that file)."""
    recorded = dict(recorded_tags())
    want = os.environ.get("NW_UPGRADE_FROM")
    version = open(os.path.join(ROOT, "VERSION")).read().strip()
    tags = {}
    for tag in _git("tag", "--merged", "HEAD", "--list", "v*").split():
        tags[tag] = _git("rev-parse", "--verify", "%s^{commit}" % tag)
        if tag in recorded and recorded[tag] != tags[tag]:
            raise ReleaseError("the tag %s names %s but tools/release/tags says %s"
                               % (tag, tags[tag][:12], recorded[tag][:12]))
    for tag, commit in recorded.items():
        tags.setdefault(tag, commit)
    if want:
        if want in tags:
            return want, tags[want]
        try:
            return want, _git("rev-parse", "--verify", "%s^{commit}" % want)
        except ReleaseError:
            raise ReleaseError("NW_UPGRADE_FROM=%s is neither a tag in this clone nor in tools/release/tags" % want)
    for tag in sorted(tags, key=_version_key, reverse=True):
        if tag != "v" + version:
            return tag, tags[tag]
    raise ReleaseError("no release other than v%s among this clone's tags and tools/release/tags: the upgrade "
                       "test installs the previous release; name one with NW_UPGRADE_FROM" % version)


def previous(log=lambda *a: None):
    """(tag, release directory) of the previous release, built once per commit."""
    tag, commit = previous_tag()
    try:
        _git("cat-file", "-e", "%s^{commit}" % commit)
    except ReleaseError:
        raise ReleaseError("the commit %s of release %s is not in this clone (a shallow clone lacks it: "
                           "`git fetch --unshallow`)" % (commit[:12], tag))
    arch = host_arch()
    cache = os.environ.get("NW_OLD_RELEASE_CACHE", os.path.expanduser("~/.cache/nodewarden/old-releases"))
    dest = os.path.join(cache, "%s-%s" % (commit, arch))
    if os.path.isfile(os.path.join(dest, "image.json")):
        log("previous release %s (%s): cached in %s" % (tag, commit[:12], dest))
        return tag, dest
    os.makedirs(cache, exist_ok=True)
    for name in os.listdir(cache):   # what a killed build left (a build takes minutes, not hours)
        old = os.path.join(cache, name)
        if name.startswith("build-") and time.time() - os.path.getmtime(old) > 3 * 3600:
            shutil.rmtree(old, ignore_errors=True)
    work = tempfile.mkdtemp(prefix="build-%s-" % commit[:12], dir=cache)
    try:
        _build_tagged(commit, arch, work, log)
        try:
            os.rename(os.path.join(work, "out"), dest)
        except OSError:
            if not os.path.isfile(os.path.join(dest, "image.json")):   # not another run's, just made
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("previous release %s (%s) built into %s" % (tag, commit[:12], dest))
    return tag, dest


def _build_tagged(commit, arch, work, log):
    """tools/release/build's steps, for one architecture, on the tree of commit."""
    src = os.path.join(work, "src")
    os.makedirs(src)
    archive = subprocess.Popen(["git", "-C", ROOT, "archive", commit], stdout=subprocess.PIPE)
    run("tar", "-x", "-C", src, stdin=archive.stdout)
    if archive.wait() != 0:
        raise ReleaseError("git archive %s failed" % commit)
    version = open(os.path.join(src, "VERSION")).read().strip()
    rev = commit[:12]
    epoch = _git("log", "-1", "--format=%ct", commit)
    env = dict(os.environ, SOURCE_DATE_EPOCH=epoch)
    os.makedirs(os.path.join(src, "build"), exist_ok=True)
    open(os.path.join(src, "build", ".deps-ok"), "w").close()   # make deps ran for this tree
    build = os.path.join(work, "build")
    log("previous release %s: compiling commit %s (once; cached after)" % (version, rev))
    run("make", "-C", src, "--no-print-directory", "-j2", "BUILD=" + build, "CC=cc",
        "CFLAGS=-O2 -g -ffile-prefix-map=%s=." % src, "VERSION=" + version, "GIT_REV=" + rev,
        "CHECK_CFLAGS=", "CHECK_LIBS=", os.path.join(build, "nodewarden"), env=env)
    binary = os.path.join(work, "nodewarden")
    run("strip", "-o", binary, os.path.join(build, "nodewarden"))
    out = os.path.join(work, "out")
    image_py = os.path.join(src, "tools", "release", "image.py")
    extra = ["--layer-cache", layer_cache()] if "--layer-cache" in run("python3", image_py, "build", "--help") else []
    digest = run("python3", image_py, "build", "--out", out, "--version", version, "--revision", commit,
                 "--epoch", epoch, *extra, "%s=%s" % (arch, binary), env=env).strip()
    chart = os.path.join(work, "chart", "nodewarden")
    chart_py = os.path.join(src, "tools", "release", "chart.py")
    run("python3", chart_py, "stamp", os.path.join(src, "manifests", "chart", "nodewarden"), chart,
        "--version", version, "--digest", digest)
    run(helm_bin(), "package", chart, "-d", os.path.join(work, "pkg"))
    pkg = os.path.join(work, "pkg", "nodewarden-%s.tgz" % version)
    run("python3", chart_py, "repack", pkg, "--epoch", epoch)
    shutil.copy(pkg, out)
    shutil.copytree(os.path.join(src, "manifests", "chart", "nodewarden", "crds"), os.path.join(out, "crds"))
    with open(os.path.join(out, "image.json")) as f:
        meta = json.load(f)
    if meta.get("version") != version or meta.get("index_digest") != digest:
        raise ReleaseError("the previous release's image.json says %s %s, not %s %s"
                           % (meta.get("version"), meta.get("index_digest"), version, digest))


if __name__ == "__main__":
    # `python3 tests/kubelet/releases.py previous`: build (or find) the previous release
    # and print its directory; make test runs it before its jobs, so the first run's
    # compile is not part of kubelet/t_upgrade's time
    if sys.argv[1:] != ["previous"]:
        sys.exit("usage: %s previous" % sys.argv[0])
    try:
        print(previous(lambda *a: print(*a, file=sys.stderr))[1])
    except ReleaseError as e:
        sys.exit("tests/kubelet/releases.py: %s" % e)
