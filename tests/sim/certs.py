"""Certificates with the openssl CLI: a CA and serving certificates signed by it."""
import os
import subprocess
import tempfile


def _run(args):
    r = subprocess.run(['openssl'] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError('openssl %s failed: %s' % (' '.join(args[:2]), r.stderr.decode(errors='replace')))


def make_ca(directory, cn='nodewarden-sim-ca', prefix='ca'):
    """Writes <prefix>.crt/<prefix>.key (EC P-256, SHA-256, CA:TRUE). Returns (crt, key)."""
    os.makedirs(directory, exist_ok=True)
    crt = os.path.join(directory, prefix + '.crt')
    key = os.path.join(directory, prefix + '.key')
    _run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
          '-keyout', key, '-out', crt, '-days', '3650', '-sha256', '-subj', '/CN=%s' % cn,
          '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
    os.chmod(key, 0o600)
    return crt, key


def make_leaf(directory, ca_crt, ca_key, dns=(), ips=(), prefix='tls', cn=None, usage='serverAuth'):
    """Writes <prefix>.crt/<prefix>.key signed by the CA with the given SANs (none for a
    client certificate: usage='clientAuth', cn= the user)."""
    os.makedirs(directory, exist_ok=True)
    crt = os.path.join(directory, prefix + '.crt')
    key = os.path.join(directory, prefix + '.key')
    san = ','.join(['DNS:%s' % d for d in dns] + ['IP:%s' % i for i in ips])
    san_line = 'subjectAltName=%s\n' % san if san else ''
    with tempfile.TemporaryDirectory() as tmp:
        csr = os.path.join(tmp, 'leaf.csr')
        ext = os.path.join(tmp, 'ext.cnf')
        with open(ext, 'w') as f:
            f.write('basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n'
                    'extendedKeyUsage=%s\n%s' % (usage, san_line))
        _run(['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
              '-keyout', key, '-out', csr, '-subj', '/CN=%s' % (cn or (list(dns) + list(ips))[0])])
        _run(['x509', '-req', '-in', csr, '-CA', ca_crt, '-CAkey', ca_key, '-CAcreateserial',
              '-CAserial', os.path.join(tmp, 'ca.srl'), '-out', crt, '-days', '825', '-sha256',
              '-extfile', ext])
    os.chmod(key, 0o600)
    return crt, key
