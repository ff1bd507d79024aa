"""AWS simulator, the control API (routes under /aws, see README.md): faults
(capacity errors, throttling, 5xx, latency, denials), the call log, events on demand.

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


class FaultsMixin:
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
            if sub == 'instance-profiles':
                with self.lock:
                    return 200, {'instanceProfiles': [
                        {'InstanceProfileName': p['name'], 'Path': p['path'], 'Arn': p['arn'],
                         'Roles': list(p['roles']), 'Tags': dict(p['tags'])}
                        for p in self.instance_profiles.values()]}
            if sub == 'capacity-reservations':
                return 200, {'capacityReservations': self.capacity_reservations_public()}
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
        if sub == 'capacity-reservations':
            rid = self.add_capacity_reservation(
                body['instanceType'], body['availabilityZone'], body.get('count', 1),
                match=body.get('instanceMatchCriteria', 'targeted'),
                reservation_type=body.get('reservationType', 'default'), tags=body.get('tags'),
                end_in=body.get('endInSeconds'), owner=body.get('ownerId'), rid=body.get('id'),
                interruptible=bool(body.get('interruptible', False)))
            return 200, {'capacityReservationId': rid}
        if sub.startswith('capacity-reservations/'):
            r = self.set_capacity_reservation(sub.split('/', 1)[1], state=body.get('state'),
                                              count=body.get('count'), end_in=body.get('endInSeconds'))
            return 200, {'state': r['state'], 'total': r['total']}
        if sub == 'ssm':
            if not isinstance(body, dict):
                raise ValueError('POST /aws/ssm takes {name: value}')
            self.ssm_set(body)
            return 200, {'ok': True}
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
        if sub == 'container':
            tok = body.get('token')
            if tok is not None and not isinstance(tok, str):
                raise ValueError('token must be a string or null')
            with self.lock:
                self.container_token = tok
            return 200, {'token': tok}
        if sub == 'assume-role':
            ext = body.get('externalId')
            with self.lock:
                if ext is None:
                    self.role_external_ids.pop(body['roleArn'], None)
                else:
                    self.role_external_ids[body['roleArn']] = str(ext)
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
        if sub == 'on-demand-price':
            catalog.set_on_demand(body['instanceType'], body['price'])
            return 200, {'ok': True}
        if sub == 'instance-types':
            t = catalog.add_type(body)
            return 200, {'instanceType': t['name'], 'onDemandPrice': t['on_demand']}
        if sub == 'instance-status':
            x = self.set_instance_status(body['instanceId'], body.get('check', 'instance'),
                                         body.get('status', 'impaired'), body.get('impairedSince'))
            if x is None:
                return 404, {'error': 'no such instance %s' % body['instanceId']}
            return 200, {'instanceStatus': x}
        if sub == 'scheduled-event':
            x = self.schedule_event(body['instanceId'], body['code'], body.get('notBefore'),
                                    body.get('description'))
            if x is None:
                return 404, {'error': 'no such instance %s' % body['instanceId']}
            return 200, {'instanceStatus': x}
        if sub == 'node-condition':
            k = getattr(self, 'kubelets', None)
            if k is None:
                return 404, {'error': 'no kubelets in this simulator'}
            node = k.set_condition(body['instanceId'], body.get('type', 'Ready'),
                                   body.get('status', 'False'), body.get('reason'),
                                   body.get('message'), body.get('since'))
            if node is None:
                return 404, {'error': 'no registered node for instance %s' % body['instanceId']}
            return 200, {'node': node}
        if sub == 'state-change-events':
            with self.lock:
                self.state_change_events = bool(body.get('enabled', True))
            return 200, {'ok': True}
        return 404, {'error': 'unknown control path %s' % path}
