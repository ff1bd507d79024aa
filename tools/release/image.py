#!/usr/bin/env python3
"""tools/release/image.py — nodewarden's OCI image from Debian's packages, without a daemon.

    image.py build --out DIR --version V --revision SHA --epoch SECONDS ARCH=BINARY...
        resolve the Debian packages of the libraries each BINARY links, fetch them,
        write DIR/layout/ (an OCI image layout: one image index over one image per
        ARCH), DIR/nodewarden-V-oci.tar (that layout as an oci-archive),
        DIR/nodewarden-V-linux-ARCH.spdx.json (the SBOMs) and DIR/image.json (the
        digests, for the release script and the tests)
    image.py rootfs --arch ARCH --binary BINARY --out DIR
        the same two layers as directories DIR/base/ and DIR/app/ (the Dockerfile
        copies them onto `scratch`)
    image.py verify ARCHIVE [--unpack DIR --arch ARCH] [--sbom-dir DIR] [--self-test]
        check an archive: every blob's digest and size, the index, each image's config
        (user, entrypoint), its root (the binary, every library it needs, no shell,
        the CA bundle, the passwd entry) and, with --sbom-dir, that each SBOM lists
        exactly the packages in its image; --unpack extracts one ARCH's root into DIR;
        --self-test: the root checks refuse a root without libssl and one with /bin/sh
    image.py pause --arch ARCH --binary PAUSE --name REF --out ARCHIVE [--epoch SECONDS]
        a pod sandbox ("pause") image for the tests' container runtime (tests/kubelet):
        one layer holding the static PAUSE as /pause, its entrypoint; an oci-archive whose
        one image is named REF for containerd (`ctr images import`), so a kubelet needs
        no registry

What goes into an image (docs/release.md): the packages owning the libraries
the binary loads — the transitive DT_NEEDED closure and the ELF interpreter,
looked up by `dpkg-query -S` among the libraries installed for that architecture,
so the set is what the build linked against — at the version apt's candidate
is, plus ca-certificates (the CA bundle, assembled here as update-ca-certificates
would) and base-files' /etc/os-release and licenses. Documentation other than the
copyright files, manual pages and lintian overrides are left out; so is every
executable of the packages (update-ca-certificates): the image has no shell.
`/var/lib/dpkg/status.d/<package>` holds each package's control record so image
scanners see the versions. Two layers: the packages, then /usr/local/bin/nodewarden.

Everything is deterministic: entries sorted, owner 0:0, mtime the commit time
(SOURCE_DATE_EPOCH), gzip without a name or time; the JSON documents are written
with sorted keys. The same binaries and the same .debs give the same digests.
The .debs are cached in $NW_DEB_CACHE (default ~/.cache/nodewarden/debs), each
checked against the SHA256 of apt's index.
"""
import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import zlib

ARCHES = {
    'amd64': {'triplet': 'x86_64-linux-gnu', 'machine': 'Advanced Micro Devices X86-64', 'variant': None},
    'arm64': {'triplet': 'aarch64-linux-gnu', 'machine': 'AArch64', 'variant': 'v8'},
}
UID = 65532
BINARY_PATH = 'usr/local/bin/nodewarden'
ENTRYPOINT = ['/' + BINARY_PATH]
CMD = ['serve', '--config', '/etc/nodewarden/config.yaml']
PORTS = ['8080/tcp', '8443/tcp']
SOURCE_URL = 'https://github.com/nodewarden/nodewarden'
# what `ctr images import` names the image (the chart's default image.repository)
IMAGE_REPO = 'docker.io/library/nodewarden'
GZIP_LEVEL = 6   # zlib's default, as docker and containerd compress layers
MT_INDEX = 'application/vnd.oci.image.index.v1+json'
MT_MANIFEST = 'application/vnd.oci.image.manifest.v1+json'
MT_CONFIG = 'application/vnd.oci.image.config.v1+json'
MT_LAYER = 'application/vnd.oci.image.layer.v1.tar+gzip'
# the only files base-files contributes (and their directories)
BASE_FILES_KEEP = re.compile(r'^(etc/debian_version|etc/os-release|usr/lib/os-release|'
                             r'usr/share/common-licenses/.*|usr/share/doc/base-files/copyright)$')
DROP = re.compile(r'^usr/share/(man|info|lintian|bug|locale)(/|$)')
SHELLS = {'sh', 'bash', 'dash', 'ash', 'zsh', 'busybox', 'toybox'}


def die(msg):
    raise SystemExit('image.py: ' + msg)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, **kw).stdout


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def canon(obj):
    """The bytes of a JSON document as written here: sorted keys, no spaces."""
    return json.dumps(obj, sort_keys=True, separators=(',', ':')).encode()


