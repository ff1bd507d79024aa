"""AWS simulator, SQS (AWS JSON 1.0) and the EventBridge-shaped events it
delivers: state changes, spot interruptions, rebalance and health events.

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


class SqsEventsMixin:
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
