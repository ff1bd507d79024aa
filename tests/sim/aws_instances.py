"""AWS simulator, EC2 instances: launch templates, the instance lifecycle
(pending, running, shutting-down, terminated), DescribeInstances, TerminateInstances,
CreateTags, CreateFleet and RunInstances.

A mixin of aws.AwsSim: it uses the simulator's state and lock (self.lock) and the
helpers of aws_util.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


class InstancesMixin:
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
        self._check_nis(data)
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

    def _check_nis(self, data):
        """LaunchTemplateData.NetworkInterface.N as EC2 checks it at CreateLaunchTemplate."""
        nis = data.get('NetworkInterface')
        if not nis:
            return
        if data.get('SecurityGroupId'):
            raise Ec2Error('InvalidParameterCombination', 'Network interfaces and an instance-level '
                                                          'security groups may not be specified on '
                                                          'the same request')
        seen = set()
        for n, ni in enumerate(nis, 1):
            if not isinstance(ni, dict):
                raise Ec2Error('InvalidParameterValue', 'NetworkInterface.%d is malformed' % n)
            card = _int(ni.get('NetworkCardIndex', '0'), 'NetworkInterface.%d.NetworkCardIndex' % n, 0, 15)
            dev = _int(ni.get('DeviceIndex'), 'NetworkInterface.%d.DeviceIndex' % n, 0, 15)
            if dev is None:
                raise Ec2Error('InvalidParameterValue', 'NetworkInterface.%d.DeviceIndex is required' % n)
            if (card, dev) in seen:
                raise Ec2Error('InvalidParameterValue', 'Each network interface requires a unique '
                                                        'device index and network card index pair')
            seen.add((card, dev))
            if ni.get('InterfaceType', 'interface') not in ('interface', 'efa', 'efa-only'):
                raise Ec2Error('InvalidParameterValue', "Invalid value '%s' for InterfaceType"
                               % ni['InterfaceType'])
            if ni.get('AssociatePublicIpAddress', 'false') not in ('true', 'false'):
                raise Ec2Error('InvalidParameterValue', 'AssociatePublicIpAddress must be true or false')
            _int(ni.get('Ipv4PrefixCount', '0'), 'NetworkInterface.%d.Ipv4PrefixCount' % n, 0, 1000)
            _int(ni.get('Ipv6PrefixCount', '0'), 'NetworkInterface.%d.Ipv6PrefixCount' % n, 0, 1000)
            _int(ni.get('Ipv6AddressCount', '0'), 'NetworkInterface.%d.Ipv6AddressCount' % n, 0, 1000)
            if ni.get('PrimaryIpv6', 'false') not in ('true', 'false'):
                raise Ec2Error('InvalidParameterValue', 'PrimaryIpv6 must be true or false')
            if ni.get('InterfaceType') == 'efa-only' and (ni.get('PrimaryIpv6') == 'true'
                                                          or ni.get('Ipv6AddressCount', '0') != '0'):
                raise Ec2Error('InvalidParameterCombination', 'An EFA-only network interface has '
                                                              'no IP addresses')
            ct = ni.get('ConnectionTrackingSpecification') or {}
            for k, lo, hi in (('TcpEstablishedTimeout', 60, 432000), ('UdpStreamTimeout', 60, 180),
                              ('UdpTimeout', 30, 60)):
                if k in ct:
                    _int(ct[k], 'ConnectionTrackingSpecification.' + k, lo, hi)
            for sg in ni.get('SecurityGroupId') or []:
                if sg not in self.security_groups:
                    raise Ec2Error('InvalidGroupId.NotFound', "The security group '%s' does not exist" % sg)

    @staticmethod
    def _public_ip(itype, nis):
        """The instance's public address as its interfaces ask (None: the subnet default, off
        here), or the launch error EC2 gives."""
        if not nis:
            return False
        pub = any(ni.get('AssociatePublicIpAddress') == 'true' for ni in nis if isinstance(ni, dict))
        if pub and len(nis) > 1:
            raise Ec2Error('InvalidParameterCombination', 'The associatePublicIPAddress parameter '
                                                          'cannot be specified when launching with '
                                                          'multiple network interfaces.')
        efa = sum(1 for ni in nis if ni.get('InterfaceType') in ('efa', 'efa-only'))
        t = catalog.get(itype) or {}
        if efa > (t.get('efa') or 0):
            raise Ec2Error('InvalidParameterValue', 'The instance type %s supports %d EFA '
                                                    'interfaces, %d requested' % (itype, t.get('efa') or 0, efa))
        return pub

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

    @staticmethod
    def _type_compat(itype, nis, cpu, group):
        """What EC2 refuses of a type (Karpenter filters such types out before a launch):
        network cards and interfaces it lacks, nested virtualization, the placement group's
        strategy, connection tracking on a non-Nitro type."""
        t = catalog.get(itype) or {}
        for ni in nis or []:
            if not isinstance(ni, dict):
                continue
            card, dev = int(ni.get('NetworkCardIndex') or 0), int(ni.get('DeviceIndex') or 0)
            if card >= (t.get('network_cards') or 1):
                raise Ec2Error('InvalidParameterValue', 'Network card index %d is not supported for '
                                                        'instance type %s.' % (card, itype))
            if dev >= (t.get('enis') or 1):
                raise Ec2Error('InvalidParameterValue', 'Device index %d is not supported for instance '
                                                        'type %s.' % (dev, itype))
            if ni.get('ConnectionTrackingSpecification') and t.get('hypervisor') != 'nitro':
                raise Ec2Error('UnsupportedOperation', 'Connection tracking configuration is not '
                                                       'supported for instance type %s.' % itype)
        if (cpu or {}).get('NestedVirtualization') == 'enabled' and not t.get('nested_virtualization'):
            raise Ec2Error('UnsupportedOperation', 'The instance type %s does not support nested '
                                                   'virtualization.' % itype)
        if group and group['strategy'] not in (t.get('placement_strategies') or ()):
            raise Ec2Error('InvalidParameterCombination', 'The instance type %s is not supported in '
                                                          '%s placement groups.' % (itype, group['strategy']))

    def _launch(self, itype, zone, subnet, image, user_data, sgs, tags, spot, lt=None,
                fleet=None, root_gb=None, metadata=None, profile=None, nis=None, placement=None,
                cr=None, cr_target=None, block=False, cpu=None, volumes=None):
        """Create one instance in 'pending' (caller holds the lock)."""
        if profile and profile not in self.instance_profiles:
            raise Ec2Error('InvalidParameterValue', 'Value (%s) for parameter iamInstanceProfile.name '
                                                    'is invalid. Invalid IAM Instance Profile name'
                           % profile)
        public = self._public_ip(itype, nis)
        pg = (placement or {}).get('GroupId') or (placement or {}).get('GroupName')
        group = next((g for g in self.placement_groups.values()
                      if pg in (g['id'], g['name']) and g['state'] == 'available'), None) if pg else None
        if pg and not group:
            raise Ec2Error('InvalidPlacementGroup.Unknown', "The Placement Group '%s' is unknown." % pg)
        self._type_compat(itype, nis, cpu, group)
        # a partition group: the asked partition (1..count), else the least used one, as EC2
        # spreads them; any other group takes no partition number
        part = (placement or {}).get('PartitionNumber')
        if part is not None and (not group or group['strategy'] != 'partition'):
            raise Ec2Error('InvalidParameterCombination',
                           'The partition number can only be specified for partition placement groups.')
        if group and group['strategy'] == 'partition':
            if part is not None:
                try:
                    part = int(part)
                except ValueError:
                    part = 0
                if not 1 <= part <= group['partitions']:
                    raise Ec2Error('InvalidParameterValue',
                                   'The partition number %s is not valid for placement group %s: it '
                                   'has %d partitions.' % ((placement or {}).get('PartitionNumber'),
                                                           group['name'], group['partitions']))
            else:
                used = [0] * group['partitions']
                for o in self.instances_by_id.values():
                    if o.get('placement_group') in (group['id'], group['name']) and \
                            o['state'] not in ('terminated', 'shutting-down') and o.get('partition'):
                        used[o['partition'] - 1] += 1
                part = used.index(min(used)) + 1
        ip = self._alloc_ip(subnet)
        iid = new_id('i')
        now = self.clock()
        inst = {'id': iid, 'type': itype, 'zone': zone, 'subnet': subnet, 'image': image,
                'user_data': user_data or '', 'sgs': list(sgs), 'tags': dict(tags),
                'spot': spot, 'sir': 'sir-%s' % _hex(8) if spot else None,
                'state': 'pending', 'state_time': now, 'launch_time': now,
                'private_ip': ip, 'private_dns': 'ip-%s.%s' % (ip.replace('.', '-'), self.dns_suffix),
                'lt': lt, 'fleet': fleet, 'root_gb': root_gb or 20,
                'volumes': dict(volumes or {}),
                'metadata': metadata or {}, 'profile': profile, 'reason': '',
                # EC2 reports the profile's own ARN (its path included) and id, as they were
                # at launch: the instance keeps them if the profile is deleted later
                'profile_arn': self.instance_profiles[profile]['arn'] if profile else None,
                'profile_id': self.instance_profiles[profile]['id'] if profile else None,
                'reservation': 'r-%s' % _hex(17),
                'public_ip': '54.' + '.'.join(ip.split('.')[1:]) if public else None,
                'nis': [dict(n) for n in nis or [] if isinstance(n, dict)],
                'placement_group': group['id'] if group else None,
                'partition': part if group and group['strategy'] == 'partition' else None,
                'cr': cr, 'cr_target': cr_target, 'block': block}
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
             'placement': dict({'availabilityZone': i['zone'],
                                'availabilityZoneId': self.zone_ids[i['zone']],
                                'groupName': (self.placement_groups[i['placement_group']]['name']
                                              if i.get('placement_group') else ''),
                                'tenancy': 'default'},
                               **({'groupId': i['placement_group']} if i.get('placement_group') else {}),
                               **({'partitionNumber': i['partition']} if i.get('partition') else {})),
             'monitoring': {'state': 'disabled'}}
        if i['state'] != 'terminated':
            x.update({'subnetId': i['subnet'], 'vpcId': self.vpc['id'],
                      'privateIpAddress': i['private_ip']})
            if i.get('public_ip'):
                x['ipAddress'] = i['public_ip']
        x.update({'sourceDestCheck': True, 'groupSet': sgs, 'architecture': t['arch'],
                  'rootDeviceType': 'ebs', 'rootDeviceName': '/dev/xvda',
                  'blockDeviceMapping': [] if i['state'] == 'terminated' else [
                      {'deviceName': '/dev/xvda', 'ebs': {
                          'volumeId': 'vol-%s' % i['id'][2:], 'status': 'attached',
                          'attachTime': iso8601(i['launch_time']), 'deleteOnTermination': True}}]})
        if i['spot']:
            x['instanceLifecycle'] = 'spot'
            x['spotInstanceRequestId'] = i['sir']
        elif i.get('block'):
            x['instanceLifecycle'] = 'capacity-block'
        if i.get('cr'):
            x['capacityReservationId'] = i['cr']
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
            arn = i.get('profile_arn') or 'arn:aws:iam::%s:instance-profile/%s' % (self.account,
                                                                                 i['profile'])
            x['iamInstanceProfile'] = {'arn': arn, 'id': i.get('profile_id') or 'AIPA' + '0' * 17}
        x['metadataOptions'] = {'state': 'applied', 'httpTokens': md.get('HttpTokens', 'required'),
                                'httpPutResponseHopLimit': int(md.get('HttpPutResponseHopLimit', 1)),
                                'httpEndpoint': md.get('HttpEndpoint', 'enabled'),
                                'httpProtocolIpv6': md.get('HttpProtocolIpv6', 'disabled'),
                                'instanceMetadataTags': md.get('InstanceMetadataTags', 'disabled')}
        x.update({'capacityReservationSpecification': (
                      {'capacityReservationTarget': {'capacityReservationId': i['cr_target']}}
                      if i.get('cr_target') else {'capacityReservationPreference': 'open'}),
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
        'iam-instance-profile.arn': lambda i: i.get('profile_arn') or [],
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
        if dtype not in ('spot', 'on-demand', 'capacity-block'):
            raise Ec2Error('InvalidParameterValue', 'TargetCapacitySpecification.'
                           'DefaultTargetCapacityType must be spot, on-demand or capacity-block, '
                           'not %r' % dtype)
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
        block = dtype == 'capacity-block'
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
                key = (c['type'], c['zone'], c['lt']['id'])
                if key in tried_bad:
                    continue
                cr, cr_err = self._cr_for_launch(c['lt']['data'], dtype, c['type'], c['zone'])
                if cr_err:
                    tried_bad.add(key)
                    c['err'](*cr_err)
                    continue
                code = None if cr else self._ice_hit(lifecycle, c['type'], c['zone'])
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
                    if launched and cr:
                        cr, cr_err = self._cr_for_launch(data, dtype, c['type'], c['zone'])
                        if cr_err:
                            c['err'](*cr_err)
                            break
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
                            profile=(data.get('IamInstanceProfile') or {}).get('Name'),
                            nis=data.get('NetworkInterface'), placement=data.get('Placement'),
                            cr=cr, cr_target=((data.get('CapacityReservationSpecification') or {})
                                              .get('CapacityReservationTarget') or {})
                            .get('CapacityReservationId'), block=block, cpu=data.get('CpuOptions'),
                            volumes=self._volumes(data))
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
    def _volumes(data):
        """{device: GiB} of the template's EBS block devices"""
        out = {}
        for b in data.get('BlockDeviceMapping') or []:
            if isinstance(b, dict) and isinstance(b.get('Ebs'), dict) and b.get('DeviceName'):
                try:
                    out[b['DeviceName']] = int(b['Ebs'].get('VolumeSize') or 0)
                except ValueError:
                    pass
        return out

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
                                           data.get('IamInstanceProfile') or {}).get('Name'),
                                  nis=data.get('NetworkInterface'))
                     for _ in range(mx)]
            return {'reservationId': insts[0]['reservation'], 'ownerId': self.account,
                    'groupSet': [], 'instancesSet': [self._inst_xml(i) for i in insts]}
