"""Install artefacts (issue 10): CRDs, Helm chart, manifests/install.yaml, examples.

Static checks: the CRDs are what tools/gen_crds.py writes; every chart template is YAML
once its template actions are set aside; values.yaml validates against
values.schema.json; the CRD schemas accept every example and reject the invalid cases a
schema alone can catch; the examples' userData is understood by the simulator's
kubelets; the RBAC grants what `nodewarden doctor` checks and nothing broader.

In the simulator: manifests/crds + manifests/install.yaml + install-dev-certs.sh
applied with kubectl, `nodewarden serve` behind the registered webhooks, the examples
applied with kubectl, and the webhooks enforce (a GPU pod patched, a GPU pod that can
never reach a GPU node refused, an invalid NodePool refused with its field path)."""
import base64
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'install'))
import checks  # noqa: E402
from simtest import KUBECTL, SimProcess, wait_for  # noqa: E402

CHART = os.path.join(ROOT, 'manifests', 'chart', 'nodewarden')
EXAMPLES = os.path.join(ROOT, 'manifests', 'examples')
NW_BIN = os.environ.get('NW_BIN', os.path.join(ROOT, 'build', 'nodewarden'))
KARPENTER_KINDS = {'NodePool', 'EC2NodeClass', 'NodeClaim'}

# what the examples' placeholders become in the simulator (its cluster, AMIs, tags)
SIM_VALUES = {
    '<CLUSTER_NAME>': 'sim-cluster',
    '<NODE_ROLE_NAME>': 'sim-cluster-node',
    'ami-0123456789abcdef0': 'ami-0sim0000000000001',
    'ami-0fedcba9876543210': 'ami-0sim0000000000001',
    '<API_SERVER_ENDPOINT>': '10.0.0.10:6443',
    '<BOOTSTRAP_TOKEN>': 'abcdef.0123456789abcdef',
    '<CA_CERT_HASH>': '0' * 64,
}


def example_files():
    return sorted(glob.glob(os.path.join(EXAMPLES, '*.yaml')))


def example_text(path, values=SIM_VALUES):
    with open(path) as f:
        text = f.read()
    for k, v in values.items():
        text = text.replace(k, v)
    return text


def read(path):
    with open(path) as f:
        return f.read()


