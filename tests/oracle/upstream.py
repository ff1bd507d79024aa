"""Karpenter's own CRDs, fetched through the Go module proxy into an ignored cache.

    from tests.oracle import upstream
    paths = upstream.crd_paths()      # {'karpenter.sh_nodepools.yaml': '/.../build/cache/...', ...}

The version is KARPENTER_VERSION in tests/k8s/versions, the one file of pinned versions
(a file without it is an UpstreamError naming the file and the key). The module is
fetched the way tests/k8s fetches it: tests/k8s/karpenter-crds (`go mod download`
through the module proxy into the Go module cache, with its own error when the proxy
is unreachable) prints its pkg/apis/crds/. The three CRDs nodewarden serves are copied
from there into build/cache/karpenter-<version>/crds/ ($NW_CACHE overrides
build/cache), so later runs need neither go nor the network. Nothing here is committed.
"""
import os
import shutil
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = 'github.com/aws/karpenter-provider-aws'
VERSIONS = os.path.join(ROOT, 'tests', 'k8s', 'versions')
FETCH = os.path.join(ROOT, 'tests', 'k8s', 'karpenter-crds')


class UpstreamError(RuntimeError):
    pass


def pinned(path=VERSIONS):
    """KARPENTER_VERSION from tests/k8s/versions; an UpstreamError when it is not there."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise UpstreamError('%s: cannot read the pinned versions: %s' % (path, e.strerror))
    for line in lines:
        if line.startswith('KARPENTER_VERSION='):
            v = line.split('=', 1)[1].strip()
            if not v.startswith('v') or len(v) < 2:
                raise UpstreamError('%s: KARPENTER_VERSION=%r is not a module version (vX.Y.Z)'
                                    % (path, v))
            return v
    raise UpstreamError('%s: no KARPENTER_VERSION= line (the version of %s whose CRDs are '
                        'the oracle)' % (path, MODULE))


VERSION = pinned()
NAMES = ('karpenter.sh_nodepools.yaml', 'karpenter.sh_nodeclaims.yaml',
         'karpenter.k8s.aws_ec2nodeclasses.yaml')


def cache_dir():
    base = os.environ.get('NW_CACHE') or os.path.join(ROOT, 'build', 'cache')
    return os.path.join(base, 'karpenter-%s' % VERSION, 'crds')


def module_crd_dir():
    """pkg/apis/crds/ of the module in the Go module cache, downloaded if missing, by
    tests/k8s/karpenter-crds (which reads the same tests/k8s/versions)."""
    r = subprocess.run([FETCH], capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise UpstreamError('tests/k8s/karpenter-crds (%s@%s) failed: %s'
                            % (MODULE, VERSION, r.stderr.strip() or 'exit %d' % r.returncode))
    return r.stdout.strip()


def fetch():
    """Copy the three CRDs nodewarden serves out of the module (the module also has
    NodeOverlay and CapacityBuffer CRDs, which the oracle does not install)."""
    src = module_crd_dir()
    dst = cache_dir()
    os.makedirs(dst, exist_ok=True)
    for n in NAMES:
        tmpf = os.path.join(dst, n + '.tmp')
        shutil.copyfile(os.path.join(src, n), tmpf)
        os.chmod(tmpf, 0o644)
        os.replace(tmpf, os.path.join(dst, n))


def crd_paths():
    d = cache_dir()
    if not all(os.path.isfile(os.path.join(d, n)) for n in NAMES):
        fetch()
    return {n: os.path.join(d, n) for n in NAMES}
