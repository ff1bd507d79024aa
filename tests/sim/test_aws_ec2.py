"""EC2 Query API of the simulator: catalog, discovery, launch templates, CreateFleet
with ICE, instances, tags, paging, faults."""

import base64
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import awsclient  # noqa: E402
import catalog  # noqa: E402
from awsclient import error_code, filters  # noqa: E402

USER_DATA = base64.b64encode(b'#!/bin/bash\nkubeadm join 10.0.0.10:6443 --token abc\n').decode()


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


class Ec2Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = aws.AwsSim(cluster='demo', pending_seconds=0.05, shutdown_seconds=0.05)
        cls.srv = aws.serve(cls.sim)
        cls.c = awsclient.Client(cls.srv.url, cls.sim.access_key, cls.sim.secret_key, cls.sim.region)
        cls.ctl = awsclient.FakeControl()
        cls.sim.register_control(cls.ctl)

    @classmethod
    def tearDownClass(cls):
        cls.srv.close()
        cls.sim.stop()

    def setUp(self):
        self.ctl.call('DELETE', '/aws/faults')

    def ok(self, action, params=None):
        st, root = self.c.ec2(action, params)
        self.assertEqual(st, 200, '%s: %s' % (action, awsclient.ET.tostring(root)[:400]))
        self.assertEqual(root.tag, action + 'Response')
        self.assertTrue(root.find('requestId').text)
        return root

    def err(self, action, params, status, code):
        st, root = self.c.ec2(action, params)
        self.assertEqual((st, error_code(root)), (status, code),
                         awsclient.ET.tostring(root)[:400])
        self.assertEqual(root.tag, 'Response')
        self.assertTrue(root.find('RequestID').text)
        return root


