"""Simulated AWS: EC2 Query API, SQS (JSON 1.0), STS, IMDSv2, SigV4 checks, faults.

One object, AwsSim, holds all state; AwsSim.handle(method, path, headers, body)
answers one HTTP request (all four services share one port and are told apart
by path and headers, see handle()).  serve() runs it on a ThreadingHTTPServer.
See tests/sim/README.md ("AWS") for what is simulated and how it differs from
the real services; tests/sim/INTERFACE.md for how the halves fit together.

Python 3 standard library only; shares no code with nodewarden.
"""

import base64
import binascii
import email.utils
import hashlib
import heapq
import http.server
import json
import re
import secrets
import threading
import time
import urllib.parse
import uuid
from xml.sax.saxutils import escape

import catalog
import sigv4

EC2_NS = 'http://ec2.amazonaws.com/doc/2016-11-15/'
STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/'
EC2_VERSION = '2016-11-15'
STS_VERSION = '2011-06-15'

STATE_CODES = {'pending': 0, 'running': 16, 'shutting-down': 32, 'terminated': 48,
               'stopping': 64, 'stopped': 80}

USER_DATA_LIMIT = 16384      # bytes, after base64 decoding (EC2 limit)


# ---------------------------------------------------------------------------
# small helpers

def iso8601(t):
    """2026-01-02T03:04:05.000Z"""
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%03dZ' % int((t % 1) * 1000)


def iso8601s(t):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))


def parse_time(s):
    """ISO 8601 (with or without fraction / Z) or epoch seconds -> epoch float."""
    s = s.strip()
    if re.fullmatch(r'\d+(\.\d+)?', s):
        return float(s)
    m = re.fullmatch(r'(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?', s)
    if not m:
        raise ValueError(s)
    import calendar
    t = calendar.timegm(tuple(int(x) for x in m.groups()[:6]) + (0, 0, 0))
    if m.group(7):
        t += float(m.group(7))
    tz = m.group(8)
    if tz and tz != 'Z':
        sign = 1 if tz[0] == '+' else -1
        tz = tz[1:].replace(':', '')
        t -= sign * (int(tz[:2]) * 3600 + int(tz[2:]) * 60)
    return t


