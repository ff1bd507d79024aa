"""AWS simulator, EC2 capacity reservations: DescribeCapacityReservations, and the
reservations CreateFleet launches into.

A reservation (On-Demand Capacity Reservation, or a Capacity Block when its
reservationType is capacity-block) holds `total` instances of one type in one zone.  Its
available count is the total less the instances (pending or running, not yet terminated)
launched into it.  A launch goes into a reservation when its launch template names it
(CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId: a
targeted launch; EC2 answers ReservationCapacityExceeded when none is left, and a
capacity block also needs InstanceMarketOptions.MarketType capacity-block and a fleet
of DefaultTargetCapacityType capacity-block), or, for an on-demand launch that names
none, into an active `open` reservation of its type and zone with room (EC2's automatic
matching).  A reservation whose end time has passed is `expired`; a capacity block's
instances are terminated 30 minutes before its end (EC2's capacity-block reclaim).

Reservations are made through the control API (POST /aws/capacity-reservations, see
INTERFACE.md).  A mixin of aws.AwsSim: it uses the simulator's state and lock.
Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403

CB_RECLAIM_SECONDS = 30 * 60


class ReservationsMixin:
    def _seed_reservations(self):
        self.capacity_reservations = {}

    # -- state ----------------------------------------------------------------
    def _cr_state(self, r):
        if r['state'] == 'active' and r['end'] is not None and self.clock() >= r['end']:
            r['state'] = 'expired'
        return r['state']

    def _cr_used(self, rid):
        return sum(1 for i in self.instances_by_id.values()
                   if i.get('cr') == rid and i['state'] in ('pending', 'running', 'stopping',
                                                            'stopped', 'shutting-down'))

    def _cr_available(self, r):
        if self._cr_state(r) != 'active':
            return 0
        return max(0, r['total'] - self._cr_used(r['id']))

    def add_capacity_reservation(self, instance_type, zone, count, match='targeted',
                                 reservation_type='default', tags=None, end_in=None, owner=None,
                                 rid=None, interruptible=False):
        """Make a reservation (caller need not hold the lock); returns its id."""
        if not catalog.get(instance_type):
            raise ValueError('unknown instance type %s' % instance_type)
        if zone not in self.zones:
            raise ValueError('unknown zone %s' % zone)
        if match not in ('open', 'targeted'):
            raise ValueError('instanceMatchCriteria must be open or targeted')
        if reservation_type not in ('default', 'capacity-block'):
            raise ValueError('reservationType must be default or capacity-block')
        count = int(count)
        if count < 1:
            raise ValueError('count must be >= 1')
        with self.lock:
            rid = rid or 'cr-%s' % _hex(17)
            now = self.clock()
            end = now + float(end_in) if end_in is not None else None
            self.capacity_reservations[rid] = {
                'id': rid, 'type': instance_type, 'zone': zone, 'total': count, 'match': match,
                'reservation_type': reservation_type, 'tags': dict(tags or {}),
                'owner': owner or self.account, 'created': now, 'end': end, 'state': 'active',
                'interruptible': bool(interruptible)}
            if reservation_type == 'capacity-block' and end is not None:
                self.sched.after(max(0.0, end - CB_RECLAIM_SECONDS - now), self._cr_reclaim, rid)
            return rid

    def set_capacity_reservation(self, rid, state=None, count=None, end_in=None):
        with self.lock:
            r = self.capacity_reservations[rid]
            if state is not None:
                if state not in ('active', 'expired', 'cancelled', 'pending', 'failed',
                                 'scheduled', 'payment-pending', 'payment-failed',
                                 'assessing', 'delayed', 'unsupported'):
                    raise ValueError('unknown state %s' % state)
                r['state'] = state
            if count is not None:
                r['total'] = int(count)
            if end_in is not None:
                r['end'] = self.clock() + float(end_in)
            return dict(r)

    def _cr_reclaim(self, rid):
        """A capacity block's reclaim: its instances are terminated."""
        with self.lock:
            ids = [i['id'] for i in self.instances_by_id.values()
                   if i.get('cr') == rid and i['state'] in ('pending', 'running')]
        for iid in ids:
            self.terminate(iid, 'Capacity Block reservation reclaimed')

    def capacity_reservations_public(self):
        with self.lock:
            return [self._cr_public(r) for r in self.capacity_reservations.values()]

    def _cr_public(self, r):
        return {'CapacityReservationId': r['id'], 'InstanceType': r['type'],
                'AvailabilityZone': r['zone'], 'TotalInstanceCount': r['total'],
                'AvailableInstanceCount': self._cr_available(r), 'State': self._cr_state(r),
                'InstanceMatchCriteria': r['match'], 'ReservationType': r['reservation_type'],
                'OwnerId': r['owner'], 'Tags': dict(r['tags']),
                'EndDate': iso8601s(r['end']) if r['end'] is not None else None,
                'Instances': sorted(i['id'] for i in self.instances_by_id.values()
                                    if i.get('cr') == r['id'])}

    # -- DescribeCapacityReservations ----------------------------------------
    _CR_GETTERS = {
        'instance-type': lambda r: r['type'],
        'availability-zone': lambda r: r['zone'],
        'owner-id': lambda r: r['owner'],
        'instance-platform': lambda r: 'Linux/UNIX',
        'tenancy': lambda r: 'default',
        'instance-match-criteria': lambda r: r['match'],
        'reservation-type': lambda r: r['reservation_type'],
        'end-date-type': lambda r: 'limited' if r['end'] is not None else 'unlimited',
    }

    def _cr_xml(self, r):
        x = {'capacityReservationId': r['id'], 'ownerId': r['owner'],
             'capacityReservationArn': 'arn:aws:ec2:%s:%s:capacity-reservation/%s' % (
                 self.region, r['owner'], r['id']),
             'availabilityZoneId': self.zone_ids[r['zone']], 'instanceType': r['type'],
             'instancePlatform': 'Linux/UNIX', 'availabilityZone': r['zone'], 'tenancy': 'default',
             'totalInstanceCount': r['total'], 'availableInstanceCount': self._cr_available(r),
             'ebsOptimized': True, 'ephemeralStorage': False, 'state': self._cr_state(r),
             'startDate': iso8601(r['created']),
             'endDateType': 'limited' if r['end'] is not None else 'unlimited',
             'instanceMatchCriteria': r['match'], 'createDate': iso8601(r['created']),
             'tagSet': tag_set(r['tags']), 'reservationType': r['reservation_type'],
             'interruptible': r['interruptible']}
        if r['end'] is not None:
            x['endDate'] = iso8601(r['end'])
        return x

    def _ec2_DescribeCapacityReservations(self, p):
        ids = unflatten(p, 'CapacityReservationId') or []
        if ids and p.get('MaxResults'):
            raise Ec2Error('InvalidParameterCombination', 'MaxResults cannot be used with '
                                                          'CapacityReservationIds')
        getters = dict(self._CR_GETTERS, state=self._cr_state, **self._tag_getters(lambda r: r['tags']))
        filters = self._filters(p, set(getters))
        with self.lock:
            for rid in ids:
                if rid not in self.capacity_reservations:
                    raise Ec2Error('InvalidCapacityReservationId.NotFound',
                                   "The capacity reservation ID '%s' does not exist" % rid)
            rs = [self.capacity_reservations[i] for i in ids] if ids else \
                sorted(self.capacity_reservations.values(), key=lambda r: r['id'])
            rs = [r for r in rs if self._match(filters, getters, r)]
            page, nxt = self._page('DescribeCapacityReservations', rs, p, 1, 1000, None)
            return {'capacityReservationSet': [self._cr_xml(r) for r in page], 'nextToken': nxt}

    # -- launches ---------------------------------------------------------------
    def _cr_for_launch(self, data, dtype, itype, zone):
        """The reservation a CreateFleet candidate launches into (caller holds the lock):
        (reservation id or None, error (code, message) or None)."""
        crs = data.get('CapacityReservationSpecification') or {}
        target = (crs.get('CapacityReservationTarget') or {}).get('CapacityReservationId')
        market = (data.get('InstanceMarketOptions') or {}).get('MarketType')
        if target:
            r = self.capacity_reservations.get(target)
            if not r:
                return None, ('InvalidCapacityReservationId.NotFound',
                              "The capacity reservation ID '%s' does not exist" % target)
            if r['type'] != itype or r['zone'] != zone:
                return None, ('InvalidParameterValue', 'The instance type %s in %s does not match '
                              'the capacity reservation %s (%s in %s)' % (itype, zone, target,
                                                                          r['type'], r['zone']))
            block = r['reservation_type'] == 'capacity-block'
            if block != (market == 'capacity-block') or block != (dtype == 'capacity-block'):
                return None, ('InvalidParameterValue', 'A Capacity Block needs MarketType '
                              'capacity-block and a fleet of DefaultTargetCapacityType '
                              'capacity-block; %s is a %s reservation' % (
                                  target, r['reservation_type']))
            if self._cr_state(r) != 'active':
                return None, ('InvalidCapacityReservationId.NotFound' if r['state'] == 'cancelled'
                              else 'ReservationCapacityExceeded',
                              'The capacity reservation %s is %s' % (target, r['state']))
            if self._cr_available(r) == 0:
                return None, ('ReservationCapacityExceeded', 'Insufficient capacity in the '
                              'capacity reservation %s' % target)
            return target, None
        if dtype == 'capacity-block' or market == 'capacity-block':
            return None, ('InvalidParameterValue', 'A capacity-block launch must target a '
                                                   'Capacity Block reservation')
        if dtype == 'on-demand' and crs.get('CapacityReservationPreference', 'open') == 'open':
            for r in sorted(self.capacity_reservations.values(), key=lambda r: r['id']):
                if r['match'] == 'open' and r['type'] == itype and r['zone'] == zone and \
                        r['reservation_type'] == 'default' and self._cr_available(r) > 0:
                    return r['id'], None
        return None, None
