"""Simulated kubelets: userData parsing, Node registration with the userData's labels
and taints, Ready, NotReady + delete on termination, re-registration.

Runs against sim-kube's KubeStore when store.py is present, else against a small
in-memory store with the same interface (tests/sim/INTERFACE.md)."""

import base64
import copy
import gzip
import os
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import catalog  # noqa: E402
import awsclient  # noqa: E402
import kubelet  # noqa: E402

try:
    import store as kstore  # the kube half's KubeStore
except ImportError:
    kstore = None

SEED = ('#!/bin/bash\nset -euo pipefail\n'
        'kubeadm join 10.0.0.10:6443 --token abcdef.0123456789abcdef \\\n'
        '  --discovery-token-ca-cert-hash sha256:0000 \\\n'
        '  --node-name "$(curl -s http://169.254.169.254/latest/meta-data/local-hostname)"\n')
SEED_FLAGS = ('KUBELET_EXTRA_ARGS="--register-with-taints=karpenter.sh/unregistered:NoExecute,'
              'gpu=true:NoSchedule --node-labels=node.lifecycle=karpenter,node.accelerator=nvidia-gpu"')
SEED_UD = ('#!/bin/bash\ncat > /etc/default/kubelet <<EOF\n' + SEED_FLAGS + '\nEOF\n' + SEED[12:])

WELL_KNOWN = {'kubernetes.io/hostname', 'kubernetes.io/os', 'kubernetes.io/arch', 'beta.kubernetes.io/os',
              'beta.kubernetes.io/arch', 'node.kubernetes.io/instance-type',
              'beta.kubernetes.io/instance-type', 'topology.kubernetes.io/zone',
              'topology.kubernetes.io/region', 'failure-domain.beta.kubernetes.io/zone',
              'failure-domain.beta.kubernetes.io/region', 'topology.k8s.aws/zone-id'}


def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


class NotFound(Exception):
    code = 404


class FakeStore:
    """The KubeStore interface from INTERFACE.md, in memory (no admission, no watch)."""

    def __init__(self):
        self.lock = threading.RLock()
        self.objs = {}
        self.subs = []
        self.rv = 0

    def _k(self, r, ns, name):
        return (r, ns, name)

    def _emit(self, ev, r, obj):
        for fn in list(self.subs):
            fn(ev, r, copy.deepcopy(obj))

    def subscribe(self, fn):
        self.subs.append(fn)

    def create(self, r, ns, obj):
        with self.lock:
            obj = copy.deepcopy(obj)
            k = self._k(r, ns, obj['metadata']['name'])
            if k in self.objs:
                raise Exception('AlreadyExists')
            self.rv += 1
            obj['metadata']['resourceVersion'] = str(self.rv)
            obj.pop('status', None) if r == 'nodes' else None
            self.objs[k] = obj
        self._emit('ADDED', r, obj)
        return copy.deepcopy(obj)

    def get(self, r, ns, name):
        with self.lock:
            o = self.objs.get(self._k(r, ns, name))
            return copy.deepcopy(o)

    def list(self, r, namespace=None):
        with self.lock:
            return [copy.deepcopy(o) for (rr, ns, _), o in self.objs.items()
                    if rr == r and (namespace is None or ns == namespace)]

    def update(self, r, ns, obj, status=False):
        with self.lock:
            k = self._k(r, ns, obj['metadata']['name'])
            cur = self.objs.get(k)
            if cur is None:
                raise NotFound()
            new = copy.deepcopy(obj)
            if status:
                new = dict(copy.deepcopy(cur), status=copy.deepcopy(obj.get('status')))
            self.rv += 1
            new['metadata']['resourceVersion'] = str(self.rv)
            self.objs[k] = new
        self._emit('MODIFIED', r, new)
        return copy.deepcopy(new)

    def update_status(self, r, ns, obj):
        return self.update(r, ns, obj, status=True)

    def delete(self, r, ns, name, grace=None):
        with self.lock:
            k = self._k(r, ns, name)
            cur = self.objs.get(k)
            if cur is None:
                raise NotFound()
            if cur['metadata'].get('finalizers'):
                cur['metadata'].setdefault('deletionTimestamp', '2026-01-01T00:00:00Z')
                self._emit('MODIFIED', r, cur)
                return copy.deepcopy(cur)
            del self.objs[k]
        self._emit('DELETED', r, cur)
        return copy.deepcopy(cur)


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