def _hex(n):
    return secrets.token_hex((n + 1) // 2)[:n]


def new_id(prefix, n=17):
    return '%s-%s' % (prefix, _hex(n))


def hget(headers, name, default=None):
    """Case-insensitive header lookup on a dict, list of pairs or HTTPMessage."""
    if headers is None:
        return default
    if hasattr(headers, 'get_all'):
        v = headers.get(name)
        return default if v is None else v
    items = headers.items() if hasattr(headers, 'items') else headers
    for k, v in items:
        if k.lower() == name.lower():
            return v
    return default


def xml_value(tag, val):
    """dict -> child elements, list -> <item> children, bool -> true/false."""
    if val is None:
        return ''
    if isinstance(val, bool):
        return '<%s>%s</%s>' % (tag, 'true' if val else 'false', tag)
    if isinstance(val, dict):
        return '<%s>%s</%s>' % (tag, ''.join(xml_value(k, v) for k, v in val.items()), tag)
    if isinstance(val, (list, tuple)):
        if not val:
            return '<%s/>' % tag
        return '<%s>%s</%s>' % (tag, ''.join(xml_value('item', v) for v in val), tag)
    if isinstance(val, float):
        val = ('%.6f' % val).rstrip('0').rstrip('.')
    return '<%s>%s</%s>' % (tag, escape(str(val)), tag)


def tag_set(tags):
    return [{'key': k, 'value': v} for k, v in tags.items()]


def unflatten(params, prefix):
    """{'A.1.B': 'x', 'A.1.C.1': 'y'} with prefix 'A' -> [{'B': 'x', 'C': ['y']}].
    Numeric path segments become lists ordered by index."""
    root = {}
    pre = prefix + '.'
    found = False
    for k, v in params.items():
        if k == prefix:
            return v
        if not k.startswith(pre):
            continue
        found = True
        cur = root
        segs = k[len(pre):].split('.')
        for s in segs[:-1]:
            cur = cur.setdefault(s, {})
            if not isinstance(cur, dict):
                raise Ec2Error('InvalidParameterValue', 'Parameter %s has a conflicting value' % k)
        cur[segs[-1]] = v
    if not found:
        return None

    def fix(node):
        if not isinstance(node, dict):
            return node
        if node and all(s.isdigit() for s in node):
            return [fix(node[s]) for s in sorted(node, key=int)]
        return {s: fix(c) for s, c in node.items()}
    return fix(root)


def wildcard(pattern):
    """EC2 filter value: '*' any run, '?' one character, '\\' escapes."""
    out = ''
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == '\\' and i + 1 < len(pattern):
            out += re.escape(pattern[i + 1])
            i += 2
            continue
        out += '.*' if c == '*' else '.' if c == '?' else re.escape(c)
        i += 1
    return re.compile('^' + out + '$', re.S)


class Ec2Error(Exception):
    STATUS = {
        'AuthFailure': 401, 'UnauthorizedOperation': 403, 'SignatureDoesNotMatch': 403,
        'DryRunOperation': 412, 'RequestLimitExceeded': 503, 'InternalError': 500,
        'Unavailable': 503, 'ServiceUnavailable': 503, 'InsufficientInstanceCapacity': 500,
        'IncompleteSignature': 400, 'RequestExpired': 400,
    }

    def __init__(self, code, message, status=None):
        Exception.__init__(self, '%s: %s' % (code, message))
        self.code = code
        self.message = message
        self.status = status or self.STATUS.get(code, 400)


class SqsError(Exception):
    def __init__(self, code, message, status=400, query_code=None, fault='Sender', ns='com.amazonaws.sqs'):
        Exception.__init__(self, '%s: %s' % (code, message))
        self.code, self.message, self.status = code, message, status
        self.query_code, self.fault, self.ns = query_code or code, fault, ns


class Scheduler:
    """One daemon thread running callbacks at (monotonic) due times."""

    def __init__(self, name='aws-sched'):
        self._heap = []
        self._cv = threading.Condition()
        self._seq = 0
        self._stopped = False
        self._t = threading.Thread(target=self._run, name=name, daemon=True)
        self._t.start()

    def after(self, delay, fn, *args):
        with self._cv:
            self._seq += 1
            heapq.heappush(self._heap, (time.monotonic() + max(0.0, delay), self._seq, fn, args))
            self._cv.notify()

    def stop(self):
        with self._cv:
            self._stopped = True
            self._cv.notify()

    def _run(self):
        while True:
            with self._cv:
                while not self._stopped:
                    if self._heap and self._heap[0][0] <= time.monotonic():
                        break
                    timeout = (self._heap[0][0] - time.monotonic()) if self._heap else None
                    self._cv.wait(timeout)
                if self._stopped:
                    return
                _, _, fn, args = heapq.heappop(self._heap)
            try:
                fn(*args)
            except Exception as e:  # a callback's bug must not kill the simulator
                import traceback
                traceback.print_exc()
                print('aws scheduler: callback failed: %r' % e)


# ---------------------------------------------------------------------------
# parameter schemas: every request parameter must match one of these
# patterns after numeric path segments are replaced by 'N' (EC2 answers
# UnknownParameter otherwise).  '*' ends a pattern: anything below it.

_FILTER = ['Filter.N.Name', 'Filter.N.Value.N']
_TAGSPEC = ['TagSpecification.N.ResourceType', 'TagSpecification.N.Tag.N.Key',
            'TagSpecification.N.Tag.N.Value']
_LT_DATA = ['LaunchTemplateData.' + p for p in [
    'KernelId', 'EbsOptimized', 'IamInstanceProfile.Arn', 'IamInstanceProfile.Name',
    'BlockDeviceMapping.N.DeviceName', 'BlockDeviceMapping.N.VirtualName',
    'BlockDeviceMapping.N.NoDevice', 'BlockDeviceMapping.N.Ebs.*',
    'NetworkInterface.N.*', 'ImageId', 'InstanceType', 'KeyName', 'Monitoring.Enabled',
    'Placement.*', 'RamDiskId', 'DisableApiTermination', 'DisableApiStop',
    'InstanceInitiatedShutdownBehavior', 'UserData',
    'TagSpecification.N.ResourceType', 'TagSpecification.N.Tag.N.Key',
    'TagSpecification.N.Tag.N.Value', 'ElasticGpuSpecification.*',
    'ElasticInferenceAccelerator.*', 'SecurityGroupId.N', 'SecurityGroup.N',
    'InstanceMarketOptions.*', 'CreditSpecification.*', 'CpuOptions.*',
    'CapacityReservationSpecification.*', 'LicenseSpecification.*', 'HibernationOptions.*',
    'MetadataOptions.HttpTokens', 'MetadataOptions.HttpPutResponseHopLimit',
    'MetadataOptions.HttpEndpoint', 'MetadataOptions.HttpProtocolIpv6',
    'MetadataOptions.InstanceMetadataTags', 'EnclaveOptions.*', 'InstanceRequirements.*',
    'PrivateDnsNameOptions.*', 'MaintenanceOptions.*']]
_OVR = ['LaunchTemplateConfigs.N.Overrides.N.' + p for p in [
    'InstanceType', 'MaxPrice', 'SubnetId', 'AvailabilityZone', 'WeightedCapacity', 'Priority',
    'Placement.*', 'InstanceRequirements.*', 'ImageId', 'BlockDeviceMapping.*']]

SCHEMAS = {
    'DescribeInstanceTypes': ['InstanceType.N', 'MaxResults', 'NextToken'] + _FILTER,
    'DescribeInstanceTypeOfferings': ['LocationType', 'MaxResults', 'NextToken'] + _FILTER,
    'DescribeSpotPriceHistory': ['StartTime', 'EndTime', 'InstanceType.N', 'ProductDescription.N',
                                 'AvailabilityZone', 'MaxResults', 'NextToken'] + _FILTER,
    'DescribeAvailabilityZones': ['ZoneName.N', 'ZoneId.N', 'AllAvailabilityZones'] + _FILTER,
    'DescribeSubnets': ['SubnetId.N', 'MaxResults', 'NextToken'] + _FILTER,
    'DescribeSecurityGroups': ['GroupId.N', 'GroupName.N', 'MaxResults', 'NextToken'] + _FILTER,
    'DescribeImages': ['ImageId.N', 'Owner.N', 'ExecutableBy.N', 'IncludeDeprecated',
                       'IncludeDisabled', 'MaxResults', 'NextToken'] + _FILTER,
    'CreateLaunchTemplate': ['LaunchTemplateName', 'VersionDescription', 'ClientToken']
    + _LT_DATA + _TAGSPEC,
    'DescribeLaunchTemplates': ['LaunchTemplateId.N', 'LaunchTemplateName.N', 'MaxResults',
                                'NextToken'] + _FILTER,
    'DeleteLaunchTemplate': ['LaunchTemplateId', 'LaunchTemplateName'],
    'CreateFleet': ['ClientToken', 'Type', 'Context', 'ExcessCapacityTerminationPolicy',
                    'TerminateInstancesWithExpiration', 'ValidFrom', 'ValidUntil',
                    'ReplaceUnhealthyInstances', 'SpotOptions.*', 'OnDemandOptions.*',
                    'TargetCapacitySpecification.TotalTargetCapacity',
                    'TargetCapacitySpecification.OnDemandTargetCapacity',
                    'TargetCapacitySpecification.SpotTargetCapacity',
                    'TargetCapacitySpecification.DefaultTargetCapacityType',
                    'TargetCapacitySpecification.TargetCapacityUnitType',
                    'LaunchTemplateConfigs.N.LaunchTemplateSpecification.LaunchTemplateId',
                    'LaunchTemplateConfigs.N.LaunchTemplateSpecification.LaunchTemplateName',
                    'LaunchTemplateConfigs.N.LaunchTemplateSpecification.Version']
    + _OVR + _TAGSPEC,
    'RunInstances': ['ImageId', 'InstanceType', 'MinCount', 'MaxCount', 'SubnetId',
                     'SecurityGroupId.N', 'SecurityGroup.N', 'UserData', 'KeyName',
                     'ClientToken', 'EbsOptimized', 'PrivateIpAddress', 'KernelId', 'RamdiskId',
                     'InstanceInitiatedShutdownBehavior', 'DisableApiTermination',
                     'DisableApiStop', 'Monitoring.Enabled', 'Placement.*',
                     'IamInstanceProfile.Arn', 'IamInstanceProfile.Name',
                     'BlockDeviceMapping.*', 'NetworkInterface.*', 'LaunchTemplate.LaunchTemplateId',
                     'LaunchTemplate.LaunchTemplateName', 'LaunchTemplate.Version',
                     'InstanceMarketOptions.*', 'CreditSpecification.*', 'CpuOptions.*',
                     'CapacityReservationSpecification.*', 'MetadataOptions.*',
                     'HibernationOptions.*', 'EnclaveOptions.*', 'MaintenanceOptions.*',
                     'PrivateDnsNameOptions.*'] + _TAGSPEC,
    'CreateTags': ['ResourceId.N', 'Tag.N.Key', 'Tag.N.Value'],
    'DescribeInstances': ['InstanceId.N', 'MaxResults', 'NextToken'] + _FILTER,
    'TerminateInstances': ['InstanceId.N', 'Force', 'SkipOsShutdown'],
}
_COMMON = {'Action', 'Version', 'DryRun'}


def _compile_schema(pats):
    out = []
    for p in pats:
        rx = re.escape(p).replace(r'\.N\.', r'\.\d+\.').replace(r'\*', '.+')
        rx = re.sub(r'\\\.N$', r'\\.\\d+', rx)
        out.append(re.compile('^' + rx + '$'))
    return out


_SCHEMA_RX = {a: _compile_schema(p) for a, p in SCHEMAS.items()}

EC2_ACTIONS = tuple(SCHEMAS)
STS_ACTIONS = ('AssumeRoleWithWebIdentity', 'GetCallerIdentity')


def _bool(v, name):
    if v is None:
        return None
    lv = str(v).lower()
    if lv in ('true', '1'):
        return True
    if lv in ('false', '0'):
        return False
    raise Ec2Error('InvalidParameterValue', "Value (%s) for parameter %s is invalid. Expected a "
                                            "boolean." % (v, name))


def _int(v, name, lo=None, hi=None):
    if v is None:
        return None
    try:
        n = int(v)
    except ValueError:
        raise Ec2Error('InvalidParameterValue', "Value (%s) for parameter %s is invalid. Expected "
                                                "an integer." % (v, name))
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        raise Ec2Error('InvalidParameterValue', 'Value (%d) for parameter %s is invalid. It must be '
                                                'between %s and %s.' % (n, name, lo, hi))
    return n


# ---------------------------------------------------------------------------

class AwsSim:
    """The simulated AWS account.  Thread-safe; all state under self.lock."""

    def __init__(self, region='us-west-2', account='123456789012', clock=time.time,
                 cluster='sim', access_key='AKIASIMULATOR0000001',
                 secret_key='simSecretKey0000000000000000000000000000',
                 queue_name=None, pending_seconds=0.5, shutdown_seconds=1.0,
                 terminated_retention=600.0, spot_warning_seconds=120.0,
                 credential_ttl=3600, role_name='nodewarden-sim-node'):
        self.region = region
        self.account = account
        self.clock = clock
        self.cluster = cluster
        self.access_key = self.access_key_id = access_key
        self.secret_key = self.secret_access_key = secret_key
        self.queue_name = queue_name or cluster
        self.pending_seconds = pending_seconds
        self.shutdown_seconds = shutdown_seconds
        self.terminated_retention = terminated_retention
        self.spot_warning_seconds = spot_warning_seconds
        self.credential_ttl = credential_ttl
        self.role_name = role_name
        self.lock = threading.RLock()
        self._sqs_cv = threading.Condition(self.lock)
        self.sched = Scheduler()
        self._subs = []
        self.zones = ['%s%s' % (region, c) for c in 'abc']
        self.zone_ids = {z: '%s-az%d' % (_region_abbrev(region), i + 1)
                         for i, z in enumerate(self.zones)}
        self.dns_suffix = 'ec2.internal' if region == 'us-east-1' else '%s.compute.internal' % region
        self.start_time = clock()
        self._seed()
        self.reset_faults()
        self.calls = []
        self._call_seq = 0
        self.instances_by_id = {}
        self.launch_templates = {}
        self.fleets = {}
        self.temp_creds = {}
        self.imds_tokens = {}
        self.imds_cred = None
        self.sqs_messages = []      # dicts: id, body, sent, visible_at, receipt, receives
        self.state_change_events = True
        self.spot_overrides = {}    # (type, zone) -> price

    # -- seed data --------------------------------------------------------
    def _seed(self):
        c = self.cluster
        disc = {'karpenter.sh/discovery': c}
        self.vpc = {'id': 'vpc-0sim%013x' % 1, 'cidr': '10.0.0.0/16'}
        self.subnets = {}
        for i, z in enumerate(self.zones):
            sid = 'subnet-0sim%012x' % (i + 1)
            self.subnets[sid] = {
                'id': sid, 'zone': z, 'cidr': '10.0.%d.0/19' % (i * 32), 'base': (10, 0, i * 32),
                'size': 8192, 'next_host': 10, 'used': 0,
                'tags': dict(disc, Name='%s-private-%s' % (c, z),
                             **{'kubernetes.io/role/internal-elb': '1'}),
                'public': False}
            pid = 'subnet-0pub%012x' % (i + 1)
            self.subnets[pid] = {
                'id': pid, 'zone': z, 'cidr': '10.0.%d.0/24' % (200 + i), 'base': (10, 0, 200 + i),
                'size': 256, 'next_host': 10, 'used': 0,
                'tags': {'Name': '%s-public-%s' % (c, z), 'kubernetes.io/role/elb': '1'},
                'public': True}
        self.security_groups = {
            'sg-0sim00000000000001': {'id': 'sg-0sim00000000000001', 'name': '%s-node' % c,
                                      'desc': 'nodes of %s' % c,
                                      'tags': dict(disc, Name='%s-node' % c)},
            'sg-0sim00000000000002': {'id': 'sg-0sim00000000000002', 'name': 'default',
                                      'desc': 'default VPC security group', 'tags': {}},
        }
        self.images = {}
        base = 1767225600  # 2026-01-01T00:00:00Z
        for i, (arch, ver, days) in enumerate([('x86_64', '20260105', 4), ('x86_64', '20251201', -31),
                                               ('arm64', '20260105', 4), ('arm64', '20251201', -31)]):
            iid = 'ami-0sim%013x' % (i + 1)
            name = 'nodewarden-kubeadm-1.31-%s-%s' % (arch, ver)
            self.images[iid] = {
                'id': iid, 'name': name, 'arch': arch, 'created': base + days * 86400,
                'owner': self.account, 'public': False,
                'desc': 'Ubuntu 24.04 + containerd + kubeadm/kubelet 1.31 (%s)' % arch,
                'tags': dict(disc, Name=name, **{'nodewarden.io/k8s-version': '1.31'})}
        # an Amazon-owned public image (found with Owner=amazon)
        self.images['ami-0amazon0000000001'] = {
            'id': 'ami-0amazon0000000001', 'name': 'al2023-ami-2023.6.20260101.0-kernel-6.1-x86_64',
            'arch': 'x86_64', 'created': base, 'owner': '137112412989', 'public': True,
            'alias': 'amazon', 'desc': 'Amazon Linux 2023 AMI', 'tags': {}}

    # -- subscriptions & control -------------------------------------------
    def subscribe(self, fn):
        """fn(event, instance) on 'running', 'shutting-down', 'terminated'."""
        with self.lock:
            self._subs.append(fn)

    def stop(self):
        self.sched.stop()
        with self.lock:
            self._sqs_cv.notify_all()

    def reset_faults(self):
        with self.lock:
            self.faults = {
                'ice': [],          # list of dicts {capacityType, instanceType, zone} ('*' = any)
                'throttle': {'rate': 0.0, 'actions': None, 'acc': 0.0},
                'errors': {'rate': 0.0, 'actions': None, 'acc': 0.0, 'status': 500,
                           'code': 'InternalError'},
                'latency_ms': 0, 'latency_actions': None,
                'deny': set(),
                'reject_web_identity': False,
            }

    def register_control(self, control):
        for m in ('GET', 'POST', 'PUT', 'DELETE'):
            control.route(m, '/aws', self.control)

    # -- public views -----------------------------------------------------
    def instances(self):
        with self.lock:
            return [self._public(i) for i in self.instances_by_id.values()]

    def instance(self, iid):
        with self.lock:
            i = self.instances_by_id.get(iid)
            return self._public(i) if i else None

    def _public(self, i):
        d = {'InstanceId': i['id'], 'InstanceType': i['type'], 'ImageId': i['image'],
             'Placement': {'AvailabilityZone': i['zone'], 'AvailabilityZoneId': self.zone_ids[i['zone']]},
             'State': {'Name': i['state'], 'Code': STATE_CODES[i['state']]},
             'UserData': i['user_data'], 'Tags': [{'Key': k, 'Value': v} for k, v in i['tags'].items()],
             'LaunchTime': iso8601s(i['launch_time']), 'PrivateIpAddress': i['private_ip'],
             'PrivateDnsName': i['private_dns'], 'SubnetId': i['subnet'],
             'Architecture': catalog.get(i['type'])['arch'],
             'RootVolumeSizeGiB': i['root_gb'], 'SecurityGroupIds': list(i['sgs']),
             'LaunchTemplate': i.get('lt'), 'CapacityType': 'spot' if i['spot'] else 'on-demand'}
        if i['spot']:
            d['SpotInstanceRequestId'] = i['sir']
        return d

    # -- HTTP entry point ---------------------------------------------------
    def handle(self, method, path, headers, body):
        """-> (status, headers dict, body bytes).  Dispatch:
        /latest/... -> IMDS; X-Amz-Target AmazonSQS.* -> SQS JSON;
        otherwise a Query request whose Action names an STS or EC2 action."""
        if isinstance(body, str):
            body = body.encode('utf-8')
        body = body or b''
        raw_path, _, raw_query = path.partition('?')
        try:
            if raw_path.startswith('/latest/') or raw_path == '/latest':
                return self._imds(method, raw_path, headers)
            target = hget(headers, 'X-Amz-Target', '')
            if target.startswith('AmazonSQS.'):
                return self._sqs(method, raw_path, raw_query, headers, body, target)
            params = {}
            for k, v in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
                params[k] = v
            ctype = (hget(headers, 'Content-Type', '') or '').lower()
            if method == 'POST' and body and (ctype.startswith('application/x-www-form-urlencoded')
                                              or not ctype):
                for k, v in urllib.parse.parse_qsl(body.decode('utf-8', 'replace'),
                                                   keep_blank_values=True):
                    params[k] = v
            if params.get('Action') in STS_ACTIONS:
                return self._sts(method, raw_path, raw_query, headers, body, params)
            return self._ec2(method, raw_path, raw_query, headers, body, params)
        except Exception as e:  # never let a simulator bug look like a hang
            import traceback
            traceback.print_exc()
            rid = str(uuid.uuid4())
            return self._ec2_error(Ec2Error('InternalError', 'simulator error: %r' % e), rid)

    # -- call log ---------------------------------------------------------
    def _log(self, service, action, params, status, code=None):
        with self.lock:
            self._call_seq += 1
            self.calls.append({'seq': self._call_seq, 'time': iso8601(self.clock()),
                               'service': service, 'action': action,
                               'params': {k: v for k, v in params.items()
                                          if k not in ('Action', 'Version', 'WebIdentityToken')},
                               'status': status, 'code': code})
            if len(self.calls) > 20000:
                del self.calls[:len(self.calls) - 20000]

    # -- credentials ------------------------------------------------------
    def _lookup(self, akid):
        with self.lock:
            if akid == self.access_key:
                return {'secret': self.secret_key, 'token': None, 'expires': None}
            c = self.temp_creds.get(akid)
            return dict(c) if c else None

    def _new_temp_creds(self, ttl):
        akid = 'ASIA' + ''.join(secrets.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567') for _ in range(16))
        secret = base64.b64encode(secrets.token_bytes(30)).decode()
        token = 'IQoJb3JpZ2luX2VjE' + base64.b64encode(secrets.token_bytes(96)).decode()
        expires = float(int(self.clock() + ttl))   # whole seconds, as Expiration shows
        with self.lock:
            self.temp_creds[akid] = {'secret': secret, 'token': token, 'expires': expires}
        return akid, secret, token, expires

    def _verify(self, method, raw_path, raw_query, headers, body, service):
        return sigv4.verify(method, raw_path, raw_query, headers, body, self._lookup,
                            self.region, service, self.clock())

    # -- faults -----------------------------------------------------------
    def _rate_hit(self, f, action):
        if f['rate'] <= 0 or (f['actions'] and action not in f['actions']):
            return False
        f['acc'] += f['rate']
        if f['acc'] >= 1.0 - 1e-9:
            f['acc'] -= 1.0
            return True
        return False

    def _ice_hit(self, ctype, itype, zone):
        for r in self.faults['ice']:
            if r['capacityType'] in ('*', ctype) and r['instanceType'] in ('*', itype) \
                    and r['zone'] in ('*', zone):
                return r.get('code', 'InsufficientInstanceCapacity')
        return None

    def _latency(self, action):
        ms = self.faults['latency_ms']
        acts = self.faults['latency_actions']
        if ms > 0 and (not acts or action in acts):
            time.sleep(ms / 1000.0)

    # =====================================================================
    # EC2
    def _ec2_error(self, e, rid):
        body = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>%s</Code>'
                '<Message>%s</Message></Error></Errors><RequestID>%s</RequestID></Response>'
                % (escape(e.code), escape(e.message), rid))
        return e.status, {'Content-Type': 'text/xml;charset=UTF-8'}, body.encode('utf-8')

    def _ec2(self, method, raw_path, raw_query, headers, body, params):
        rid = str(uuid.uuid4())
        action = params.get('Action', '')
        try:
            if method not in ('GET', 'POST'):
                raise Ec2Error('InvalidAction', 'Method %s is not supported' % method)
            self._latency(action)
            try:
                self._verify(method, raw_path, raw_query, headers, body, 'ec2')
            except sigv4.SigError as se:
                code = {'unknown-key': 'AuthFailure', 'mismatch': 'SignatureDoesNotMatch',
                        'stale': 'AuthFailure', 'expired': 'RequestExpired',
                        'malformed': 'IncompleteSignature', 'missing': 'AuthFailure',
                        'scope': 'AuthFailure', 'token': 'AuthFailure'}[se.kind]
                if se.kind in ('unknown-key', 'missing', 'token'):
                    msg = 'AWS was not able to validate the provided access credentials'
                else:
                    msg = se.message
                raise Ec2Error(code, msg)
            if not action:
                raise Ec2Error('MissingAction', 'The request must contain the parameter Action')
            if 'Version' not in params:
                raise Ec2Error('MissingParameter', 'The request must contain the parameter Version')
            if params['Version'] != EC2_VERSION:
                raise Ec2Error('InvalidParameterValue', 'The simulator implements EC2 API version %s '
                                                        'only, not %s' % (EC2_VERSION, params['Version']))
            if action not in SCHEMAS:
                raise Ec2Error('InvalidAction', 'The action %s is not valid for this web service.' % action)
            with self.lock:
                if self._rate_hit(self.faults['throttle'], action):
                    raise Ec2Error('RequestLimitExceeded', 'Request limit exceeded.')
                ef = self.faults['errors']
                if self._rate_hit(ef, action):
                    msg = {'InternalError': 'An internal error has occurred',
                           'Unavailable': 'The server is overloaded and can\'t handle the request.'}
                    raise Ec2Error(ef['code'], msg.get(ef['code'], 'Server error'), ef['status'])
            rx = _SCHEMA_RX[action]
            for k in params:
                if k in _COMMON:
                    continue
                if not any(r.match(k) for r in rx):
                    raise Ec2Error('UnknownParameter', 'The parameter %s is not recognized' % k)
            dry = _bool(params.get('DryRun'), 'DryRun')
            with self.lock:
                denied = action in self.faults['deny']
            if denied:
                raise Ec2Error('UnauthorizedOperation', 'You are not authorized to perform this '
                               'operation. User: arn:aws:iam::%s:user/nodewarden is not authorized to '
                               'perform: ec2:%s' % (self.account, action))
            fn = getattr(self, '_ec2_' + action)
            if dry:
                # validate like the real call would, without doing it
                raise Ec2Error('DryRunOperation', 'Request would have succeeded, but DryRun flag is set.')
            result = fn(params)
        except Ec2Error as e:
            self._log('ec2', action, params, e.status, e.code)
            return self._ec2_error(e, rid)
        self._log('ec2', action, params, 200)
        xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s"><requestId>%s</requestId>%s'
               '</%sResponse>' % (action, EC2_NS, rid,
                                  ''.join(xml_value(k, v) for k, v in result.items()), action))
        return 200, {'Content-Type': 'text/xml;charset=UTF-8'}, xml.encode('utf-8')

    # -- filters & paging -------------------------------------------------
    def _filters(self, params, allowed):
        fl = unflatten(params, 'Filter') or []
        if not isinstance(fl, list):
            raise Ec2Error('InvalidParameterValue', 'Filter must be a list')
        out = []
        for i, f in enumerate(fl):
            if not isinstance(f, dict) or 'Name' not in f:
                raise Ec2Error('InvalidParameterValue', 'Filter.%d.Name is required' % (i + 1))
            name = f['Name']
            vals = f.get('Value') or []
            if not isinstance(vals, list) or not vals:
                raise Ec2Error('InvalidParameterValue', 'The filter %s requires at least one value'
                               % name)
            if not (name in allowed or (name.startswith('tag:') and 'tag:' in allowed)):
                raise Ec2Error('InvalidParameterValue', "The filter '%s' is invalid" % name)
            out.append((name, [wildcard(v) for v in vals]))
        return out

    @staticmethod
    def _match(filters, getters, obj):
        for name, pats in filters:
            if name.startswith('tag:'):
                tags = getters['tag:'](obj)
                key = name[4:]
                vals = [tags[key]] if key in tags else []
            else:
                v = getters[name](obj)
                vals = v if isinstance(v, list) else [v]
            svals = [('true' if x else 'false') if isinstance(x, bool) else str(x) for x in vals]
            if not any(p.match(s) for p in pats for s in svals):
                return False
        return True

    @staticmethod
    def _tag_getters(get_tags):
        return {'tag:': get_tags, 'tag-key': lambda o: list(get_tags(o).keys()),
                'tag-value': lambda o: list(get_tags(o).values())}

    def _page(self, action, items, params, lo, hi, default):
        mr = _int(params.get('MaxResults'), 'MaxResults', lo, hi)
        start = 0
        tok = params.get('NextToken')
        if tok:
            try:
                d = json.loads(base64.urlsafe_b64decode(tok.encode()).decode())
                if d['a'] != action:
                    raise ValueError
                start = int(d['o'])
            except (ValueError, KeyError, TypeError, binascii.Error, UnicodeDecodeError):
                raise Ec2Error('InvalidParameterValue', 'Invalid NextToken: %s' % tok[:64])
        size = mr if mr is not None else default
        if size is None:
            return items[start:], None
        page = items[start:start + size]
        nxt = None
        if start + size < len(items):
            nxt = base64.urlsafe_b64encode(json.dumps({'a': action, 'o': start + size}).encode()).decode()
        return page, nxt

    # -- instance types -------------------------------------------------------
    def _type_xml(self, t):
        n = t['network_cards']
        card_enis = t['enis']
        cards = [{'networkCardIndex': i, 'networkPerformance': t['network_performance'],
                  'maximumNetworkInterfaces': card_enis,
                  'baselineBandwidthInGbps': round(t['baseline_network_mbps'] / 1000.0 / n, 3),
                  'peakBandwidthInGbps': round(t['baseline_network_mbps'] / 1000.0 / n, 3)}
                 for i in range(n)]
        ni = {'networkPerformance': t['network_performance'],
              'maximumNetworkInterfaces': card_enis * n, 'maximumNetworkCards': n,
              'defaultNetworkCardIndex': 0, 'networkCards': cards,
              'ipv4AddressesPerInterface': t['ipv4_per_eni'],
              'ipv6AddressesPerInterface': t['ipv4_per_eni'], 'ipv6Supported': True,
              'enaSupport': 'required', 'efaSupported': t['efa'] > 0,
              'encryptionInTransitSupported': t['family'] not in ('t3', 'm5', 'c5', 'r5'),
              'enaSrdSupported': False}
        if t['efa']:
            ni['efaInfo'] = {'maximumEfaInterfaces': t['efa']}
        x = {'instanceType': t['name'], 'currentGeneration': t['current_generation'],
             'freeTierEligible': t['name'] in ('t3.micro',),
             'supportedUsageClasses': ['on-demand', 'spot'],
             'supportedRootDeviceTypes': ['ebs'], 'supportedVirtualizationTypes': ['hvm'],
             'bareMetal': t['bare_metal'], 'hypervisor': t['hypervisor'] or None,
             'processorInfo': {'supportedArchitectures': [t['arch']],
                               'sustainedClockSpeedInGhz': t['clock_ghz'],
                               'manufacturer': t['cpu_manufacturer']},
             'vCpuInfo': {'defaultVCpus': t['vcpu'],
                          'defaultCores': t['vcpu'] if t['arch'] == 'arm64' else max(1, t['vcpu'] // 2),
                          'defaultThreadsPerCore': 1 if t['arch'] == 'arm64' else (2 if t['vcpu'] > 1 else 1)},
             'memoryInfo': {'sizeInMiB': t['memory_mib']},
             'instanceStorageSupported': t['local_nvme_gb'] > 0}
        if t['local_nvme_gb']:
            x['instanceStorageInfo'] = {'totalSizeInGB': t['local_nvme_gb'],
                                        'disks': [{'sizeInGB': t['local_nvme_gb'], 'count': 1,
                                                   'type': 'ssd'}],
                                        'nvmeSupport': 'required', 'encryptionSupport': 'required'}
        x['ebsInfo'] = {'ebsOptimizedSupport': 'default', 'encryptionSupport': 'supported',
                        'ebsOptimizedInfo': {'baselineBandwidthInMbps': t['ebs_max_mbps'] // 4,
                                             'baselineThroughputInMBps': round(t['ebs_max_mbps'] / 32.0, 3),
                                             'baselineIops': t['ebs_max_mbps'] * 4,
                                             'maximumBandwidthInMbps': t['ebs_max_mbps'],
                                             'maximumThroughputInMBps': round(t['ebs_max_mbps'] / 8.0, 3),
                                             'maximumIops': t['ebs_max_mbps'] * 4},
                        'nvmeSupport': 'required'}
        x['networkInfo'] = ni
        if t['gpu']:
            g = t['gpu']
            x['gpuInfo'] = {'gpus': [{'name': g['name'], 'manufacturer': g['manufacturer'],
                                      'count': g['count'], 'memoryInfo': {'sizeInMiB': g['memory_mib']}}],
                            'totalGpuMemoryInMiB': g['count'] * g['memory_mib']}
        if t['neuron']:
            nn = t['neuron']
            x['neuronInfo'] = {'neuronDevices': [{'count': nn['count'], 'name': nn['name'],
                                                  'coreInfo': {'count': nn['cores'], 'version': 2},
                                                  'memoryInfo': {'sizeInMiB': nn['memory_mib']}}],
                               'totalNeuronDeviceMemoryInMiB': nn['count'] * nn['memory_mib']}
        x.update({'placementGroupInfo': {'supportedStrategies': ['cluster', 'partition', 'spread']},
                  'hibernationSupported': not t['gpu'] and not t['bare_metal'],
                  'burstablePerformanceSupported': t['burstable'],
                  'dedicatedHostsSupported': True, 'autoRecoverySupported': not t['local_nvme_gb'],
                  'supportedBootModes': ['legacy-bios', 'uefi'] if t['arch'] == 'x86_64' else ['uefi'],
                  'nitroEnclavesSupport': 'supported' if t['vcpu'] >= 4 else 'unsupported',
                  'nitroTpmSupport': 'supported'})
        return x

    _IT_GETTERS = {
        'instance-type': lambda t: t['name'],
        'current-generation': lambda t: t['current_generation'],
        'processor-info.supported-architecture': lambda t: [t['arch']],
        'processor-info.sustained-clock-speed-in-ghz': lambda t: t['clock_ghz'],
        'supported-virtualization-type': lambda t: ['hvm'],
        'supported-usage-class': lambda t: ['on-demand', 'spot'],
        'supported-root-device-type': lambda t: ['ebs'],
        'bare-metal': lambda t: t['bare_metal'],
        'hypervisor': lambda t: t['hypervisor'],
        'burstable-performance-supported': lambda t: t['burstable'],
        'free-tier-eligible': lambda t: False,
        'instance-storage-supported': lambda t: t['local_nvme_gb'] > 0,
        'instance-storage-info.total-size-in-gb': lambda t: t['local_nvme_gb'],
        'vcpu-info.default-vcpus': lambda t: t['vcpu'],
        'memory-info.size-in-mib': lambda t: t['memory_mib'],
        'network-info.efa-supported': lambda t: t['efa'] > 0,
        'network-info.ena-support': lambda t: 'required',
        'network-info.maximum-network-interfaces': lambda t: t['enis'] * t['network_cards'],
        'network-info.ipv4-addresses-per-interface': lambda t: t['ipv4_per_eni'],
        'network-info.encryption-in-transit-supported':
            lambda t: t['family'] not in ('t3', 'm5', 'c5', 'r5'),
        'nitro-enclaves-support': lambda t: 'supported' if t['vcpu'] >= 4 else 'unsupported',
        'nitro-tpm-support': lambda t: 'supported',
        'dedicated-hosts-supported': lambda t: True,
        'hibernation-supported': lambda t: not t['gpu'] and not t['bare_metal'],
        'auto-recovery-supported': lambda t: not t['local_nvme_gb'],
    }

    def _ec2_DescribeInstanceTypes(self, p):
        want = unflatten(p, 'InstanceType') or []
        unknown = [w for w in want if not catalog.get(w)]
        if unknown:
            raise Ec2Error('InvalidInstanceType', 'The following supplied instance types do not '
                                                  'exist: [%s]' % ', '.join(unknown))
        filters = self._filters(p, set(self._IT_GETTERS))
        types = [catalog.get(n) for n in (want or catalog.names())]
        types = [t for t in types if self._match(filters, self._IT_GETTERS, t)]
        page, nxt = self._page('DescribeInstanceTypes', types, p, 5, 100, 100)
        return {'instanceTypeSet': [self._type_xml(t) for t in page], 'nextToken': nxt}

    def _ec2_DescribeInstanceTypeOfferings(self, p):
        lt = p.get('LocationType', 'region')
        if lt not in ('region', 'availability-zone', 'availability-zone-id'):
            raise Ec2Error('InvalidParameterValue', "Value (%s) for parameter LocationType is invalid"
                           % lt)
        rows = []
        for n in catalog.names():
            if lt == 'region':
                rows.append({'instanceType': n, 'locationType': lt, 'location': self.region})
            else:
                for z in catalog.zones_for(n, self.zones):
                    rows.append({'instanceType': n, 'locationType': lt,
                                 'location': z if lt == 'availability-zone' else self.zone_ids[z]})
        g = {'instance-type': lambda r: r['instanceType'], 'location': lambda r: r['location']}
        filters = self._filters(p, set(g))
        rows = [r for r in rows if self._match(filters, g, r)]
        page, nxt = self._page('DescribeInstanceTypeOfferings', rows, p, 5, 1000, 1000)
        return {'instanceTypeOfferingSet': page, 'nextToken': nxt}

    def spot_price(self, itype, zone):
        with self.lock:
            o = self.spot_overrides.get((itype, zone))
        if o is not None:
            return o
        return catalog.spot_price(itype, self.zones.index(zone))

    def _ec2_DescribeSpotPriceHistory(self, p):
        types = unflatten(p, 'InstanceType') or catalog.names()
        prods = unflatten(p, 'ProductDescription') or list(catalog.PRODUCT_DESCRIPTIONS)
        az = p.get('AvailabilityZone')
        for k in ('StartTime', 'EndTime'):
            if p.get(k):
                try:
                    parse_time(p[k])
                except ValueError:
                    raise Ec2Error('InvalidParameterValue', 'Value (%s) for parameter %s is invalid'
                                   % (p[k], k))
        stamp = iso8601(self.start_time - 3600)
        rows = []
        for n in types:
            if not catalog.get(n):
                continue
            for z in catalog.zones_for(n, self.zones):
                if az and z != az:
                    continue
                for pd in prods:
                    if pd not in catalog.PRODUCT_DESCRIPTIONS:
                        continue
                    rows.append({'instanceType': n, 'productDescription': pd,
                                 'spotPrice': '%.6f' % self.spot_price(n, z), 'timestamp': stamp,
                                 'availabilityZone': z})
        g = {'instance-type': lambda r: r['instanceType'],
             'product-description': lambda r: r['productDescription'],
             'availability-zone': lambda r: r['availabilityZone'],
             'spot-price': lambda r: r['spotPrice'], 'timestamp': lambda r: r['timestamp']}
        filters = self._filters(p, set(g))
        rows = [r for r in rows if self._match(filters, g, r)]
        mr = p.get('MaxResults')
        if mr is not None and _int(mr, 'MaxResults', 0, None) > 1000:
            p = dict(p, MaxResults='1000')   # the service clamps
        page, nxt = self._page('DescribeSpotPriceHistory', rows, p, 0, 1000, 1000)
        return {'spotPriceHistorySet': page, 'nextToken': nxt}

    def _ec2_DescribeAvailabilityZones(self, p):
        names = unflatten(p, 'ZoneName') or []
        ids = unflatten(p, 'ZoneId') or []
        for n in names:
            if n not in self.zones:
                raise Ec2Error('InvalidParameterValue', "Invalid availability zone: [%s]" % n)
        rows = []
        for z in self.zones:
            if (names and z not in names) or (ids and self.zone_ids[z] not in ids):
                continue
            rows.append({'zoneName': z, 'zoneState': 'available', 'regionName': self.region,
                         'zoneId': self.zone_ids[z], 'zoneType': 'availability-zone',
                         'optInStatus': 'opt-in-not-required', 'groupName': self.region,
                         'networkBorderGroup': self.region, 'messageSet': []})
        g = {'zone-name': lambda r: r['zoneName'], 'zone-id': lambda r: r['zoneId'],
             'state': lambda r: r['zoneState'], 'region-name': lambda r: r['regionName'],
             'zone-type': lambda r: r['zoneType'], 'group-name': lambda r: r['groupName'],
             'opt-in-status': lambda r: r['optInStatus']}
        filters = self._filters(p, set(g))
        return {'availabilityZoneInfo': [r for r in rows if self._match(filters, g, r)]}

    def _subnet_xml(self, s):
        return {'subnetId': s['id'], 'subnetArn': 'arn:aws:ec2:%s:%s:subnet/%s' % (
            self.region, self.account, s['id']), 'state': 'available', 'vpcId': self.vpc['id'],
            'cidrBlock': s['cidr'], 'availableIpAddressCount': s['size'] - 5 - s['used'],
            'availabilityZone': s['zone'], 'availabilityZoneId': self.zone_ids[s['zone']],
            'defaultForAz': False, 'mapPublicIpOnLaunch': s['public'], 'ownerId': self.account,
            'assignIpv6AddressOnCreation': False, 'tagSet': tag_set(s['tags'])}

    def _ec2_DescribeSubnets(self, p):
        ids = unflatten(p, 'SubnetId') or []
        with self.lock:
            for i in ids:
                if i not in self.subnets:
                    raise Ec2Error('InvalidSubnetID.NotFound', "The subnet ID '%s' does not exist" % i)
            subs = [self.subnets[i] for i in ids] if ids else list(self.subnets.values())
            g = {'subnet-id': lambda s: s['id'], 'vpc-id': lambda s: self.vpc['id'],
                 'availability-zone': lambda s: s['zone'],
                 'availability-zone-id': lambda s: self.zone_ids[s['zone']],
                 'cidr-block': lambda s: s['cidr'], 'state': lambda s: 'available',
                 'default-for-az': lambda s: False, 'map-public-ip-on-launch': lambda s: s['public'],
                 'owner-id': lambda s: self.account}
            g.update(self._tag_getters(lambda s: s['tags']))
            filters = self._filters(p, set(g))
            rows = [self._subnet_xml(s) for s in subs if self._match(filters, g, s)]
        page, nxt = self._page('DescribeSubnets', rows, p, 5, 1000, None)
        return {'subnetSet': page, 'nextToken': nxt}

    def _ec2_DescribeSecurityGroups(self, p):
        ids = unflatten(p, 'GroupId') or []
        names = unflatten(p, 'GroupName') or []
        with self.lock:
            for i in ids:
                if i not in self.security_groups:
                    raise Ec2Error('InvalidGroup.NotFound', "The security group '%s' does not exist" % i)
            for n in names:
                if not any(s['name'] == n for s in self.security_groups.values()):
                    raise Ec2Error('InvalidGroup.NotFound', "The security group '%s' does not exist "
                                                            "in default VPC '%s'" % (n, self.vpc['id']))
            sgs = [s for s in self.security_groups.values()
                   if (not ids or s['id'] in ids) and (not names or s['name'] in names)]
            g = {'group-id': lambda s: s['id'], 'group-name': lambda s: s['name'],
                 'vpc-id': lambda s: self.vpc['id'], 'description': lambda s: s['desc'],
                 'owner-id': lambda s: self.account}
            g.update(self._tag_getters(lambda s: s['tags']))
            filters = self._filters(p, set(g))
            rows = [{'ownerId': self.account, 'groupId': s['id'], 'groupName': s['name'],
                     'groupDescription': s['desc'], 'vpcId': self.vpc['id'], 'ipPermissions': [],
                     'ipPermissionsEgress': [{'ipProtocol': '-1',
                                              'ipRanges': [{'cidrIp': '0.0.0.0/0'}]}],
                     'tagSet': tag_set(s['tags'])}
                    for s in sgs if self._match(filters, g, s)]
        page, nxt = self._page('DescribeSecurityGroups', rows, p, 5, 1000, None)
        return {'securityGroupInfo': page, 'nextToken': nxt}

    def _ec2_DescribeImages(self, p):
        ids = unflatten(p, 'ImageId') or []
        owners = unflatten(p, 'Owner') or []
        with self.lock:
            for i in ids:
                if not re.fullmatch(r'ami-[0-9a-z]{8,17}', i):
                    raise Ec2Error('InvalidAMIID.Malformed', 'Invalid id: "%s"' % i)
                if i not in self.images:
                    raise Ec2Error('InvalidAMIID.NotFound', "The image id '[%s]' does not exist" % i)
            imgs = [self.images[i] for i in ids] if ids else list(self.images.values())

            def owner_ok(im):
                if not owners:
                    return im['owner'] == self.account or im['public'] or bool(ids)
                for o in owners:
                    if o == 'self' and im['owner'] == self.account:
                        return True
                    if o == im.get('alias') or o == im['owner']:
                        return True
                return False
            g = {'image-id': lambda i: i['id'], 'name': lambda i: i['name'],
                 'architecture': lambda i: i['arch'], 'state': lambda i: 'available',
                 'owner-id': lambda i: i['owner'], 'owner-alias': lambda i: i.get('alias', ''),
                 'is-public': lambda i: i['public'], 'image-type': lambda i: 'machine',
                 'root-device-type': lambda i: 'ebs', 'virtualization-type': lambda i: 'hvm',
                 'description': lambda i: i['desc'], 'platform-details': lambda i: 'Linux/UNIX'}
            g.update(self._tag_getters(lambda i: i['tags']))
            filters = self._filters(p, set(g))
            rows = []
            for im in imgs:
                if not owner_ok(im) or not self._match(filters, g, im):
                    continue
                rows.append({
                    'imageId': im['id'], 'imageLocation': '%s/%s' % (im['owner'], im['name']),
                    'imageState': 'available', 'imageOwnerId': im['owner'],
                    'creationDate': iso8601(im['created']), 'isPublic': im['public'],
                    'architecture': im['arch'], 'imageType': 'machine', 'name': im['name'],
                    'description': im['desc'], 'rootDeviceType': 'ebs',
                    'rootDeviceName': '/dev/xvda',
                    'blockDeviceMapping': [{'deviceName': '/dev/xvda', 'ebs': {
                        'snapshotId': 'snap-0sim%013x' % (abs(hash(im['id'])) % (1 << 52)),
                        'volumeSize': 20, 'deleteOnTermination': True, 'volumeType': 'gp3',
                        'encrypted': False}}],
                    'virtualizationType': 'hvm', 'hypervisor': 'xen', 'enaSupport': True,
                    'sriovNetSupport': 'simple', 'bootMode': 'uefi-preferred',
                    'platformDetails': 'Linux/UNIX', 'usageOperation': 'RunInstances',
                    'imageOwnerAlias': im.get('alias'), 'tagSet': tag_set(im['tags'])})
        page, nxt = self._page('DescribeImages', rows, p, 1, 1000, None)
        return {'imagesSet': page, 'nextToken': nxt}

    # -- launch templates -------------------------------------------------
    def _tagspecs(self, params, prefix='TagSpecification'):
        specs = unflatten(params, prefix) or []
        out = {}
        for i, s in enumerate(specs):
            if not isinstance(s, dict) or 'ResourceType' not in s:
                raise Ec2Error('InvalidParameterValue', '%s.%d.ResourceType is required' % (prefix, i + 1))
            tags = out.setdefault(s['ResourceType'], {})
            for t in s.get('Tag') or []:
                if 'Key' not in t:
                    raise Ec2Error('InvalidParameterValue', 'Tag key is required')
                self._check_tag(t['Key'], t.get('Value', ''))
                tags[t['Key']] = t.get('Value', '')
        return out

    @staticmethod
    def _check_tag(k, v):
        if not k or len(k) > 128:
            raise Ec2Error('InvalidParameterValue', 'Tag key must be 1-128 characters: %r' % k[:200])
        if len(v) > 256:
            raise Ec2Error('InvalidParameterValue', 'Tag value exceeds the maximum length of 256 '
                                                    'characters (key %s)' % k)
        if k.lower().startswith('aws:'):
            raise Ec2Error('InvalidParameterValue', "Tag keys starting with 'aws:' are reserved "
                                                    "for internal use (key %s)" % k)

    @staticmethod
    def _check_user_data(ud, field):
        if ud is None or ud == '':
            return
        try:
            raw = base64.b64decode(ud.encode('ascii'), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise Ec2Error('InvalidUserData.Malformed', 'Invalid BASE64 encoding of user data (%s)'
                           % field)
        if len(raw) > USER_DATA_LIMIT:
            raise Ec2Error('InvalidUserData.Malformed', 'User data is limited to %d bytes'
                           % USER_DATA_LIMIT)

    def _lt_xml(self, lt):
        return {'launchTemplateId': lt['id'], 'launchTemplateName': lt['name'],
                'createTime': iso8601(lt['created']),
                'createdBy': 'arn:aws:iam::%s:user/nodewarden' % self.account,
                'defaultVersionNumber': 1, 'latestVersionNumber': 1,
                'tagSet': tag_set(lt['tags'])}

    def _ec2_CreateLaunchTemplate(self, p):
        name = p.get('LaunchTemplateName')
        if not name:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter LaunchTemplateName')
        if not re.fullmatch(r'[a-zA-Z0-9().\-/_]{3,128}', name):
            raise Ec2Error('InvalidLaunchTemplateName.MalformedException',
                           'A launch template name must be between 3 and 128 characters, and may '
                           'contain letters, numbers, and the following characters: - ( ) . / _.')
        data = unflatten(p, 'LaunchTemplateData')
        if not isinstance(data, dict):
            raise Ec2Error('MissingParameter', 'The request must contain the parameter LaunchTemplateData')
        self._check_user_data(data.get('UserData'), 'LaunchTemplateData.UserData')
        for sg in data.get('SecurityGroupId') or []:
            if sg not in self.security_groups:
                raise Ec2Error('InvalidGroupId.NotFound', "The security group '%s' does not exist" % sg)
        if data.get('ImageId') and data['ImageId'] not in self.images:
            raise Ec2Error('InvalidAMIID.NotFound', "The image id '[%s]' does not exist" % data['ImageId'])
        lt_tags = dict((self._tagspecs(p).get('launch-template')) or {})
        inner = self._tagspecs({k[len('LaunchTemplateData.'):]: v for k, v in p.items()
                                if k.startswith('LaunchTemplateData.TagSpecification.')})
        for rt in inner:
            if rt not in ('instance', 'volume', 'elastic-gpu', 'network-interface',
                          'spot-instances-request'):
                raise Ec2Error('InvalidParameterValue', "'%s' is not a valid taggable resource type "
                                                        "for this operation." % rt)
        with self.lock:
            if any(lt['name'] == name for lt in self.launch_templates.values()):
                raise Ec2Error('InvalidLaunchTemplateName.AlreadyExistsException',
                               "Launch template name already in use.")
            lid = new_id('lt', 17)
            lt = {'id': lid, 'name': name, 'created': self.clock(), 'data': data,
                  'tags': lt_tags, 'tagspecs': inner,
                  'params': {k: v for k, v in p.items() if k.startswith('LaunchTemplateData.')}}
            self.launch_templates[lid] = lt
            return {'launchTemplate': self._lt_xml(lt)}

    def _find_lt(self, lid=None, name=None):
        if lid:
            if not re.fullmatch(r'lt-[0-9a-f]{17}', lid):
                raise Ec2Error('InvalidLaunchTemplateId.Malformed',
                               "The specified launch template ID '%s' is malformed." % lid)
            lt = self.launch_templates.get(lid)
            if not lt:
                raise Ec2Error('InvalidLaunchTemplateId.NotFound',
                               "The specified launch template, with template ID %s, does not exist." % lid)
            return lt
        for lt in self.launch_templates.values():
            if lt['name'] == name:
                return lt
        raise Ec2Error('InvalidLaunchTemplateName.NotFoundException',
                       'At least one of the launch templates specified in the request does not exist.')

    def _ec2_DescribeLaunchTemplates(self, p):
        ids = unflatten(p, 'LaunchTemplateId') or []
        names = unflatten(p, 'LaunchTemplateName') or []
        with self.lock:
            if ids or names:
                lts = [self._find_lt(lid=i) for i in ids] + [self._find_lt(name=n) for n in names]
            else:
                lts = sorted(self.launch_templates.values(), key=lambda x: x['created'])
            g = {'launch-template-name': lambda lt: lt['name'],
                 'create-time': lambda lt: iso8601(lt['created'])}
            g.update(self._tag_getters(lambda lt: lt['tags']))
            filters = self._filters(p, set(g))
            rows = [self._lt_xml(lt) for lt in lts if self._match(filters, g, lt)]
        page, nxt = self._page('DescribeLaunchTemplates', rows, p, 1, 200, None)
        return {'launchTemplates': page, 'nextToken': nxt}

    def _ec2_DeleteLaunchTemplate(self, p):
        if not p.get('LaunchTemplateId') and not p.get('LaunchTemplateName'):
            raise Ec2Error('MissingParameter', 'The request must contain the parameter '
                                               'LaunchTemplateName or LaunchTemplateId')
        with self.lock:
            lt = self._find_lt(lid=p.get('LaunchTemplateId'), name=p.get('LaunchTemplateName'))
            del self.launch_templates[lt['id']]
            return {'launchTemplate': self._lt_xml(lt)}

    # -- instances --------------------------------------------------------
    def _alloc_ip(self, subnet):
        s = self.subnets[subnet]
        if s['used'] >= s['size'] - 5:
            raise Ec2Error('InsufficientFreeAddressesInSubnet',
                           'There are not enough free addresses in subnet \'%s\' to satisfy the '
                           'requested number of instances.' % subnet)
        h = s['next_host']
        s['next_host'] += 1
        s['used'] += 1
        a, b, c = s['base']
        return '%d.%d.%d.%d' % (a, b, c + h // 256, h % 256)

    def _launch(self, itype, zone, subnet, image, user_data, sgs, tags, spot, lt=None,
                fleet=None, root_gb=None, metadata=None, profile=None):
        """Create one instance in 'pending' (caller holds the lock)."""
        ip = self._alloc_ip(subnet)
        iid = new_id('i')
        now = self.clock()
        inst = {'id': iid, 'type': itype, 'zone': zone, 'subnet': subnet, 'image': image,
                'user_data': user_data or '', 'sgs': list(sgs), 'tags': dict(tags),
                'spot': spot, 'sir': 'sir-%s' % _hex(8) if spot else None,
                'state': 'pending', 'state_time': now, 'launch_time': now,
                'private_ip': ip, 'private_dns': 'ip-%s.%s' % (ip.replace('.', '-'), self.dns_suffix),
                'lt': lt, 'fleet': fleet, 'root_gb': root_gb or 20,
                'metadata': metadata or {}, 'profile': profile, 'reason': '',
                'reservation': 'r-%s' % _hex(17)}
        self.instances_by_id[iid] = inst
        self._state_event(inst, None)
        self.sched.after(self.pending_seconds, self._to_running, iid)
        return inst

    def _to_running(self, iid):
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if not inst or inst['state'] != 'pending':
                return
            self._set_state(inst, 'running')
        self._notify('running', iid)

    def _set_state(self, inst, state, reason=''):
        prev = inst['state']
        inst['state'] = state
        inst['state_time'] = self.clock()
        if reason:
            inst['reason'] = reason
        self._state_event(inst, prev)

    def _notify(self, event, iid):
        with self.lock:
            subs = list(self._subs)
            inst = self.instances_by_id.get(iid)
            pub = self._public(inst) if inst else None
        if pub is None:
            return
        for fn in subs:
            try:
                fn(event, pub)
            except Exception:
                import traceback
                traceback.print_exc()

    def terminate(self, iid, reason='User initiated'):
        """Begin termination (idempotent).  Returns (previous, current) state names."""
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if inst is None:
                return None
            prev = inst['state']
            if prev in ('shutting-down', 'terminated'):
                return prev, prev
            self._set_state(inst, 'shutting-down', '%s (%s)' % (reason, iso8601s(self.clock())))
            self.subnets[inst['subnet']]['used'] -= 1
        self._notify('shutting-down', iid)
        self.sched.after(self.shutdown_seconds, self._to_terminated, iid)
        return prev, 'shutting-down'

    def _to_terminated(self, iid):
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if not inst or inst['state'] != 'shutting-down':
                return
            self._set_state(inst, 'terminated')
        self._notify('terminated', iid)
        self.sched.after(self.terminated_retention, self._forget, iid)

    def _forget(self, iid):
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if inst and inst['state'] == 'terminated':
                del self.instances_by_id[iid]

    def _inst_xml(self, i):
        t = catalog.get(i['type'])
        sgs = [{'groupId': g, 'groupName': self.security_groups[g]['name']}
               for g in i['sgs'] if g in self.security_groups]
        md = i['metadata']
        x = {'instanceId': i['id'], 'imageId': i['image'],
             'instanceState': {'code': STATE_CODES[i['state']], 'name': i['state']},
             'privateDnsName': i['private_dns'] if i['state'] != 'terminated' else '',
             'dnsName': '', 'reason': i['reason'], 'amiLaunchIndex': 0, 'productCodes': [],
             'instanceType': i['type'], 'launchTime': iso8601(i['launch_time']),
             'placement': {'availabilityZone': i['zone'],
                           'availabilityZoneId': self.zone_ids[i['zone']],
                           'groupName': '', 'tenancy': 'default'},
             'monitoring': {'state': 'disabled'}}
        if i['state'] != 'terminated':
            x.update({'subnetId': i['subnet'], 'vpcId': self.vpc['id'],
                      'privateIpAddress': i['private_ip']})
        x.update({'sourceDestCheck': True, 'groupSet': sgs, 'architecture': t['arch'],
                  'rootDeviceType': 'ebs', 'rootDeviceName': '/dev/xvda',
                  'blockDeviceMapping': [] if i['state'] == 'terminated' else [
                      {'deviceName': '/dev/xvda', 'ebs': {
                          'volumeId': 'vol-%s' % i['id'][2:], 'status': 'attached',
                          'attachTime': iso8601(i['launch_time']), 'deleteOnTermination': True}}]})
        if i['spot']:
            x['instanceLifecycle'] = 'spot'
            x['spotInstanceRequestId'] = i['sir']
        x.update({'virtualizationType': 'hvm', 'clientToken': '', 'tagSet': tag_set(i['tags']),
                  'hypervisor': 'xen' if t['hypervisor'] != 'nitro' else 'xen',
                  'networkInterfaceSet': [] if i['state'] == 'terminated' else [{
                      'networkInterfaceId': 'eni-%s' % i['id'][2:], 'subnetId': i['subnet'],
                      'vpcId': self.vpc['id'], 'ownerId': self.account, 'status': 'in-use',
                      'privateIpAddress': i['private_ip'], 'privateDnsName': i['private_dns'],
                      'sourceDestCheck': True, 'groupSet': sgs,
                      'attachment': {'attachmentId': 'eni-attach-%s' % i['id'][2:], 'deviceIndex': 0,
                                     'networkCardIndex': 0, 'status': 'attached',
                                     'attachTime': iso8601(i['launch_time']),
                                     'deleteOnTermination': True},
                      'interfaceType': 'interface'}],
                  'ebsOptimized': True, 'enaSupport': True})
        if i['profile']:
            x['iamInstanceProfile'] = {'arn': 'arn:aws:iam::%s:instance-profile/%s' % (
                self.account, i['profile']), 'id': 'AIPA%s' % _hex(17).upper()}
        x['metadataOptions'] = {'state': 'applied', 'httpTokens': md.get('HttpTokens', 'required'),
                                'httpPutResponseHopLimit': int(md.get('HttpPutResponseHopLimit', 1)),
                                'httpEndpoint': md.get('HttpEndpoint', 'enabled'),
                                'httpProtocolIpv6': md.get('HttpProtocolIpv6', 'disabled'),
                                'instanceMetadataTags': md.get('InstanceMetadataTags', 'disabled')}
        x.update({'capacityReservationSpecification': {'capacityReservationPreference': 'open'},
                  'platformDetails': 'Linux/UNIX', 'usageOperation': 'RunInstances',
                  'bootMode': 'uefi' if t['arch'] == 'arm64' else 'legacy-bios',
                  'currentInstanceBootMode': 'uefi' if t['arch'] == 'arm64' else 'legacy-bios',
                  'privateDnsNameOptions': {'hostnameType': 'ip-name',
                                            'enableResourceNameDnsARecord': False,
                                            'enableResourceNameDnsAAAARecord': False}})
        if i['state'] in ('shutting-down', 'terminated'):
            x['stateReason'] = {'code': 'Client.UserInitiatedShutdown',
                                'message': 'Client.UserInitiatedShutdown: User initiated shutdown'}
        return x

    _INST_GETTERS = {
        'instance-id': lambda i: i['id'], 'instance-state-name': lambda i: i['state'],
        'instance-state-code': lambda i: STATE_CODES[i['state']],
        'instance-type': lambda i: i['type'], 'availability-zone': lambda i: i['zone'],
        'subnet-id': lambda i: i['subnet'], 'image-id': lambda i: i['image'],
        'instance-lifecycle': lambda i: 'spot' if i['spot'] else [],
        'private-dns-name': lambda i: i['private_dns'], 'private-ip-address': lambda i: i['private_ip'],
        'spot-instance-request-id': lambda i: i['sir'] or [],
        'architecture': lambda i: catalog.get(i['type'])['arch'],
        'reservation-id': lambda i: i['reservation'],
        'instance.group-id': lambda i: i['sgs'],
        'launch-time': lambda i: iso8601(i['launch_time']),
    }

    def _ec2_DescribeInstances(self, p):
        ids = unflatten(p, 'InstanceId') or []
        if ids and p.get('MaxResults'):
            raise Ec2Error('InvalidParameterCombination', 'The parameter instancesSet cannot be used '
                                                          'with the parameter maxResults')
        with self.lock:
            for i in ids:
                self._check_instance_id(i)
            missing = [i for i in ids if i not in self.instances_by_id]
            if missing:
                raise Ec2Error('InvalidInstanceID.NotFound', "The instance ID%s '%s' do%s not exist"
                               % ('s' if len(missing) > 1 else '', ', '.join(missing),
                                  '' if len(missing) > 1 else 'es'))
            insts = [self.instances_by_id[i] for i in ids] if ids else \
                sorted(self.instances_by_id.values(), key=lambda i: (i['launch_time'], i['id']))
            g = dict(self._INST_GETTERS)
            g.update(self._tag_getters(lambda i: i['tags']))
            filters = self._filters(p, set(g))
            sel = [i for i in insts if self._match(filters, g, i)]
            page, nxt = self._page('DescribeInstances', sel, p, 5, 1000, None)
            res = []
            by_res = {}
            for i in page:
                r = by_res.get(i['reservation'])
                if r is None:
                    r = {'reservationId': i['reservation'], 'ownerId': self.account,
                         'groupSet': [], 'instancesSet': []}
                    by_res[i['reservation']] = r
                    res.append(r)
                r['instancesSet'].append(self._inst_xml(i))
        return {'reservationSet': res, 'nextToken': nxt}

    @staticmethod
    def _check_instance_id(i):
        if not re.fullmatch(r'i-[0-9a-f]{8}([0-9a-f]{9})?', i):
            raise Ec2Error('InvalidInstanceID.Malformed', 'Invalid id: "%s"' % i)

    def _ec2_TerminateInstances(self, p):
        ids = unflatten(p, 'InstanceId') or []
        if not ids:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter InstanceId')
        with self.lock:
            for i in ids:
                self._check_instance_id(i)
            missing = [i for i in ids if i not in self.instances_by_id]
            if missing:
                raise Ec2Error('InvalidInstanceID.NotFound', "The instance ID '%s' does not exist"
                               % ', '.join(missing))
        out = []
        for i in ids:
            prev, cur = self.terminate(i)
            out.append({'instanceId': i, 'currentState': {'code': STATE_CODES[cur], 'name': cur},
                        'previousState': {'code': STATE_CODES[prev], 'name': prev}})
        return {'instancesSet': out}

    def _ec2_CreateTags(self, p):
        res = unflatten(p, 'ResourceId') or []
        tags = unflatten(p, 'Tag') or []
        if not res:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter ResourceId')
        kv = {}
        for t in tags:
            if not isinstance(t, dict) or 'Key' not in t:
                raise Ec2Error('InvalidParameterValue', 'Tag key is required')
            self._check_tag(t['Key'], t.get('Value', ''))
            kv[t['Key']] = t.get('Value', '')
        with self.lock:
            targets = []
            for r in res:
                if r.startswith('i-'):
                    self._check_instance_id(r)
                    o = self.instances_by_id.get(r)
                    if not o:
                        raise Ec2Error('InvalidInstanceID.NotFound', "The instance ID '%s' does not exist" % r)
                elif r.startswith('lt-'):
                    o = self.launch_templates.get(r)
                    if not o:
                        raise Ec2Error('InvalidLaunchTemplateId.NotFound',
                                       'The specified launch template, with template ID %s, does '
                                       'not exist.' % r)
                elif r.startswith('subnet-'):
                    o = self.subnets.get(r)
                    if not o:
                        raise Ec2Error('InvalidSubnetID.NotFound', "The subnet ID '%s' does not exist" % r)
                elif r.startswith('sg-'):
                    o = self.security_groups.get(r)
                    if not o:
                        raise Ec2Error('InvalidGroup.NotFound', "The security group '%s' does not exist" % r)
                elif r.startswith('ami-'):
                    o = self.images.get(r)
                    if not o:
                        raise Ec2Error('InvalidAMIID.NotFound', "The image id '[%s]' does not exist" % r)
                elif r.startswith('fleet-'):
                    o = self.fleets.get(r)
                    if not o:
                        raise Ec2Error('InvalidFleetId.NotFound', "The fleet ID '%s' does not exist" % r)
                else:
                    raise Ec2Error('InvalidID', 'The ID \'%s\' is not valid' % r)
                targets.append(o)
            for o in targets:
                if len(set(o['tags']) | set(kv)) > 50:
                    raise Ec2Error('TagLimitExceeded', 'The maximum number of tags (50) has been '
                                                       'exceeded for resource %s' % o['id'])
            for o in targets:
                o['tags'].update(kv)
        return {'return': True}

    # -- CreateFleet / RunInstances -----------------------------------------
    def _subnet_for_zone(self, zone, prefer=None):
        for s in self.subnets.values():
            if s['zone'] == zone and not s['public']:
                return s['id']
        return None

    def _ec2_CreateFleet(self, p):
        ftype = p.get('Type', 'maintain')
        if ftype != 'instant':
            raise Ec2Error('InvalidParameterValue', 'The simulator implements fleets of Type '
                                                    'instant only, not %s' % ftype)
        tcs = unflatten(p, 'TargetCapacitySpecification')
        if not isinstance(tcs, dict) or 'TotalTargetCapacity' not in tcs:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter '
                                               'TargetCapacitySpecification.TotalTargetCapacity')
        total = _int(tcs['TotalTargetCapacity'], 'TotalTargetCapacity', 1, 1000)
        dtype = tcs.get('DefaultTargetCapacityType')
        if dtype not in ('spot', 'on-demand'):
            raise Ec2Error('InvalidParameterValue', 'TargetCapacitySpecification.'
                           'DefaultTargetCapacityType must be spot or on-demand, not %r' % dtype)
        spot = dtype == 'spot'
        sopts = unflatten(p, 'SpotOptions') or {}
        oopts = unflatten(p, 'OnDemandOptions') or {}
        strategy = (sopts.get('AllocationStrategy', 'lowest-price') if spot
                    else oopts.get('AllocationStrategy', 'lowest-price'))
        valid = ('lowest-price', 'diversified', 'capacity-optimized', 'capacity-optimized-prioritized',
                 'price-capacity-optimized') if spot else ('lowest-price', 'prioritized')
        if strategy not in valid:
            raise Ec2Error('InvalidParameterValue', 'AllocationStrategy %r is not valid for %s' % (
                strategy, dtype))
        configs = unflatten(p, 'LaunchTemplateConfigs')
        if not isinstance(configs, list) or not configs:
            raise Ec2Error('MissingParameter', 'The request must contain the parameter '
                                               'LaunchTemplateConfigs')
        tagspecs = self._tagspecs(p)
        for rt in tagspecs:
            if rt not in ('instance', 'volume', 'fleet', 'network-interface', 'spot-instances-request'):
                raise Ec2Error('InvalidParameterValue', "'%s' is not a valid taggable resource type "
                                                        "for this operation." % rt)
        lifecycle = 'spot' if spot else 'on-demand'
        errors = []
        cands = []
        with self.lock:
            for ci, cfg in enumerate(configs):
                lts = cfg.get('LaunchTemplateSpecification') or {}
                spec_xml = {}
                try:
                    if not lts.get('LaunchTemplateId') and not lts.get('LaunchTemplateName'):
                        raise Ec2Error('MissingParameter', 'LaunchTemplateConfigs.%d.'
                                       'LaunchTemplateSpecification needs an id or a name' % (ci + 1))
                    ver = lts.get('Version', '$Default')
                    if ver not in ('$Latest', '$Default', '1'):
                        raise Ec2Error('InvalidLaunchTemplateVersion.NotFound',
                                       'Version %s of the launch template does not exist' % ver)
                    lt = self._find_lt(lid=lts.get('LaunchTemplateId'), name=lts.get('LaunchTemplateName'))
                    spec_xml = {'launchTemplateId': lt['id'], 'version': ver}
                except Ec2Error as e:
                    spec_xml = {'launchTemplateId': lts.get('LaunchTemplateId'),
                                'launchTemplateName': lts.get('LaunchTemplateName'),
                                'version': lts.get('Version')}
                    errors.append({'launchTemplateAndOverrides': {
                        'launchTemplateSpecification': spec_xml}, 'lifecycle': lifecycle,
                        'errorCode': e.code, 'errorMessage': e.message})
                    continue
                data = lt['data']
                overrides = cfg.get('Overrides') or [{}]
                for oi, o in enumerate(overrides):
                    itype = o.get('InstanceType') or data.get('InstanceType')
                    subnet = o.get('SubnetId')
                    zone = o.get('AvailabilityZone')
                    image = o.get('ImageId') or data.get('ImageId')
                    ovr_xml = {'instanceType': itype, 'subnetId': subnet, 'availabilityZone': zone,
                               'imageId': o.get('ImageId'), 'priority': o.get('Priority'),
                               'maxPrice': o.get('MaxPrice')}
                    lto = {'launchTemplateSpecification': spec_xml, 'overrides': ovr_xml}

                    def err(code, msg, lto=lto):
                        errors.append({'launchTemplateAndOverrides': lto, 'lifecycle': lifecycle,
                                       'errorCode': code, 'errorMessage': msg})
                    t = catalog.get(itype) if itype else None
                    if not t:
                        err('InvalidParameterValue', "The instance type '%s' does not exist" % itype)
                        continue
                    if subnet:
                        s = self.subnets.get(subnet)
                        if not s:
                            err('InvalidSubnetID.NotFound', "The subnet ID '%s' does not exist" % subnet)
                            continue
                        if zone and zone != s['zone']:
                            err('InvalidParameterValue', 'Subnet %s is in %s, not %s' % (
                                subnet, s['zone'], zone))
                            continue
                        zone = s['zone']
                    elif zone:
                        if zone not in self.zones:
                            err('InvalidParameterValue', 'Invalid availability zone: [%s]' % zone)
                            continue
                        subnet = self._subnet_for_zone(zone)
                    else:
                        zone = self.zones[0]
                        subnet = self._subnet_for_zone(zone)
                    if not image or image not in self.images:
                        err('InvalidAMIID.NotFound', "The image id '[%s]' does not exist" % image)
                        continue
                    if self.images[image]['arch'] != t['arch']:
                        err('InvalidParameterValue', "The architecture '%s' of the specified instance "
                            "type does not match the architecture '%s' of the specified AMI."
                            % (t['arch'], self.images[image]['arch']))
                        continue
                    if zone not in catalog.zones_for(itype, self.zones):
                        err('Unsupported', 'Your requested instance type (%s) is not supported in your '
                            'requested Availability Zone (%s).' % (itype, zone))
                        continue
                    price = self.spot_price(itype, zone) if spot else t['on_demand']
                    if spot and o.get('MaxPrice') and float(o['MaxPrice']) < price:
                        err('SpotMaxPriceTooLow', 'Your Spot request price of %s is lower than the '
                            'minimum required Spot request fulfillment price of %s.' % (o['MaxPrice'], price))
                        continue
                    prio = float(o['Priority']) if o.get('Priority') not in (None, '') else float('inf')
                    cands.append({'ci': ci, 'oi': oi, 'lt': lt, 'type': itype, 'zone': zone,
                                  'subnet': subnet, 'image': image, 'price': price, 'prio': prio,
                                  'lto': lto, 'err': err})
            if strategy in ('prioritized', 'capacity-optimized-prioritized'):
                cands.sort(key=lambda c: (c['prio'], c['price'], c['ci'], c['oi']))
            else:
                # lowest-price / price-capacity-optimized: the simulator's pools all have the
                # same depth, so "capacity" never decides: cheapest first
                cands.sort(key=lambda c: (c['price'], c['ci'], c['oi']))
            fleet_id = 'fleet-%s-%s-%s-%s-%s' % (_hex(8), _hex(4), _hex(4), _hex(4), _hex(12))
            launched = []
            tried_bad = set()
            for c in cands:
                if len(launched) >= total:
                    break
                key = (c['type'], c['zone'])
                if key in tried_bad:
                    continue
                code = self._ice_hit(lifecycle, c['type'], c['zone'])
                if code:
                    tried_bad.add(key)
                    msg = {'VcpuLimitExceeded': 'You have requested more vCPU capacity than your current '
                                                'vCPU limit allows for the instance bucket that the '
                                                'specified instance type belongs to.',
                           'MaxSpotInstanceCountExceeded': 'Max spot instance count exceeded',
                           'InsufficientFreeAddressesInSubnet': 'There are not enough free addresses '
                                                                'in subnet \'%s\' to satisfy the requested '
                                                                'number of instances.' % c['subnet'],
                           'UnfulfillableCapacity': 'Unable to fulfill capacity due to your request '
                                                    'configuration.',
                           }.get(code) or (
                          'There is no Spot capacity available that matches your request.' if spot else
                           'We currently do not have sufficient %s capacity in the Availability Zone '
                           'you requested (%s). Our system will be working on provisioning additional '
                           'capacity. You can currently get %s capacity by not specifying an '
                           'Availability Zone in your request or choosing %s.' % (
                               c['type'], c['zone'], c['type'],
                               ', '.join(z for z in self.zones if z != c['zone'])))
                    c['err'](code, msg)
                    continue
                while len(launched) < total:
                    data = c['lt']['data']
                    tags = {}
                    tags.update(c['lt']['tagspecs'].get('instance', {}))
                    tags.update(tagspecs.get('instance', {}))
                    try:
                        inst = self._launch(
                            c['type'], c['zone'], c['subnet'], c['image'], data.get('UserData'),
                            data.get('SecurityGroupId') or self._ni_groups(data) or
                            [next(iter(self.security_groups))],
                            tags, spot, lt={'LaunchTemplateId': c['lt']['id'],
                                            'LaunchTemplateName': c['lt']['name'], 'Version': '1'},
                            fleet=fleet_id, root_gb=self._root_gb(data),
                            metadata=data.get('MetadataOptions'),
                            profile=(data.get('IamInstanceProfile') or {}).get('Name'))
                    except Ec2Error as e:
                        c['err'](e.code, e.message)
                        break
                    launched.append((c, inst))
            self.fleets[fleet_id] = {'id': fleet_id, 'tags': dict(tagspecs.get('fleet', {})),
                                     'instances': [i['id'] for _, i in launched]}
            groups = {}
            for c, inst in launched:
                k = (c['ci'], c['oi'])
                if k not in groups:
                    groups[k] = {'launchTemplateAndOverrides': c['lto'], 'lifecycle': lifecycle,
                                 'instanceIds': [], 'instanceType': c['type']}
                groups[k]['instanceIds'].append(inst['id'])
            fleet_instances = list(groups.values())
        return {'fleetId': fleet_id, 'errorSet': errors, 'fleetInstanceSet': fleet_instances}

    @staticmethod
    def _ni_groups(data):
        for ni in data.get('NetworkInterface') or []:
            if isinstance(ni, dict) and ni.get('SecurityGroupId'):
                return ni['SecurityGroupId']
        return None

    @staticmethod
    def _root_gb(data):
        for b in data.get('BlockDeviceMapping') or []:
            if isinstance(b, dict) and b.get('DeviceName') in ('/dev/xvda', '/dev/sda1') and \
                    isinstance(b.get('Ebs'), dict) and b['Ebs'].get('VolumeSize'):
                try:
                    return int(b['Ebs']['VolumeSize'])
                except ValueError:
                    return None
        return None

    def _ec2_RunInstances(self, p):
        mn = _int(p.get('MinCount'), 'MinCount', 1, 1000)
        mx = _int(p.get('MaxCount'), 'MaxCount', 1, 1000)
        if mn is None or mx is None:
            raise Ec2Error('MissingParameter', 'The request must contain the parameters MinCount and '
                                               'MaxCount')
        if mn > mx:
            raise Ec2Error('InvalidParameterValue', 'MinCount must be less than or equal to MaxCount')
        with self.lock:
            data = {}
            ltref = unflatten(p, 'LaunchTemplate')
            lt = None
            if isinstance(ltref, dict):
                lt = self._find_lt(lid=ltref.get('LaunchTemplateId'), name=ltref.get('LaunchTemplateName'))
                data = dict(lt['data'])
            itype = p.get('InstanceType') or data.get('InstanceType') or 'm1.small'
            t = catalog.get(itype)
            if not t:
                raise Ec2Error('InvalidParameterValue', "Invalid value '%s' for InstanceType." % itype)
            image = p.get('ImageId') or data.get('ImageId')
            if not image:
                raise Ec2Error('MissingParameter', 'The request must contain the parameter ImageId')
            if image not in self.images:
                raise Ec2Error('InvalidAMIID.NotFound', "The image id '[%s]' does not exist" % image)
            ud = p.get('UserData', data.get('UserData'))
            self._check_user_data(ud, 'UserData')
            subnet = p.get('SubnetId')
            placement = unflatten(p, 'Placement') or {}
            if subnet:
                if subnet not in self.subnets:
                    raise Ec2Error('InvalidSubnetID.NotFound', "The subnet ID '%s' does not exist" % subnet)
                zone = self.subnets[subnet]['zone']
            else:
                zone = placement.get('AvailabilityZone') or self.zones[0]
                if zone not in self.zones:
                    raise Ec2Error('InvalidParameterValue', 'Invalid availability zone: [%s]' % zone)
                subnet = self._subnet_for_zone(zone)
            if zone not in catalog.zones_for(itype, self.zones):
                raise Ec2Error('Unsupported', 'Your requested instance type (%s) is not supported in '
                                              'your requested Availability Zone (%s).' % (itype, zone))
            sgs = unflatten(p, 'SecurityGroupId') or data.get('SecurityGroupId') or \
                [next(iter(self.security_groups))]
            for sg in sgs:
                if sg not in self.security_groups:
                    raise Ec2Error('InvalidGroup.NotFound', "The security group '%s' does not exist" % sg)
            mo = unflatten(p, 'InstanceMarketOptions') or data.get('InstanceMarketOptions') or {}
            spot = isinstance(mo, dict) and mo.get('MarketType') == 'spot'
            code = self._ice_hit('spot' if spot else 'on-demand', itype, zone)
            if code:
                raise Ec2Error(code, 'We currently do not have sufficient %s capacity in the '
                                     'Availability Zone you requested (%s).' % (itype, zone))
            tags = {}
            if lt:
                tags.update(lt['tagspecs'].get('instance', {}))
            tags.update(self._tagspecs(p).get('instance', {}))
            insts = [self._launch(itype, zone, subnet, image, ud, sgs, tags, spot,
                                  lt={'LaunchTemplateId': lt['id'], 'LaunchTemplateName': lt['name'],
                                      'Version': '1'} if lt else None,
                                  root_gb=self._root_gb(data),
                                  metadata=unflatten(p, 'MetadataOptions') or data.get('MetadataOptions'),
                                  profile=(unflatten(p, 'IamInstanceProfile') or
                                           data.get('IamInstanceProfile') or {}).get('Name'))
                     for _ in range(mx)]
            return {'reservationId': insts[0]['reservation'], 'ownerId': self.account,
                    'groupSet': [], 'instancesSet': [self._inst_xml(i) for i in insts]}

    # =====================================================================
    # STS
    def _sts_error(self, code, message, rid, status=400, typ='Sender'):
        body = ('<ErrorResponse xmlns="%s"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message>'
                '</Error><RequestId>%s</RequestId></ErrorResponse>'
                % (STS_NS, typ, escape(code), escape(message), rid))
        return status, {'Content-Type': 'text/xml'}, body.encode('utf-8')

    def _sts(self, method, raw_path, raw_query, headers, body, params):
        rid = str(uuid.uuid4())
        action = params['Action']
        if params.get('Version') != STS_VERSION:
            self._log('sts', action, params, 400, 'InvalidParameterValue')
            return self._sts_error('InvalidParameterValue', 'Version must be %s' % STS_VERSION, rid)
        self._latency(action)
        if action == 'GetCallerIdentity':
            try:
                akid = self._verify(method, raw_path, raw_query, headers, body, 'sts')
            except sigv4.SigError as se:
                code = {'unknown-key': 'InvalidClientTokenId', 'expired': 'ExpiredToken',
                        'token': 'InvalidClientTokenId', 'missing': 'MissingAuthenticationToken',
                        'malformed': 'IncompleteSignature'}.get(se.kind, 'SignatureDoesNotMatch')
                self._log('sts', action, params, 403, code)
                return self._sts_error(code, se.message, rid, 403)
            arn = ('arn:aws:iam::%s:user/nodewarden' % self.account if akid == self.access_key else
                   'arn:aws:sts::%s:assumed-role/%s/session' % (self.account, self.role_name))
            self._log('sts', action, params, 200)
            xml = ('<GetCallerIdentityResponse xmlns="%s"><GetCallerIdentityResult><Arn>%s</Arn>'
                   '<UserId>%s</UserId><Account>%s</Account></GetCallerIdentityResult><ResponseMetadata>'
                   '<RequestId>%s</RequestId></ResponseMetadata></GetCallerIdentityResponse>'
                   % (STS_NS, arn, akid, self.account, rid))
            return 200, {'Content-Type': 'text/xml'}, xml.encode()
        # AssumeRoleWithWebIdentity: unsigned, like the real one
        for k in ('RoleArn', 'RoleSessionName', 'WebIdentityToken'):
            if not params.get(k):
                self._log('sts', action, params, 400, 'MissingParameter')
                return self._sts_error('MissingParameter', 'The request must contain the parameter %s' % k,
                                       rid)
        m = re.fullmatch(r'arn:aws:iam::(\d{12}):role/([\w+=,.@/-]{1,512})', params['RoleArn'])
        if not m:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value '%s' at "
                                   "'roleArn' failed to satisfy constraint" % params['RoleArn'], rid)
        if not re.fullmatch(r'[\w+=,.@-]{2,64}', params['RoleSessionName']):
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value at "
                                   "'roleSessionName' failed to satisfy constraint", rid)
        dur = params.get('DurationSeconds')
        try:
            dur = int(dur) if dur else 3600
            if not 900 <= dur <= 43200:
                raise ValueError
        except ValueError:
            self._log('sts', action, params, 400, 'ValidationError')
            return self._sts_error('ValidationError', "1 validation error detected: Value '%s' at "
                                   "'durationSeconds' failed to satisfy constraint: Member must have "
                                   "value between 900 and 43200" % params.get('DurationSeconds'), rid)
        claims = _jwt_claims(params['WebIdentityToken'])
        with self.lock:
            reject = self.faults['reject_web_identity']
        if claims is None or reject:
            self._log('sts', action, params, 400, 'InvalidIdentityToken')
            return self._sts_error('InvalidIdentityToken', "Couldn't retrieve verification key from "
                                   "your identity provider" if reject else 'The web identity token '
                                   'is not a well-formed JWT', rid)
        if isinstance(claims.get('exp'), (int, float)) and claims['exp'] < self.clock():
            self._log('sts', action, params, 400, 'ExpiredTokenException')
            return self._sts_error('ExpiredTokenException', 'Token expired: current date/time %d must be '
                                   'before the expiration date/time %d' % (self.clock(), claims['exp']),
                                   rid)
        ttl = min(dur, self.credential_ttl)
        akid, secret, token, exp = self._new_temp_creds(ttl)
        role = m.group(2).split('/')[-1]
        self._log('sts', action, params, 200)
        xml = ('<AssumeRoleWithWebIdentityResponse xmlns="%s"><AssumeRoleWithWebIdentityResult>'
               '<SubjectFromWebIdentityToken>%s</SubjectFromWebIdentityToken><Audience>%s</Audience>'
               '<AssumedRoleUser><Arn>arn:aws:sts::%s:assumed-role/%s/%s</Arn>'
               '<AssumedRoleId>AROA%s:%s</AssumedRoleId></AssumedRoleUser><Credentials>'
               '<SessionToken>%s</SessionToken><SecretAccessKey>%s</SecretAccessKey>'
               '<Expiration>%s</Expiration><AccessKeyId>%s</AccessKeyId></Credentials>'
               '<Provider>%s</Provider></AssumeRoleWithWebIdentityResult><ResponseMetadata>'
               '<RequestId>%s</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>'
               % (STS_NS, escape(str(claims.get('sub', ''))), escape(str(claims.get('aud', 'sts.amazonaws.com'))),
                  m.group(1), escape(role), escape(params['RoleSessionName']), _hex(17).upper(),
                  escape(params['RoleSessionName']), token, escape(secret), iso8601s(exp), akid,
                  escape(str(claims.get('iss', ''))), rid))
        return 200, {'Content-Type': 'text/xml'}, xml.encode('utf-8')

    # =====================================================================
    # IMDSv2
    def _imds(self, method, path, headers):
        now = self.clock()
        txt = {'Content-Type': 'text/plain'}
        if path == '/latest/api/token':
            if method != 'PUT':
                return 405, txt, b''
            if hget(headers, 'X-Forwarded-For'):
                return 403, txt, b''
            ttl = hget(headers, 'X-aws-ec2-metadata-token-ttl-seconds')
            try:
                ttl = int(ttl)
                if not 1 <= ttl <= 21600:
                    raise ValueError
            except (TypeError, ValueError):
                self._log('imds', 'PUT token', {}, 400)
                return 400, txt, b''
            tok = base64.urlsafe_b64encode(secrets.token_bytes(42)).decode()
            with self.lock:
                self.imds_tokens = {k: v for k, v in self.imds_tokens.items() if v > now}
                self.imds_tokens[tok] = now + ttl
            self._log('imds', 'PUT token', {}, 200)
            return 200, dict(txt, **{'X-aws-ec2-metadata-token-ttl-seconds': str(ttl)}), tok.encode()
        if method not in ('GET', 'HEAD'):
            return 405, txt, b''
        tok = hget(headers, 'X-aws-ec2-metadata-token')
        with self.lock:
            exp = self.imds_tokens.get(tok) if tok else None
        if exp is None or exp <= now:
            self._log('imds', 'GET ' + path, {}, 401)
            return 401, txt, b''
        md = '/latest/meta-data/'
        pref = md + 'iam/security-credentials/'
        zone = self.zones[0]
        static = {
            md + 'placement/region': self.region,
            md + 'placement/availability-zone': zone,
            md + 'placement/availability-zone-id': self.zone_ids[zone],
            md + 'instance-id': 'i-0controller000000',
            md + 'instance-type': 'm6i.large',
            md + 'local-ipv4': '10.0.0.5',
            md + 'local-hostname': 'ip-10-0-0-5.%s' % self.dns_suffix,
            md + 'ami-id': next(iter(self.images)),
            md + 'iam/security-credentials': self.role_name,
            pref: self.role_name,
        }
        if path in static:
            self._log('imds', 'GET ' + path, {}, 200)
            return 200, txt, static[path].encode()
        if path == '/latest/dynamic/instance-identity/document':
            doc = {'accountId': self.account, 'architecture': 'x86_64', 'availabilityZone': zone,
                   'imageId': next(iter(self.images)), 'instanceId': 'i-0controller000000',
                   'instanceType': 'm6i.large', 'privateIp': '10.0.0.5', 'region': self.region,
                   'version': '2017-09-30', 'pendingTime': iso8601s(self.start_time)}
            return 200, {'Content-Type': 'application/json'}, json.dumps(doc, indent=2).encode()
        if path == pref + self.role_name:
            with self.lock:
                c = self.imds_cred
                if c is None or now >= c['expires'] - 0.2 * self.credential_ttl:
                    akid, secret, token, expires = self._new_temp_creds(self.credential_ttl)
                    c = {'akid': akid, 'secret': secret, 'token': token, 'expires': expires,
                         'updated': now}
                    self.imds_cred = c
            self._log('imds', 'GET ' + path, {}, 200)
            body = {'Code': 'Success', 'LastUpdated': iso8601s(c['updated']), 'Type': 'AWS-HMAC',
                    'AccessKeyId': c['akid'], 'SecretAccessKey': c['secret'], 'Token': c['token'],
                    'Expiration': iso8601s(c['expires'])}
            return 200, {'Content-Type': 'text/plain'}, json.dumps(body, indent=2).encode()
        self._log('imds', 'GET ' + path, {}, 404)
        return 404, {'Content-Type': 'text/html'}, b'<?xml version="1.0" encoding="iso-8859-1"?>\n' \
            b'<title>404 - Not Found</title>'

    # =====================================================================
    # SQS (AWS JSON 1.0)
    def queue_url(self, host=None):
        return 'http://%s/%s/%s' % (host or 'sqs.%s.amazonaws.com' % self.region, self.account,
                                    self.queue_name)

    def _sqs_check_url(self, url):
        if not isinstance(url, str) or not url:
            raise SqsError('MissingParameter', 'The request must contain the parameter QueueUrl.',
                           query_code='MissingParameter')
        path = urllib.parse.urlsplit(url).path
        if path.rstrip('/') != '/%s/%s' % (self.account, self.queue_name):
            raise SqsError('QueueDoesNotExist', 'The specified queue does not exist.',
                           query_code='AWS.SimpleQueueService.NonExistentQueue')

    def _sqs(self, method, raw_path, raw_query, headers, body, target):
        action = target.split('.', 1)[1]
        params = {}
        try:
            if method != 'POST':
                raise SqsError('InvalidAction', 'SQS JSON requests must be POSTs')
            self._latency(action)
            try:
                self._verify(method, raw_path, raw_query, headers, body, 'sqs')
            except sigv4.SigError as se:
                code = {'unknown-key': 'InvalidClientTokenId', 'expired': 'ExpiredToken',
                        'token': 'InvalidClientTokenId', 'missing': 'MissingAuthenticationToken',
                        'malformed': 'IncompleteSignature'}.get(se.kind, 'SignatureDoesNotMatch')
                raise SqsError(code, se.message, 403, ns='com.amazon.coral.service')
            ctype = (hget(headers, 'Content-Type', '') or '').split(';')[0].strip().lower()
            if ctype != 'application/x-amz-json-1.0':
                raise SqsError('InvalidParameterValue', 'Content-Type must be '
                               'application/x-amz-json-1.0 for X-Amz-Target requests, not %r' % ctype)
            try:
                params = json.loads(body.decode('utf-8') or '{}')
                if not isinstance(params, dict):
                    raise ValueError
            except (ValueError, UnicodeDecodeError):
                raise SqsError('SerializationException', 'Request body is not a JSON object',
                               ns='com.amazon.coral.service')
            with self.lock:
                f = self.faults['throttle']
                if f['actions'] and action in f['actions'] and self._rate_hit(f, action):
                    raise SqsError('ThrottlingException', 'Rate exceeded', 400,
                                   query_code='ThrottlingException')
            fn = getattr(self, '_sqs_' + action, None)
            if fn is None:
                raise SqsError('UnsupportedOperation', 'The simulator does not implement %s' % action,
                               query_code='AWS.SimpleQueueService.UnsupportedOperation')
            out = fn(params, headers)
        except SqsError as e:
            self._log('sqs', action, {k: v for k, v in params.items() if k != 'MessageBody'},
                      e.status, e.code)
            hdr = {'Content-Type': 'application/x-amz-json-1.0',
                   'x-amzn-query-error': '%s;%s' % (e.query_code, e.fault),
                   'x-amzn-RequestId': str(uuid.uuid4())}
            return e.status, hdr, json.dumps({'__type': '%s#%s' % (e.ns, e.code),
                                              'message': e.message}).encode()
        self._log('sqs', action, {k: v for k, v in params.items() if k != 'MessageBody'}, 200)
        return 200, {'Content-Type': 'application/x-amz-json-1.0',
                     'x-amzn-RequestId': str(uuid.uuid4())}, json.dumps(out).encode()

    def _sqs_GetQueueUrl(self, p, headers):
        if p.get('QueueName') != self.queue_name:
            raise SqsError('QueueDoesNotExist', 'The specified queue does not exist.',
                           query_code='AWS.SimpleQueueService.NonExistentQueue')
        return {'QueueUrl': self.queue_url(hget(headers, 'Host'))}

    def post_message(self, body):
        """Enqueue a message body (str).  Returns the message id."""
        mid = str(uuid.uuid4())
        now = self.clock()
        with self.lock:
            self.sqs_messages.append({'id': mid, 'body': body, 'sent': now, 'visible_at': 0.0,
                                      'receipt': None, 'receives': 0, 'first_receive': None})
            self._sqs_cv.notify_all()
        return mid

    def _sqs_SendMessage(self, p, headers):
        self._sqs_check_url(p.get('QueueUrl'))
        body = p.get('MessageBody')
        if not isinstance(body, str) or not body:
            raise SqsError('MissingParameter', 'The request must contain the parameter MessageBody.')
        if len(body.encode()) > 262144:
            raise SqsError('InvalidParameterValue', 'One or more parameters are invalid. Reason: '
                           'Message must be shorter than 262144 bytes.')
        mid = self.post_message(body)
        return {'MD5OfMessageBody': hashlib.md5(body.encode()).hexdigest(), 'MessageId': mid}

    def _sqs_ReceiveMessage(self, p, headers):
        self._sqs_check_url(p.get('QueueUrl'))

        def num(name, lo, hi, default):
            v = p.get(name, default)
            if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
                raise SqsError('InvalidParameterValue', 'Value %r for parameter %s is invalid. Reason: '
                               'Must be between %d and %d.' % (v, name, lo, hi))
            return v
        maxn = num('MaxNumberOfMessages', 1, 10, 1)
        vis = num('VisibilityTimeout', 0, 43200, 30)
        wait = num('WaitTimeSeconds', 0, 20, 0)
        want_attrs = set(p.get('AttributeNames') or []) | set(p.get('MessageSystemAttributeNames') or [])
        deadline = time.monotonic() + wait
        with self.lock:
            while True:
                now = self.clock()
                self.sqs_messages = [m for m in self.sqs_messages if now - m['sent'] < 300]
                ready = [m for m in self.sqs_messages if m['visible_at'] <= now][:maxn]
                if ready or time.monotonic() >= deadline or self.sched._stopped:
                    break
                self._sqs_cv.wait(min(0.5, max(0.01, deadline - time.monotonic())))
            out = []
            for m in ready:
                m['visible_at'] = now + vis
                m['receives'] += 1
                m['first_receive'] = m['first_receive'] or now
                m['receipt'] = base64.b64encode(('%s#%s' % (m['id'], secrets.token_hex(24))).encode()).decode()
                msg = {'MessageId': m['id'], 'ReceiptHandle': m['receipt'],
                       'MD5OfBody': hashlib.md5(m['body'].encode()).hexdigest(), 'Body': m['body']}
                attrs = {'SenderId': 'AIDAIT2UOQQY3AUEKVGXU', 'SentTimestamp': str(int(m['sent'] * 1000)),
                         'ApproximateReceiveCount': str(m['receives']),
                         'ApproximateFirstReceiveTimestamp': str(int(m['first_receive'] * 1000))}
                if want_attrs:
                    msg['Attributes'] = {k: v for k, v in attrs.items()
                                         if 'All' in want_attrs or k in want_attrs}
                out.append(msg)
        return {'Messages': out} if out else {}

    def _sqs_DeleteMessage(self, p, headers):
        self._sqs_check_url(p.get('QueueUrl'))
        rh = p.get('ReceiptHandle')
        try:
            mid = base64.b64decode(rh.encode(), validate=True).decode().split('#')[0]
            uuid.UUID(mid)
        except (AttributeError, ValueError, binascii.Error, UnicodeDecodeError):
            raise SqsError('ReceiptHandleIsInvalid', 'The input receipt handle "%s" is not a valid '
                           'receipt handle.' % str(rh)[:80], query_code='ReceiptHandleIsInvalid')
        with self.lock:
            # deleting with a handle from an earlier receive still works, as in SQS
            self.sqs_messages = [m for m in self.sqs_messages if m['id'] != mid]
        return {}

    # -- EventBridge-shaped events ------------------------------------------
    def _envelope(self, source, detail_type, resources, detail):
        return {'version': '0', 'id': str(uuid.uuid4()), 'detail-type': detail_type,
                'source': source, 'account': self.account, 'time': iso8601s(self.clock()),
                'region': self.region, 'resources': resources, 'detail': detail}

    def _arn(self, iid):
        return 'arn:aws:ec2:%s:%s:instance/%s' % (self.region, self.account, iid)

    def _state_event(self, inst, prev):
        """EventBridge 'EC2 Instance State-change Notification' (caller holds the lock)."""
        if not self.state_change_events:
            return
        ev = self._envelope('aws.ec2', 'EC2 Instance State-change Notification', [self._arn(inst['id'])],
                            {'instance-id': inst['id'], 'state': inst['state']})
        self.post_message(json.dumps(ev))

    def event(self, kind, iid, **kw):
        """Post an EventBridge-shaped event for an instance to the queue.  kind:
        spot-interruption | rebalance | scheduled-change | state-change.
        Returns the event."""
        arn = [self._arn(iid)]
        if kind == 'spot-interruption':
            ev = self._envelope('aws.ec2', 'EC2 Spot Instance Interruption Warning', arn,
                                {'instance-id': iid, 'instance-action': kw.get('action', 'terminate')})
        elif kind == 'rebalance':
            ev = self._envelope('aws.ec2', 'EC2 Instance Rebalance Recommendation', arn,
                                {'instance-id': iid})
        elif kind == 'state-change':
            ev = self._envelope('aws.ec2', 'EC2 Instance State-change Notification', arn,
                                {'instance-id': iid, 'state': kw.get('state', 'stopping')})
        elif kind == 'scheduled-change':
            now = self.clock()
            code = kw.get('eventTypeCode', 'AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED')
            ev = self._envelope('aws.health', 'AWS Health Event', arn, {
                'eventArn': 'arn:aws:health:%s::event/EC2/%s/%s' % (self.region, code, uuid.uuid4()),
                'service': kw.get('service', 'EC2'), 'eventTypeCode': code,
                'eventTypeCategory': kw.get('eventTypeCategory', 'scheduledChange'),
                'startTime': email.utils.formatdate(now + 86400 * 7, usegmt=True),
                'endTime': email.utils.formatdate(now + 86400 * 7 + 7200, usegmt=True),
                'eventDescription': [{'language': 'en_US', 'latestDescription':
                                      'EC2 has detected degradation of the underlying hardware '
                                      'hosting your Amazon EC2 instance.'}],
                'affectedEntities': [{'entityValue': iid}]})
        else:
            raise ValueError('unknown event kind %r' % kind)
        self.post_message(json.dumps(ev))
        return ev

    def interrupt_spot(self, iid, warning_seconds=None):
        """Spot interruption: warning now, termination after the warning period."""
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if inst is None:
                raise KeyError(iid)
            if inst['state'] not in ('pending', 'running'):
                raise ValueError('instance %s is %s' % (iid, inst['state']))
        ev = self.event('spot-interruption', iid)
        w = self.spot_warning_seconds if warning_seconds is None else warning_seconds
        self.sched.after(w, self.terminate, iid, 'Server.SpotInstanceTermination')
        return ev

    # =====================================================================
    # control API (routes under /aws, see README)
    def control(self, method, path, query, body):
        try:
            return self._control(method, path, query or {}, body or {})
        except (KeyError, ValueError, TypeError) as e:
            return 400, {'error': 'bad request: %s' % (e,)}

    def _control(self, method, path, query, body):
        def q(name, default=None):
            v = query.get(name, default)
            return v[0] if isinstance(v, list) else v
        sub = path[len('/aws'):].strip('/')
        if method == 'GET':
            if sub == 'calls':
                since = int(q('since', 0))
                action = q('action')
                with self.lock:
                    return 200, {'calls': [c for c in self.calls if c['seq'] > since and
                                           (not action or c['action'] == action)]}
            if sub == 'instances':
                return 200, {'instances': self.instances()}
            if sub.startswith('instances/'):
                i = self.instance(sub.split('/', 1)[1])
                return (200, i) if i else (404, {'error': 'no such instance'})
            if sub == 'tags':
                with self.lock:
                    return 200, {'tags': {i['id']: dict(i['tags']) for i in self.instances_by_id.values()}}
            if sub == 'launch-templates':
                with self.lock:
                    return 200, {'launchTemplates': [
                        {'LaunchTemplateId': lt['id'], 'LaunchTemplateName': lt['name'],
                         'Tags': lt['tags'], 'Data': lt['data']} for lt in self.launch_templates.values()]}
            if sub == 'faults':
                with self.lock:
                    f = json.loads(json.dumps(self.faults, default=lambda s: sorted(s)))
                return 200, f
            if sub == 'queue':
                with self.lock:
                    return 200, {'queueUrl': self.queue_url(), 'messages': [
                        {'MessageId': m['id'], 'Body': m['body'], 'ReceiveCount': m['receives']}
                        for m in self.sqs_messages]}
            if sub == 'kubelets':
                k = getattr(self, 'kubelets', None)
                return 200, {'kubelets': k.status() if k else []}
            if sub == 'credentials':
                return 200, {'accessKeyId': self.access_key, 'secretAccessKey': self.secret_key,
                             'region': self.region, 'credentialTtlSeconds': self.credential_ttl}
            return 404, {'error': 'unknown control path %s' % path}
        if method == 'DELETE':
            if sub in ('faults', 'ice'):
                with self.lock:
                    if sub == 'ice':
                        self.faults['ice'] = []
                    else:
                        self.reset_faults()
                return 200, {'ok': True}
            if sub == 'calls':
                with self.lock:
                    self.calls = []
                return 200, {'ok': True}
            return 404, {'error': 'unknown control path %s' % path}
        # POST / PUT
        if sub == 'ice':
            r = {'instanceType': body.get('instanceType', '*'), 'zone': body.get('zone', '*'),
                 'capacityType': body.get('capacityType', '*'),
                 'code': body.get('code', 'InsufficientInstanceCapacity')}
            if r['capacityType'] not in ('*', 'spot', 'on-demand'):
                raise ValueError('capacityType must be spot, on-demand or *')
            if r['instanceType'] != '*' and not catalog.get(r['instanceType']):
                raise ValueError('unknown instance type %s' % r['instanceType'])
            with self.lock:
                self.faults['ice'].append(r)
            return 200, {'ice': self.faults['ice']}
        if sub in ('throttle', 'errors'):
            rate = float(body.get('rate', 1.0))
            if not 0.0 <= rate <= 1.0:
                raise ValueError('rate must be within [0, 1]')
            acts = body.get('actions')
            with self.lock:
                f = self.faults[sub]
                f.update({'rate': rate, 'actions': set(acts) if acts else None, 'acc': 0.0})
                if sub == 'errors':
                    status = int(body.get('status', 500))
                    if status not in (500, 502, 503, 504):
                        raise ValueError('status must be 500, 502, 503 or 504')
                    f['status'] = status
                    f['code'] = body.get('code', 'InternalError' if status == 500 else 'Unavailable')
            return 200, {'ok': True}
        if sub == 'latency':
            ms = int(body.get('ms', 0))
            if ms < 0 or ms > 120000:
                raise ValueError('ms must be within [0, 120000]')
            with self.lock:
                self.faults['latency_ms'] = ms
                self.faults['latency_actions'] = set(body['actions']) if body.get('actions') else None
            return 200, {'ok': True}
        if sub == 'deny':
            acts = body.get('actions') or []
            with self.lock:
                self.faults['deny'] = set(acts)
            return 200, {'deny': sorted(acts)}
        if sub == 'web-identity':
            with self.lock:
                self.faults['reject_web_identity'] = bool(body.get('reject', True))
            return 200, {'ok': True}
        if sub == 'credentials':
            ttl = int(body['ttlSeconds'])
            if ttl < 1:
                raise ValueError('ttlSeconds must be >= 1')
            with self.lock:
                self.credential_ttl = ttl
                self.imds_cred = None
            return 200, {'credentialTtlSeconds': ttl}
        if sub == 'interrupt':
            try:
                ev = self.interrupt_spot(body['instanceId'], body.get('warningSeconds'))
            except KeyError:
                return 404, {'error': 'no such instance %s' % body.get('instanceId')}
            return 200, {'event': ev}
        if sub == 'event':
            iid = body['instanceId']
            if self.instance(iid) is None:
                return 404, {'error': 'no such instance %s' % iid}
            kw = {k: v for k, v in body.items() if k not in ('instanceId', 'kind')}
            return 200, {'event': self.event(body['kind'], iid, **kw)}
        if sub == 'message':
            b = body.get('body')
            if not isinstance(b, str):
                b = json.dumps(body.get('event', body))
            return 200, {'MessageId': self.post_message(b)}
        if sub == 'terminate':
            r = self.terminate(body['instanceId'], body.get('reason', 'User initiated'))
            if r is None:
                return 404, {'error': 'no such instance %s' % body['instanceId']}
            return 200, {'previous': r[0], 'current': r[1]}
        if sub == 'spot-price':
            it, z, pr = body['instanceType'], body['zone'], float(body['price'])
            if not catalog.get(it) or z not in self.zones:
                raise ValueError('unknown instance type or zone')
            with self.lock:
                self.spot_overrides[(it, z)] = pr
            return 200, {'ok': True}
        if sub == 'state-change-events':
            with self.lock:
                self.state_change_events = bool(body.get('enabled', True))
            return 200, {'ok': True}
        return 404, {'error': 'unknown control path %s' % path}