class Catalog(Ec2Base):
    def test_catalog_size_and_families(self):
        self.assertGreaterEqual(len(catalog.TYPES), 60)
        fams = {t['family'] for t in catalog.TYPES.values()}
        for f in ('m6i', 'm7i', 'c6i', 'r6i', 'm7g', 'c7g', 'g5', 'g6', 'p4d', 'p5'):
            self.assertIn(f, fams)
        for t in catalog.TYPES.values():
            for zi in range(3):
                self.assertLess(catalog.spot_price(t['name'], zi), t['on_demand'], t['name'])
        # figures from aws/karpenter-provider-aws zz_generated.vpclimits.go and zz_generated.pricing_aws.go
        m = catalog.get('m6i.large')
        self.assertEqual((m['vcpu'], m['memory_mib'], catalog.max_pods_eni(m), m['on_demand']),
                         (2, 8192, 29, 0.096))
        self.assertEqual(catalog.max_pods_eni(catalog.get('p5.48xlarge')), 100)
        self.assertEqual(catalog.get('m7g.large')['arch'], 'arm64')

    def test_describe_instance_types_paging_and_filters(self):
        seen = []
        tok = None
        pages = 0
        while True:
            p = {'MaxResults': '20'}
            if tok:
                p['NextToken'] = tok
            root = self.ok('DescribeInstanceTypes', p)
            page = [e.text for e in root.findall('./instanceTypeSet/item/instanceType')]
            self.assertLessEqual(len(page), 20)
            seen += page
            pages += 1
            t = root.find('nextToken')
            tok = t.text if t is not None else None
            if not tok:
                break
        self.assertEqual(sorted(seen), catalog.names())
        self.assertEqual(pages, (len(catalog.names()) + 19) // 20)
        root = self.ok('DescribeInstanceTypes', filters(('processor-info.supported-architecture', ['arm64']),
                                                        ('supported-virtualization-type', ['hvm'])))
        arm = [e.text for e in root.findall('./instanceTypeSet/item/instanceType')]
        self.assertTrue(arm)
        self.assertTrue(all(n.startswith(('m7g.', 'c7g.')) for n in arm))
        root = self.ok('DescribeInstanceTypes', filters(('instance-type', ['g5.*', 'p5.48xlarge'])))
        names = [e.text for e in root.findall('./instanceTypeSet/item/instanceType')]
        self.assertEqual(sorted(names), sorted([n for n in catalog.names() if n.startswith('g5.')]
                                               + ['p5.48xlarge']))
        root = self.ok('DescribeInstanceTypes', {'InstanceType.1': 'p5.48xlarge'})
        it = root.find('./instanceTypeSet/item')
        self.assertEqual(it.find('./gpuInfo/gpus/item/name').text, 'H100')
        self.assertEqual(it.find('./gpuInfo/gpus/item/count').text, '8')
        self.assertEqual(it.find('./gpuInfo/gpus/item/memoryInfo/sizeInMiB').text, '81920')
        self.assertEqual(it.find('./networkInfo/networkCards/item/maximumNetworkInterfaces').text, '2')
        self.assertEqual(it.find('./networkInfo/maximumNetworkCards').text, '32')
        self.assertEqual(it.find('./vCpuInfo/defaultVCpus').text, '192')
        self.assertEqual(self.ok('DescribeInstanceTypes', filters(('current-generation', ['false'])))
                         .findall('./instanceTypeSet/item'), [])
        self.err('DescribeInstanceTypes', {'MaxResults': '101'}, 400, 'InvalidParameterValue')
        self.err('DescribeInstanceTypes', {'NextToken': 'garbage'}, 400, 'InvalidParameterValue')
        self.err('DescribeInstanceTypes', filters(('no-such-filter', ['x'])), 400, 'InvalidParameterValue')
        self.err('DescribeInstanceTypes', {'InstanceType.1': 'm99.huge'}, 400, 'InvalidInstanceType')

    def test_offerings_and_spot_prices(self):
        root = self.ok('DescribeInstanceTypeOfferings', dict(LocationType='availability-zone',
                                                             **filters(('instance-type', ['p5.48xlarge']))))
        zones = sorted(e.text for e in root.findall('./instanceTypeOfferingSet/item/location'))
        self.assertEqual(zones, catalog.zones_for('p5.48xlarge', self.sim.zones))
        self.assertLess(len(zones), 3)
        root = self.ok('DescribeInstanceTypeOfferings', {'LocationType': 'availability-zone'})
        n = len(root.findall('./instanceTypeOfferingSet/item'))
        self.assertEqual(n, sum(len(catalog.zones_for(t, self.sim.zones)) for t in catalog.names()))
        root = self.ok('DescribeSpotPriceHistory', {
            'ProductDescription.1': 'Linux/UNIX', 'InstanceType.1': 'm6i.large',
            'StartTime': aws.iso8601(time.time())})
        rows = root.findall('./spotPriceHistorySet/item')
        self.assertEqual(len(rows), 3)
        prices = {r.find('availabilityZone').text: float(r.find('spotPrice').text) for r in rows}
        self.assertTrue(all(p < 0.096 for p in prices.values()))
        self.assertGreater(len(set(prices.values())), 1, 'spot prices vary by zone')
        root = self.ok('DescribeSpotPriceHistory', {'MaxResults': '50'})
        self.assertEqual(len(root.findall('./spotPriceHistorySet/item')), 50)
        self.assertIsNotNone(root.find('nextToken'))


class Discovery(Ec2Base):
    def test_subnets_sgs_images_by_tag(self):
        root = self.ok('DescribeSubnets', filters(('tag:karpenter.sh/discovery', ['demo'])))
        subs = root.findall('./subnetSet/item')
        self.assertEqual(sorted(s.find('availabilityZone').text for s in subs), self.sim.zones)
        for s in subs:
            self.assertGreater(int(s.find('availableIpAddressCount').text), 1000)
            self.assertTrue(s.find('availabilityZoneId').text.startswith('usw2-az'))
        self.assertEqual(self.ok('DescribeSubnets', filters(('tag:karpenter.sh/discovery', ['other'])))
                         .findall('./subnetSet/item'), [])
        sid = subs[0].find('subnetId').text
        self.assertEqual(len(self.ok('DescribeSubnets', {'SubnetId.1': sid}).findall('./subnetSet/item')), 1)
        self.err('DescribeSubnets', {'SubnetId.1': 'subnet-0000dead'}, 400, 'InvalidSubnetID.NotFound')
        root = self.ok('DescribeSecurityGroups', filters(('tag:karpenter.sh/discovery', ['demo'])))
        self.assertEqual([e.text for e in root.findall('./securityGroupInfo/item/groupName')], ['demo-node'])
        root = self.ok('DescribeSecurityGroups', filters(('group-name', ['default'])))
        self.assertEqual(len(root.findall('./securityGroupInfo/item')), 1)
        root = self.ok('DescribeImages', filters(('tag:karpenter.sh/discovery', ['demo']),
                                                 ('architecture', ['arm64'])))
        imgs = root.findall('./imagesSet/item')
        self.assertEqual(len(imgs), 2)
        self.assertTrue(all(i.find('architecture').text == 'arm64' for i in imgs))
        root = self.ok('DescribeImages', dict({'Owner.1': 'self'},
                                              **filters(('name', ['nodewarden-kubeadm-*-x86_64-*']))))
        self.assertEqual(len(root.findall('./imagesSet/item')), 2)
        root = self.ok('DescribeImages', {'Owner.1': 'amazon'})
        self.assertEqual(len(root.findall('./imagesSet/item')), 1)
        self.err('DescribeImages', {'ImageId.1': 'ami-0123456789abcdef0'}, 400, 'InvalidAMIID.NotFound')


class Launch(Ec2Base):
    def lt(self, name, image='ami-0sim0000000000001', extra=None):
        p = {'LaunchTemplateName': name, 'LaunchTemplateData.ImageId': image,
             'LaunchTemplateData.UserData': USER_DATA,
             'LaunchTemplateData.SecurityGroupId.1': 'sg-0sim00000000000001',
             'LaunchTemplateData.MetadataOptions.HttpTokens': 'required',
             'LaunchTemplateData.MetadataOptions.HttpPutResponseHopLimit': '1',
             'LaunchTemplateData.BlockDeviceMapping.1.DeviceName': '/dev/xvda',
             'LaunchTemplateData.BlockDeviceMapping.1.Ebs.VolumeSize': '80',
             'LaunchTemplateData.TagSpecification.1.ResourceType': 'instance',
             'LaunchTemplateData.TagSpecification.1.Tag.1.Key': 'from-template',
             'LaunchTemplateData.TagSpecification.1.Tag.1.Value': 'yes',
             'TagSpecification.1.ResourceType': 'launch-template',
             'TagSpecification.1.Tag.1.Key': 'eks:eks-cluster-name',
             'TagSpecification.1.Tag.1.Value': 'demo'}
        p.update(extra or {})
        return self.ok('CreateLaunchTemplate', p).find('./launchTemplate/launchTemplateId').text

    def fleet_params(self, lt_name, overrides, ctype='on-demand', total=1, tags=None):
        p = {'Type': 'instant', 'TargetCapacitySpecification.TotalTargetCapacity': str(total),
             'TargetCapacitySpecification.DefaultTargetCapacityType': ctype,
             'LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName': lt_name,
             'LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version': '$Latest'}
        if ctype == 'spot':
            p['SpotOptions.AllocationStrategy'] = 'price-capacity-optimized'
        else:
            p['OnDemandOptions.AllocationStrategy'] = 'lowest-price'
        for i, (it, zone) in enumerate(overrides, 1):
            pre = 'LaunchTemplateConfigs.1.Overrides.%d.' % i
            p[pre + 'InstanceType'] = it
            p[pre + 'AvailabilityZone'] = zone
            p[pre + 'SubnetId'] = 'subnet-0sim%012x' % (self.sim.zones.index(zone) + 1)
        tags = tags or {'karpenter.sh/nodepool': 'default', 'eks:eks-cluster-name': 'demo'}
        n = 1
        for rt in ('instance', 'volume', 'fleet'):
            p['TagSpecification.%d.ResourceType' % n] = rt
            for j, (k, v) in enumerate(tags.items(), 1):
                p['TagSpecification.%d.Tag.%d.Key' % (n, j)] = k
                p['TagSpecification.%d.Tag.%d.Value' % (n, j)] = v
            n += 1
        return p

    def fleet(self, lt_name, overrides, ctype='on-demand', total=1, tags=None):
        return self.ok('CreateFleet', self.fleet_params(lt_name, overrides, ctype, total, tags))

    def test_instance_profile_arn(self):
        # an instance reports its profile's own ARN (path included) and is found by it
        with self.sim.lock:
            prof = self.sim._new_profile('demo_77', '/karpenter/us-west-2/demo/uid-1/', {},
                                         ['KarpenterNodeRole-demo'])
            self.sim.instance_profiles['demo_77'] = prof
        self.lt('karpenter.k8s.aws/prof', extra={
            'LaunchTemplateData.IamInstanceProfile.Name': 'demo_77'})
        z = self.sim.zones
        root = self.fleet('karpenter.k8s.aws/prof', [('m6i.large', z[0])])
        iid = root.find('.//instanceIds/item').text
        f = filters(('iam-instance-profile.arn', [prof['arn']]))
        root = self.ok('DescribeInstances', f)
        got = [e.text for e in root.findall('./reservationSet/item/instancesSet/item/instanceId')]
        self.assertEqual(got, [iid])
        self.assertEqual(root.find('.//iamInstanceProfile/arn').text,
                         'arn:aws:iam::%s:instance-profile/karpenter/us-west-2/demo/uid-1/demo_77'
                         % self.sim.account)
        f = filters(('iam-instance-profile.arn', [prof['arn'] + 'x']))
        root = self.ok('DescribeInstances', f)
        self.assertIsNone(root.find('.//instanceId'))
        self.ok('TerminateInstances', {'InstanceId.1': iid})

    def test_client_token_idempotency(self):
        self.lt('karpenter.k8s.aws/idem')
        z = self.sim.zones
        p = self.fleet_params('karpenter.k8s.aws/idem', [('m6i.large', z[0])])
        p['ClientToken'] = 'nw-6f1c2d3e-0000-4000-8000-000000000001-0'
        before = len(self.sim.instances())
        first = self.ok('CreateFleet', p)
        again = self.ok('CreateFleet', p)
        ids = [e.text for e in first.findall('./fleetInstanceSet/item/instanceIds/item')]
        self.assertEqual(len(ids), 1)
        self.assertEqual([e.text for e in again.findall('./fleetInstanceSet/item/instanceIds/item')], ids)
        self.assertEqual(again.find('fleetId').text, first.find('fleetId').text)
        self.assertEqual(len(self.sim.instances()), before + 1, 'a repeat launches nothing')
        # the same token with other parameters
        q = dict(p, **{'LaunchTemplateConfigs.1.Overrides.1.InstanceType': 'm6i.xlarge'})
        self.err('CreateFleet', q, 400, 'IdempotentParameterMismatch')
        self.assertEqual(len(self.sim.instances()), before + 1)
        # a request that failed does not use its token up
        p2 = dict(p, ClientToken='nw-denied-then-allowed')
        self.ctl.call('POST', '/aws/deny', {'actions': ['CreateFleet']})
        self.err('CreateFleet', p2, 403, 'UnauthorizedOperation')
        self.ctl.call('POST', '/aws/deny', {'actions': []})
        self.assertEqual(len(self.ok('CreateFleet', p2).findall('./fleetInstanceSet/item')), 1)
        self.assertEqual(len(self.sim.instances()), before + 2)
        # at most 64 ASCII characters
        self.err('CreateFleet', dict(p, ClientToken='x' * 65), 400, 'InvalidParameterValue')
        # a launch template too: the repeat gets the same template, not AlreadyExists
        lp = {'LaunchTemplateName': 'karpenter.k8s.aws/idem-lt', 'ClientToken': 'nw-lt-1',
              'LaunchTemplateData.ImageId': 'ami-0sim0000000000001'}
        a = self.ok('CreateLaunchTemplate', lp).find('./launchTemplate/launchTemplateId').text
        b = self.ok('CreateLaunchTemplate', lp).find('./launchTemplate/launchTemplateId').text
        self.assertEqual(a, b)
        self.err('CreateLaunchTemplate', dict(lp, ClientToken='nw-lt-2'), 400,
                 'InvalidLaunchTemplateName.AlreadyExistsException')

    def test_client_token_repeat_while_the_first_runs(self):
        """A repeat that arrives while the slow first request still runs (the client's
        timeout fired) gets the first one's answer: one instance."""
        import threading
        self.lt('karpenter.k8s.aws/idem-slow')
        p = self.fleet_params('karpenter.k8s.aws/idem-slow', [('c6i.large', self.sim.zones[1])])
        p['ClientToken'] = 'nw-slow-first-0'
        self.ctl.call('POST', '/aws/latency', {'ms': 600, 'actions': ['CreateFleet']})
        before = len(self.sim.instances())
        out = []
        ts = [threading.Thread(target=lambda: out.append(self.c.ec2('CreateFleet', p)))
              for _ in range(3)]
        for t in ts:
            t.start()
            time.sleep(0.05)
        for t in ts:
            t.join(30)
        self.assertEqual([st for st, _ in out], [200, 200, 200])
        ids = {tuple(e.text for e in root.findall('./fleetInstanceSet/item/instanceIds/item'))
               for _, root in out}
        self.assertEqual(len(ids), 1, ids)
        self.assertEqual(len(self.sim.instances()), before + 1)
        st, calls = self.ctl.call('GET', '/aws/calls', query={'action': 'CreateFleet'})
        mine = [c for c in calls['calls'] if c['params'].get('ClientToken') == p['ClientToken']]
        self.assertEqual(sorted(c['replay'] for c in mine), [False, True, True])

    def test_launch_template_crud(self):
        lid = self.lt('karpenter.k8s.aws/crud-1')
        self.err('CreateLaunchTemplate', {'LaunchTemplateName': 'karpenter.k8s.aws/crud-1',
                                          'LaunchTemplateData.ImageId': 'ami-0sim0000000000001'},
                 400, 'InvalidLaunchTemplateName.AlreadyExistsException')
        root = self.ok('DescribeLaunchTemplates', {'LaunchTemplateName.1': 'karpenter.k8s.aws/crud-1'})
        self.assertEqual(root.find('./launchTemplates/item/launchTemplateId').text, lid)
        root = self.ok('DescribeLaunchTemplates', filters(('tag:eks:eks-cluster-name', ['demo'])))
        self.assertIn(lid, [e.text for e in root.findall('./launchTemplates/item/launchTemplateId')])
        self.ok('DeleteLaunchTemplate', {'LaunchTemplateId': lid})
        self.err('DescribeLaunchTemplates', {'LaunchTemplateName.1': 'karpenter.k8s.aws/crud-1'},
                 400, 'InvalidLaunchTemplateName.NotFoundException')
        self.err('DeleteLaunchTemplate', {'LaunchTemplateId': lid}, 400, 'InvalidLaunchTemplateId.NotFound')
        # the Query member names are checked: SecurityGroupIds is not a LaunchTemplateData member name
        self.err('CreateLaunchTemplate', {'LaunchTemplateName': 'bad-member',
                                          'LaunchTemplateData.SecurityGroupIds.1': 'sg-0sim00000000000001'},
                 400, 'UnknownParameter')
        self.err('CreateLaunchTemplate', {'LaunchTemplateName': 'bad-ud',
                                          'LaunchTemplateData.UserData': '!!notbase64'},
                 400, 'InvalidUserData.Malformed')

    def test_fleet_on_demand_lowest_price_and_instances(self):
        self.lt('karpenter.k8s.aws/od')
        z = self.sim.zones
        # a new instance is pending for pending_seconds: long enough here that
        # DescribeInstances sees it pending however loaded the machine (0.05 s raced a
        # busy test run, which sometimes saw it running already); the pending -> running
        # step is checked on a second launch with the class's 0.05 s
        self.sim.pending_seconds = 600
        try:
            root = self.fleet('karpenter.k8s.aws/od', [('m6i.xlarge', z[0]), ('m6i.large', z[1]),
                                                       ('c6i.large', z[2])], total=2)
        finally:
            self.sim.pending_seconds = 0.05
        fis = root.findall('./fleetInstanceSet/item')
        self.assertEqual(len(fis), 1)
        self.assertEqual(fis[0].find('instanceType').text, 'c6i.large')   # cheapest
        self.assertEqual(fis[0].find('lifecycle').text, 'on-demand')
        self.assertEqual(fis[0].find('./launchTemplateAndOverrides/overrides/availabilityZone').text, z[2])
        ids = [e.text for e in fis[0].findall('./instanceIds/item')]
        self.assertEqual(len(ids), 2)
        self.assertEqual(root.findall('./errorSet/item'), [])
        self.assertTrue(root.find('fleetId').text.startswith('fleet-'))
        r = self.ok('DescribeInstances', {'InstanceId.1': ids[0]})
        inst = r.find('./reservationSet/item/instancesSet/item')
        self.assertEqual(inst.find('instanceState/name').text, 'pending')
        self.assertEqual(inst.find('placement/availabilityZone').text, z[2])
        tags = {t.find('key').text: t.find('value').text for t in inst.findall('./tagSet/item')}
        self.assertEqual(tags, {'from-template': 'yes', 'karpenter.sh/nodepool': 'default',
                                'eks:eks-cluster-name': 'demo'})
        self.assertIsNone(inst.find('spotInstanceRequestId'))
        self.assertEqual(inst.find('./metadataOptions/httpTokens').text, 'required')
        pub = self.sim.instance(ids[0])
        self.assertEqual(pub['State']['Name'], 'pending')
        self.assertEqual(pub['UserData'], USER_DATA)
        self.assertEqual(pub['RootVolumeSizeGiB'], 80)
        self.assertTrue(pub['PrivateDnsName'].endswith('.us-west-2.compute.internal'))
        root = self.fleet('karpenter.k8s.aws/od', [('c6i.large', z[2])], total=1)
        again = root.find('./fleetInstanceSet/item/instanceIds/item').text
        self.assertTrue(wait_for(lambda: self.sim.instance(again)['State']['Name'] == 'running'))

    def test_fleet_spot_and_ice(self):
        self.lt('karpenter.k8s.aws/spot')
        z = self.sim.zones
        ovs = [('m6i.large', z[0]), ('m6i.large', z[1]), ('m6i.large', z[2]), ('m7i.large', z[0])]
        cheapest = min(ovs, key=lambda o: self.sim.spot_price(o[0], o[1]))
        st, out = self.ctl.call('POST', '/aws/ice', {'instanceType': cheapest[0], 'zone': cheapest[1],
                                                     'capacityType': 'spot'})
        self.assertEqual(st, 200)
        root = self.fleet('karpenter.k8s.aws/spot', ovs, ctype='spot')
        errs = root.findall('./errorSet/item')
        self.assertEqual(len(errs), 1)
        self.assertEqual(errs[0].find('errorCode').text, 'InsufficientInstanceCapacity')
        self.assertEqual(errs[0].find('./launchTemplateAndOverrides/overrides/instanceType').text, cheapest[0])
        self.assertEqual(errs[0].find('./launchTemplateAndOverrides/overrides/availabilityZone').text,
                         cheapest[1])
        self.assertEqual(errs[0].find('lifecycle').text, 'spot')
        fis = root.findall('./fleetInstanceSet/item')
        self.assertEqual(len(fis), 1)
        rest = sorted((o for o in ovs if o != cheapest), key=lambda o: self.sim.spot_price(*o))[0]
        got = (fis[0].find('instanceType').text,
               fis[0].find('./launchTemplateAndOverrides/overrides/availabilityZone').text)
        self.assertEqual(got, rest)
        iid = fis[0].find('./instanceIds/item').text
        r = self.ok('DescribeInstances', {'InstanceId.1': iid})
        inst = r.find('./reservationSet/item/instancesSet/item')
        self.assertEqual(inst.find('instanceLifecycle').text, 'spot')
        self.assertTrue(inst.find('spotInstanceRequestId').text.startswith('sir-'))
        # ICE for on-demand is separate
        root = self.fleet('karpenter.k8s.aws/spot', [cheapest], ctype='on-demand')
        self.assertEqual(root.findall('./errorSet/item'), [])
        # everything ICE'd: no instances, only errors, still HTTP 200
        self.ctl.call('POST', '/aws/ice', {'instanceType': '*', 'zone': '*', 'capacityType': 'spot'})
        root = self.fleet('karpenter.k8s.aws/spot', ovs, ctype='spot')
        self.assertEqual(root.findall('./fleetInstanceSet/item'), [])
        self.assertEqual(len(root.findall('./errorSet/item')), len(ovs))

    def test_fleet_per_override_errors(self):
        self.lt('karpenter.k8s.aws/errs')
        z = self.sim.zones
        bad_zone = [x for x in z if x not in catalog.zones_for('p5.48xlarge', z)][0]
        root = self.fleet('karpenter.k8s.aws/errs', [('p5.48xlarge', bad_zone), ('m7g.large', z[0]),
                                                     ('m6i.large', z[0])])
        codes = sorted(e.find('errorCode').text for e in root.findall('./errorSet/item'))
        self.assertEqual(codes, ['InvalidParameterValue', 'Unsupported'])  # arch mismatch, not offered
        self.assertEqual(root.find('./fleetInstanceSet/item/instanceType').text, 'm6i.large')
        root = self.fleet('karpenter.k8s.aws/missing', [('m6i.large', z[0])])
        self.assertEqual(root.find('./errorSet/item/errorCode').text,
                         'InvalidLaunchTemplateName.NotFoundException')
        self.assertEqual(root.findall('./fleetInstanceSet/item'), [])

    def test_describe_by_tag_paging_terminate(self):
        self.lt('karpenter.k8s.aws/paging')
        z = self.sim.zones
        self.fleet('karpenter.k8s.aws/paging', [('m6i.large', z[0])], total=7,
                   tags={'karpenter.sh/nodepool': 'paging', 'eks:eks-cluster-name': 'demo'})
        self.fleet('karpenter.k8s.aws/paging', [('m6i.large', z[1])], total=2,
                   tags={'karpenter.sh/nodepool': 'other', 'eks:eks-cluster-name': 'demo'})
        f = filters(('tag:karpenter.sh/nodepool', ['paging']), ('tag-key', ['eks:eks-cluster-name']),
                    ('instance-state-name', ['pending', 'running', 'stopping', 'stopped', 'shutting-down']))
        ids, tok = [], None
        while True:
            p = dict(f, MaxResults='5')
            if tok:
                p['NextToken'] = tok
            root = self.ok('DescribeInstances', p)
            ids += [e.text for e in root.findall('./reservationSet/item/instancesSet/item/instanceId')]
            t = root.find('nextToken')
            tok = t.text if t is not None else None
            if not tok:
                break
        self.assertEqual(len(ids), 7)
        self.assertEqual(len(set(ids)), 7)
        self.err('DescribeInstances', {'MaxResults': '4'}, 400, 'InvalidParameterValue')
        root = self.ok('TerminateInstances', {'InstanceId.1': ids[0], 'InstanceId.2': ids[1]})
        cur = [e.text for e in root.findall('./instancesSet/item/currentState/name')]
        self.assertEqual(cur, ['shutting-down', 'shutting-down'])
        self.assertTrue(wait_for(lambda: self.sim.instance(ids[0])['State']['Name'] == 'terminated'))
        root = self.ok('TerminateInstances', {'InstanceId.1': ids[0]})   # idempotent
        self.assertEqual(root.find('./instancesSet/item/previousState/name').text, 'terminated')
        self.assertEqual(root.find('./instancesSet/item/currentState/name').text, 'terminated')
        root = self.ok('DescribeInstances', f)
        left = [e.text for e in root.findall('./reservationSet/item/instancesSet/item/instanceId')]
        self.assertEqual(sorted(left), sorted(ids[2:]))
        # terminated instances stay visible by id
        root = self.ok('DescribeInstances', {'InstanceId.1': ids[0]})
        self.assertEqual(root.find('.//instanceState/name').text, 'terminated')
        self.assertEqual(root.find('.//instanceState/code').text, '48')
        self.err('DescribeInstances', {'InstanceId.1': 'i-0123456789abcdef0'}, 400, 'InvalidInstanceID.NotFound')
        self.err('TerminateInstances', {'InstanceId.1': 'i-0123456789abcdef0'}, 400, 'InvalidInstanceID.NotFound')
        self.err('TerminateInstances', {'InstanceId.1': 'bogus'}, 400, 'InvalidInstanceID.Malformed')

    def test_create_tags(self):
        self.lt('karpenter.k8s.aws/tags')
        root = self.fleet('karpenter.k8s.aws/tags', [('m6i.large', self.sim.zones[0])])
        iid = root.find('.//instanceIds/item').text
        self.ok('CreateTags', {'ResourceId.1': iid, 'Tag.1.Key': 'Name', 'Tag.1.Value': 'node-a',
                               'Tag.2.Key': 'karpenter.sh/nodeclaim', 'Tag.2.Value': 'default-abc'})
        root = self.ok('DescribeInstances', filters(('tag:Name', ['node-a'])))
        self.assertEqual([e.text for e in root.findall('.//instancesSet/item/instanceId')], [iid])
        st, tags = self.ctl.call('GET', '/aws/tags')
        self.assertEqual(tags['tags'][iid]['karpenter.sh/nodeclaim'], 'default-abc')
        self.err('CreateTags', {'ResourceId.1': 'i-0123456789abcdef0', 'Tag.1.Key': 'a', 'Tag.1.Value': 'b'},
                 400, 'InvalidInstanceID.NotFound')
        self.err('CreateTags', {'ResourceId.1': iid, 'Tag.1.Key': 'aws:x', 'Tag.1.Value': 'b'},
                 400, 'InvalidParameterValue')

    def test_run_instances_and_dry_run(self):
        self.err('RunInstances', {'DryRun': 'true', 'MinCount': '1', 'MaxCount': '1',
                                  'ImageId': 'ami-0sim0000000000001', 'InstanceType': 'm6i.large'},
                 412, 'DryRunOperation')
        self.ctl.call('POST', '/aws/deny', {'actions': ['RunInstances', 'CreateFleet']})
        self.err('RunInstances', {'DryRun': 'true', 'MinCount': '1', 'MaxCount': '1'},
                 403, 'UnauthorizedOperation')
        self.err('CreateFleet', {'DryRun': 'true'}, 403, 'UnauthorizedOperation')
        self.ctl.call('POST', '/aws/deny', {'actions': []})
        root = self.ok('RunInstances', {'MinCount': '1', 'MaxCount': '2', 'ImageId': 'ami-0sim0000000000003',
                                        'InstanceType': 'm7g.large', 'UserData': USER_DATA,
                                        'SubnetId': 'subnet-0sim000000000002',
                                        'TagSpecification.1.ResourceType': 'instance',
                                        'TagSpecification.1.Tag.1.Key': 'k',
                                        'TagSpecification.1.Tag.1.Value': 'v'})
        items = root.findall('./instancesSet/item')
        self.assertEqual(len(items), 2)
        self.assertEqual(items[0].find('architecture').text, 'arm64')
        self.assertEqual(items[0].find('placement/availabilityZone').text, self.sim.zones[1])
        self.ctl.call('POST', '/aws/ice', {'instanceType': 'm7g.large', 'zone': self.sim.zones[1],
                                           'capacityType': 'on-demand'})
        self.err('RunInstances', {'MinCount': '1', 'MaxCount': '1', 'ImageId': 'ami-0sim0000000000003',
                                  'InstanceType': 'm7g.large', 'SubnetId': 'subnet-0sim000000000002'},
                 500, 'InsufficientInstanceCapacity')

    def test_instance_status_checks_and_events(self):
        root = self.ok('RunInstances', {'MinCount': '2', 'MaxCount': '2',
                                        'ImageId': 'ami-0sim0000000000001',
                                        'InstanceType': 'm6i.large', 'UserData': USER_DATA,
                                        'SubnetId': 'subnet-0sim000000000001'})
        a, b = [e.text for e in root.findall('./instancesSet/item/instanceId')]
        self.assertTrue(wait_for(lambda: all(self.sim.instance(i)['State']['Name'] == 'running'
                                             for i in (a, b))))
        ids = {'InstanceId.1': a, 'InstanceId.2': b}
        root = self.ok('DescribeInstanceStatus', ids)
        self.assertEqual([e.text for e in root.findall('.//instanceStatus/status')], ['ok', 'ok'])
        self.assertEqual(root.findall('.//eventsSet'), [])
        st, out = self.ctl.call('POST', '/aws/instance-status',
                                {'instanceId': a, 'check': 'system', 'impairedSince': 1796040000})
        self.assertEqual(st, 200, out)
        self.ctl.call('POST', '/aws/scheduled-event', {'instanceId': b, 'code': 'system-reboot'})
        root = self.ok('DescribeInstanceStatus', filters(('system-status.status', ['impaired'])))
        items = root.findall('./instanceStatusSet/item')
        self.assertEqual([i.find('instanceId').text for i in items], [a])
        d = items[0].find('systemStatus/details/item')
        self.assertEqual((d.find('name').text, d.find('status').text,
                          d.find('impairedSince').text),
                         ('reachability', 'failed', '2026-11-30T12:00:00.000Z'))
        self.assertEqual(items[0].find('instanceStatus/status').text, 'ok')
        root = self.ok('DescribeInstanceStatus', filters(('event.code', ['instance-reboot',
                                                                         'system-reboot'])))
        self.assertEqual([e.text for e in root.findall('.//instanceStatusSet/item/instanceId')],
                         [b])
        self.assertEqual(root.find('.//eventsSet/item/code').text, 'system-reboot')
        # ANDed across names: nothing has both
        root = self.ok('DescribeInstanceStatus', filters(('event.code', ['system-reboot']),
                                                         ('system-status.status', ['impaired'])))
        self.assertEqual(root.findall('.//instanceStatusSet/item'), [])
        self.err('DescribeInstanceStatus', dict(ids, MaxResults='5'), 400,
                 'InvalidParameterCombination')
        self.err('DescribeInstanceStatus', filters(('bogus', ['x'])), 400, 'InvalidParameterValue')
        st, _ = self.ctl.call('POST', '/aws/instance-status', {'instanceId': a, 'check': 'disk'})
        self.assertEqual(st, 400)
        self.ctl.call('POST', '/aws/instance-status', {'instanceId': a, 'check': 'system',
                                                        'status': 'ok'})
        self.ok('TerminateInstances', ids)
        self.assertTrue(wait_for(lambda: self.sim.instance(a)['State']['Name'] == 'terminated'))
        root = self.ok('DescribeInstanceStatus', filters(('instance-id', [a, b])))
        self.assertEqual(root.findall('.//instanceStatusSet/item'), [])   # running only
        root = self.ok('DescribeInstanceStatus', dict(ids, IncludeAllInstances='true'))
        self.assertEqual([e.text for e in root.findall('.//instanceStatus/status')],
                         ['not-applicable', 'not-applicable'])


class Faults(Ec2Base):
    def test_throttling_at_a_rate(self):
        self.ctl.call('POST', '/aws/throttle', {'rate': 0.5, 'actions': ['DescribeSubnets']})
        codes = []
        for _ in range(6):
            st, root = self.c.ec2('DescribeSubnets')
            codes.append(error_code(root) if st != 200 else 'ok')
        self.assertEqual(codes.count('RequestLimitExceeded'), 3)
        self.assertEqual(codes.count('ok'), 3)
        st, root = self.c.ec2('DescribeSubnets')
        self.ok('DescribeSecurityGroups')          # other actions unaffected
        self.ctl.call('POST', '/aws/throttle', {'rate': 1.0})
        self.err('DescribeImages', {}, 503, 'RequestLimitExceeded')
        self.ctl.call('DELETE', '/aws/faults')
        self.ok('DescribeImages')

    def test_5xx_and_latency(self):
        self.ctl.call('POST', '/aws/errors', {'rate': 1.0, 'status': 503, 'actions': ['DescribeImages']})
        self.err('DescribeImages', {}, 503, 'Unavailable')
        self.ctl.call('POST', '/aws/errors', {'rate': 1.0})
        self.err('DescribeSubnets', {}, 500, 'InternalError')
        self.ctl.call('DELETE', '/aws/faults')
        self.ctl.call('POST', '/aws/latency', {'ms': 300})
        t0 = time.monotonic()
        self.ok('DescribeAvailabilityZones')
        self.assertGreaterEqual(time.monotonic() - t0, 0.3)
        st, _ = self.ctl.call('POST', '/aws/throttle', {'rate': 2})
        self.assertEqual(st, 400)

    def test_call_log(self):
        st, before = self.ctl.call('GET', '/aws/calls')
        last = before['calls'][-1]['seq'] if before['calls'] else 0
        self.ok('DescribeSubnets', filters(('tag:karpenter.sh/discovery', ['demo'])))
        self.err('NoSuchAction', {}, 400, 'InvalidAction')
        st, out = self.ctl.call('GET', '/aws/calls', query={'since': str(last)})
        calls = out['calls']
        self.assertEqual([c['action'] for c in calls], ['DescribeSubnets', 'NoSuchAction'])
        self.assertEqual(calls[0]['params']['Filter.1.Value.1'], 'demo')
        self.assertEqual((calls[1]['status'], calls[1]['code']), (400, 'InvalidAction'))



class CallLogFile(Ec2Base):
    """NW_SIM_AWS_CALLS (aws_calllog.py): each call a JSON line with the account and the
    tags of what it names as they were when it arrived."""
    lt, fleet_params, fleet = Launch.lt, Launch.fleet_params, Launch.fleet

    @classmethod
    def setUpClass(cls):
        import json
        import tempfile
        cls.json = json
        cls.path = os.path.join(tempfile.mkdtemp(prefix='simcalls-'), 'calls.jsonl')
        os.environ['NW_SIM_AWS_CALLS'] = cls.path
        try:
            super().setUpClass()
        finally:
            del os.environ['NW_SIM_AWS_CALLS']

    def lines(self):
        with open(self.path) as f:
            return [self.json.loads(line) for line in f]

    def test_call_log_file(self):
        with self.sim.lock:
            self.sim.instance_profiles['demo_78'] = self.sim._new_profile(
                'demo_78', '/', {'team': 'a'}, ['KarpenterNodeRole-demo'])
        lid = self.lt('karpenter.k8s.aws/logged', extra={
            'LaunchTemplateData.IamInstanceProfile.Name': 'demo_78'})
        root = self.fleet('karpenter.k8s.aws/logged', [('m6i.large', self.sim.zones[0])])
        iid = root.find('.//instanceIds/item').text
        self.ok('TerminateInstances', {'InstanceId.1': iid})
        self.ok('DeleteLaunchTemplate', {'LaunchTemplateId': lid})
        got = {c['action']: c for c in self.lines()}
        self.assertEqual(set(got), {'CreateLaunchTemplate', 'CreateFleet', 'TerminateInstances',
                                    'DeleteLaunchTemplate'})
        for c in got.values():
            self.assertEqual((c['account'], c['region'], c['cluster'], c['status']),
                             (self.sim.account, self.sim.region, 'demo', 200))
            self.assertFalse([k for k in c['params'] if k.endswith('UserData')])
        fleet = got['CreateFleet']['resources']
        self.assertEqual(fleet['launchTemplates'][lid]['tags'], {'eks:eks-cluster-name': 'demo'})
        self.assertEqual(fleet['launchTemplates'][lid]['tagspecs'], {'instance': {'from-template': 'yes'}})
        self.assertNotIn('UserData', fleet['launchTemplates'][lid]['data'])
        self.assertEqual(fleet['instanceProfiles']['demo_78']['roles'],
                         ['arn:aws:iam::%s:role/KarpenterNodeRole-demo' % self.sim.account])
        self.assertEqual(got['TerminateInstances']['resources']['instances'][iid]['karpenter.sh/nodepool'],
                         'default')
        # the template as it was before the call deleted it
        self.assertEqual(got['DeleteLaunchTemplate']['resources']['launchTemplates'][lid]['name'],
                         'karpenter.k8s.aws/logged')


if __name__ == '__main__':
    unittest.main()
