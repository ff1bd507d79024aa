"""AWS simulator, EC2 catalog answers: DescribeInstanceTypes, -TypeOfferings,
-SpotPriceHistory, -AvailabilityZones, -Subnets, -SecurityGroups, -Images.

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


class DescribeMixin:
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
             'processorInfo': dict({'supportedArchitectures': [t['arch']],
                                    'sustainedClockSpeedInGhz': t['clock_ghz'],
                                    'manufacturer': t['cpu_manufacturer']},
                                   **({'supportedFeatures': ['nested-virtualization']}
                                      if t.get('nested_virtualization') else {})),
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
        x.update({'placementGroupInfo': {'supportedStrategies': list(
                      t.get('placement_strategies') or ['cluster', 'partition', 'spread'])},
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

    def _ec2_DescribePlacementGroups(self, p):
        ids = unflatten(p, 'GroupId') or []
        names = unflatten(p, 'GroupName') or []
        with self.lock:
            for i in ids:
                if i not in self.placement_groups:
                    raise Ec2Error('InvalidPlacementGroupId.NotFound',
                                   "The Placement Group ID '%s' does not exist" % i)
            for n in names:
                if not any(g['name'] == n for g in self.placement_groups.values()):
                    raise Ec2Error('InvalidPlacementGroup.Unknown',
                                   "The Placement Group '%s' is unknown." % n)
            g = {'group-id': lambda x: x['id'], 'group-name': lambda x: x['name'],
                 'state': lambda x: x['state'], 'strategy': lambda x: x['strategy']}
            g.update(self._tag_getters(lambda x: x['tags']))
            filters = self._filters(p, set(g))
            rows = [dict({'groupName': x['name'], 'groupId': x['id'], 'state': x['state'],
                          'strategy': x['strategy'],
                          'groupArn': 'arn:aws:ec2:%s:%s:placement-group/%s' % (
                              self.region, self.account, x['name']),
                          'tagSet': tag_set(x['tags'])},
                         **({'partitionCount': x['partitions']} if x['partitions'] else {}))
                    for x in self.placement_groups.values()
                    if (not ids or x['id'] in ids) and (not names or x['name'] in names)
                    and self._match(filters, g, x)]
        return {'placementGroupSet': rows}

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
