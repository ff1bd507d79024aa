"""Karpenter's own CRDs, fetched through the Go module proxy into an ignored cache.

    from tests.oracle import upstream
    paths = upstream.crd_paths()      # {'karpenter.sh_nodepools.yaml': '/.../build/cache/...', ...}

`go mod download -json github.com/aws/karpenter-provider-aws@<version>` puts the module in
the Go module cache (read-only files); <version> is KARPENTER_VERSION in tests/k8s/versions.
The three CRDs nodewarden serves are copied from
its pkg/apis/crds/ into build/cache/karpenter-<version>/crds/ ($NW_CACHE overrides
build/cache), so later runs need neither go nor the network. Nothing here is committed.
"""
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = 'github.com/aws/karpenter-provider-aws'


def _pinned():
    """KARPENTER_VERSION from tests/k8s/versions (the one file of pinned versions)."""
    try:
        with open(os.path.join(ROOT, 'tests', 'k8s', 'versions')) as f:
            for line in f:
                if line.startswith('KARPENTER_VERSION='):
                    return line.split('=', 1)[1].strip()
    except OSError:
        pass
    return 'v1.14.1'


VERSION = _pinned()
NAMES = ('karpenter.sh_nodepools.yaml', 'karpenter.sh_nodeclaims.yaml',
         'karpenter.k8s.aws_ec2nodeclasses.yaml')


def cache_dir():
    base = os.environ.get('NW_CACHE') or os.path.join(ROOT, 'build', 'cache')
    return os.path.join(base, 'karpenter-%s' % VERSION, 'crds')


def _go():
    for c in (shutil.which('go'), '/usr/local/go/bin/go'):
        if c and os.access(c, os.X_OK):
            return c
    raise RuntimeError('go is not installed (needed once to fetch %s@%s through the module '
                       'proxy); see README' % (MODULE, VERSION))


def module_crd_dir():
    """pkg/apis/crds/ of the module in the Go module cache, downloaded if missing:
    tests/k8s/karpenter-crds does it where the pinned toolchain is present."""
    script = os.path.join(ROOT, 'tests', 'k8s', 'karpenter-crds')
    if os.access(script, os.X_OK):
        r = subprocess.run([script], capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError('tests/k8s/karpenter-crds failed: ' + r.stderr.strip())
        return r.stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:   # outside any module: plain download
        r = subprocess.run([_go(), 'mod', 'download', '-json', '%s@%s' % (MODULE, VERSION)],
                           cwd=tmp, capture_output=True, text=True, timeout=600)
    try:
        info = json.loads(r.stdout)
    except ValueError:
        info = {}
    if r.returncode != 0 or info.get('Error') or not info.get('Dir'):
        raise RuntimeError('go mod download %s@%s failed: %s' % (
            MODULE, VERSION, info.get('Error') or r.stderr.strip() or r.stdout.strip()))
    return os.path.join(info['Dir'], 'pkg', 'apis', 'crds')


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
