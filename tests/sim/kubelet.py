"""Simulated kubelets: one per running EC2 instance of AwsSim.

For each instance that reaches 'running', after a boot delay the kubelet reads
the instance's userData as cloud-init would (base64; optionally gzip; a shell
script, or a MIME multipart whose text/x-shellscript parts run in order),
finds the kubelet's settings in it (flags on a `kubeadm join`, `kubelet` or EKS
`bootstrap.sh` command line incl. --kubelet-extra-args, in KUBELET_EXTRA_ARGS, or in a
kubeadm JoinConfiguration / KubeletConfiguration heredoc), in AL2023 NodeConfig
documents (MIME parts application/node.eks.aws: spec.kubelet.config and .flags,
spec.instance.localStorage) or in a Bottlerocket TOML userData (settings.kubernetes:
node-labels, node-taints, max-pods, reserved and eviction maps; bootstrap-commands) and
registers a Node:

- name: `kubeadm join --node-name` / kubelet `--hostname-override` when given
  literally; if the value is computed by the shell (`$(...)`, `$VAR`) or absent,
  the EC2 private DNS name, as `hostname -f` / IMDS local-hostname would give
  (ip-10-0-1-23.us-west-2.compute.internal; ec2.internal in us-east-1);
- spec.providerID aws:///<zone>/<instance-id> (what a script computes from
  IMDS, or the AWS cloud provider sets); a literal --provider-id wins;
- labels from --node-labels plus the well-known ones the kubelet and the cloud
  provider set; taints from --register-with-taints;
- capacity: cpu = vCPUs; memory = the type's MiB less a hypervisor/firmware
  share (VM_RESERVED, 7 %, a little under Karpenter's 7.5 % estimate, as real
  instances are); pods = --max-pods / maxPods, else the kubelet default 110;
  ephemeral-storage = the kubelet's device: the root volume, Bottlerocket's data volume
  /dev/xvdb, or with RAID0 (--local-disks raid0, localStorage RAID0, Bottlerocket's
  ephemeral-storage bootstrap command) the instance store (its GB); allocatable = capacity less
  --kube-reserved, --system-reserved and --eviction-hard (kubelet defaults:
  memory.available<100Mi, nodefs.available<10%);
- the node registers NotReady (no GPUs yet), then after a short delay reports
  Ready; extended resources (nvidia.com/gpu, amd.com/gpu, habana.ai/gaudi, aws.amazon.com/neuron) appear
  with Ready, as if the device plugin had started at that moment; a Node labelled
  nvidia.com/gpu.replicas=N (time-slicing) advertises N nvidia.com/gpu per GPU, from Ready on
  or as soon as the label appears (the sync loop, once a second).

If the userData cannot be understood (not base64, no shell script, no
kubeadm join / kubelet invocation, an invalid label or taint, a label the
kubelet refuses to self-assign) the node never joins; the reason is kept in
Kubelets.status() (control: GET /aws/kubelets).

When the instance shuts down the Node goes NotReady (conditions Unknown,
NodeStatusUnknown); when it is terminated the Node is deleted (as the cloud
node-lifecycle controller does; finalizers are honoured by the store).  A Node
deleted while its instance still runs is registered again, as a running
kubelet does.  Pods on nodes (Running once bound to a Ready node, termination,
pod GC) are the kube half's business (controllers.py), not this module's.
"""

import base64
import binascii
import calendar
import copy
import email
import email.policy
import gzip
import math
import re
import shlex
import threading
import time
import tomllib
import uuid

import yaml

import catalog

VM_RESERVED = 0.07
KUBELET_VERSION = 'v1.31.4'

# labels a kubelet may set on itself in the kubernetes.io / k8s.io namespaces
# (k8s.io/kubernetes pkg/kubelet/apis: KubeletLabels + allowed namespaces)
_KUBELET_LABELS = {
    'kubernetes.io/hostname', 'kubernetes.io/instance-type', 'kubernetes.io/os', 'kubernetes.io/arch',
    'beta.kubernetes.io/instance-type', 'beta.kubernetes.io/os', 'beta.kubernetes.io/arch',
    'failure-domain.beta.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/region',
    'failure-domain.kubernetes.io/zone', 'failure-domain.kubernetes.io/region',
    'topology.kubernetes.io/zone', 'topology.kubernetes.io/region',
    'node.kubernetes.io/instance-type',
}
_KUBELET_NS = ('kubelet.kubernetes.io', 'node.kubernetes.io')

_NAME_RX = re.compile(r'^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$')
_PREFIX_RX = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')
_VALUE_RX = re.compile(r'^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')
_DNS1123 = re.compile(r'^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')


_TOKEN_RX = re.compile(r'^[a-z0-9]{6}\.[a-z0-9]{16}$')


class UserDataError(Exception):
    pass


