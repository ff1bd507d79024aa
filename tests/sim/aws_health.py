"""AWS simulator, instance health: EC2 DescribeInstanceStatus (status checks and scheduled
events) and the control API that fails them (POST /aws/instance-status, POST
/aws/scheduled-event, see README.md).

A mixin of aws.AwsSim. Every instance's checks pass (`ok`, reachability `passed`) until the
control API fails one; a failed check reports `impaired` with EC2's `impairedSince`. As EC2
does, DescribeInstanceStatus lists running instances only unless IncludeAllInstances is
true (then non-running ones with `not-applicable` checks), its filters are ANDed across
names, and pages hold 5..1000 (default 1000) entries. Python 3 standard library only;
shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403

EVENT_CODES = ('instance-reboot', 'system-reboot', 'system-maintenance', 'instance-retirement',
               'instance-stop')


class HealthMixin:
    def _health(self, inst):
        """The instance's health record (caller holds the lock)."""
        return inst.setdefault('health', {'instance': None, 'system': None, 'events': []})

    # -- control ----------------------------------------------------------------
    def set_instance_status(self, iid, check, status, impaired_since=None):
        """check: 'instance' or 'system'; status 'impaired' (the reachability check failed
        since impaired_since, epoch seconds, default now) or 'ok'."""
        if check not in ('instance', 'system'):
            raise ValueError('check must be instance or system')
        if status not in ('ok', 'impaired'):
            raise ValueError('status must be ok or impaired')
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if inst is None:
                return None
            h = self._health(inst)
            h[check] = None if status == 'ok' else float(
                impaired_since if impaired_since is not None else self.clock())
            return self._status_xml(inst)

    def schedule_event(self, iid, code, not_before=None, description=None):
        if code not in EVENT_CODES:
            raise ValueError('code must be one of %s' % ', '.join(EVENT_CODES))
        with self.lock:
            inst = self.instances_by_id.get(iid)
            if inst is None:
                return None
            nb = float(not_before if not_before is not None else self.clock() + 86400)
            self._health(inst)['events'].append({
                'code': code, 'notBefore': nb, 'notAfter': nb + 7200,
                'description': description or 'The instance is scheduled for %s' % code,
                'instanceEventId': 'instance-event-%s' % _hex(17)})
            return self._status_xml(inst)

    # -- the API ------------------------------------------------------------------
    def _check_xml(self, since):
        if since is None:
            return {'status': 'ok', 'details': [{'name': 'reachability', 'status': 'passed'}]}
        return {'status': 'impaired', 'details': [{'name': 'reachability', 'status': 'failed',
                                                   'impairedSince': iso8601(since)}]}

    def _status_xml(self, inst):
        h = self._health(inst)
        running = inst['state'] == 'running'
        na = {'status': 'not-applicable'}
        x = {'instanceId': inst['id'], 'availabilityZone': inst['zone'],
             'availabilityZoneId': self.zone_ids[inst['zone']],
             'instanceState': {'code': STATE_CODES[inst['state']], 'name': inst['state']},
             'systemStatus': self._check_xml(h['system']) if running else na,
             'instanceStatus': self._check_xml(h['instance']) if running else na,
             'attachedEbsStatus': {'status': 'ok', 'details': [
                 {'name': 'reachability', 'status': 'passed'}]} if running else na}
        if h['events']:
            x['eventsSet'] = [{'instanceEventId': e['instanceEventId'], 'code': e['code'],
                               'description': e['description'],
                               'notBefore': iso8601(e['notBefore']),
                               'notAfter': iso8601(e['notAfter'])} for e in h['events']]
        return x

    _STATUS_GETTERS = {
        'instance-id': lambda x: x['instanceId'],
        'availability-zone': lambda x: x['availabilityZone'],
        'instance-state-name': lambda x: x['instanceState']['name'],
        'instance-state-code': lambda x: x['instanceState']['code'],
        'instance-status.status': lambda x: x['instanceStatus']['status'],
        'instance-status.reachability': lambda x: [d['status'] for d in
                                                   x['instanceStatus'].get('details', [])],
        'system-status.status': lambda x: x['systemStatus']['status'],
        'system-status.reachability': lambda x: [d['status'] for d in
                                                 x['systemStatus'].get('details', [])],
        'event.code': lambda x: [e['code'] for e in x.get('eventsSet', [])],
        'event.description': lambda x: [e['description'] for e in x.get('eventsSet', [])],
        'event.instance-event-id': lambda x: [e['instanceEventId'] for e in x.get('eventsSet', [])],
    }

    def _ec2_DescribeInstanceStatus(self, p):
        ids = unflatten(p, 'InstanceId') or []
        if ids and p.get('MaxResults'):
            raise Ec2Error('InvalidParameterCombination', 'The parameter instancesSet cannot be '
                                                          'used with the parameter maxResults')
        include_all = bool(_bool(p.get('IncludeAllInstances'), 'IncludeAllInstances'))
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
            if not include_all:
                insts = [i for i in insts if i['state'] == 'running']
            filters = self._filters(p, set(self._STATUS_GETTERS))
            sel = [x for x in (self._status_xml(i) for i in insts)
                   if self._match(filters, self._STATUS_GETTERS, x)]
            page, nxt = self._page('DescribeInstanceStatus', sel, p, 5, 1000, 1000)
        return {'instanceStatusSet': page, 'nextToken': nxt}