@unittest.skipUnless(os.path.exists(KUBECTL), 'kubectl not installed (used as the YAML parser)')
class StaticTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.schemas = checks.crd_schemas()

    def test_crds_up_to_date(self):
        r = subprocess.run([sys.executable, os.path.join(ROOT, 'tools', 'gen_crds.py'), '--check'],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(r.returncode, 0, r.stdout.decode())

    def test_crds_shape(self):
        self.assertEqual(set(k for _, k in self.schemas), KARPENTER_KINDS)
        cols = {}
        for f in glob.glob(os.path.join(ROOT, 'manifests', 'crds', '*.yaml')):
            crd = checks.parse_file(f)[0]
            self.assertEqual(crd['spec']['scope'], 'Cluster')
            v = crd['spec']['versions'][0]
            self.assertEqual(v['subresources'].get('status'), {})
            cols[crd['spec']['names']['kind']] = [c['name'].upper() for c in v['additionalPrinterColumns']
                                                  if not c.get('priority')]
        self.assertEqual(cols['NodePool'][:3], ['NODECLASS', 'NODES', 'READY'])
        self.assertEqual(cols['NodeClaim'], ['TYPE', 'CAPACITY', 'ZONE', 'NODE', 'READY', 'AGE'])
        np = self.schemas[('karpenter.sh/v1', 'NodePool')]['properties']['spec']['properties']
        self.assertEqual(np['disruption']['default'], {'consolidateAfter': '0s'})
        self.assertEqual(np['template']['properties']['spec']['properties']['expireAfter']['default'], '720h')
        self.assertEqual(np['disruption']['properties']['consolidationPolicy']['enum'],
                         ['WhenEmpty', 'WhenEmptyOrUnderutilized', 'Balanced'])

    # -- chart -----------------------------------------------------------------------
    def test_chart_layout(self):
        chart = checks.parse_values(read(os.path.join(CHART, 'Chart.yaml')), 'Chart.yaml')
        self.assertEqual(chart['apiVersion'], 'v2')
        self.assertEqual(chart['name'], 'nodewarden')
        self.assertEqual(chart['appVersion'], read(os.path.join(ROOT, 'VERSION')).strip())
        for f in ('templates/_helpers.tpl', 'templates/NOTES.txt', 'values.schema.json'):
            self.assertTrue(os.path.exists(os.path.join(CHART, f)), f)
        helpers = read(os.path.join(CHART, 'templates', '_helpers.tpl'))
        defined = set(re.findall(r'define "([^"]+)"', helpers))
        for f in glob.glob(os.path.join(CHART, 'templates', '*')):
            for name in re.findall(r'include "([^"]+)"', read(f)):
                self.assertIn(name, defined, '%s includes undefined %s' % (f, name))
        for f in ('karpenter.sh_nodepools.yaml', 'karpenter.sh_nodeclaims.yaml',
                  'karpenter.k8s.aws_ec2nodeclasses.yaml'):
            self.assertEqual(read(os.path.join(CHART, 'crds', f)), read(os.path.join(ROOT, 'manifests', 'crds', f)))

    def test_chart_templates_are_yaml(self):
        files = sorted(glob.glob(os.path.join(CHART, 'templates', '*.yaml')))
        self.assertGreaterEqual(len(files), 8)
        kinds = []
        for f in files:
            objs = checks.parse_yaml(checks.strip_template(read(f)), os.path.basename(f))
            self.assertTrue(objs, '%s: no object' % f)
            kinds += [o['kind'] for o in objs]
        for k in ('Deployment', 'Service', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role',
                  'RoleBinding', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration',
                  'PodDisruptionBudget', 'ConfigMap', 'Secret', 'Certificate', 'Issuer'):
            self.assertIn(k, kinds)

    def test_template_checker_catches_errors(self):
        good = read(os.path.join(CHART, 'templates', 'service.yaml'))
        checks.parse_yaml(checks.strip_template(good))
        bad = good.replace('  ports:\n    - name', '  ports:\n     - name', 1).replace(
            '      port: {{', '    port: {{', 1)
        self.assertNotEqual(bad, good)
        with self.assertRaises(checks.ParseError):
            checks.parse_yaml(checks.strip_template(bad))
        with self.assertRaises(checks.ParseError):   # a wrong nindent under a sequence item
            checks.parse_yaml(checks.strip_template(good.replace('nindent 4', 'nindent 1', 1)))

    def test_chart_deployment_hardening(self):
        dep = checks.parse_yaml(checks.strip_template(read(os.path.join(CHART, 'templates', 'deployment.yaml'))))[0]
        pod = dep['spec']['template']['spec']
        c = pod['containers'][0]
        self.assertEqual(pod['securityContext']['seccompProfile']['type'], 'RuntimeDefault')
        self.assertTrue(pod['securityContext']['runAsNonRoot'])
        self.assertFalse(c['securityContext']['allowPrivilegeEscalation'])
        self.assertTrue(c['securityContext']['readOnlyRootFilesystem'])
        self.assertEqual(c['readinessProbe']['httpGet']['path'], '/readyz')
        self.assertEqual(c['livenessProbe']['httpGet']['path'], '/healthz')
        self.assertEqual(c['args'], ['serve', '--config', '/etc/nodewarden/config.yaml'])
        for m in c['volumeMounts']:
            self.assertNotIn('subPath', m)    # a subPath Secret mount never updates

    def test_values_validate_against_schema(self):
        schema = json.loads(read(os.path.join(CHART, 'values.schema.json')))
        values = checks.parse_values(read(os.path.join(CHART, 'values.yaml')))
        self.assertEqual(checks.json_schema_errors(values, schema), [])
        self.assertEqual(values['replicaCount'], 2)
        self.assertEqual(values['certificates']['mode'], 'helm')
        self.assertEqual(values['aws']['credentials'], 'instanceProfile')
        # no pod may opt out of GPU isolation by a label unless the operator allows it
        self.assertIs(values['webhook']['allowIgnoreLabel'], False)
        bad = [
            ('replicaCount', 'two', 'expected integer'),
            ('replicaCount', -1, 'minimum'),
            ('replicaCount', 11, 'maximum'),
            ('logLevel', 'loud', 'not in'),
            ('nonsense', 1, 'unknown key'),
        ]
        for key, val, want in bad:
            v = json.loads(json.dumps(values))
            v[key] = val
            errs = checks.json_schema_errors(v, schema)
            self.assertTrue(any(want in e for e in errs), '%s=%r: %s' % (key, val, errs))
        v = json.loads(json.dumps(values))
        v['certificates']['mode'] = 'letsencrypt'
        v['aws']['credentials'] = 'magic'
        v['settings']['batchIdleDuration'] = '1 second'
        v['webhook']['failurePolicy']['pods'] = 'Maybe'
        v['podDisruptionBudget']['maxUnavailable'] = '150%'
        self.assertEqual(len(checks.json_schema_errors(v, schema)), 5)

    def test_pod_webhooks_see_every_pod_label(self):
        """install.yaml (and the sim's copy of the chart's registration) register the pod
        webhooks without the nodewarden.io/ignore objectSelector: a label cannot switch
        GPU isolation off by default."""
        objs = checks.parse_file(os.path.join(ROOT, 'manifests', 'install.yaml'))
        hooks = [w for o in objs if o['kind'].endswith('WebhookConfiguration') for w in o['webhooks']
                 if any('pods' in r['resources'] for r in w['rules'])]
        self.assertEqual(len(hooks), 2)
        for w in hooks:
            self.assertNotIn('objectSelector', w, w['name'])
        from tests.sim import sim as simmod
        for cfg in simmod.webhook_configurations(b'ca'):
            for w in cfg['webhooks']:
                self.assertNotIn('objectSelector', w, w['name'])

    def test_config_keys_known_to_nodewarden(self):
        """The ConfigMap's config.yaml (chart and install.yaml) uses only keys of config/config.c."""
        keys = set(re.findall(r'{"([a-zA-Z0-9]+(?:\.[a-zA-Z0-9]+)+)",\s*T_', read(os.path.join(ROOT, 'config', 'config.c'))))
        self.assertIn('settings.clusterName', keys)
        # gpu.classes.<any class name>.<field>: the fields of config.c's class_fields
        src = read(os.path.join(ROOT, 'config', 'config.c'))
        fields = src[src.index('static const key_t_ class_fields[]'):]
        fields = set(re.findall(r'{"([a-zA-Z.]+)", T_', fields[:fields.index('};')]))
        self.assertIn('taint.key', fields)
        for name in ('amd', 'neuron', 'gaudi', 'qualcomm', 'xilinx', 'tpl'):  # tpl: a templated class name
            keys |= {'gpu.classes.%s.%s' % (name, f) for f in fields}
        cm = [o for o in checks.parse_file(os.path.join(ROOT, 'manifests', 'install.yaml')) if o['kind'] == 'ConfigMap'][0]
        chart_cm = checks.parse_yaml(checks.strip_template(read(os.path.join(CHART, 'templates', 'configmap.yaml'))))[0]
        for text in (cm['data']['config.yaml'], chart_cm['data']['config.yaml']):
            cfg = checks.parse_values(text, 'config.yaml')

            def walk(d, prefix=''):
                for k, v in d.items():
                    p = prefix + k
                    if isinstance(v, dict) and p not in keys:
                        yield from walk(v, p + '.')
                    else:
                        yield p
            for p in walk(cfg):
                self.assertTrue(p in keys or any(k.startswith(p + '.') for k in keys), p)
        # and nodewarden itself loads install.yaml's configuration
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, 'config.yaml')
            with open(path, 'w') as f:
                f.write(cm['data']['config.yaml'])
            if os.path.exists(NW_BIN):
                r = subprocess.run([NW_BIN, 'serve', '--config', path, '--help'], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, timeout=30)
                self.assertNotIn(b'config.yaml:', r.stdout)

    # -- RBAC --------------------------------------------------------------------------
    def doctor_perms(self):
        src = read(os.path.join(ROOT, 'cli', 'doctor.c'))
        table = src[src.index('static const perm_t perms[]'):]
        table = table[:table.index('};')]
        out = []
        for g, r, sub, verbs, lease, name in re.findall(
                r'{"([^"]*)", "([^"]+)", (?:"([^"]+)"|NULL), "([^"]+)", (\d), (?:"([^"]+)"|NULL)}', table):
            out.append((g, r + ('/' + sub if sub else ''), verbs.split(), int(lease), name))
        self.assertGreaterEqual(len(out), 10)
        return out

    def check_rbac(self, objs, what):
        cr = [o for o in objs if o['kind'] == 'ClusterRole']
        role = [o for o in objs if o['kind'] == 'Role' and o['metadata'].get('namespace') != 'kube-system']
        ks = {o['metadata']['name']: o for o in objs if o['kind'] == 'Role' and
              o['metadata'].get('namespace') == 'kube-system'}
        info = [o for n, o in ks.items() if n.endswith('-cluster-info')]
        boot = [o for n, o in ks.items() if n.endswith('-bootstrap-tokens')]
        self.assertEqual((len(cr), len(role), len(info), len(boot), len(ks)), (1, 1, 1, 1, 2), what)
        bound = [o for o in objs if o['kind'] == 'RoleBinding' and o['metadata'].get('namespace') == 'kube-system']
        self.assertEqual(sorted(b['roleRef']['name'] for b in bound), sorted(ks), what)

        def grants(rules, g, res, verb, name):
            return any(g in r['apiGroups'] and res in r['resources'] and verb in r['verbs']
                       and (not r.get('resourceNames') or (name and name in r['resourceNames']))
                       for r in rules)
        # 0: the ClusterRole, 1: the namespace's Role, 2: kube-system (cluster-info), 3:
        # kube-system, the kubeadm bootstrap tokens
        for g, res, verbs, ns, name in self.doctor_perms():
            rules = (cr[0], role[0], info[0], boot[0])[ns]['rules']
            for v in verbs:
                self.assertTrue(grants(rules, g, res, v, name), '%s: %s %s/%s not granted' % (what, v, g, res))
        # kube-system: the kube-dns Service and kubeadm-config, read, one object each; the
        # bootstrap tokens only, never read
        self.assertEqual(info[0]['rules'], [{'apiGroups': [''], 'resources': ['services'],
                                             'resourceNames': ['kube-dns'], 'verbs': ['get']},
                                            {'apiGroups': [''], 'resources': ['configmaps'],
                                             'resourceNames': ['kubeadm-config'], 'verbs': ['get']}], what)
        self.assertEqual(boot[0]['rules'], [{'apiGroups': [''], 'resources': ['secrets'],
                                             'verbs': ['create', 'delete']}], what)
        for r in cr[0]['rules'] + role[0]['rules']:
            for field in ('apiGroups', 'resources', 'verbs'):
                self.assertNotIn('*', r[field], what)
            self.assertNotIn('secrets', r['resources'], what)
            self.assertNotIn('services', r['resources'], what)
            self.assertNotIn('configmaps', r['resources'], what)
            if r['apiGroups'] in (['apiextensions.k8s.io'], ['admissionregistration.k8s.io']):
                self.assertEqual(r['verbs'], ['get'], what)
                self.assertTrue(r.get('resourceNames'), what)
        self.assertFalse(any('leases' in r['resources'] for r in cr[0]['rules']), 'leases only in the namespace')

    def test_rbac_matches_doctor(self):
        self.check_rbac(checks.parse_file(os.path.join(ROOT, 'manifests', 'install.yaml')), 'install.yaml')
        self.check_rbac(checks.parse_yaml(checks.strip_template(read(os.path.join(CHART, 'templates', 'rbac.yaml')))),
                        'chart rbac.yaml')

    # -- examples ----------------------------------------------------------------------
    def example_objects(self, values=None):
        out = []
        for f in example_files():
            for o in checks.parse_yaml(example_text(f, values or {}), os.path.basename(f)):
                out.append((os.path.basename(f), o))
        return out

    def test_examples_accepted_by_crds(self):
        objs = self.example_objects()
        kinds = [o['kind'] for _, o in objs]
        self.assertEqual(kinds.count('EC2NodeClass'), kinds.count('NodePool'))
        self.assertGreaterEqual(kinds.count('NodePool'), 2)
        for f, o in objs:
            if o['kind'] in KARPENTER_KINDS:
                s = self.schemas[(o['apiVersion'], o['kind'])]
                self.assertEqual(checks.structural_errors(checks.apply_defaults(o, s), s), [],
                                 '%s %s' % (f, o['metadata']['name']))

    def test_examples_content(self):
        objs = {(o['kind'], o['metadata']['name']): o for _, o in self.example_objects()}
        gp = objs[('NodePool', 'general-purpose')]['spec']
        reqs = {r['key']: r['values'] for r in gp['template']['spec']['requirements']}
        self.assertEqual(reqs['karpenter.k8s.aws/instance-family'], ['m6i', 'm7i'])
        self.assertEqual(reqs['karpenter.k8s.aws/instance-size'], ['large', 'xlarge'])
        self.assertEqual(set(reqs['karpenter.sh/capacity-type']), {'spot', 'on-demand'})
        self.assertEqual(gp['limits'], {'cpu': '500', 'memory': '1000Gi'})
        self.assertEqual((gp['disruption']['consolidationPolicy'], gp['disruption']['consolidateAfter']),
                         ('WhenEmptyOrUnderutilized', '5m'))
        gpu = objs[('NodePool', 'gpu-l4')]['spec']
        self.assertEqual(gpu['template']['spec']['taints'], [{'key': 'gpu', 'value': 'true', 'effect': 'NoSchedule'}])
        self.assertEqual(gpu['limits'], {'nvidia.com/gpu': 20})
        self.assertEqual((gpu['disruption']['consolidationPolicy'], gpu['disruption']['consolidateAfter']),
                         ('WhenEmpty', '10m'))
        nc = objs[('EC2NodeClass', 'gpu-l4')]['spec']
        self.assertEqual(nc['blockDeviceMappings'][0]['ebs']['volumeSize'], '200Gi')
        self.assertTrue(nc['blockDeviceMappings'][0]['ebs']['encrypted'])
        self.assertEqual(objs[('EC2NodeClass', 'general-purpose')]['spec']['amiFamily'], 'Custom')
        ds = objs[('DaemonSet', 'nvidia-device-plugin-daemonset')]['spec']['template']['spec']
        self.assertIn({'key': 'gpu', 'operator': 'Equal', 'value': 'true', 'effect': 'NoSchedule'}, ds['tolerations'])
        dep = objs[('Deployment', 'inflate')]['spec']
        self.assertEqual(dep['replicas'], 4)
        self.assertEqual(dep['template']['spec']['containers'][0]['resources']['requests'],
                         {'cpu': '550m', 'memory': '128Mi'})
        pod = objs[('Pod', 'cuda-vector-add')]['spec']
        self.assertEqual(pod['containers'][0]['resources']['limits'], {'nvidia.com/gpu': 1})
        # every placeholder is documented
        doc = read(os.path.join(EXAMPLES, 'README.md'))
        for f in example_files():
            for ph in set(re.findall(r'<[A-Z][A-Z0-9_]+>', read(f))):
                self.assertIn('`%s`' % ph, doc, '%s: %s undocumented' % (f, ph))
            code = re.sub(r'(^|\s)#.*', '', read(f), flags=re.M)
            for ph in set(re.findall(r'<[A-Z][A-Z0-9_]+>', code)):
                self.assertIn(ph, SIM_VALUES, '%s: %s has no simulator value' % (f, ph))

    @unittest.skipUnless(os.path.exists(NW_BIN), 'build/nodewarden not built')
    def test_nodewarden_check_passes_examples(self):
        r = subprocess.run([NW_BIN, 'check'] + example_files(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=60)
        out = r.stdout.decode()
        if 'not built yet' in out:
            self.skipTest('nodewarden check not built yet')
        self.assertEqual(r.returncode, 0, out)
        self.assertIn('0 invalid', out)
        r = subprocess.run([NW_BIN, 'check'] + sorted(glob.glob(os.path.join(EXAMPLES, 'invalid', '*.yaml'))),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if glob.glob(os.path.join(EXAMPLES, 'invalid', '*.yaml')):
            self.assertEqual(r.returncode, 1, r.stdout.decode())

    def test_userdata_understood_by_sim_kubelet(self):
        import kubelet
        objs = {(o['kind'], o['metadata']['name']): o for _, o in self.example_objects(SIM_VALUES)}
        want = {'general-purpose': ({'node.lifecycle': 'karpenter'}, [('karpenter.sh/unregistered', None, 'NoExecute')]),
                'gpu-l4': ({'node.lifecycle': 'karpenter', 'node.accelerator': 'nvidia-gpu'},
                           [('karpenter.sh/unregistered', None, 'NoExecute'), ('gpu', 'true', 'NoSchedule')])}
        for name, (labels, taints) in want.items():
            ud = objs[('EC2NodeClass', name)]['spec']['userData']
            cfg = kubelet.parse_user_data(base64.b64encode(ud.encode()).decode())
            self.assertEqual(cfg['labels'], labels, name)
            self.assertEqual([(t['key'], t.get('value'), t['effect']) for t in cfg['taints']], taints, name)
            # both computed by the script: the node is named by its private DNS name and
            # its providerID is aws:///<zone>/<instance-id>
            self.assertIsNone(cfg['node_name'], name)
            self.assertIsNone(cfg['provider_id'], name)
        with self.assertRaises(kubelet.UserDataError):   # the parser is not a rubber stamp
            kubelet.parse_user_data(base64.b64encode(b'#!/bin/bash\necho hello\n').decode())

    def schema_cases(self):
        """(source, object, [expected error paths]) for case files whose errors a
        structural schema alone reports (no CEL, no transition rules)."""
        schema_msg = re.compile(r'in body should match|Unsupported value|Required value|should be greater|'
                                r'should be less|Too many|must be of type|should have at least|chars long|'
                                r'Duplicate value|Too long')
        out = []
        for f in sorted(glob.glob(os.path.join(EXAMPLES, 'invalid', '*.yaml'))):
            text = read(f)
            paths = re.findall(r'^# expect-error: (\S+)', text, re.M)
            for o in checks.parse_yaml(text, f):
                out.append((f, o, paths, None))
        pending = []
        for d in ('nodepool', 'ec2nodeclass'):
            for f in sorted(glob.glob(os.path.join(ROOT, 'tests', 'data', d, '*.yaml'))):
                text = read(f)
                docs = re.split(r'^---\s*$', text, flags=re.M)
                head = '\n'.join(l for l in docs[0].split('\n') if not l.startswith('#')).strip()
                try:
                    meta = json.loads(head)
                except ValueError:
                    continue
                if meta.get('op', meta.get('operation', 'CREATE')) != 'CREATE' or len(docs) != 2 or \
                        not re.search(r'^kind:', docs[1], re.M):
                    continue
                pending.append((f, meta, docs[1]))
        parsed = checks.parse_many([t for _, _, t in pending])
        for (f, meta, _), objs in zip(pending, parsed):
                if not objs or len(objs) != 1:
                    continue
                # an expectation is "path: message" or {"path": ..., "contains": ...}
                raw = meta.get('expect', [])
                if not isinstance(raw, list):          # "allowed"
                    raw = []
                exp = [(e['path'], e.get('contains', '')) if isinstance(e, dict) else
                       (e.split(':', 1)[0], e.split(':', 1)[-1]) for e in raw]
                exp = [(p, m) for p, m in exp if p != '<nil>']
                if exp and not all(schema_msg.search(m) for _, m in exp):
                    continue        # a CEL rule is involved: not the schema's business
                out.append((f, objs[0], [p for p, _ in exp], exp))
        return out

    def test_crds_reject_schema_invalid_cases(self):
        cases = self.schema_cases()
        invalid = [c for c in cases if c[2]]
        self.assertTrue(invalid or not os.path.isdir(os.path.join(EXAMPLES, 'invalid')))
        inline = [
            ({'apiVersion': 'karpenter.sh/v1', 'kind': 'NodePool', 'metadata': {'name': 'w'},
              'spec': {'weight': 101, 'template': {'spec': {'nodeClassRef': {'group': 'karpenter.k8s.aws',
                                                                             'kind': 'EC2NodeClass', 'name': 'x'},
                                                            'requirements': [], 'expireAfter': '30d'}}}},
             ['spec.weight', 'spec.template.spec.expireAfter']),
            ({'apiVersion': 'karpenter.sh/v1', 'kind': 'NodePool', 'metadata': {'name': 'r'},
              'spec': {'template': {'spec': {'requirements': [{'key': 'a', 'operator': 'Within'}]}},
                       'disruption': {'consolidationPolicy': 'WhenUnderutilized',
                                      'budgets': [{'nodes': '101%', 'reasons': ['Empty', 'Empty']}]}}},
             ['spec.template.spec.nodeClassRef', 'spec.template.spec.requirements[0].operator',
              'spec.disruption.consolidateAfter', 'spec.disruption.consolidationPolicy',
              'spec.disruption.budgets[0].nodes', 'spec.disruption.budgets[0].reasons[1]']),
            ({'apiVersion': 'karpenter.k8s.aws/v1', 'kind': 'EC2NodeClass', 'metadata': {'name': 'e'},
              'spec': {'amiSelectorTerms': [], 'subnetSelectorTerms': [{'id': 'subnet-1'}], 'amiFamily': 'Ubuntu',
                       'blockDeviceMappings': [{'ebs': {'volumeSize': '100GB', 'volumeType': 'gp4'}}],
                       'metadataOptions': {'httpPutResponseHopLimit': 65}}},
             ['spec.amiSelectorTerms', 'spec.securityGroupSelectorTerms', 'spec.amiFamily',
              'spec.blockDeviceMappings[0].ebs.volumeSize', 'spec.blockDeviceMappings[0].ebs.volumeType',
              'spec.metadataOptions.httpPutResponseHopLimit']),
        ]
        for o, paths in inline:
            cases.append(('inline ' + o['metadata']['name'], o, paths, None))
        rejected = accepted = 0
        for src, o, paths, exp in cases:
            s = self.schemas[(o['apiVersion'], o['kind'])]
            o = checks.apply_defaults(json.loads(json.dumps(o)), s)
            got = sorted(set(checks.normalize_path(p) for p, _ in checks.structural_errors(o, s)))
            want = sorted(set(checks.normalize_path(p) for p in paths))
            if exp is None and src.startswith('inline'):
                self.assertEqual(got, want, src)
            elif exp is None:        # examples/invalid: CEL errors too; the schema finds a subset
                self.assertTrue(got, '%s: the schema accepted it' % src)
                for p in got:
                    self.assertIn(p, want, src)
            else:
                self.assertEqual(got, want, '%s: %s' % (src, exp))
            if want:
                rejected += 1
            else:
                accepted += 1
        self.assertGreaterEqual(rejected, 3)
        if glob.glob(os.path.join(ROOT, 'tests', 'data', 'nodepool', '*.yaml')):
            self.assertGreaterEqual(accepted, 10)


@unittest.skipUnless(os.path.exists(KUBECTL), 'kubectl not installed')
@unittest.skipUnless(os.path.exists(NW_BIN), 'build/nodewarden not built')
class SimInstallTest(unittest.TestCase):
    """install.yaml and the examples applied with kubectl to the simulator, nodewarden
    serving the webhooks they register."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix='siminstall-')
        cls.sim = SimProcess(cls.dir, '--boot-delay', '0.5')
        cls.kubeconfig = os.path.join(cls.dir, 'kubeconfig')
        cls.nw = None
        try:
            cls.kubectl_cls('apply', '-f', os.path.join(ROOT, 'manifests', 'crds'))
            cls.kubectl_cls('apply', '-f', os.path.join(ROOT, 'manifests', 'install.yaml'))
            r = subprocess.run([os.path.join(ROOT, 'manifests', 'install-dev-certs.sh'), '--kubeconfig',
                                cls.kubeconfig], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                               cwd=ROOT, env=cls.env())
            assert r.returncode == 0, r.stdout.decode()
            cls.nwlog = open(os.path.join(cls.dir, 'nodewarden.log'), 'wb')
            # the webhook only (the simulator's file turns the scaler on)
            cls.nw = subprocess.Popen([NW_BIN, 'serve', '--config', os.path.join(cls.dir, 'nodewarden.yaml'),
                                       '--scaler.enabled', 'false'],
                                      stdout=cls.nwlog, stderr=subprocess.STDOUT)
            wait_for(lambda: '"listening"' in read(os.path.join(cls.dir, 'nodewarden.log'))
                     or cls.nw.poll() is not None, 30, what='nodewarden listening')
            assert cls.nw.poll() is None, read(os.path.join(cls.dir, 'nodewarden.log'))
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.nw is not None and cls.nw.poll() is None:
            cls.nw.terminate()
            cls.nw.wait(20)
        if getattr(cls, 'nwlog', None):
            cls.nwlog.close()
        rc = cls.sim.stop()
        shutil.rmtree(cls.dir, ignore_errors=True)
        assert rc == 0, 'sim.py did not stop cleanly: %r' % rc

    @classmethod
    def env(cls):
        return dict(os.environ, HOME=cls.dir, KUBECACHEDIR=os.path.join(cls.dir, 'cache'))

    @classmethod
    def kubectl_cls(cls, *args, stdin=None, ok=True):
        r = subprocess.run([KUBECTL, '--kubeconfig', cls.kubeconfig, '--request-timeout=20s'] + list(args),
                           input=stdin.encode() if stdin else None, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=90, env=cls.env())
        out, err = r.stdout.decode(), r.stderr.decode()
        if ok:
            assert r.returncode == 0, 'kubectl %s: %s%s' % (' '.join(args), out, err)
        return out, err, r.returncode

    def kubectl(self, *args, **kw):
        return self.kubectl_cls(*args, **kw)

    def test_1_install_objects(self):
        out, _, _ = self.kubectl('get', 'clusterrole', 'nodewarden', '-o', 'json')
        self.assertTrue(json.loads(out)['rules'])
        out, _, _ = self.kubectl('-n', 'nodewarden', 'get', 'deploy,svc,sa,cm,pdb,secret', '-o', 'name')
        for want in ('deployment.apps/nodewarden', 'service/nodewarden', 'serviceaccount/nodewarden',
                     'configmap/nodewarden', 'poddisruptionbudget.policy/nodewarden', 'secret/nodewarden-tls'):
            self.assertIn(want, out)
        for kind in ('validating', 'mutating'):
            out, _, _ = self.kubectl('get', '%swebhookconfiguration' % kind, 'nodewarden-%s' % kind, '-o', 'json')
            hooks = json.loads(out)['webhooks']
            self.assertEqual(len(hooks), 3)
            ca = base64.b64encode(read(os.path.join(ROOT, 'certs', 'dev', 'ca.crt')).encode()).decode()
            for h in hooks:
                self.assertEqual(h['clientConfig']['caBundle'], ca, h['name'])

    def test_2_examples_and_enforcement(self):
        for f in example_files():
            out, err, _ = self.kubectl('apply', '-f', '-', stdin=example_text(f))
        # the CRD's printer columns, evaluated by kubectl itself (the simulator serves
        # no Table format, so `kubectl get` would print NAME/AGE only)
        crd = checks.parse_file(os.path.join(ROOT, 'manifests', 'crds', 'karpenter.sh_nodepools.yaml'))[0]
        cols = [c for c in crd['spec']['versions'][0]['additionalPrinterColumns'] if not c.get('priority')]
        spec = ','.join('%s:%s' % (c['name'].upper(), c['jsonPath'].replace('==', '=='))
                        for c in cols if c['type'] != 'date')
        out, _, _ = self.kubectl('get', 'nodepools', '-o', 'custom-columns=NAME:.metadata.name,' + spec)
        rows = [l.split() for l in out.strip().split('\n')]
        self.assertEqual(rows[0], ['NAME', 'NODECLASS', 'NODES', 'READY'])
        self.assertIn(['gpu-l4', 'gpu-l4', '<none>', '<none>'], rows)
        self.assertIn(['general-purpose', 'general-purpose', '<none>', '<none>'], rows)
        out, _, _ = self.kubectl('get', 'ec2nodeclasses', '-o', 'name')
        self.assertIn('ec2nodeclass.karpenter.k8s.aws/gpu-l4', out)
        # the GPU pod was patched by the mutating webhook: toleration + node selector
        out, _, _ = self.kubectl('get', 'pod', 'cuda-vector-add', '-o', 'json')
        pod = json.loads(out)['spec']
        self.assertIn({'key': 'gpu', 'operator': 'Exists', 'effect': 'NoSchedule'},
                      pod.get('tolerations', []))
        self.assertEqual(pod.get('nodeSelector', {}).get('node.accelerator'), 'nvidia-gpu')
        # the device plugin in kube-system is exempt (not patched)
        out, _, _ = self.kubectl('-n', 'kube-system', 'get', 'ds', 'nvidia-device-plugin-daemonset', '-o', 'json')
        self.assertEqual(json.loads(out)['spec']['template']['spec']['nodeSelector'], {'node.accelerator': 'nvidia-gpu'})
        # a GPU pod that can never reach a GPU node is refused
        bad = ('apiVersion: v1\nkind: Pod\nmetadata: {name: bad-gpu, namespace: default}\n'
               'spec:\n  nodeSelector: {node.accelerator: none}\n  containers:\n'
               '  - name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n')
        out, err, rc = self.kubectl('apply', '-f', '-', stdin=bad, ok=False)
        self.assertNotEqual(rc, 0)
        self.assertIn('denied the request', err)
        self.assertIn('GPU', err)
        # a generic pod is not touched
        out, _, _ = self.kubectl('get', 'deploy', 'inflate', '-o', 'json')
        self.assertEqual(json.loads(out)['spec']['replicas'], 4)

    def test_3_invalid_nodepool_refused(self):
        bad = ('apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: broken}\nspec:\n  weight: 0\n'
               '  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, '
               'name: general-purpose}\n      requirements: []\n')
        out, err, rc = self.kubectl('apply', '-f', '-', stdin=bad, ok=False)
        self.assertNotEqual(rc, 0)
        self.assertIn('spec.weight', err)


if __name__ == '__main__':
    unittest.main()