def rfc3339(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')


# ---- which packages ------------------------------------------------------------

def elf_info(path):
    """(machine, interpreter or None, [NEEDED sonames]) by readelf, for any architecture."""
    out = run(['readelf', '-h', '-l', '-d', '-W', path]).decode()
    m = re.search(r'Machine:\s+(.*)', out)
    needed = re.findall(r'\(NEEDED\)\s+Shared library: \[([^\]]+)\]', out)
    i = re.search(r'Requesting program interpreter: ([^\]]+)\]', out)
    return (m.group(1).strip() if m else '?'), (i.group(1) if i else None), needed


def lib_closure(binary, arch, root='/'):
    """{soname or interpreter path: path under root} of every library BINARY loads."""
    triplet = ARCHES[arch]['triplet']
    dirs = ['lib/' + triplet, 'usr/lib/' + triplet, 'lib', 'usr/lib']
    machine, interp, todo = elf_info(binary)
    if machine != ARCHES[arch]['machine']:
        die('%s is a %s binary, not %s' % (binary, machine, arch))
    found = {}
    if interp:
        found[interp] = interp.lstrip('/')
    while todo:
        so = todo.pop()
        if so in found:
            continue
        for d in dirs:
            p = os.path.join(root, d, so)
            if os.path.exists(p):
                found[so] = os.path.join(d, so)
                _, _, more = elf_info(p)
                todo.extend(more)
                break
        else:
            die('%s needs %s, which is not installed for %s (in %s)' % (binary, so, arch, ', '.join(dirs)))
    return found


def owning_packages(paths, arch):
    """{package name: [paths]} for host paths (each tried with and without the /usr prefix)."""
    want = {}
    for p in paths:
        p = '/' + p
        alt = p[4:] if p.startswith('/usr/') else '/usr' + p
        want[p] = p
        want[alt] = p
    out = subprocess.run(['dpkg-query', '-S'] + sorted(want), stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, check=False).stdout.decode()
    owners = {}
    for line in out.splitlines():
        if line.startswith('diversion ') or ': ' not in line:
            continue
        pkgs, path = line.rsplit(': ', 1)
        if path not in want:
            continue
        for pkg in pkgs.split(', '):
            name, _, parch = pkg.partition(':')
            if parch and parch != arch:
                continue
            owners.setdefault(want[path], set()).add(name)
    packages = {}
    for p in sorted(set(want.values())):
        if p not in owners:
            die('no installed %s package owns %s (dpkg-query -S)' % (arch, p))
        for name in owners[p]:
            packages.setdefault(name, []).append(p)
    return packages


def apt_records(specs):
    """apt's candidate record (Package, Version, Architecture, Filename, SHA256, ...) of each spec."""
    out = run(['apt-cache', 'show', '--no-all-versions'] + specs, stderr=subprocess.DEVNULL).decode()
    recs = {}
    for stanza in out.strip().split('\n\n'):
        rec = {}
        for line in stanza.splitlines():
            m = re.match(r'^([A-Za-z0-9-]+): ?(.*)$', line)
            if m:
                rec[m.group(1)] = m.group(2)
        if 'Package' in rec:
            key = rec['Package'] if rec['Architecture'] == 'all' else rec['Package'] + ':' + rec['Architecture']
            recs[key] = rec
    missing = [s for s in specs if s not in recs]
    if missing:
        die('apt has no candidate for %s (apt-get update?)' % ' '.join(missing))
    # where apt fetches each from (the archive or its security suite), for the SBOM
    pins = ['%s:%s=%s' % (r['Package'], r['Architecture'], r['Version']) for r in recs.values()]
    out = run(['apt-get', 'download', '--print-uris'] + pins, stderr=subprocess.DEVNULL).decode()
    uris = dict((os.path.basename(f), u) for u, f in re.findall(r"^'([^']+)' (\S+) ", out, re.M))
    for r in recs.values():
        r['URI'] = uris.get(os.path.basename(r['Filename']), 'NOASSERTION')
    return recs


def deb_cache():
    d = os.environ.get('NW_DEB_CACHE') or os.path.join(os.path.expanduser('~'), '.cache', 'nodewarden', 'debs')
    os.makedirs(d, exist_ok=True)
    return d


def fetch(rec):
    """The .deb of an apt record, from the cache or `apt-get download`, checked by SHA256."""
    cache = deb_cache()
    path = os.path.join(cache, os.path.basename(rec['Filename']))
    if os.path.exists(path):
        with open(path, 'rb') as f:
            if sha256(f.read()) == rec['SHA256']:
                return path
        os.unlink(path)
    spec = '%s:%s=%s' % (rec['Package'], rec['Architecture'], rec['Version'])
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        r = subprocess.run(['apt-get', 'download', '-q', spec], cwd=tmp, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, check=False)
        debs = [f for f in os.listdir(tmp) if f.endswith('.deb')]
        if r.returncode != 0 or len(debs) != 1:
            die('apt-get download %s failed:\n%s' % (spec, r.stdout.decode(errors='replace')))
        with open(os.path.join(tmp, debs[0]), 'rb') as f:
            got = sha256(f.read())
        if got != rec['SHA256']:
            die('%s: sha256 %s, apt index says %s' % (debs[0], got, rec['SHA256']))
        os.replace(os.path.join(tmp, debs[0]), path)
    return path


def resolve(binary, arch):
    """The image's packages for BINARY: [(apt record, deb path, why)], sorted by name."""
    libs = lib_closure(binary, arch)
    owners = owning_packages(libs.values(), arch)
    specs = sorted('%s:%s' % (n, arch) for n in owners) + ['ca-certificates', 'base-files:' + arch]
    recs = apt_records(specs)
    result = []
    for spec in specs:
        rec = recs[spec]
        name = rec['Package']
        if name in owners:
            why = 'library: ' + ', '.join(sorted(os.path.basename(p) for p in owners[name]))
            installed = subprocess.run(['dpkg-query', '-W', '-f', '${Version}', spec], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, check=False).stdout.decode()
            if installed != rec['Version']:
                print('image.py: note: %s is installed at %s; the image gets the candidate %s' %
                      (spec, installed, rec['Version']), file=sys.stderr)
        elif name == 'ca-certificates':
            why = 'the CA bundle for TLS to AWS and the API server'
        else:
            why = '/etc/os-release and the license texts only'
        result.append((rec, fetch(rec), why))
    return sorted(result, key=lambda r: r[0]['Package'])


# ---- the root --------------------------------------------------------------------

class Tree:
    """Entries of one layer: path -> (TarInfo, data); deterministic tar output."""

    def __init__(self, epoch):
        self.epoch = epoch
        self.entries = {}

    def _info(self, path, type_, mode, size=0, linkname=''):
        ti = tarfile.TarInfo(path)
        ti.type, ti.mode, ti.size, ti.linkname = type_, mode, size, linkname
        ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = self.epoch, 0, 0, '', ''
        return ti

    def mkdirs(self, path):
        parts = path.split('/')
        for i in range(1, len(parts)):
            d = '/'.join(parts[:i])
            if d not in self.entries:
                self.entries[d] = (self._info(d, tarfile.DIRTYPE, 0o755), None)

    def add(self, path, type_, mode, data=None, linkname='', origin='?'):
        path = path.strip('/')
        self.mkdirs(path)
        old = self.entries.get(path)
        new = (self._info(path, type_, mode, len(data) if data is not None else 0, linkname), data)
        if old:
            same = (old[0].type == type_ and old[1] == data and old[0].linkname == linkname)
            if type_ == tarfile.DIRTYPE and old[0].type == tarfile.DIRTYPE:
                return
            if not same:
                die('%s: %s conflicts with a file already in the image' % (origin, path))
            return
        self.entries[path] = new

    def file(self, path, data, mode=0o644):
        self.add(path, tarfile.REGTYPE, mode, data)

    def tar(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as t:
            for path in sorted(self.entries):
                ti, data = self.entries[path]
                t.addfile(ti, io.BytesIO(data) if data is not None else None)
        return buf.getvalue()

    def paths(self):
        return set(self.entries)


def deb_members(deb):
    """(control fields text, [(path, TarInfo, data)]) of a .deb, by dpkg-deb."""
    control = run(['dpkg-deb', '-f', deb]).decode()
    fs = run(['dpkg-deb', '--fsys-tarfile', deb])
    members = []
    with tarfile.open(fileobj=io.BytesIO(fs), mode='r:') as t:
        byname = {}
        for ti in t.getmembers():
            path = ti.name[2:] if ti.name.startswith('./') else ti.name.lstrip('/')
            path = path.rstrip('/')
            if ti.isfile():
                byname[path] = t.extractfile(ti).read()
            members.append((path, ti))
        out = []
        for path, ti in members:
            if not path:
                continue
            if ti.islnk():   # a hard link: a copy of its target's data
                target = ti.linkname[2:] if ti.linkname.startswith('./') else ti.linkname.lstrip('/')
                out.append((path, ti, byname[target]))
            else:
                out.append((path, ti, byname.get(path)))
    return control, out


def keep(pkg, path, ti):
    if pkg == 'base-files':
        return bool(BASE_FILES_KEEP.match(path))
    if DROP.match(path):
        return False
    m = re.match(r'^usr/share/doc/([^/]+)(/(.*))?$', path)
    if m:
        return m.group(3) in (None, 'copyright') and not ti.isdir()
    if pkg == 'ca-certificates' and (path.startswith('usr/sbin') or path.startswith('etc/ca-certificates')):
        return False
    if re.match(r'^(usr/)?s?bin(/|$)', path):
        die('%s ships %s: an executable this image would carry (extend keep())' % (pkg, path))
    return True


def ca_bundle(tree):
    """/etc/ssl/certs/ca-certificates.crt as update-ca-certificates writes it."""
    certs = sorted(p for p in tree.paths() if p.startswith('usr/share/ca-certificates/') and p.endswith('.crt'))
    if len(certs) < 50:
        die('only %d certificates in ca-certificates' % len(certs))
    out = b''
    for p in certs:
        data = tree.entries[p][1]
        out += data if data.endswith(b'\n') else data + b'\n'
    return out


def base_layer(packages, epoch):
    tree = Tree(epoch)
    for rec, deb, _ in packages:
        name = rec['Package']
        control, members = deb_members(deb)
        for path, ti, data in members:
            if not keep(name, path, ti):
                continue
            if ti.isdir():
                tree.add(path, tarfile.DIRTYPE, ti.mode, origin=name)
            elif ti.issym():
                tree.add(path, tarfile.SYMTYPE, 0o777, linkname=ti.linkname, origin=name)
            elif ti.isfile() or ti.islnk():
                tree.add(path, tarfile.REGTYPE, ti.mode, data, origin=name)
            else:
                die('%s: %s is neither file, directory nor symlink' % (name, path))
        status = control.rstrip('\n').split('\n')
        status.insert(1, 'Status: install ok installed')
        tree.file('var/lib/dpkg/status.d/' + name, ('\n'.join(status) + '\n').encode())
    tree.file('etc/ssl/certs/ca-certificates.crt', ca_bundle(tree))
    tree.file('etc/passwd', ('root:x:0:0:root:/root:/usr/sbin/nologin\n'
                             'nodewarden:x:%d:%d:nodewarden:/nonexistent:/usr/sbin/nologin\n' % (UID, UID)).encode())
    tree.file('etc/group', ('root:x:0:\nnodewarden:x:%d:\n' % UID).encode())
    tree.file('etc/nsswitch.conf', b'passwd: files\ngroup: files\nhosts: files dns\n')
    tree.add('tmp', tarfile.DIRTYPE, 0o1777)
    return tree


def app_layer(binary, epoch):
    tree = Tree(epoch)
    with open(binary, 'rb') as f:
        tree.file(BINARY_PATH, f.read(), 0o755)
    return tree


def extract(raw, dirpath):
    """Unpack a layer tar as it is (absolute symlinks, /tmp's sticky bit, owners): the tars
    are this script's own, so Python 3.12+'s extraction filters would only get in the way."""
    kw = {'filter': 'fully_trusted'} if hasattr(tarfile, 'fully_trusted_filter') else {}
    with tarfile.open(fileobj=io.BytesIO(raw), mode='r:') as t:
        t.extractall(dirpath, numeric_owner=True, **kw)


def gz(data):
    buf = io.BytesIO()
    with gzip.GzipFile(filename='', mode='wb', fileobj=buf, mtime=0, compresslevel=GZIP_LEVEL) as g:
        g.write(data)
    return buf.getvalue()


# ---- OCI ------------------------------------------------------------------------------

class Layout:
    """An OCI image layout being written: blobs by digest."""

    def __init__(self):
        self.blobs = {}

    def put(self, data, media_type):
        d = 'sha256:' + sha256(data)
        self.blobs[d] = data
        return {'mediaType': media_type, 'digest': d, 'size': len(data)}

    def write(self, dirpath, index_json):
        if os.path.exists(dirpath):
            shutil.rmtree(dirpath)
        os.makedirs(os.path.join(dirpath, 'blobs', 'sha256'))
        for d, data in self.blobs.items():
            with open(os.path.join(dirpath, 'blobs', 'sha256', d.split(':')[1]), 'wb') as f:
                f.write(data)
        with open(os.path.join(dirpath, 'oci-layout'), 'wb') as f:
            f.write(canon({'imageLayoutVersion': '1.0.0'}))
        with open(os.path.join(dirpath, 'index.json'), 'wb') as f:
            f.write(canon(index_json))

    def archive(self, path, index_json, epoch):
        """The layout as one tar (skopeo's oci-archive, `ctr images import`)."""
        tree = Tree(epoch)
        tree.file('oci-layout', canon({'imageLayoutVersion': '1.0.0'}))
        tree.file('index.json', canon(index_json))
        for d, data in self.blobs.items():
            tree.file('blobs/sha256/' + d.split(':')[1], data)
        with open(path + '.tmp', 'wb') as f:
            f.write(tree.tar())
        os.replace(path + '.tmp', path)


def image_config(arch, diff_ids, version, revision, epoch, counts):
    created = rfc3339(epoch)
    labels = {
        'org.opencontainers.image.title': 'nodewarden',
        'org.opencontainers.image.description': 'Karpenter-compatible admission webhook and EC2 node '
                                                'autoscaler for self-managed Kubernetes on AWS',
        'org.opencontainers.image.version': version,
        'org.opencontainers.image.revision': revision,
        'org.opencontainers.image.source': SOURCE_URL,
        'org.opencontainers.image.licenses': 'Apache-2.0',
        'org.opencontainers.image.created': created,
    }
    cfg = {
        'created': created,
        'architecture': arch,
        'os': 'linux',
        'config': {
            'User': '%d:%d' % (UID, UID),
            'Env': ['PATH=/usr/local/bin:/usr/bin:/bin'],
            'Entrypoint': ENTRYPOINT,
            'Cmd': CMD,
            'WorkingDir': '/',
            'ExposedPorts': {p: {} for p in PORTS},
            'Labels': labels,
        },
        'rootfs': {'type': 'layers', 'diff_ids': diff_ids},
        'history': [
            {'created': created, 'created_by': 'tools/release/image.py: %d Debian packages' % counts},
            {'created': created, 'created_by': 'tools/release/image.py: /' + BINARY_PATH},
        ],
    }
    if ARCHES[arch]['variant']:
        cfg['variant'] = ARCHES[arch]['variant']
    return cfg, labels


def platform(arch):
    p = {'architecture': arch, 'os': 'linux'}
    if ARCHES[arch]['variant']:
        p['variant'] = ARCHES[arch]['variant']
    return p


def purl_deb(rec):
    q = urllib.parse.urlencode({'arch': rec['Architecture'], 'distro': 'debian-12'})
    return 'pkg:deb/debian/%s@%s?%s' % (rec['Package'], urllib.parse.quote(rec['Version'], safe=''), q)


def spdx_id(s):
    return 'SPDXRef-' + re.sub(r'[^A-Za-z0-9.-]', '-', s)


def sbom(arch, packages, binary_sha, manifest_digest, index_digest, version, revision, epoch):
    """SPDX 2.3 JSON: the image, nodewarden in it, and every Debian package in it."""
    img_id = 'SPDXRef-image'
    nw_id = 'SPDXRef-nodewarden'
    pkgs = [{
        'SPDXID': img_id,
        'name': 'nodewarden-image',
        'versionInfo': version,
        'primaryPackagePurpose': 'CONTAINER',
        'downloadLocation': 'NOASSERTION',
        'filesAnalyzed': False,
        'checksums': [{'algorithm': 'SHA256', 'checksumValue': manifest_digest.split(':')[1]}],
        'comment': 'the linux/%s image of index %s' % (arch, index_digest),
        'externalRefs': [{'referenceCategory': 'PACKAGE-MANAGER', 'referenceType': 'purl',
                          'referenceLocator': 'pkg:oci/nodewarden@%s?%s' % (
                              urllib.parse.quote(manifest_digest, safe=''),
                              urllib.parse.urlencode({'arch': arch, 'tag': version}))}],
    }, {
        'SPDXID': nw_id,
        'name': 'nodewarden',
        'versionInfo': version,
        'primaryPackagePurpose': 'APPLICATION',
        'supplier': 'Organization: nodewarden',
        'downloadLocation': 'git+%s@%s' % (SOURCE_URL, revision),
        'filesAnalyzed': False,
        'licenseDeclared': 'Apache-2.0',
        'licenseConcluded': 'Apache-2.0',
        'copyrightText': 'NOASSERTION',
        'checksums': [{'algorithm': 'SHA256', 'checksumValue': binary_sha}],
        'comment': '/' + BINARY_PATH,
    }]
    rels = [{'spdxElementId': 'SPDXRef-DOCUMENT', 'relationshipType': 'DESCRIBES', 'relatedSpdxElement': img_id},
            {'spdxElementId': img_id, 'relationshipType': 'CONTAINS', 'relatedSpdxElement': nw_id}]
    for rec, _, why in packages:
        pid = spdx_id('deb-%s-%s' % (rec['Package'], rec['Architecture']))
        p = {
            'SPDXID': pid,
            'name': rec['Package'],
            'versionInfo': rec['Version'],
            'primaryPackagePurpose': 'LIBRARY' if why.startswith('library') else 'OPERATING-SYSTEM',
            'supplier': 'Organization: Debian',
            'downloadLocation': rec['URI'],
            'filesAnalyzed': False,
            'licenseConcluded': 'NOASSERTION',
            'licenseDeclared': 'NOASSERTION',
            'copyrightText': 'NOASSERTION',
            'checksums': [{'algorithm': 'SHA256', 'checksumValue': rec['SHA256']}],
            'externalRefs': [{'referenceCategory': 'PACKAGE-MANAGER', 'referenceType': 'purl',
                              'referenceLocator': purl_deb(rec)}],
            'comment': why + '; copyright: /usr/share/doc/%s/copyright' % rec['Package'],
        }
        if rec.get('Source'):
            p['sourceInfo'] = 'built from Debian source package ' + rec['Source']
        pkgs.append(p)
        rels.append({'spdxElementId': img_id, 'relationshipType': 'CONTAINS', 'relatedSpdxElement': pid})
        if why.startswith('library'):
            rels.append({'spdxElementId': nw_id, 'relationshipType': 'DEPENDS_ON', 'relatedSpdxElement': pid})
    return {
        'spdxVersion': 'SPDX-2.3',
        'dataLicense': 'CC0-1.0',
        'SPDXID': 'SPDXRef-DOCUMENT',
        'name': 'nodewarden-%s-linux-%s' % (version, arch),
        'documentNamespace': '%s/releases/%s/sbom/linux-%s/%s' % (SOURCE_URL, version, arch,
                                                                  manifest_digest.split(':')[1]),
        'creationInfo': {'created': rfc3339(epoch), 'creators': ['Tool: nodewarden-tools/release/image.py']},
        'packages': pkgs,
        'relationships': rels,
    }


def cached_base_layer(packages, epoch, cache):
    """(tar, tar.gz) of the packages' layer; with CACHE, kept there under a key of
    everything that shapes it (this script, the .debs, the time, Python and zlib)."""
    if not cache:
        base = base_layer(packages, epoch).tar()
        return base, gz(base)
    h = hashlib.sha256()
    with open(os.path.abspath(__file__), 'rb') as f:
        h.update(f.read())
    h.update(('%d %s %s' % (epoch, sys.version, zlib.ZLIB_RUNTIME_VERSION)).encode())
    for rec, _, why in packages:
        h.update(('%s %s\n' % (rec['SHA256'], why)).encode())
    path = os.path.join(cache, h.hexdigest()[:32] + '.tar.gz')
    if os.path.exists(path):
        with open(path, 'rb') as f:
            packed = f.read()
        return gzip.decompress(packed), packed
    base = base_layer(packages, epoch).tar()
    packed = gz(base)
    os.makedirs(cache, exist_ok=True)
    with open(path + '.%d' % os.getpid(), 'wb') as f:
        f.write(packed)
    os.replace(path + '.%d' % os.getpid(), path)
    return base, packed


def build_image(arch, binary, version, revision, epoch, layout, cache=None):
    packages = resolve(binary, arch)
    base, base_gz = cached_base_layer(packages, epoch, cache)
    app = app_layer(binary, epoch).tar()
    layers = [layout.put(base_gz, MT_LAYER), layout.put(gz(app), MT_LAYER)]
    diff_ids = ['sha256:' + sha256(t) for t in (base, app)]
    cfg, labels = image_config(arch, diff_ids, version, revision, epoch, len(packages))
    cdesc = layout.put(canon(cfg), MT_CONFIG)
    manifest = {'schemaVersion': 2, 'mediaType': MT_MANIFEST, 'config': cdesc, 'layers': layers,
                'annotations': {k: v for k, v in labels.items() if k != 'org.opencontainers.image.description'}}
    mdesc = layout.put(canon(manifest), MT_MANIFEST)
    mdesc['platform'] = platform(arch)
    with open(binary, 'rb') as f:
        bsha = sha256(f.read())
    return mdesc, packages, bsha, {'base': len(base), 'app': len(app), 'compressed': sum(l['size'] for l in layers)}


def cmd_build(args):
    layout = Layout()
    images = []
    for spec in args.images:
        arch, _, binary = spec.partition('=')
        if arch not in ARCHES or not binary:
            die('expected ARCH=BINARY with ARCH one of %s, got %r' % (', '.join(ARCHES), spec))
        images.append((arch, binary) + build_image(arch, binary, args.version, args.revision, args.epoch, layout,
                                                   args.layer_cache))
    created = rfc3339(args.epoch)
    index = {'schemaVersion': 2, 'mediaType': MT_INDEX, 'manifests': [i[2] for i in images],
             'annotations': {'org.opencontainers.image.version': args.version,
                             'org.opencontainers.image.revision': args.revision,
                             'org.opencontainers.image.source': SOURCE_URL,
                             'org.opencontainers.image.created': created}}
    idesc = layout.put(canon(index), MT_INDEX)
    # one image in the archive (so `skopeo copy oci-archive:FILE` needs no reference), tagged
    # with the version (oci-archive:FILE:VERSION, umoci) and named for containerd by the
    # digest reference the chart pins: after `ctr -n k8s.io images import FILE` the CRI
    # finds the chart's <repository>:<tag>@<digest> (the tag is dropped when a digest is
    # given) without a registry
    top = {'schemaVersion': 2, 'mediaType': MT_INDEX, 'manifests': [
        dict(idesc, annotations={'org.opencontainers.image.ref.name': args.version,
                                 'io.containerd.image.name': '%s@%s' % (IMAGE_REPO, idesc['digest'])})]}
    os.makedirs(args.out, exist_ok=True)
    archive = os.path.join(args.out, 'nodewarden-%s-oci.tar' % args.version)
    layout.archive(archive, top, args.epoch)
    if args.layout:
        layout.write(args.layout, top)
    summary = {'version': args.version, 'revision': args.revision, 'source_date_epoch': args.epoch,
               'index_digest': idesc['digest'], 'archive': os.path.basename(archive),
               'repository': IMAGE_REPO, 'images': {}}
    for arch, binary, mdesc, packages, bsha, sizes in images:
        doc = sbom(arch, packages, bsha, mdesc['digest'], idesc['digest'], args.version, args.revision, args.epoch)
        name = 'nodewarden-%s-linux-%s.spdx.json' % (args.version, arch)
        with open(os.path.join(args.out, name), 'w') as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write('\n')
        summary['images'][arch] = {
            'manifest_digest': mdesc['digest'], 'sbom': name, 'binary_sha256': bsha,
            'packages': {r['Package']: r['Version'] for r, _, _ in packages},
            'bytes': {'compressed': sizes['compressed'], 'uncompressed': sizes['base'] + sizes['app']}}
    with open(args.summary or os.path.join(args.out, 'image.json'), 'w') as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write('\n')
    print(idesc['digest'])


def cmd_pause(args):
    """A one-file image (the static pause binary) for tests/kubelet's containerd."""
    machine, interp, needed = elf_info(args.binary)
    if machine != ARCHES[args.arch]['machine']:
        die('%s is a %s binary, not %s' % (args.binary, machine, args.arch))
    if interp or needed:
        die('%s is linked dynamically (%s); the pause image holds no libraries: link it with -static'
            % (args.binary, ', '.join(([interp] if interp else []) + needed)))
    if '/' not in args.name.split('@')[0].split(':')[0]:
        die('--name %r: give the full reference containerd will know it by (DOMAIN/PATH:TAG)' % args.name)
    tree = Tree(args.epoch)
    with open(args.binary, 'rb') as f:
        tree.file('pause', f.read(), 0o755)
    raw = tree.tar()
    layout = Layout()
    created = rfc3339(args.epoch)
    cfg = {'created': created, 'architecture': args.arch, 'os': 'linux',
           'config': {'User': '65535:65535', 'Entrypoint': ['/pause'], 'WorkingDir': '/'},
           'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + sha256(raw)]},
           'history': [{'created': created, 'created_by': 'tools/release/image.py pause: /pause'}]}
    if ARCHES[args.arch]['variant']:
        cfg['variant'] = ARCHES[args.arch]['variant']
    manifest = {'schemaVersion': 2, 'mediaType': MT_MANIFEST, 'config': layout.put(canon(cfg), MT_CONFIG),
                'layers': [layout.put(gz(raw), MT_LAYER)]}
    mdesc = layout.put(canon(manifest), MT_MANIFEST)
    mdesc['platform'] = platform(args.arch)
    mdesc['annotations'] = {'io.containerd.image.name': args.name}
    layout.archive(args.out, {'schemaVersion': 2, 'mediaType': MT_INDEX, 'manifests': [mdesc]}, args.epoch)
    print(mdesc['digest'])


def cmd_rootfs(args):
    epoch = int(os.environ.get('SOURCE_DATE_EPOCH') or 0)
    packages = resolve(args.binary, args.arch)
    for name, tree in (('base', base_layer(packages, epoch)), ('app', app_layer(args.binary, epoch))):
        d = os.path.join(args.out, name)
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        extract(tree.tar(), d)
    for rec, _, why in packages:
        print('%s %s (%s)' % (rec['Package'], rec['Version'], why))


# ---- verify -------------------------------------------------------------------------------

class Archive:
    def __init__(self, path):
        self.files = {}
        with tarfile.open(path, mode='r:') as t:
            for ti in t.getmembers():
                if ti.isfile():
                    self.files[ti.name] = t.extractfile(ti).read()

    def blob(self, desc):
        d = desc['digest']
        data = self.files.get('blobs/sha256/' + d.split(':')[1])
        if data is None:
            die('blob %s is missing' % d)
        if 'sha256:' + sha256(data) != d or len(data) != desc['size']:
            die('blob %s: digest or size does not match its descriptor' % d)
        return data


def read_root(layers):
    """path -> (TarInfo, data) of the layers applied in order (no whiteouts in these images)."""
    root = {}
    for raw in layers:
        with tarfile.open(fileobj=io.BytesIO(raw), mode='r:') as t:
            for ti in t.getmembers():
                root[ti.name] = (ti, t.extractfile(ti).read() if ti.isfile() else None)
    return root


def resolve_in(root, path, depth=0):
    """Follow symlinks inside the image's root; the final path or None."""
    parts = [p for p in path.strip('/').split('/') if p]
    cur = []
    for i, part in enumerate(parts):
        cur.append(part)
        p = '/'.join(cur)
        e = root.get(p)
        if e is None:
            return None
        if e[0].issym():
            if depth > 20:
                return None
            t = e[0].linkname
            base = '' if t.startswith('/') else '/'.join(cur[:-1])
            return resolve_in(root, base + '/' + t + '/' + '/'.join(parts[i + 1:]), depth + 1)
    return '/'.join(cur)


def check_root(root, arch):
    """Problems with one image's root (empty: fine)."""
    problems = []
    triplet = ARCHES[arch]['triplet']
    b = root.get(BINARY_PATH)
    if not b or not b[0].mode & 0o111:
        return ['/%s is missing or not executable' % BINARY_PATH]
    for p, (ti, _) in root.items():
        name = p.rsplit('/', 1)[-1]
        if name in SHELLS or re.match(r'^(usr/)?s?bin/', p):
            problems.append('/%s: a shell or a command in the image' % p)
        if ti.uid != 0 or ti.gid != 0:
            problems.append('/%s is owned by %d:%d, not root' % (p, ti.uid, ti.gid))
        if ti.isfile() and ti.mode & 0o022:
            problems.append('/%s is writable by group or others' % p)
    with tempfile.TemporaryDirectory() as tmp:
        def elf(path):
            f = os.path.join(tmp, 'elf')
            with open(f, 'wb') as out:
                out.write(root[path][1])
            return elf_info(f)
        machine, interp, todo = elf(BINARY_PATH)
        if machine != ARCHES[arch]['machine']:
            problems.append('the binary is %s, the image says %s' % (machine, arch))
        if not interp or not resolve_in(root, interp):
            problems.append('the ELF interpreter %s is not in the image' % interp)
        seen = set()
        while todo:
            so = todo.pop()
            if so in seen:
                continue
            seen.add(so)
            for d in ('lib/' + triplet, 'usr/lib/' + triplet, 'lib', 'usr/lib'):
                real = resolve_in(root, d + '/' + so)
                if real and root[real][1] is not None:
                    todo.extend(elf(real)[2])
                    break
            else:
                problems.append('%s, which the binary needs, is not in the image' % so)
    passwd = (root.get('etc/passwd') or (None, b''))[1].decode()
    if not re.search(r'^[^:]+:x:%d:%d:' % (UID, UID), passwd, re.M):
        problems.append('/etc/passwd has no entry for %d' % UID)
    bundle = root.get('etc/ssl/certs/ca-certificates.crt')
    if not bundle or bundle[1].count(b'BEGIN CERTIFICATE') < 50:
        problems.append('/etc/ssl/certs/ca-certificates.crt is missing or nearly empty')
    return problems


def self_test(root, arch):
    """check_root must refuse a root without libssl and one with a shell."""
    problems = []
    no_ssl = {p: e for p, e in root.items() if not os.path.basename(p).startswith('libssl.so')}
    if not any('libssl.so.3' in p for p in check_root(no_ssl, arch)):
        problems.append('self-test: a root without libssl.so.3 passed')
    sh = dict(root)
    sh['bin/sh'] = (tarfile.TarInfo('bin/sh'), b'#!')
    if not any('/bin/sh' in p for p in check_root(sh, arch)):
        problems.append('self-test: a root with /bin/sh passed')
    if not problems:
        print('verify: self-test: %s roots without libssl.so.3 or with /bin/sh are refused' % arch)
    return problems


def cmd_verify(args):
    arc = Archive(args.archive)
    if json.loads(arc.files.get('oci-layout', b'{}')).get('imageLayoutVersion') != '1.0.0':
        die('oci-layout is missing or not 1.0.0')
    top = json.loads(arc.files['index.json'])
    if len(top['manifests']) != 1:
        die('index.json names %d images, expected one index' % len(top['manifests']))
    idesc = top['manifests'][0]
    index = json.loads(arc.blob(idesc))
    if index.get('mediaType') != MT_INDEX:
        die('the image is not an image index')
    problems, seen = [], {}
    for mdesc in index['manifests']:
        arch = mdesc['platform']['architecture']
        manifest = json.loads(arc.blob(mdesc))
        cfg = json.loads(arc.blob(manifest['config']))
        layers = []
        for ldesc, diff in zip(manifest['layers'], cfg['rootfs']['diff_ids']):
            raw = gzip.decompress(arc.blob(ldesc))
            if 'sha256:' + sha256(raw) != diff:
                problems.append('%s: a layer does not match its diff_id' % arch)
            layers.append(raw)
        if cfg['architecture'] != arch or cfg['os'] != 'linux':
            problems.append('%s: the config says %s/%s' % (arch, cfg['os'], cfg['architecture']))
        c = cfg['config']
        if c.get('User') != '%d:%d' % (UID, UID) or c.get('Entrypoint') != ENTRYPOINT or c.get('Cmd') != CMD:
            problems.append('%s: user/entrypoint/cmd are %r %r %r' % (arch, c.get('User'), c.get('Entrypoint'),
                                                                       c.get('Cmd')))
        root = read_root(layers)
        problems += ['%s: %s' % (arch, p) for p in check_root(root, arch)]
        if args.self_test:
            problems += ['%s: %s' % (arch, p) for p in self_test(root, arch)]
        status = {p.rsplit('/', 1)[1]: re.search(r'^Version: (.*)$', data.decode(), re.M).group(1)
                  for p, (ti, data) in root.items() if p.startswith('var/lib/dpkg/status.d/') and data}
        if args.sbom_dir:
            version = index['annotations']['org.opencontainers.image.version']
            with open(os.path.join(args.sbom_dir, 'nodewarden-%s-linux-%s.spdx.json' % (version, arch))) as f:
                doc = json.load(f)
            listed = {p['name']: p['versionInfo'] for p in doc['packages'] if p['SPDXID'].startswith('SPDXRef-deb-')}
            if listed != status:
                problems.append('%s: the SBOM lists %s, the image holds %s' % (arch, sorted(listed.items()),
                                                                                sorted(status.items())))
            if doc['packages'][0]['checksums'][0]['checksumValue'] != mdesc['digest'].split(':')[1]:
                problems.append('%s: the SBOM describes another image' % arch)
        seen[arch] = (mdesc['digest'], len(status), sum(l['size'] for l in manifest['layers']),
                      sum(len(x) for x in layers))
        if args.unpack and args.arch == arch:
            if os.path.exists(args.unpack):
                shutil.rmtree(args.unpack)
            os.makedirs(args.unpack)
            for raw in layers:
                extract(raw, args.unpack)
    if args.unpack and args.arch not in seen:
        problems.append('no %s image to unpack' % args.arch)
    if problems:
        print('\n'.join('verify: ' + p for p in problems), file=sys.stderr)
        return 1
    print('verify: %s index %s' % (os.path.basename(args.archive), idesc['digest']))
    for arch, (d, n, csize, usize) in sorted(seen.items()):
        print('verify:   linux/%s %s: %d Debian packages, %.1f MB compressed, %.1f MB unpacked'
              % (arch, d, n, csize / 1e6, usize / 1e6))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    b = sub.add_parser('build')
    b.add_argument('--out', required=True)
    b.add_argument('--layout', help='also write the OCI layout as a directory here')
    b.add_argument('--summary', help='where image.json goes (default: OUT/image.json)')
    b.add_argument('--version', required=True)
    b.add_argument('--revision', required=True)
    b.add_argument('--epoch', type=int, required=True)
    b.add_argument('--layer-cache', help='keep the packages\' layer here and reuse it (tests only: '
                   'make release always builds it)')
    b.add_argument('images', nargs='+', metavar='ARCH=BINARY')
    r = sub.add_parser('rootfs')
    r.add_argument('--arch', required=True, choices=sorted(ARCHES))
    r.add_argument('--binary', required=True)
    r.add_argument('--out', required=True)
    pz = sub.add_parser('pause')
    pz.add_argument('--arch', required=True, choices=sorted(ARCHES))
    pz.add_argument('--binary', required=True)
    pz.add_argument('--name', required=True)
    pz.add_argument('--out', required=True)
    pz.add_argument('--epoch', type=int, default=0)
    v = sub.add_parser('verify')
    v.add_argument('archive')
    v.add_argument('--unpack')
    v.add_argument('--arch', default='amd64')
    v.add_argument('--sbom-dir')
    v.add_argument('--self-test', action='store_true',
                   help='also check that the root checks refuse a root without libssl or with /bin/sh')
    args = ap.parse_args(argv)
    return {'build': cmd_build, 'rootfs': cmd_rootfs, 'verify': cmd_verify, 'pause': cmd_pause}[args.cmd](args) or 0


if __name__ == '__main__':
    sys.exit(main())
