"""Simulated AWS: EC2 Query API, SQS (JSON 1.0), Pricing and SSM (JSON 1.1), STS, IMDSv2, SigV4
checks, faults.

One object, AwsSim, holds all state; AwsSim.handle(method, path, headers, body)
answers one HTTP request (all four services share one port and are told apart
by path and headers, see handle()).  serve() runs it on a ThreadingHTTPServer.
See tests/sim/README.md ("AWS") for what is simulated and how it differs from
the real services; tests/sim/INTERFACE.md for how the halves fit together.

The simulator is split by service along its seams; AwsSim (here: state, request
routing, SigV4 checks, EC2 dispatch, filters and paging) combines the parts:
aws_describe.py (EC2 catalog answers), aws_instances.py (launch templates, instances,
fleets), aws_sts.py (STS, IMDS), aws_sqs.py (SQS, events), aws_pricing.py (the Price
List Query API), aws_ssm.py (SSM GetParameter), aws_faults.py (the control
API, faults), aws_calllog.py (the call log as a file, NW_SIM_AWS_CALLS); aws_util.py
holds what they share.

Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403  (aws.parse_time, aws.Ec2Error, ... stay importable)
from aws_calllog import CallLogMixin
from aws_describe import DescribeMixin
from aws_faults import FaultsMixin
from aws_iam import IAM_ACTIONS, IamMixin
from aws_health import HealthMixin
from aws_instances import InstancesMixin
from aws_pricing import PricingMixin
from aws_reservations import ReservationsMixin
from aws_ssm import SsmMixin
from aws_sqs import SqsEventsMixin
from aws_sts import StsImdsMixin


# ---------------------------------------------------------------------------

class AwsSim(DescribeMixin, InstancesMixin, StsImdsMixin, SqsEventsMixin, PricingMixin, SsmMixin,
             IamMixin, HealthMixin, ReservationsMixin, FaultsMixin, CallLogMixin):
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
        # ClientToken idempotency (EC2's "Ensuring idempotency"): (action, token) ->
        # {'params': the request's other parameters, 'response': the 200 answer or None
        # while the first request runs}; _idem_cv wakes requests waiting on one that runs
        self.client_tokens = {}
        self._idem_cv = threading.Condition(self.lock)
        self.sched = Scheduler()
        self._subs = []
        self.zones = ['%s%s' % (region, c) for c in 'abc']
        self.zone_ids = {z: '%s-az%d' % (_region_abbrev(region), i + 1)
                         for i, z in enumerate(self.zones)}
        self.dns_suffix = 'ec2.internal' if region == 'us-east-1' else '%s.compute.internal' % region
        self.start_time = clock()
        self._seed()
        self._seed_iam()
        self._seed_reservations()
        self.reset_faults()
        self.calls = []
        self._call_seq = 0
        self._calllog_init()
        self.instances_by_id = {}
        self.launch_templates = {}
        self.fleets = {}
        self.temp_creds = {}
        self.imds_tokens = {}
        self.imds_cred = None
        # container credentials (the EKS Pod Identity agent, ECS): the Authorization value
        # the endpoint wants (None: any or none) and the ExternalId AssumeRole wants per role
        self.container_token = None
        self.role_external_ids = {}
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
        # placement groups: a cluster one and a partition one (3 partitions); a deleted one
        self.placement_groups = {}
        for i, (name, strat, parts, state) in enumerate([
                ('%s-cluster' % c, 'cluster', 0, 'available'),
                ('%s-partition' % c, 'partition', 3, 'available'),
                ('%s-old' % c, 'cluster', 0, 'deleted')]):
            gid = 'pg-0sim%013x' % (i + 1)
            self.placement_groups[gid] = {'id': gid, 'name': name, 'strategy': strat,
                                          'partitions': parts, 'state': state, 'tags': {}}
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
        self._seed_ssm()

    # -- subscriptions & control -------------------------------------------
    def subscribe(self, fn):
        """fn(event, instance) on 'running', 'shutting-down', 'terminated'."""
        with self.lock:
            self._subs.append(fn)

    def stop(self):
        self.sched.stop()
        with self.lock:
            self._sqs_cv.notify_all()
            self._calllog_close()

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
             'RootVolumeSizeGiB': i['root_gb'], 'BlockDeviceGiB': dict(i.get('volumes') or {}),
             'SecurityGroupIds': list(i['sgs']),
             'LaunchTemplate': i.get('lt'),
             'CapacityType': 'spot' if i['spot'] else 'reserved' if i.get('cr') else 'on-demand'}
        if i.get('cr'):
            d['CapacityReservationId'] = i['cr']
        if i['spot']:
            d['SpotInstanceRequestId'] = i['sir']
        if i.get('public_ip'):
            d['PublicIpAddress'] = i['public_ip']
        d['NetworkInterfaces'] = i.get('nis') or []
        d['IamInstanceProfile'] = i.get('profile')
        d['PlacementGroup'] = i.get('placement_group')
        d['PartitionNumber'] = i.get('partition')
        return d

    # -- HTTP entry point ---------------------------------------------------
    def handle(self, method, path, headers, body):
        """-> (status, headers dict, body bytes).  Dispatch:
        /latest/... -> IMDS; GET /v1/credentials, /v2/credentials/... -> container
        credentials; X-Amz-Target AmazonSQS.* -> SQS JSON;
        X-Amz-Target AWSPriceListService.* -> Pricing JSON; AmazonSSM.* -> SSM JSON;
        otherwise a Query request whose Action names an STS or EC2 action."""
        if isinstance(body, str):
            body = body.encode('utf-8')
        body = body or b''
        raw_path, _, raw_query = path.partition('?')
        self._calllog_begin({})
        try:
            if raw_path.startswith('/latest/') or raw_path == '/latest':
                return self._imds(method, raw_path, headers)
            if method == 'GET' and (raw_path == '/v1/credentials' or
                                    raw_path.startswith('/v2/credentials/')):
                return self._container_credentials(raw_path, headers)
            target = hget(headers, 'X-Amz-Target', '')
            if target.startswith('AmazonSQS.'):
                return self._sqs(method, raw_path, raw_query, headers, body, target)
            if target.startswith('AWSPriceListService.'):
                return self._pricing(method, raw_path, raw_query, headers, body, target)
            if target.startswith('AmazonSSM.'):
                return self._ssm(method, raw_path, raw_query, headers, body, target)
            params = {}
            for k, v in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
                params[k] = v
            ctype = (hget(headers, 'Content-Type', '') or '').lower()
            if method == 'POST' and body and (ctype.startswith('application/x-www-form-urlencoded')
                                              or not ctype):
                for k, v in urllib.parse.parse_qsl(body.decode('utf-8', 'replace'),
                                                   keep_blank_values=True):
                    params[k] = v
            self._calllog_begin(params)
            if params.get('Action') in STS_ACTIONS:
                return self._sts(method, raw_path, raw_query, headers, body, params)
            if params.get('Action') in IAM_ACTIONS:
                return self._iam(method, raw_path, raw_query, headers, body, params)
            return self._ec2(method, raw_path, raw_query, headers, body, params)
        except Exception as e:  # never let a simulator bug look like a hang
            import traceback
            traceback.print_exc()
            rid = str(uuid.uuid4())
            return self._ec2_error(Ec2Error('InternalError', 'simulator error: %r' % e), rid)

    # -- call log ---------------------------------------------------------
    def _log(self, service, action, params, status, code=None, replay=False):
        with self.lock:
            self._call_seq += 1
            self.calls.append({'seq': self._call_seq, 'time': iso8601(self.clock()),
                               'service': service, 'action': action,
                               'params': {k: v for k, v in params.items()
                                          if k not in ('Action', 'Version', 'WebIdentityToken')},
                               'status': status, 'code': code, 'replay': replay})
            if len(self.calls) > 20000:
                del self.calls[:len(self.calls) - 20000]
            self._calllog_write(self.calls[-1])

    # -- credentials ------------------------------------------------------
    def _lookup(self, akid):
        with self.lock:
            if akid == self.access_key:
                return {'secret': self.secret_key, 'token': None, 'expires': None}
            c = self.temp_creds.get(akid)
            return dict(c) if c else None

    def _new_temp_creds(self, ttl, arn=None):
        akid = 'ASIA' + ''.join(secrets.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZ234567') for _ in range(16))
        secret = base64.b64encode(secrets.token_bytes(30)).decode()
        token = 'IQoJb3JpZ2luX2VjE' + base64.b64encode(secrets.token_bytes(96)).decode()
        expires = float(int(self.clock() + ttl))   # whole seconds, as Expiration shows
        with self.lock:
            self.temp_creds[akid] = {'secret': secret, 'token': token, 'expires': expires,
                                     'arn': arn}
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
            token = params.get('ClientToken') if action in IDEMPOTENT_ACTIONS else None
            if token is not None:
                replay = self._idem_begin(action, token, params)
                if replay is not None:
                    self._log('ec2', action, params, 200, replay=True)
                    return replay
            answer = None
            try:
                # the latency fault slows the work, not a replay of work already done
                self._latency(action)
                result = fn(params)
                xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<%sResponse xmlns="%s"><requestId>%s'
                       '</requestId>%s</%sResponse>'
                       % (action, EC2_NS, rid, ''.join(xml_value(k, v) for k, v in result.items()),
                          action))
                answer = (200, {'Content-Type': 'text/xml;charset=UTF-8'}, xml.encode('utf-8'))
            finally:
                if token is not None:
                    self._idem_end(action, token, answer)
        except Ec2Error as e:
            self._log('ec2', action, params, e.status, e.code)
            return self._ec2_error(e, rid)
        self._log('ec2', action, params, 200)
        return answer

    # -- ClientToken idempotency ------------------------------------------
    # EC2 (docs.aws.amazon.com/AWSEC2/latest/APIReference/Run_Instance_Idempotency.html):
    # a repeat with the same client token and the same parameters gets the first request's
    # answer and does nothing more; the same token with other parameters gets
    # IdempotentParameterMismatch; a token is at most 64 ASCII characters.  Only a
    # successful answer is kept: a request that failed may be sent again with its token.
    # A repeat that arrives while the first request still runs waits for its answer.
    def _idem_begin(self, action, token, params):
        """None when this request is the token's first (run it, then _idem_end), else the
        recorded (status, headers, body)."""
        if not token or len(token) > 64 or any(not (32 <= ord(ch) < 127) for ch in token):
            raise Ec2Error('InvalidParameterValue', 'ClientToken must be 1 to 64 ASCII characters')
        fp = sorted((k, v) for k, v in params.items() if k not in ('Action', 'Version', 'ClientToken'))
        key = (action, token)
        with self.lock:
            while True:
                e = self.client_tokens.get(key)
                if e is None:
                    self.client_tokens[key] = {'params': fp, 'response': None}
                    return None
                if e['params'] != fp:
                    raise Ec2Error('IdempotentParameterMismatch', 'Arguments on this idempotent '
                                   'request are inconsistent with arguments used in previous '
                                   'request(s).')
                if e['response'] is not None:
                    return e['response']
                self._idem_cv.wait(1.0)

    def _idem_end(self, action, token, answer):
        """Record the first request's answer (None: it failed, the token is free again)."""
        key = (action, token)
        with self.lock:
            if answer is None:
                self.client_tokens.pop(key, None)
            else:
                self.client_tokens[key]['response'] = answer
            self._idem_cv.notify_all()

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
