"""Capacity reservations in the simulator: DescribeCapacityReservations (ids, filters as
Karpenter's capacityreservation provider sends them, paging), launches that target a
reservation and consume it, ReservationCapacityExceeded, open reservations matched by
plain on-demand launches, capacity blocks, expiry."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from awsclient import filters  # noqa: E402
import test_aws_ec2 as base  # noqa: E402

SELF = '123456789012'
ALT = '210987654321'


class Reservations(base.Ec2Base):
    """The reservations of aws/karpenter-provider-aws pkg/controllers/nodeclass
    capacityreservation_test.go's BeforeEach (zones test-zone-1a/1b are the simulator's
    first two)."""

    lt = base.Launch.lt
    fleet_params = base.Launch.fleet_params
    fleet = base.Launch.fleet

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        z = cls.sim.zones
        disc = {'karpenter.sh/discovery': 'test'}
        add = cls.sim.add_capacity_reservation
        cls.cr = {
            '1a-1': add('m5.large', z[0], 10, rid='cr-m5large1a1'),
            '1a-2': add('m5.large', z[0], 10, tags=disc, rid='cr-m5large1a2'),
            'p5': add('p5.48xlarge', z[0], 2, owner=ALT, reservation_type='capacity-block',
                      tags={'reservation-type': 'capacity-block'}, end_in=86400, rid='cr-p548xlarge1a'),
            '1b-1': add('m5.large', z[1], 15, rid='cr-m5large1b1'),
            '1b-2': add('m5.large', z[1], 15, owner=ALT, tags=disc, rid='cr-m5large1b2'),
            '1a-3': add('m5.large', z[0], 5, match='open', rid='cr-m5large1a3'),
        }

    def ids(self, params):
        root = self.ok('DescribeCapacityReservations', params)
        return sorted(e.text for e in root.findall('./capacityReservationSet/item/capacityReservationId'))

    def active(self, *more):
        return filters(('state', ['active']), *more)

    def test_describe_like_karpenter(self):
        # It("should resolve capacity reservations by ID")
        root = self.ok('DescribeCapacityReservations', dict(self.active(), **{
            'CapacityReservationId.1': 'cr-m5large1a1'}))
        items = root.findall('./capacityReservationSet/item')
        self.assertEqual(len(items), 1)
        x = items[0]
        self.assertEqual([x.find(k).text for k in ('instanceType', 'availabilityZone', 'ownerId',
                                                    'instanceMatchCriteria', 'reservationType',
                                                    'state', 'availableInstanceCount',
                                                    'totalInstanceCount')],
                         ['m5.large', self.sim.zones[0], SELF, 'targeted', 'default', 'active', '10', '10'])
        self.assertIsNone(x.find('endDate'))
        # It("should resolve capacity reservations by tags"): tag filters
        self.assertEqual(self.ids(self.active(('tag:karpenter.sh/discovery', ['test']))),
                         ['cr-m5large1a2', 'cr-m5large1b2'])
        # It("should resolve capacity reservations by tags + owner")
        self.assertEqual(self.ids(self.active(('tag:karpenter.sh/discovery', ['test']),
                                              ('owner-id', [SELF]))), ['cr-m5large1a2'])
        # It("should resolve capacity reservations by instance match criteria 'open'")
        self.assertEqual(self.ids(self.active(('instance-match-criteria', ['open']))), ['cr-m5large1a3'])
        # ... 'targeted': five of them
        self.assertEqual(len(self.ids(self.active(('instance-match-criteria', ['targeted'])))), 5)
        # tag-key (a "*" value in a selector term)
        self.assertEqual(self.ids(self.active(('tag-key', ['reservation-type']))), ['cr-p548xlarge1a'])
        # It("should discover capacity block reservations")
        root = self.ok('DescribeCapacityReservations', {'CapacityReservationId.1': 'cr-p548xlarge1a'})
        self.assertEqual(root.find('./capacityReservationSet/item/reservationType').text, 'capacity-block')
        self.assertIsNotNone(root.find('./capacityReservationSet/item/endDate'))
        # an unknown id is NotFound (Karpenter then finds nothing for the term)
        self.err('DescribeCapacityReservations', {'CapacityReservationId.1': 'cr-0000000000dead'},
                 400, 'InvalidCapacityReservationId.NotFound')
        # MaxResults pages; not with ids
        root = self.ok('DescribeCapacityReservations', {'MaxResults': '2'})
        self.assertEqual(len(root.findall('./capacityReservationSet/item')), 2)
        self.assertTrue(root.find('nextToken').text)
        self.err('DescribeCapacityReservations', {'MaxResults': '5', 'CapacityReservationId.1':
                                                  'cr-m5large1a1'}, 400, 'InvalidParameterCombination')
        self.err('DescribeCapacityReservations', filters(('no-such-filter', ['x'])), 400,
                 'InvalidParameterValue')

    def test_targeted_launches_consume_then_exceed(self):
        z = self.sim.zones
        rid = self.sim.add_capacity_reservation('m6i.large', z[2], 2)
        self.lt('karpenter.k8s.aws/cr-target', extra={
            'LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.'
            'CapacityReservationId': rid})
        got = []
        for _ in range(2):
            root = self.fleet('karpenter.k8s.aws/cr-target', [('m6i.large', z[2])])
            got += [e.text for e in root.findall('./fleetInstanceSet/item/instanceIds/item')]
        self.assertEqual(len(got), 2)
        for iid in got:
            i = self.sim.instance(iid)
            self.assertEqual((i['CapacityReservationId'], i['CapacityType']), (rid, 'reserved'))
        root = self.ok('DescribeInstances', {'InstanceId.1': got[0]})
        self.assertEqual(root.find('.//instancesSet/item/capacityReservationId').text, rid)
        self.assertEqual(root.find('.//capacityReservationSpecification/capacityReservationTarget/'
                                   'capacityReservationId').text, rid)
        self.assertEqual(self.ids({'CapacityReservationId.1': rid}), [rid])
        root = self.ok('DescribeCapacityReservations', {'CapacityReservationId.1': rid})
        self.assertEqual(root.find('.//availableInstanceCount').text, '0')
        # the third: no instance, ReservationCapacityExceeded for the override
        root = self.fleet('karpenter.k8s.aws/cr-target', [('m6i.large', z[2])])
        self.assertEqual(root.findall('./fleetInstanceSet/item'), [])
        self.assertEqual([e.text for e in root.findall('./errorSet/item/errorCode')],
                         ['ReservationCapacityExceeded'])
        # a terminated instance gives its place back
        self.sim.terminate(got[0])
        awsclient_wait = time.monotonic() + 5
        while self.sim.instance(got[0])['State']['Name'] != 'terminated' and time.monotonic() < awsclient_wait:
            time.sleep(0.02)
        root = self.ok('DescribeCapacityReservations', {'CapacityReservationId.1': rid})
        self.assertEqual(root.find('.//availableInstanceCount').text, '1')
        # a type or zone the reservation does not hold
        root = self.fleet('karpenter.k8s.aws/cr-target', [('m6i.xlarge', z[2])])
        self.assertEqual([e.text for e in root.findall('./errorSet/item/errorCode')], ['InvalidParameterValue'])

    def test_open_reservation_matches_plain_on_demand(self):
        z = self.sim.zones
        rid = self.sim.add_capacity_reservation('c6i.large', z[1], 1, match='open')
        self.lt('karpenter.k8s.aws/cr-open')
        ids = []
        for _ in range(2):
            root = self.fleet('karpenter.k8s.aws/cr-open', [('c6i.large', z[1])])
            ids += [e.text for e in root.findall('./fleetInstanceSet/item/instanceIds/item')]
        self.assertEqual([self.sim.instance(i).get('CapacityReservationId') for i in ids], [rid, None])

    def test_capacity_block_and_expiry(self):
        z = self.sim.zones
        rid = self.sim.add_capacity_reservation('g5.xlarge', z[0], 1, reservation_type='capacity-block',
                                                end_in=3600)
        self.lt('karpenter.k8s.aws/cr-block', extra={
            'LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.'
            'CapacityReservationId': rid,
            'LaunchTemplateData.InstanceMarketOptions.MarketType': 'capacity-block'})
        # a capacity block wants a capacity-block fleet
        root = self.fleet('karpenter.k8s.aws/cr-block', [('g5.xlarge', z[0])])
        self.assertEqual([e.text for e in root.findall('./errorSet/item/errorCode')], ['InvalidParameterValue'])
        root = self.fleet('karpenter.k8s.aws/cr-block', [('g5.xlarge', z[0])], ctype='capacity-block')
        iid = root.find('./fleetInstanceSet/item/instanceIds/item').text
        root = self.ok('DescribeInstances', {'InstanceId.1': iid})
        self.assertEqual(root.find('.//instancesSet/item/instanceLifecycle').text, 'capacity-block')
        # expired: no longer active, nothing available
        self.sim.set_capacity_reservation(rid, end_in=-1)
        self.assertEqual(self.ids(self.active(('instance-type', ['g5.xlarge']))), [])
        root = self.ok('DescribeCapacityReservations', {'CapacityReservationId.1': rid})
        self.assertEqual(root.find('.//state').text, 'expired')

    def test_control_api(self):
        st, out = self.ctl.call('POST', '/aws/capacity-reservations',
                                {'instanceType': 'm6i.large', 'availabilityZone': self.sim.zones[0],
                                 'count': 3, 'tags': {'team': 'a'}})
        self.assertEqual(st, 200)
        rid = out['capacityReservationId']
        st, out = self.ctl.call('GET', '/aws/capacity-reservations')
        mine = [r for r in out['capacityReservations'] if r['CapacityReservationId'] == rid][0]
        self.assertEqual((mine['TotalInstanceCount'], mine['AvailableInstanceCount'], mine['State']),
                         (3, 3, 'active'))
        st, out = self.ctl.call('POST', '/aws/capacity-reservations/' + rid, {'state': 'cancelled'})
        self.assertEqual((st, out['state']), (200, 'cancelled'))
        st, out = self.ctl.call('POST', '/aws/capacity-reservations', {'instanceType': 'nope.large',
                                                                       'availabilityZone': 'x'})
        self.assertEqual(st, 400)


if __name__ == '__main__':
    unittest.main()