class UserDataParser(unittest.TestCase):
    def test_seed_style(self):
        cfg = kubelet.parse_user_data(b64(SEED_UD))
        self.assertEqual(cfg['labels'], {'node.lifecycle': 'karpenter', 'node.accelerator': 'nvidia-gpu'})
        self.assertEqual(cfg['taints'], [{'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'},
                                         {'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'}])
        self.assertIsNone(cfg['node_name'])           # computed by the shell -> hostname rule

    def test_kubeadm_join_flags_and_literal_name(self):
        ud = ('#!/bin/sh\n/usr/bin/kubeadm join api:6443 --token t --node-name Worker-7 '
              '--ignore-preflight-errors=all\n'
              "echo 'KUBELET_EXTRA_ARGS=--max-pods=58 --kube-reserved=cpu=80m,memory=893Mi "
              "--eviction-hard=memory.available<100Mi,nodefs.available<10% "
              "--provider-id=aws:///us-west-2a/i-0123456789abcdef0' >> /etc/default/kubelet\n")
        cfg = kubelet.parse_user_data(b64(ud))
        self.assertEqual(cfg['node_name'], 'worker-7')
        self.assertEqual(cfg['max_pods'], 58)
        self.assertEqual(cfg['kube_reserved'], {'cpu': 0.08, 'memory': 893 * 2 ** 20})
        self.assertEqual(cfg['provider_id'], 'aws:///us-west-2a/i-0123456789abcdef0')

    def test_mime_and_gzip_and_join_configuration(self):
        script = ('#!/bin/bash\ncat <<EOF > /tmp/join.yaml\n'
                  'apiVersion: kubeadm.k8s.io/v1beta4\nkind: JoinConfiguration\n'
                  'nodeRegistration:\n  name: node-from-yaml\n  taints:\n'
                  '  - key: karpenter.sh/unregistered\n    effect: NoExecute\n'
                  '  - key: dedicated\n    value: infra\n    effect: NoSchedule\n'
                  '  kubeletExtraArgs:\n  - name: node-labels\n    value: "team=a,tier=b"\n'
                  '  - name: max-pods\n    value: "110"\n'
                  'EOF\nkubeadm join --config /tmp/join.yaml\n')
        mime = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n'
                '--//\nContent-Type: text/cloud-config; charset="us-ascii"\n\n#cloud-config\n'
                'packages: [jq]\n\n--//\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
                + script + '\n--//--\n')
        for ud in (b64(mime), b64(gzip.compress(mime.encode()))):
            cfg = kubelet.parse_user_data(ud)
            self.assertEqual(cfg['node_name'], 'node-from-yaml')
            self.assertEqual(cfg['labels'], {'team': 'a', 'tier': 'b'})
            self.assertEqual(cfg['taints'], [{'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'},
                                             {'key': 'dedicated', 'value': 'infra', 'effect': 'NoSchedule'}])
            self.assertEqual(cfg['max_pods'], 110)

    def test_generated_bootstraps(self):
        # the three families Karpenter generates for (nodewarden's scaler/aws/userdata.c):
        # AL2 bootstrap.sh, AL2023 NodeConfig, Bottlerocket TOML
        al2 = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
               'Content-Type: text/x-shellscript; charset="us-ascii"\n\n#!/bin/bash -xe\n'
               "/etc/eks/bootstrap.sh 'demo' --apiserver-endpoint 'https://10.0.0.10:6443' "
               "--b64-cluster-ca 'Q0E=' \\\n--use-max-pods false \\\n--kubelet-extra-args "
               "'--node-labels=\"team=ml,karpenter.sh/nodepool=gpu\" --register-with-taints="
               "\"gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute\" --max-pods=29 "
               "--system-reserved=\"cpu=100m\"' \\\n--local-disks raid0\n--//--\n")
        al2023 = ('MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="//"\n\n--//\n'
                  'Content-Type: application/node.eks.aws\n\n'
                  'apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n'
                  '    apiServerEndpoint: https://10.0.0.10:6443\n    cidr: 10.96.0.0/12\n'
                  '    name: demo\n  kubelet:\n    config:\n      maxPods: 20\n'
                  '      kubeReserved:\n        cpu: 70m\n      registerWithTaints:\n'
                  '        - key: gpu\n          value: "true"\n          effect: NoSchedule\n'
                  '        - key: karpenter.sh/unregistered\n          effect: NoExecute\n'
                  '    flags:\n      - --node-labels="team=ml,karpenter.sh/nodepool=gpu"\n'
                  '--//--\n')
        br = ('[settings.kubernetes]\napi-server = "https://10.0.0.10:6443"\n'
              'cluster-name = "demo"\nmax-pods = 58\n'
              '[settings.kubernetes.node-labels]\n"karpenter.sh/nodepool" = "gpu"\nteam = "ml"\n'
              '[settings.kubernetes.node-taints]\n"karpenter.sh/unregistered" = [":NoExecute"]\n'
              'gpu = ["true:NoSchedule"]\n[settings.kubernetes.eviction-hard]\n'
              '"memory.available" = "200Mi"\n')
        labels = {'team': 'ml', 'karpenter.sh/nodepool': 'gpu'}
        taints = [{'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'},
                  {'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'}]
        for ud, fam, pods in ((al2, 'al2', 29), (al2023, 'al2023', 20), (br, 'bottlerocket', 58)):
            cfg = kubelet.parse_user_data(b64(ud))
            self.assertEqual(cfg['family'], fam)
            self.assertEqual(cfg['labels'], labels, fam)
            self.assertEqual(sorted(cfg['taints'], key=str), sorted(taints, key=str), fam)
            self.assertEqual(cfg['max_pods'], pods, fam)
        self.assertEqual(kubelet.parse_user_data(b64(al2))['system_reserved'], {'cpu': 0.1})
        self.assertEqual(kubelet.parse_user_data(b64(al2023))['kube_reserved'], {'cpu': 0.07})
        self.assertEqual(kubelet.parse_user_data(b64(br))['eviction_hard'], {'memory.available': '200Mi'})
        # ephemeral storage: the root volume; Bottlerocket's data volume xvdb; RAID0: the
        # instance store (AL2 --local-disks raid0, AL2023 localStorage, Bottlerocket's
        # ephemeral-storage bootstrap command)
        inst = {'InstanceType': 'm6id.large', 'RootVolumeSizeGiB': 4,
                'BlockDeviceGiB': {'/dev/xvda': 4, '/dev/xvdb': 60}}
        if not catalog.get('m6id.large'):
            inst['InstanceType'] = [n for n in catalog.names() if catalog.get(n)['local_nvme_gb']][0]
        nvme = catalog.get(inst['InstanceType'])['local_nvme_gb'] * 10 ** 9
        cap = lambda ud: kubelet.resources(inst, kubelet.parse_user_data(b64(ud)), False)[0]['ephemeral-storage']  # noqa
        self.assertEqual(cap(br), '60Gi')
        self.assertEqual(cap(al2), str(nvme))
        self.assertEqual(cap(al2023), '4Gi')
        self.assertEqual(cap(al2023.replace('  kubelet:\n', '  instance:\n    localStorage:\n'
                                            '      strategy: RAID0\n  kubelet:\n')), str(nvme))
        self.assertEqual(cap(br + '[settings.bootstrap-commands.000-mount-instance-storage]\n'
                              'commands = [["apiclient", "ephemeral-storage", "init"]]\n'), str(nvme))
        # what nodeadm / Bottlerocket would refuse, the simulated node refuses too
        for bad in (br.replace('api-server = "https://10.0.0.10:6443"\n', ''),
                    al2023.replace('    flags:\n      - --node-labels="team=ml,karpenter.sh/nodepool=gpu"\n',
                                   '    flags:\n      - --node-labels="kubernetes.io/x=y"\n')):
            with self.assertRaises(kubelet.UserDataError):
                kubelet.parse_user_data(b64(bad))

    def test_kubelet_configuration_yaml(self):
        ud = ('#!/bin/bash\nmkdir -p /var/lib/kubelet\ncat > /var/lib/kubelet/config.yaml <<"EOF"\n'
              'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n'
              'maxPods: 29\nproviderID: aws:///us-west-2a/i-0123456789abcdef0\n'
              'kubeReserved:\n  cpu: 70m\n  memory: 574Mi\n  ephemeral-storage: 1Gi\n'
              'systemReserved: {memory: 100Mi}\n'
              'evictionHard:\n  memory.available: "100Mi"\n  nodefs.available: "10%"\n'
              'registerWithTaints:\n- key: karpenter.sh/unregistered\n  effect: NoExecute\n'
              'EOF\nkubeadm join api:6443 --token t --config /tmp/x\n')
        cfg = kubelet.parse_user_data(b64(ud))
        self.assertEqual(cfg['max_pods'], 29)
        self.assertEqual(cfg['provider_id'], 'aws:///us-west-2a/i-0123456789abcdef0')
        self.assertEqual(cfg['kube_reserved'], {'cpu': 0.07, 'memory': 574 * 2 ** 20,
                                                'ephemeral-storage': 2 ** 30})
        self.assertEqual(cfg['system_reserved'], {'memory': 100 * 2 ** 20})
        self.assertEqual(cfg['eviction_hard'], {'memory.available': '100Mi', 'nodefs.available': '10%'})
        self.assertEqual(cfg['taints'], [{'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'}])
        inst = {'InstanceType': 'm6i.large', 'RootVolumeSizeGiB': 20}
        cap, alloc = kubelet.resources(inst, cfg, with_devices=True)
        mem = (8192 - 574) * 2 ** 20
        self.assertEqual(cap['memory'], '%dKi' % (mem // 1024))
        self.assertEqual(alloc['memory'], '%dKi' % ((mem - (574 + 100 + 100) * 2 ** 20) // 1024))
        self.assertEqual(alloc['cpu'], '1930m')
        self.assertEqual(alloc['pods'], '29')
        self.assertEqual(int(alloc['ephemeral-storage']), 20 * 2 ** 30 - 2 ** 30 - 2 * 2 ** 30)

    def test_not_understood(self):
        bad = {
            'not base64': '%%%',
            'no script': b64('just text'),
            'cloud-config only': b64('#cloud-config\nruncmd: [kubeadm join]\n'),
            'no join': b64('#!/bin/bash\necho hello\n'),
            'bad taint effect': b64('#!/bin/bash\nkubeadm join x --token t\n'
                                    'KUBELET_EXTRA_ARGS="--register-with-taints=a=b:Sometimes"\n'),
            'restricted label': b64('#!/bin/bash\nkubeadm join x\n'
                                    'KUBELET_EXTRA_ARGS="--node-labels=node-role.kubernetes.io/worker="\n'),
            'bad label value': b64('#!/bin/bash\nkubeadm join x\n'
                                   'KUBELET_EXTRA_ARGS="--node-labels=a=-bad-"\n'),
            'mime without shell': b64('Content-Type: multipart/mixed; boundary="b"\nMIME-Version: 1.0\n\n'
                                      '--b\nContent-Type: text/cloud-config\n\n#cloud-config\n--b--\n'),
        }
        for name, ud in bad.items():
            with self.subTest(name):
                with self.assertRaises(kubelet.UserDataError):
                    kubelet.parse_user_data(ud)
        # labels the kubelet may set on itself are fine
        ok = b64('#!/bin/bash\nkubeadm join x\nKUBELET_EXTRA_ARGS="--node-labels='
                 'node.kubernetes.io/exclude-from-external-load-balancers=true,kubelet.kubernetes.io/x=y"\n')
        self.assertEqual(len(kubelet.parse_user_data(ok)['labels']), 2)

    def test_resources(self):
        inst = {'InstanceType': 'g5.xlarge', 'RootVolumeSizeGiB': 100}
        cfg = kubelet.parse_user_data(b64('#!/bin/bash\nkubeadm join x\n'))
        cap, alloc = kubelet.resources(inst, cfg, with_devices=False)
        self.assertEqual(cap['cpu'], '4')
        self.assertEqual(cap['pods'], '110')
        self.assertNotIn('nvidia.com/gpu', cap)
        self.assertEqual(cap['memory'], '%dKi' % ((16384 - 1147) * 1024))
        self.assertEqual(alloc['memory'], '%dKi' % ((16384 - 1147 - 100) * 1024))
        self.assertEqual(cap['ephemeral-storage'], '100Gi')
        self.assertEqual(int(alloc['ephemeral-storage']), 90 * 2 ** 30)
        cap, alloc = kubelet.resources(inst, cfg, with_devices=True)
        self.assertEqual((cap['nvidia.com/gpu'], alloc['nvidia.com/gpu']), ('1', '1'))


class KubeletFlow(unittest.TestCase):
    def make_store(self):
        if kstore is not None:
            return kstore.KubeStore()
        return FakeStore()

    def setUp(self):
        self.sim = aws.AwsSim(cluster='demo', pending_seconds=0.05, shutdown_seconds=0.2)
        self.srv = aws.serve(self.sim)
        self.store = self.make_store()
        self.kl = kubelet.Kubelets(self.sim, self.store, boot_delay=0.1, ready_delay=0.1,
                                   sync_period=0.1)
        self.c = awsclient.Client(self.srv.url, self.sim.access_key, self.sim.secret_key, self.sim.region)

    def tearDown(self):
        self.kl.stop()
        self.srv.close()
        self.sim.stop()

    def run_instance(self, ud, itype='g5.xlarge', image='ami-0sim0000000000001'):
        st, root = self.c.ec2('RunInstances', {'MinCount': '1', 'MaxCount': '1', 'ImageId': image,
                                               'InstanceType': itype, 'UserData': b64(ud),
                                               'SubnetId': 'subnet-0sim000000000001'})
        self.assertEqual(st, 200, awsclient.ET.tostring(root))
        return root.find('./instancesSet/item/instanceId').text

    def node_of(self, iid):
        for n in self.store.list('nodes'):
            if n['spec'].get('providerID', '').endswith('/' + iid):
                return n
        return None

    def ready(self, n):
        return n and any(c['type'] == 'Ready' and c['status'] == 'True'
                         for c in n.get('status', {}).get('conditions', []))

    def test_seed_userdata_registers_exact_labels_and_taints(self):
        iid = self.run_instance(SEED_UD)
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        self.assertTrue(n, self.kl.status())
        inst = self.sim.instance(iid)
        self.assertEqual(n['metadata']['name'], inst['PrivateDnsName'])
        self.assertRegex(n['metadata']['name'], r'^ip-10-0-\d+-\d+\.us-west-2\.compute\.internal$')
        self.assertEqual(n['spec']['providerID'], 'aws:///us-west-2a/' + iid)
        self.assertEqual(n['spec']['taints'], [
            {'key': 'karpenter.sh/unregistered', 'effect': 'NoExecute'},
            {'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'}])
        labels = n['metadata']['labels']
        self.assertEqual({k: v for k, v in labels.items() if k not in WELL_KNOWN},
                         {'node.lifecycle': 'karpenter', 'node.accelerator': 'nvidia-gpu'})
        self.assertEqual(labels['node.kubernetes.io/instance-type'], 'g5.xlarge')
        self.assertEqual(labels['topology.kubernetes.io/zone'], 'us-west-2a')
        self.assertEqual(labels['kubernetes.io/arch'], 'amd64')
        self.assertEqual(labels['kubernetes.io/hostname'], n['metadata']['name'])
        self.assertEqual(n['status']['capacity']['nvidia.com/gpu'], '1')
        self.assertEqual(n['status']['allocatable']['cpu'], '4')
        addrs = {a['type']: a['address'] for a in n['status']['addresses']}
        self.assertEqual(addrs['InternalIP'], inst['PrivateIpAddress'])

    def test_termination_not_ready_then_deleted(self):
        iid = self.run_instance(SEED_UD, itype='m6i.large')
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        self.assertTrue(n)
        name = n['metadata']['name']
        st, _ = self.c.ec2('TerminateInstances', {'InstanceId.1': iid})
        self.assertEqual(st, 200)
        nr = wait_for(lambda: (lambda x: x and [c['status'] for c in x['status']['conditions']
                                                if c['type'] == 'Ready'] == ['Unknown'] and x)(
            self.store.get('nodes', None, name)), timeout=5)
        self.assertTrue(nr, 'node goes NotReady while the instance shuts down')
        self.assertTrue(wait_for(lambda: self.store.get('nodes', None, name) is None))

    def test_bad_userdata_never_joins(self):
        iid = self.run_instance('#!/bin/bash\necho no join here\n', itype='m6i.large')
        good = self.run_instance(SEED_UD, itype='m6i.large')
        self.assertTrue(wait_for(lambda: self.ready(self.node_of(good))))
        st = {k['instanceId']: k for k in self.kl.status()}
        self.assertEqual(st[iid]['state'], 'failed')
        self.assertIn('neither', st[iid]['error'])
        self.assertIsNone(self.node_of(iid))

    def test_arm64_literal_node_name(self):
        iid = self.run_instance('#!/bin/bash\nkubeadm join x --node-name arm-node-1\n',
                                itype='m7g.large', image='ami-0sim0000000000003')
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        self.assertEqual(n['metadata']['name'], 'arm-node-1')
        self.assertEqual(n['metadata']['labels']['kubernetes.io/arch'], 'arm64')
        self.assertNotIn('taints', n['spec'])

    def test_node_reregisters_after_state_loss(self):
        iid = self.run_instance(SEED_UD, itype='m6i.large')
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        name = n['metadata']['name']
        self.store.delete('nodes', None, name)
        self.assertTrue(wait_for(lambda: self.ready(self.store.get('nodes', None, name))))

    def test_node_condition_control(self):
        iid = self.run_instance(SEED_UD, itype='m6i.large')
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        self.assertTrue(n)
        st, out = self.sim.control('POST', '/aws/node-condition',
                                   {}, {'instanceId': iid, 'type': 'AcceleratedHardwareReady',
                                        'status': 'False', 'since': 1796040000})
        self.assertEqual(st, 200, out)
        st, out = self.sim.control('POST', '/aws/node-condition', {},
                                   {'instanceId': iid, 'status': 'Unknown'})
        self.assertEqual(st, 200, out)
        conds = {c['type']: c for c in self.node_of(iid)['status']['conditions']}
        self.assertEqual((conds['AcceleratedHardwareReady']['status'],
                          conds['AcceleratedHardwareReady']['lastTransitionTime']),
                         ('False', '2026-11-30T12:00:00Z'))
        self.assertEqual(conds['Ready']['status'], 'Unknown')
        time.sleep(0.3)   # the kubelet keeps what it was told (no re-post of Ready)
        conds = {c['type']: c['status'] for c in self.node_of(iid)['status']['conditions']}
        self.assertEqual(conds['Ready'], 'Unknown')
        st, _ = self.sim.control('POST', '/aws/node-condition', {},
                                 {'instanceId': iid, 'status': 'Maybe'})
        self.assertEqual(st, 400)
        st, _ = self.sim.control('POST', '/aws/node-condition', {},
                                 {'instanceId': 'i-0123456789abcdef0'})
        self.assertEqual(st, 404)


class KubeletNodeDeleteDelay(unittest.TestCase):
    """sim.py --node-delete-delay: the Node of a terminated instance stays (NotReady)."""
    make_store = KubeletFlow.make_store
    run_instance = KubeletFlow.run_instance
    node_of = KubeletFlow.node_of
    ready = KubeletFlow.ready
    tearDown = KubeletFlow.tearDown

    def setUp(self):
        self.sim = aws.AwsSim(cluster='demo', pending_seconds=0.05, shutdown_seconds=0.2)
        self.srv = aws.serve(self.sim)
        self.store = self.make_store()
        self.kl = kubelet.Kubelets(self.sim, self.store, boot_delay=0.1, ready_delay=0.1,
                                   sync_period=0.1, notready_delete_delay=30)
        self.c = awsclient.Client(self.srv.url, self.sim.access_key, self.sim.secret_key, self.sim.region)

    def test_node_kept_not_ready_with_delete_delay(self):
        iid = self.run_instance(SEED_UD, itype='m6i.large')
        n = wait_for(lambda: self.ready(self.node_of(iid)) and self.node_of(iid))
        self.assertTrue(n)
        name = n['metadata']['name']
        st, _ = self.c.ec2('TerminateInstances', {'InstanceId.1': iid})
        self.assertEqual(st, 200)
        self.assertTrue(wait_for(lambda: self.sim.instance(iid)['State']['Name'] == 'terminated'))
        time.sleep(0.5)
        node = self.store.get('nodes', None, name)
        self.assertIsNotNone(node, 'the node is kept after termination')
        self.assertEqual([c['status'] for c in node['status']['conditions'] if c['type'] == 'Ready'],
                         ['Unknown'])


if __name__ == '__main__':
    unittest.main()
