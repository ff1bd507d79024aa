"""Shared pieces of the AWS simulator (aws.py and its aws_*.py parts): time and id
helpers, XML values, the parameter schemas EC2 checks requests against, the error types
and the event scheduler.  Python 3 standard library only; shares no code with nodewarden.
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

# EC2 actions whose ClientToken makes a repeat idempotent (AwsSim._idem_begin)
IDEMPOTENT_ACTIONS = ('CreateFleet', 'RunInstances', 'CreateLaunchTemplate')

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
    'DescribePlacementGroups': ['GroupId.N', 'GroupName.N'] + _FILTER,
    'DescribeCapacityReservations': ['CapacityReservationId.N', 'MaxResults', 'NextToken'] + _FILTER,
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
    'DescribeInstanceStatus': ['InstanceId.N', 'IncludeAllInstances', 'MaxResults', 'NextToken']
    + _FILTER,
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
STS_ACTIONS = ('AssumeRoleWithWebIdentity', 'AssumeRole', 'GetCallerIdentity')


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


# every name, the underscored helpers too, for `from aws_util import *` in the parts


class JsonApiError(Exception):
    """An error of an AWS JSON protocol API: {"__type": code, "message": ...}."""

    def __init__(self, code, message, status=400):
        Exception.__init__(self, '%s: %s' % (code, message))
        self.code, self.message, self.status = code, message, status


_SIG_CODES = {'unknown-key': 'UnrecognizedClientException', 'expired': 'ExpiredTokenException',
              'token': 'UnrecognizedClientException', 'missing': 'MissingAuthenticationTokenException',
              'malformed': 'IncompleteSignatureException'}


def json11_call(sim, service, sign_region, method, raw_path, raw_query, headers, body, target,
                handler, iam_prefix):
    """One AWS JSON 1.1 request to the simulator sim: SigV4 for (sign_region, service),
    Content-Type application/x-amz-json-1.1, a JSON object body, the faults (latency,
    throttle, errors, deny) by action, then handler(action, params) -> dict or
    JsonApiError.  Returns (status, headers, body) and logs the call."""
    action = target.split('.', 1)[1]
    params = {}
    try:
        if method != 'POST':
            raise JsonApiError('InvalidParameterException', 'requests must be POSTs')
        sim._latency(action)
        try:
            sigv4.verify(method, raw_path, raw_query, headers, body, sim._lookup, sign_region,
                         service, sim.clock())
        except sigv4.SigError as se:
            raise JsonApiError(_SIG_CODES.get(se.kind, 'InvalidSignatureException'), se.message, 403)
        ctype = (hget(headers, 'Content-Type', '') or '').split(';')[0].strip().lower()
        if ctype != 'application/x-amz-json-1.1':
            raise JsonApiError('SerializationException', 'Content-Type must be '
                               'application/x-amz-json-1.1, not %r' % ctype)
        try:
            params = json.loads(body.decode('utf-8') or '{}')
            if not isinstance(params, dict):
                raise ValueError
        except (ValueError, UnicodeDecodeError):
            raise JsonApiError('SerializationException', 'Request body is not a JSON object')
        with sim.lock:
            if sim._rate_hit(sim.faults['throttle'], action):
                raise JsonApiError('ThrottlingException', 'Rate exceeded')
            ef = sim.faults['errors']
            if sim._rate_hit(ef, action):
                raise JsonApiError('InternalErrorException', 'An internal error occurred', ef['status'])
            denied = action in sim.faults['deny']
        if denied:
            raise JsonApiError('AccessDeniedException', 'User: arn:aws:iam::%s:user/nodewarden '
                               'is not authorized to perform: %s:%s' % (sim.account, iam_prefix, action))
        out = handler(action, params)
    except JsonApiError as e:
        sim._log(service, action, params, e.status, e.code)
        return e.status, {'Content-Type': 'application/x-amz-json-1.1',
                          'x-amzn-RequestId': str(uuid.uuid4())}, json.dumps(
            {'__type': e.code, 'message': e.message}).encode()
    sim._log(service, action, params, 200)
    return 200, {'Content-Type': 'application/x-amz-json-1.1',
                 'x-amzn-RequestId': str(uuid.uuid4())}, json.dumps(out).encode()


__all__ = [n for n in dir() if not n.startswith('__')]
