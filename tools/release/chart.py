#!/usr/bin/env python3
"""tools/release/chart.py — the Helm chart as a release ships it.

    chart.py stamp SRC DST --version V [--digest sha256:...]
        copy the chart SRC to DST with Chart.yaml's version and appVersion set to V
        and, with --digest, the annotation nodewarden.io/image-digest (the digest of the
        release's image index; templates/_helpers.tpl pins the default image by it)
    chart.py repack TGZ --epoch SECONDS
        rewrite the .tgz `helm package` wrote with every entry's mtime SECONDS and a gzip
        header without a time: `helm package` stamps each entry with the current time,
        so two packages of the same chart differ; after this they do not
"""
import argparse
import gzip
import io
import re
import shutil
import sys
import tarfile

import yaml

ANNOTATION = 'nodewarden.io/image-digest'


def stamp(args):
    shutil.rmtree(args.dst, ignore_errors=True)
    shutil.copytree(args.src, args.dst)
    path = args.dst.rstrip('/') + '/Chart.yaml'
    with open(path) as f:
        text = f.read()
    text, n1 = re.subn(r'^version: .*$', 'version: %s' % args.version, text, flags=re.M)
    text, n2 = re.subn(r'^appVersion: .*$', 'appVersion: "%s"' % args.version, text, flags=re.M)
    if n1 != 1 or n2 != 1:
        raise SystemExit('chart.py: %s: expected one version: and one appVersion: line' % path)
    if args.digest:
        if not re.match(r'^sha256:[0-9a-f]{64}$', args.digest):
            raise SystemExit('chart.py: --digest must be sha256:<64 hex digits>')
        if re.search(r'^annotations:', text, re.M):
            text = re.sub(r'^annotations:\n', 'annotations:\n  %s: %s\n' % (ANNOTATION, args.digest), text,
                          count=1, flags=re.M)
        else:
            text = text.rstrip('\n') + '\nannotations:\n  %s: %s\n' % (ANNOTATION, args.digest)
    meta = yaml.safe_load(text)
    if meta['version'] != args.version or str(meta['appVersion']) != args.version or \
            (args.digest and meta['annotations'][ANNOTATION] != args.digest):
        raise SystemExit('chart.py: stamping %s went wrong' % path)
    with open(path, 'w') as f:
        f.write(text)


def repack(args):
    with open(args.tgz, 'rb') as f:
        raw = gzip.decompress(f.read())
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(raw), mode='r:') as src, \
            tarfile.open(fileobj=out, mode='w', format=tarfile.PAX_FORMAT) as dst:
        for ti in src.getmembers():
            data = src.extractfile(ti).read() if ti.isfile() else None
            ti.mtime, ti.uid, ti.gid, ti.uname, ti.gname = args.epoch, 0, 0, '', ''
            ti.pax_headers = {}
            dst.addfile(ti, io.BytesIO(data) if data is not None else None)
    buf = io.BytesIO()
    with gzip.GzipFile(filename='', mode='wb', fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(out.getvalue())
    with open(args.tgz, 'wb') as f:
        f.write(buf.getvalue())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('stamp')
    s.add_argument('src')
    s.add_argument('dst')
    s.add_argument('--version', required=True)
    s.add_argument('--digest')
    r = sub.add_parser('repack')
    r.add_argument('tgz')
    r.add_argument('--epoch', type=int, required=True)
    args = ap.parse_args(argv)
    (stamp if args.cmd == 'stamp' else repack)(args)
    return 0


if __name__ == '__main__':
    sys.exit(main())