def ca_pin(ca_pem):
    """kubeadm's discovery pin of a CA certificate (PEM text): sha256 of its DER
    SubjectPublicKeyInfo (cmd/kubeadm/app/util/pubkeypin), with the openssl CLI."""
    import hashlib
    import subprocess
    pub = subprocess.run(['openssl', 'x509', '-noout', '-pubkey'], input=ca_pem.encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
    der = subprocess.run(['openssl', 'pkey', '-pubin', '-outform', 'DER'], input=pub,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True).stdout
    return 'sha256:' + hashlib.sha256(der).hexdigest()


def check_bootstrap_token(cfg, secret, ca_pin_value, now):
    """Why kubeadm join with cfg's token would fail against a cluster whose token Secret
    kube-system/bootstrap-token-<id> is `secret` (None: absent) and whose CA pin is
    ca_pin_value; None when it would authenticate (the API server's bootstrap token
    authenticator, plugin/pkg/auth/authenticator/token/bootstrap: type, secret,
    expiration, usage-bootstrap-authentication)."""
    tok = cfg.get('bootstrap_token')
    if not tok:
        return 'kubeadm join has no bootstrap token'
    if ca_pin_value and cfg.get('ca_cert_hashes') and ca_pin_value not in cfg['ca_cert_hashes']:
        return 'the CA pin %s does not match the cluster CA (%s)' % (cfg['ca_cert_hashes'], ca_pin_value)
    if not cfg.get('ca_cert_hashes'):
        return 'kubeadm join has no discovery CA cert hash'
    tid, tsec = tok.split('.')
    if secret is None:
        return 'bootstrap token %s: no Secret kube-system/bootstrap-token-%s (401)' % (tid, tid)

    def field(k):
        v = (secret.get('data') or {}).get(k)
        if v is None:
            return (secret.get('stringData') or {}).get(k)
        return base64.b64decode(v).decode()
    if secret.get('type') != 'bootstrap.kubernetes.io/token':
        return 'bootstrap token %s: the Secret is not of type bootstrap.kubernetes.io/token' % tid
    if field('token-id') != tid or field('token-secret') != tsec:
        return 'bootstrap token %s: the secret does not match (401)' % tid
    if field('usage-bootstrap-authentication') != 'true':
        return 'bootstrap token %s: not usable for authentication' % tid
    exp = field('expiration')
    if exp:
        t = calendar.timegm(time.strptime(exp, '%Y-%m-%dT%H:%M:%SZ'))
        if t < now:
            return 'bootstrap token %s expired at %s (401)' % (tid, exp)
    return None


# ---------------------------------------------------------------------------
# quantities (just what kubelet flags need)

_BIN = {'Ki': 2 ** 10, 'Mi': 2 ** 20, 'Gi': 2 ** 30, 'Ti': 2 ** 40, 'Pi': 2 ** 50, 'Ei': 2 ** 60}
_DEC = {'n': 1e-9, 'u': 1e-6, 'm': 1e-3, '': 1, 'k': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12, 'P': 1e15,
        'E': 1e18}


def parse_quantity(s):
    m = re.fullmatch(r'([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)([eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?)', s)
    if not m:
        raise UserDataError('invalid quantity %r' % s)
    num, suf = float(m.group(1)), m.group(2)
    if suf in _BIN:
        return num * _BIN[suf]
    if suf and suf[0] in 'eE':
        return num * 10 ** int(suf[1:])
    return num * _DEC[suf]


# ---------------------------------------------------------------------------
# userData

def decode_user_data(b64):
    """base64 userData -> list of shell script texts (cloud-init's view)."""
    scripts, nodeconfigs, toml = decode_user_data_parts(b64)
    if not scripts:
        raise UserDataError('MIME userData has no text/x-shellscript part' if nodeconfigs else
                            'userData is neither a shell script (#!) nor MIME multipart')
    return scripts


def _toml(text):
    """A Bottlerocket settings document, or None when text is not TOML with [settings]."""
    try:
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return None
    return doc if isinstance(doc.get('settings'), dict) else None


def decode_user_data_parts(b64):
    """base64 userData -> (shell scripts, AL2023 NodeConfig YAML texts, Bottlerocket TOML
    settings dict or None): what cloud-init, nodeadm (MIME parts of type
    application/node.eks.aws, or a plain NodeConfig document) and Bottlerocket (the whole
    userData is TOML) read."""
    if not b64:
        raise UserDataError('the instance has no userData')
    try:
        raw = base64.b64decode(b64.encode('ascii') if isinstance(b64, str) else b64, validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise UserDataError('userData is not valid base64')
    if raw[:2] == b'\x1f\x8b':
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            raise UserDataError('userData is gzip but does not decompress')
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError:
        raise UserDataError('userData is not UTF-8 text')
    head = text.lstrip()[:200].lower()
    if head.startswith('content-type:') or head.startswith('mime-version:'):
        msg = email.message_from_string(text, policy=email.policy.compat32)
        if not msg.is_multipart():
            parts = [msg]
        else:
            parts = [p for p in msg.walk() if not p.is_multipart()]
        scripts, nodeconfigs = [], []
        for p in parts:
            payload = (p.get_payload(decode=True) or b'').decode('utf-8', 'replace')
            if p.get_content_type() == 'text/x-shellscript':
                scripts.append(payload)
            elif p.get_content_type() == 'application/node.eks.aws':
                nodeconfigs.append(payload)
        if not scripts and not nodeconfigs:
            raise UserDataError('MIME userData has no text/x-shellscript part')
        return scripts, nodeconfigs, None
    if text.startswith('#!'):
        return [text], [], None
    if text.startswith('#cloud-config'):
        raise UserDataError('#cloud-config userData is not understood by the simulator')
    if re.search(r'^\s*kind:\s*NodeConfig\s*$', text, re.M) and 'node.eks.aws/' in text:
        return [], [text], None
    doc = _toml(text)
    if doc is not None:
        return [], [], doc
    raise UserDataError('userData is neither a shell script (#!) nor MIME multipart')


def _kv(d):
    return ','.join('%s=%s' % (k, v) for k, v in d.items())


def _taint_str(taints):
    out = []
    for t in taints or []:
        if not isinstance(t, dict) or 'key' not in t or 'effect' not in t:
            raise UserDataError('registerWithTaints: %r is not {key, value, effect}' % (t,))
        out.append('%s%s:%s' % (t['key'], ('=' + str(t['value'])) if t.get('value') else '', t['effect']))
    return ','.join(out)


def _scan_nodeconfig(text, found):
    """An AL2023 NodeConfig (node.eks.aws/v1alpha1; nodeadm): spec.kubelet.config
    (maxPods, registerWithTaints, kubeReserved, systemReserved, evictionHard, providerID),
    spec.kubelet.flags (--node-labels, ...), spec.instance.localStorage.strategy; the later
    document's value wins, as nodeadm merges them."""
    try:
        docs = [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
    except yaml.YAMLError as e:
        raise UserDataError('NodeConfig is not YAML: %s' % str(e).split('\n')[0])
    for d in docs:
        if d.get('kind') != 'NodeConfig':
            continue
        spec = d.get('spec') or {}
        kub = spec.get('kubelet') or {}
        cfg = kub.get('config') or {}
        if 'maxPods' in cfg:
            found['max-pods'] = [str(cfg['maxPods'])]
        if 'registerWithTaints' in cfg:
            found['register-with-taints'] = [_taint_str(cfg['registerWithTaints'])]
        for key, flag in (('kubeReserved', 'kube-reserved'), ('systemReserved', 'system-reserved')):
            if isinstance(cfg.get(key), dict):
                found[flag] = [_kv(cfg[key])]
        if isinstance(cfg.get('evictionHard'), dict):
            found['eviction-hard'] = [','.join('%s<%s' % kv for kv in cfg['evictionHard'].items())]
        if cfg.get('providerID'):
            found['provider-id'] = [str(cfg['providerID'])]
        for f in kub.get('flags') or []:
            _scan_flags([str(f)], found)
        if ((spec.get('instance') or {}).get('localStorage') or {}).get('strategy') == 'RAID0':
            found['raid0'] = ['true']


def _scan_bottlerocket(doc, found):
    """Bottlerocket's settings.kubernetes: node-labels, node-taints (key = "value:Effect" or a
    list of them), max-pods, kube-reserved, system-reserved, eviction-hard; a bootstrap
    command that sets up the instance store (apiclient ephemeral-storage) is RAID0."""
    s = doc.get('settings') or {}
    k = s.get('kubernetes') or {}
    if not isinstance(k, dict) or not k.get('api-server'):
        raise UserDataError('Bottlerocket settings without settings.kubernetes.api-server never join')
    if isinstance(k.get('node-labels'), dict):
        found['node-labels'] = [_kv(k['node-labels'])]
    if isinstance(k.get('node-taints'), dict):
        items = []
        for key, vals in k['node-taints'].items():
            for v in vals if isinstance(vals, list) else [vals]:
                val, _, eff = str(v).rpartition(':')
                items.append('%s%s:%s' % (key, ('=' + val) if val else '', eff))
        found['register-with-taints'] = [','.join(items)]
    if 'max-pods' in k:
        found['max-pods'] = [str(k['max-pods'])]
    for key in ('kube-reserved', 'system-reserved'):
        if isinstance(k.get(key), dict):
            found[key] = [_kv(k[key])]
    if isinstance(k.get('eviction-hard'), dict):
        found['eviction-hard'] = [','.join('%s<%s' % kv for kv in k['eviction-hard'].items())]
    for cmd in (s.get('bootstrap-commands') or {}).values():
        if 'ephemeral-storage' in repr((cmd or {}).get('commands')):
            found['raid0'] = ['true']


def _logical_lines(script):
    """Join backslash continuations; yield (line, heredoc_body_or_None)."""
    lines = script.split('\n')
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.endswith('\\') and i + 1 < len(lines):
            i += 1
            line = line[:-1] + ' ' + lines[i].lstrip()
        i += 1
        m = re.search(r'<<-?\s*([\'"]?)(\w+)\1', line)
        body = None
        if m:
            end = m.group(2)
            buf = []
            while i < len(lines) and lines[i].strip() != end:
                buf.append(lines[i])
                i += 1
            i += 1
            body = '\n'.join(buf)
        out.append((line, body))
    return out


_FLAGS = ('node-labels', 'register-with-taints', 'node-name', 'hostname-override', 'provider-id',
          'max-pods', 'kube-reserved', 'system-reserved', 'eviction-hard', 'token',
          'discovery-token-ca-cert-hash')


def _scan_flags(tokens, found):
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        # a token can carry several flags, e.g. KUBELET_EXTRA_ARGS=--a=b --c=d
        sub = tok.split()
        if len(sub) > 1:
            _scan_flags(sub, found)
            i += 1
            continue
        m = re.match(r'^(?:[A-Za-z_][A-Za-z0-9_]*=)?["\']?--([a-z-]+)(?:=(.*))?$', tok)
        if m and m.group(1) in _FLAGS:
            val = m.group(2)
            if val is None and i + 1 < len(tokens) and not tokens[i + 1].startswith('--'):
                val = tokens[i + 1]
                i += 1
            found.setdefault(m.group(1), []).append((val or '').strip('"\''))
        i += 1


def _yaml_scalar(v):
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in '"\'':
        v = v[1:-1]
    return v


def _indent(line):
    return len(line) - len(line.lstrip())


def _yaml_block(lines, start, indent):
    """The lines after lines[start] that are indented deeper than indent."""
    out = []
    for line in lines[start + 1:]:
        if line.strip() and _indent(line) <= indent and \
                not (_indent(line) == indent and line.strip().startswith('- ')):
            break           # (a block sequence may sit at its key's indent)
        out.append(line)
    return out


def _yaml_map(value, block):
    """A flow map '{a: 1, b: 2}' or a block of 'key: value' lines -> dict."""
    out = {}
    value = value.strip()
    if value.startswith('{') and value.endswith('}'):
        for item in filter(None, (x.strip() for x in value[1:-1].split(','))):
            if ':' in item:
                k, v = item.split(':', 1)
                out[_yaml_scalar(k)] = _yaml_scalar(v)
        return out
    for line in block:
        m = re.match(r'^\s*([^\s:#][^:]*):\s*(.*)$', line)
        if m and m.group(2).strip():
            out[_yaml_scalar(m.group(1))] = _yaml_scalar(m.group(2))
    return out


def _yaml_taints(block):
    """A block list of {key, value, effect} maps -> 'k=v:E,...' (kubelet flag form)."""
    taints = []
    cur = None
    for line in block:
        if not line.strip():
            continue
        mi = re.match(r'^\s*(-\s*)?(key|value|effect|timeAdded):\s*(.*)$', line)
        if not mi:
            break
        if mi.group(1):
            cur = {}
            taints.append(cur)
        if cur is None:
            break
        cur[mi.group(2)] = _yaml_scalar(mi.group(3))
    return ','.join('%s%s:%s' % (t.get('key', ''), ('=' + t['value']) if t.get('value') else '',
                                 t.get('effect', '')) for t in taints)


def _scan_yaml(body, found):
    """The parts of a kubeadm JoinConfiguration (nodeRegistration.name, .taints,
    .kubeletExtraArgs in map or list form) and of a KubeletConfiguration
    (maxPods, providerID, kubeReserved, systemReserved, evictionHard,
    registerWithTaints) that the simulator reads."""
    lines = body.split('\n')
    flags = ('node-labels|register-with-taints|max-pods|node-name|hostname-override|provider-id|'
             'kube-reserved|system-reserved|eviction-hard')
    for idx, line in enumerate(lines):
        s = line.strip()
        m = re.match(r'^(%s):\s*(.+)$' % flags, s)
        if m:   # kubeletExtraArgs map form (kubeadm v1beta3)
            found.setdefault(m.group(1), []).append(_yaml_scalar(m.group(2)))
            continue
        m = re.match(r'^-?\s*name:\s*["\']?(%s)["\']?\s*$' % flags, s)
        if m and idx + 1 < len(lines):   # kubeletExtraArgs list form (v1beta4)
            mv = re.match(r'^\s*value:\s*(.+)$', lines[idx + 1])
            if mv:
                found.setdefault(m.group(1), []).append(_yaml_scalar(mv.group(1)))
            continue
        m = re.match(r'^token:\s*(\S+)\s*$', s)
        if m:   # JoinConfiguration discovery.bootstrapToken.token
            found.setdefault('token', []).append(_yaml_scalar(m.group(1)))
            continue
        m = re.match(r'^-\s*(["\']?sha256:[0-9a-fA-F]+["\']?)\s*$', s)
        if m:   # discovery.bootstrapToken.caCertHashes
            found.setdefault('discovery-token-ca-cert-hash', []).append(_yaml_scalar(m.group(1)))
            continue
        m = re.match(r'^maxPods:\s*(\S+)\s*$', s)
        if m:
            found.setdefault('max-pods', []).append(_yaml_scalar(m.group(1)))
            continue
        m = re.match(r'^providerID:\s*(.+)$', s)
        if m:
            found.setdefault('provider-id', []).append(_yaml_scalar(m.group(1)))
            continue
        m = re.match(r'^(kubeReserved|systemReserved|evictionHard):\s*(.*)$', s)
        if m:
            kv = _yaml_map(m.group(2), _yaml_block(lines, idx, _indent(line)))
            if m.group(1) == 'evictionHard':
                found.setdefault('eviction-hard', []).append(
                    ','.join('%s<%s' % (k, v) for k, v in kv.items()))
            else:
                found.setdefault('kube-reserved' if m.group(1) == 'kubeReserved' else 'system-reserved',
                                 []).append(','.join('%s=%s' % (k, v) for k, v in kv.items()))
            continue
        m = re.match(r'^registerWithTaints:\s*$', s)
        if m:
            found.setdefault('register-with-taints', []).append(
                _yaml_taints(_yaml_block(lines, idx, _indent(line))))
            continue
        m = re.match(r'^nodeRegistration:\s*$', s)
        if m:
            block = _yaml_block(lines, idx, _indent(line))
            child = min((_indent(b) for b in block if b.strip()), default=0)
            for j, bl in enumerate(block):
                if not bl.strip() or _indent(bl) != child:
                    continue
                mn = re.match(r'^\s*name:\s*(\S+)\s*$', bl)
                if mn:
                    found.setdefault('node-name', []).append(_yaml_scalar(mn.group(1)))
                if re.match(r'^\s*taints:\s*$', bl):
                    found.setdefault('register-with-taints', []).append(
                        _yaml_taints(_yaml_block(block, j, _indent(bl))))


def parse_user_data(b64):
    """-> dict with the kubelet settings found.  Raises UserDataError."""
    scripts, nodeconfigs, toml = decode_user_data_parts(b64)
    found = {}
    joins = False
    family = 'custom'
    if toml is not None:
        _scan_bottlerocket(toml, found)
        joins, family = True, 'bottlerocket'
    for sc in scripts:
        for line, heredoc in _logical_lines(sc):
            code = line.strip()
            if heredoc is not None:
                _scan_yaml(heredoc, found)
                for hl in heredoc.split('\n'):
                    if '--' in hl:
                        try:
                            _scan_flags(shlex.split(hl, comments=True), found)
                        except ValueError:
                            _scan_flags(hl.split(), found)
            if not code or code.startswith('#'):
                continue
            try:
                tokens = shlex.split(code, comments=True, posix=True)
            except ValueError:
                tokens = code.split()
            words = tokens
            for k in range(len(words)):
                base = words[k].rsplit('/', 1)[-1]
                if base == 'kubeadm' and k + 1 < len(words) and words[k + 1] == 'join':
                    joins = True
                if base == 'kubelet' and k == 0:
                    joins = True
                if base in ('bootstrap.sh', 'nodeadm'):
                    joins = True
            _scan_flags(tokens, found)
            if any(w.rsplit('/', 1)[-1] == 'bootstrap.sh' for w in words):
                family = 'al2'
                if '--local-disks' in words and words.index('--local-disks') + 1 < len(words) and \
                        words[words.index('--local-disks') + 1] == 'raid0':
                    found['raid0'] = ['true']
    for nc in nodeconfigs:   # nodeadm runs after the shell parts
        _scan_nodeconfig(nc, found)
        joins, family = True, 'al2023'
    if not joins:
        raise UserDataError('userData runs neither `kubeadm join` nor the kubelet')
    cfg = {'labels': {}, 'taints': [], 'node_name': None, 'provider_id': None, 'max_pods': None,
           'kube_reserved': {}, 'system_reserved': {}, 'eviction_hard': None,
           'bootstrap_token': None, 'ca_cert_hashes': [], 'family': family,
           'raid0': bool(found.get('raid0'))}
    for v in found.get('token', []):
        # a kubeadm bootstrap token; placeholders ('t', '<TOKEN>') are not one (and with
        # check_tokens such a join never authenticates)
        if v and _TOKEN_RX.match(v):
            cfg['bootstrap_token'] = v
    for v in found.get('discovery-token-ca-cert-hash', []):
        if v and '$' not in v:
            cfg['ca_cert_hashes'].append(v.lower())
    for spec in found.get('node-labels', []):
        for item in filter(None, spec.split(',')):
            if '=' not in item:
                raise UserDataError('--node-labels: %r is not key=value' % item)
            k, v = item.split('=', 1)
            check_label(k, v)
            cfg['labels'][k] = v
    for spec in found.get('register-with-taints', []):
        for item in filter(None, spec.split(',')):
            cfg['taints'].append(parse_taint(item))
    for key, field in (('node-name', 'node_name'), ('hostname-override', 'node_name')):
        for v in found.get(key, []):
            if v and '$' not in v and '`' not in v:
                cfg['node_name'] = v.lower()
    for v in found.get('provider-id', []):
        if v and '$' not in v and '`' not in v:
            cfg['provider_id'] = v
    for v in found.get('max-pods', []):
        if not re.fullmatch(r'\d+', v or ''):
            raise UserDataError('--max-pods: %r is not an integer' % v)
        cfg['max_pods'] = int(v)
    for flag, field in (('kube-reserved', 'kube_reserved'), ('system-reserved', 'system_reserved')):
        for spec in found.get(flag, []):
            for item in filter(None, spec.split(',')):
                if '=' not in item:
                    raise UserDataError('--%s: %r is not resource=quantity' % (flag, item))
                k, v = item.split('=', 1)
                cfg[field][k] = parse_quantity(v)
    for spec in found.get('eviction-hard', []):
        ev = {}
        for item in filter(None, spec.split(',')):
            m = re.fullmatch(r'([a-z.A-Z]+)<(.+)', item)
            if not m:
                raise UserDataError('--eviction-hard: %r is not signal<quantity' % item)
            ev[m.group(1)] = m.group(2)
        cfg['eviction_hard'] = ev
    if cfg['node_name'] and not _DNS1123.match(cfg['node_name']):
        raise UserDataError('node name %r is not a DNS-1123 subdomain' % cfg['node_name'])
    return cfg


def check_label(k, v):
    if '/' in k:
        prefix, name = k.split('/', 1)
        if not prefix or len(prefix) > 253 or not _PREFIX_RX.match(prefix):
            raise UserDataError('--node-labels: invalid label key prefix in %r' % k)
    else:
        prefix, name = '', k
    if not name or len(name) > 63 or not _NAME_RX.match(name):
        raise UserDataError('--node-labels: invalid label key %r' % k)
    if len(v) > 63 or not _VALUE_RX.match(v):
        raise UserDataError('--node-labels: invalid value %r for label %s' % (v, k))
    if prefix and (prefix in ('kubernetes.io', 'k8s.io') or prefix.endswith('.kubernetes.io')
                   or prefix.endswith('.k8s.io')):
        if k not in _KUBELET_LABELS and not any(prefix == n or prefix.endswith('.' + n)
                                                for n in _KUBELET_NS):
            raise UserDataError('--node-labels: unknown label %r: the kubelet may not set labels '
                                'in the kubernetes.io or k8s.io namespaces other than the allowed '
                                'ones (kubelet refuses to start)' % k)


def parse_taint(item):
    m = re.fullmatch(r'([^=:]+)(?:=([^:]*))?:(NoSchedule|PreferNoSchedule|NoExecute)', item.strip())
    if not m:
        raise UserDataError('--register-with-taints: %r is not key[=value]:Effect with Effect '
                            'NoSchedule, PreferNoSchedule or NoExecute' % item)
    key = m.group(1)
    if '/' in key:
        p, n = key.split('/', 1)
        ok = _PREFIX_RX.match(p) and _NAME_RX.match(n)
    else:
        ok = _NAME_RX.match(key)
    if not ok or (m.group(2) and not _VALUE_RX.match(m.group(2))):
        raise UserDataError('--register-with-taints: invalid taint %r' % item)
    t = {'key': key, 'effect': m.group(3)}
    if m.group(2):
        t['value'] = m.group(2)
    return t


# ---------------------------------------------------------------------------
# node construction

def _fmt_mem(b):
    return '%dKi' % (int(b) // 1024)


def _fmt_cpu(milli):
    milli = int(milli)
    return str(milli // 1000) if milli % 1000 == 0 else '%dm' % milli


def _fmt_bytes(b):
    b = int(b)
    if b % (2 ** 30) == 0:
        return '%dGi' % (b // 2 ** 30)
    return str(b)


def resources(inst, cfg, with_devices):
    """(capacity, allocatable) for an instance and its kubelet settings."""
    t = catalog.get(inst['InstanceType'])
    mem = t['memory_mib'] * 2 ** 20
    mem = mem - math.ceil(t['memory_mib'] * VM_RESERVED) * 2 ** 20
    if t['arch'] == 'arm64':
        mem -= 64 * 2 ** 20
    cpu_m = t['vcpu'] * 1000
    pods = cfg['max_pods'] if cfg['max_pods'] is not None else 110
    eph = int(inst.get('RootVolumeSizeGiB') or 20) * 2 ** 30
    vols = inst.get('BlockDeviceGiB') or {}
    if cfg.get('raid0') and t['local_nvme_gb']:
        eph = t['local_nvme_gb'] * 10 ** 9    # the instance store as one RAID0 array
    elif cfg.get('family') == 'bottlerocket':
        eph = int(vols.get('/dev/xvdb') or 20) * 2 ** 30   # Bottlerocket's data volume
    cap = {'cpu': _fmt_cpu(cpu_m), 'memory': _fmt_mem(mem), 'pods': str(pods),
           'ephemeral-storage': _fmt_bytes(eph), 'hugepages-1Gi': '0', 'hugepages-2Mi': '0'}
    res = {}
    for src in (cfg['kube_reserved'], cfg['system_reserved']):
        for k, v in src.items():
            res[k] = res.get(k, 0) + v
    ev = cfg['eviction_hard'] if cfg['eviction_hard'] is not None else \
        {'memory.available': '100Mi', 'nodefs.available': '10%'}

    def ev_amount(sig, capacity):
        v = ev.get(sig)
        if not v:
            return 0
        if v.endswith('%'):
            return math.ceil(capacity * float(v[:-1]) / 100.0)
        return parse_quantity(v)
    a_cpu = cpu_m - int(res.get('cpu', 0) * 1000)
    a_mem = mem - res.get('memory', 0) - ev_amount('memory.available', mem)
    a_eph = eph - res.get('ephemeral-storage', 0) - ev_amount('nodefs.available', eph)
    alloc = {'cpu': _fmt_cpu(max(0, a_cpu)), 'memory': _fmt_mem(max(0, a_mem)), 'pods': str(pods),
             'ephemeral-storage': str(max(0, int(a_eph))), 'hugepages-1Gi': '0', 'hugepages-2Mi': '0'}
    if with_devices:
        # the device plugins' resources: NVIDIA, AMD and Habana devices are GPUs to EC2
        gpu_res = {'NVIDIA': 'nvidia.com/gpu', 'AMD': 'amd.com/gpu', 'Habana': 'habana.ai/gaudi'}
        if t['gpu'] and t['gpu']['manufacturer'] in gpu_res:
            r = gpu_res[t['gpu']['manufacturer']]
            cap[r] = alloc[r] = str(t['gpu']['count'])
        if t['neuron']:
            cap['aws.amazon.com/neuron'] = alloc['aws.amazon.com/neuron'] = str(t['neuron']['count'])
            n = str(t['neuron']['count'] * t['neuron']['cores'])
            cap['aws.amazon.com/neuroncore'] = alloc['aws.amazon.com/neuroncore'] = n
    return cap, alloc


def _iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))


def time_slice(cap, alloc, labels):
    """The device plugin's time-slicing, as GPU feature discovery labels the node
    (nvidia.com/gpu.replicas, from the NodePool's template labels): N nvidia.com/gpu per GPU
    in cap and alloc (changed in place). The real tier's node agent does the same."""
    reps = (labels or {}).get('nvidia.com/gpu.replicas', '')
    if reps.isdigit() and int(reps) > 1 and 'nvidia.com/gpu' in alloc:
        for m in (cap, alloc):
            m['nvidia.com/gpu'] = str(int(m['nvidia.com/gpu']) * int(reps))


def build_node(inst, cfg, region, zone_id, now):
    t = catalog.get(inst['InstanceType'])
    zone = inst['Placement']['AvailabilityZone']
    name = cfg['node_name'] or inst['PrivateDnsName']
    arch = 'arm64' if t['arch'] == 'arm64' else 'amd64'
    labels = {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux', 'kubernetes.io/arch': arch,
        'beta.kubernetes.io/os': 'linux', 'beta.kubernetes.io/arch': arch,
        'node.kubernetes.io/instance-type': inst['InstanceType'],
        'beta.kubernetes.io/instance-type': inst['InstanceType'],
        'topology.kubernetes.io/zone': zone, 'topology.kubernetes.io/region': region,
        'failure-domain.beta.kubernetes.io/zone': zone,
        'failure-domain.beta.kubernetes.io/region': region,
        'topology.k8s.aws/zone-id': zone_id,
    }
    labels.update(cfg['labels'])
    cap, alloc = resources(inst, cfg, with_devices=False)
    ts = _iso(now)
    cond = lambda typ, status, reason, msg: {  # noqa: E731
        'type': typ, 'status': status, 'lastHeartbeatTime': ts, 'lastTransitionTime': ts,
        'reason': reason, 'message': msg}
    node = {
        'apiVersion': 'v1', 'kind': 'Node',
        'metadata': {'name': name, 'labels': labels, 'annotations': {
            'node.alpha.kubernetes.io/ttl': '0',
            'volumes.kubernetes.io/controller-managed-attach-detach': 'true'}},
        'spec': {'providerID': cfg['provider_id'] or 'aws:///%s/%s' % (zone, inst['InstanceId'])},
        'status': {
            'capacity': cap, 'allocatable': alloc,
            'conditions': [
                cond('MemoryPressure', 'False', 'KubeletHasSufficientMemory',
                     'kubelet has sufficient memory available'),
                cond('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
                cond('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
                cond('Ready', 'False', 'KubeletNotReady',
                     'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady'),
            ],
            'addresses': [{'type': 'InternalIP', 'address': inst['PrivateIpAddress']},
                          {'type': 'InternalDNS', 'address': inst['PrivateDnsName']},
                          {'type': 'Hostname', 'address': name}],
            'daemonEndpoints': {'kubeletEndpoint': {'Port': 10250}},
            'nodeInfo': {'machineID': uuid.uuid4().hex, 'systemUUID': 'ec2' + uuid.uuid4().hex[3:],
                         'bootID': str(uuid.uuid4()), 'kernelVersion': '6.8.0-1021-aws',
                         'osImage': 'Ubuntu 24.04.1 LTS',
                         'containerRuntimeVersion': 'containerd://1.7.24',
                         'kubeletVersion': KUBELET_VERSION, 'kubeProxyVersion': KUBELET_VERSION,
                         'operatingSystem': 'linux', 'architecture': arch},
        },
    }
    if cfg['taints']:
        node['spec']['taints'] = copy.deepcopy(cfg['taints'])
    return node


# ---------------------------------------------------------------------------

class Kubelets:
    """Watches AwsSim instances and keeps Nodes (and their pods) in a KubeStore.

    boot_delay: seconds from 'running' to Node registration;
    ready_delay: seconds from registration to Ready;
    sync_period: how often every kubelet re-checks that its Node exists.
    """

    def __init__(self, aws, store, boot_delay=2.0, ready_delay=None, sync_period=1.0,
                 notready_delete_delay=None, check_tokens=False, ca_file=None):
        if not hasattr(aws, 'instances') and hasattr(store, 'instances'):
            aws, store = store, aws      # accept (store, aws) too
        self.aws = aws
        self.store = store
        self.boot_delay = boot_delay
        self.ready_delay = ready_delay if ready_delay is not None else max(0.05, boot_delay / 4.0)
        self.sync_period = sync_period
        self.notready_delete_delay = notready_delete_delay
        # check_tokens: a kubeadm join registers only once its bootstrap token would
        # authenticate (check_bootstrap_token against the store's Secret and ca_file's pin)
        self.check_tokens = check_tokens
        self.ca_pin = None
        if check_tokens and ca_file:
            with open(ca_file) as f:
                self.ca_pin = ca_pin(f.read())
        self.lock = threading.RLock()
        self.nodes = {}      # instance id -> {'state', 'name', 'cfg', 'error', 'ready'}
        self._stopped = False
        aws.kubelets = self          # GET /aws/kubelets on the control API
        aws.subscribe(self._on_instance)
        self._t = None
        self.start()

    def start(self):
        """Start the periodic sync (idempotent; the constructor calls it)."""
        with self.lock:
            if self._t is None:
                self._t = threading.Thread(target=self._loop, name='kubelets', daemon=True)
                self._t.start()

    def stop(self):
        self._stopped = True


    def status(self):
        with self.lock:
            return [{'instanceId': i, 'nodeName': k.get('name'), 'state': k['state'],
                     'error': k.get('error')} for i, k in sorted(self.nodes.items())]

    # -- instance lifecycle -------------------------------------------------
    def _on_instance(self, event, inst):
        iid = inst['InstanceId']
        if event == 'running':
            with self.lock:
                self.nodes[iid] = {'state': 'booting', 'inst': inst}
            self.aws.sched.after(self.boot_delay, self._boot, iid)
        elif event == 'shutting-down':
            with self.lock:
                k = self.nodes.get(iid)
                if k:
                    k['state'] = 'stopped'
            if k and k.get('name'):
                self._set_not_ready(k['name'])
        elif event == 'terminated':
            with self.lock:
                k = self.nodes.pop(iid, None)
            if k and k.get('name'):
                if self.notready_delete_delay:
                    self.aws.sched.after(self.notready_delete_delay, self._delete_node, k['name'], iid)
                else:
                    self._delete_node(k['name'], iid)

    def _boot(self, iid):
        with self.lock:
            k = self.nodes.get(iid)
            if not k or k['state'] != 'booting':
                return
        inst = self.aws.instance(iid) or k['inst']
        if inst['State']['Name'] != 'running':
            return
        try:
            cfg = parse_user_data(inst.get('UserData'))
        except UserDataError as e:
            with self.lock:
                k['state'] = 'failed'
                k['error'] = str(e)
            print('kubelet %s: never joins: %s' % (iid, e), flush=True)
            return
        if self.check_tokens:
            why = self._token_refused(cfg)
            if why:
                # kubeadm join keeps retrying discovery; the node joins once the token works
                with self.lock:
                    k['error'] = why
                self.aws.sched.after(self.sync_period, self._boot, iid)
                return
        with self.lock:
            k['cfg'] = cfg
            k['inst'] = inst
            k['name'] = cfg['node_name'] or inst['PrivateDnsName']
            k['state'] = 'registering'
            k['error'] = None
        self._register(iid)

    def _token_refused(self, cfg):
        tok = cfg.get('bootstrap_token')
        try:
            sec = self.store.get('secrets', 'kube-system', 'bootstrap-token-' + tok.split('.')[0]) if tok else None
        except Exception as e:
            return 'cannot read the token Secret: %r' % (e,)
        return check_bootstrap_token(cfg, sec, self.ca_pin, self.aws.clock())

    def _register(self, iid):
        with self.lock:
            k = self.nodes.get(iid)
            if not k or k['state'] not in ('registering', 'ready'):
                return
            inst, cfg = k['inst'], k['cfg']
        node = build_node(inst, cfg, self.aws.region, self.aws.zone_ids[inst['Placement']['AvailabilityZone']],
                          self.aws.clock())
        try:
            existing = self.store.get('nodes', None, node['metadata']['name'])
            if existing is None:
                self.store.create('nodes', None, node)
            elif existing['spec'].get('providerID') != node['spec']['providerID']:
                with self.lock:
                    k['state'] = 'failed'
                    k['error'] = 'a Node named %s already exists for another instance' % node['metadata']['name']
                return
            cur = self.store.get('nodes', None, node['metadata']['name'])
            cur['status'] = node['status']
            cur['metadata'].pop('resourceVersion', None)
            self.store.update_status('nodes', None, cur)
        except Exception as e:
            print('kubelet %s: register failed: %r' % (iid, e), flush=True)
            self.aws.sched.after(self.sync_period, self._register, iid)
            return
        with self.lock:
            k['state'] = 'registered'
        self.aws.sched.after(self.ready_delay, self._ready, iid)

    def _ready(self, iid):
        with self.lock:
            k = self.nodes.get(iid)
            if not k or k['state'] != 'registered':
                return
            inst, cfg, name = k['inst'], k['cfg'], k['name']
        if not self._update_node(name, lambda n: self._mark_ready(n, inst, cfg)):
            self.aws.sched.after(self.sync_period, self._ready, iid)
            return
        with self.lock:
            k['state'] = 'ready'

    def _mark_ready(self, node, inst, cfg):
        cap, alloc = resources(inst, cfg, with_devices=True)
        time_slice(cap, alloc, node.get('metadata', {}).get('labels'))
        st = node.setdefault('status', {})
        st['capacity'], st['allocatable'] = cap, alloc
        ts = _iso(self.aws.clock())
        for c in st.get('conditions', []):
            c['lastHeartbeatTime'] = ts
            if c['type'] == 'Ready':
                if c['status'] != 'True':
                    c['lastTransitionTime'] = ts
                c.update({'status': 'True', 'reason': 'KubeletReady',
                          'message': 'kubelet is posting ready status'})
        return node

    def _set_not_ready(self, name):
        def f(node):
            ts = _iso(self.aws.clock())
            for c in node.get('status', {}).get('conditions', []):
                if c['status'] != 'Unknown':
                    c['lastTransitionTime'] = ts
                c.update({'status': 'Unknown', 'reason': 'NodeStatusUnknown',
                          'message': 'Kubelet stopped posting node status.'})
            return node
        self._update_node(name, f)

    def set_condition(self, iid, typ, status, reason=None, message=None, since=None):
        """Fail (or mend) a condition of the instance's Node, as a broken kubelet or node
        monitoring agent would report it: type (Ready, AcceleratedHardwareReady, KernelReady,
        ...), status True/False/Unknown, lastTransitionTime `since` (epoch seconds, default
        now) when the status changes. The kubelet keeps it until the next change. Returns
        the Node, or None when the instance has no registered Node."""
        if status not in ('True', 'False', 'Unknown'):
            raise ValueError('status must be True, False or Unknown')
        if not typ or not isinstance(typ, str):
            raise ValueError('type must be a condition type')
        with self.lock:
            k = self.nodes.get(iid)
            name = k.get('name') if k and k['state'] in ('registered', 'ready') else None
        if not name:
            return None
        ts = _iso(self.aws.clock())
        lt = _iso(float(since)) if since is not None else ts

        def f(node):
            conds = node.setdefault('status', {}).setdefault('conditions', [])
            c = next((c for c in conds if c.get('type') == typ), None)
            if c is None:
                c = {'type': typ}
                conds.append(c)
            if c.get('status') != status:
                c['lastTransitionTime'] = lt
            c.update({'status': status, 'lastHeartbeatTime': ts,
                      'reason': reason or ('%sFailed' % typ if status != 'True' else typ),
                      'message': message or 'set through the simulator control API'})
            return node
        if not self._update_node(name, f):
            return None
        return self.store.get('nodes', None, name)

    def _update_node(self, name, fn):
        for _ in range(5):
            try:
                cur = self.store.get('nodes', None, name)
                if cur is None:
                    return False
                new = fn(copy.deepcopy(cur))
                self.store.update_status('nodes', None, new)
                return True
            except Exception as e:
                if getattr(e, 'code', None) == 409:
                    continue
                print('kubelet: node %s status update failed: %r' % (name, e), flush=True)
                return False
        return False

    def _delete_node(self, name, iid):
        try:
            n = self.store.get('nodes', None, name)
            if n is not None and n['spec'].get('providerID', '').endswith('/' + iid):
                self.store.delete('nodes', None, name)
        except Exception as e:
            if getattr(e, 'code', None) != 404:
                print('kubelet: delete node %s failed: %r' % (name, e), flush=True)

    def _my_nodes(self):
        with self.lock:
            return {k['name']: iid for iid, k in self.nodes.items()
                    if k.get('name') and k['state'] in ('registered', 'ready')}

    # -- periodic sync ----------------------------------------------------------
    def _loop(self):
        while not self._stopped:
            time.sleep(self.sync_period)
            try:
                self._sync_all()
            except Exception as e:
                print('kubelets: sync failed: %r' % (e,), flush=True)

    def _sync_all(self):
        mine = self._my_nodes()
        for name, iid in mine.items():
            try:
                n = self.store.get('nodes', None, name)
            except Exception:
                continue
            if n is None:
                # the Node object vanished (deleted, or the API server state was
                # reset) while the instance still runs: the kubelet registers again
                with self.lock:
                    k = self.nodes.get(iid)
                    if k and k['state'] in ('registered', 'ready'):
                        k['state'] = 'registering'
                self._register(iid)
                continue
            # the device plugin follows its time-slicing label when it appears after the
            # node went Ready (nodewarden copies the NodeClaim's labels at registration)
            with self.lock:
                k = self.nodes.get(iid)
                ready = k and k['state'] == 'ready'
                inst, cfg = (k['inst'], k['cfg']) if ready else (None, None)
            if ready:
                have = ((n.get('status') or {}).get('allocatable') or {}).get('nvidia.com/gpu')
                want = self._mark_ready(copy.deepcopy(n), inst, cfg)['status']['allocatable'].get('nvidia.com/gpu')
                if have != want:
                    self._update_node(name, lambda node: self._mark_ready(node, inst, cfg))