def _region_abbrev(region):
    parts = region.split('-')
    if len(parts) < 3:
        return region.replace('-', '')
    return parts[0] + ''.join(w[0] for w in parts[1:-1]) + parts[-1]


def _jwt_claims(tok):
    parts = tok.split('.')
    if len(parts) != 3:
        return None
    try:
        pad = parts[1] + '=' * (-len(parts[1]) % 4)
        claims = json.loads(base64.urlsafe_b64decode(pad.encode()).decode())
        return claims if isinstance(claims, dict) else None
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None


# ---------------------------------------------------------------------------
# HTTP server

class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'AmazonEC2'
    sys_version = ''

    def log_message(self, fmt, *args):
        pass

    def _do(self):
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n > 0 else b''
        status, hdrs, out = self.server.aws.handle(self.command, self.path, self.headers, body)
        self.send_response(status)
        for k, v in hdrs.items():
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _do


class AwsServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, aws, host='127.0.0.1', port=0):
        self.aws = aws
        http.server.ThreadingHTTPServer.__init__(self, (host, port), _Handler)

    def close(self):
        self.shutdown()
        self.server_close()

    @property
    def url(self):
        return 'http://%s:%d' % self.server_address[:2]


def serve(aws, host='127.0.0.1', port=0):
    """Start an AwsServer in a daemon thread; returns it (.url, .shutdown())."""
    srv = AwsServer(aws, host, port)
    threading.Thread(target=srv.serve_forever, name='aws-http', daemon=True).start()
    return srv
