"""tests/oracle/parity.py finds a difference wherever one is made: each case changes one
thing in a copy of our NodePool/EC2NodeClass CRD and expects exactly that path reported."""
import copy
import os
import shutil
import tempfile
import unittest

from tests.oracle import parity, upstream


def node(crd, path):
    n = crd['spec']['versions'][0]['schema']['openAPIV3Schema']
    for p in path:
        n = n['items'] if p == '[*]' else n['properties'][p]
    return n


class ParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        up = upstream.crd_paths()
        cls.pairs = {}
        for f in ('karpenter.sh_nodepools.yaml', 'karpenter.k8s.aws_ec2nodeclasses.yaml'):
            cls.pairs[f] = (parity.load(os.path.join(parity.DEFAULT_DIRS[0], f)), parity.load(up[f]))

    def diff(self, f, change):
        ours, theirs = self.pairs[f]
        ours = copy.deepcopy(ours)
        change(ours)
        return parity.cmp_crd(ours, theirs).out

    def expect(self, f, change, *fragments):
        out = self.diff(f, change)
        self.assertEqual(len(out), 1, out)
        for fr in fragments:
            self.assertIn(fr, out[0])

    def test_ours_match(self):
        for f in self.pairs:
            self.assertEqual(self.diff(f, lambda c: None), [])

    def test_rule_message(self):
        def ch(c):
            node(c, ['spec', 'template', 'spec', 'requirements'])['x-kubernetes-validations'][1]['message'] += '!'
        self.expect('karpenter.sh_nodepools.yaml', ch,
                    'spec.template.spec.requirements: x-kubernetes-validations[1].message')

    def test_rule_missing_and_extra_keys(self):
        def ch(c):
            n = node(c, ['spec', 'disruption', 'budgets'])
            n['x-kubernetes-validations'][0]['reason'] = 'FieldValueForbidden'
        self.expect('karpenter.sh_nodepools.yaml', ch,
                    'spec.disruption.budgets: x-kubernetes-validations[0].reason')

    def test_rule_dropped(self):
        def ch(c):
            node(c, ['spec'])['x-kubernetes-validations'].pop()
        out = self.diff('karpenter.k8s.aws_ec2nodeclasses.yaml', ch)
        self.assertTrue(any('spec: x-kubernetes-validations: ours 7 rules upstream 8 rules' in l for l in out), out)

    def test_enum_order(self):
        def ch(c):
            e = node(c, ['spec', 'template', 'spec', 'requirements', '[*]', 'operator'])['enum']
            e.reverse()
        self.expect('karpenter.sh_nodepools.yaml', ch, 'requirements[*].operator: enum')

    def test_required_and_pattern(self):
        def ch(c):
            node(c, ['status', 'conditions', '[*]'])['required'].remove('reason')
        self.expect('karpenter.sh_nodepools.yaml', ch, 'status.conditions[*]: required')

        def ch2(c):
            node(c, ['spec', 'amiSelectorTerms', '[*]', 'id'])['pattern'] = 'ami-.*'
        self.expect('karpenter.k8s.aws_ec2nodeclasses.yaml', ch2, 'spec.amiSelectorTerms[*].id: pattern')

    def test_extra_field_and_list_type(self):
        def ch(c):
            node(c, ['spec'])['properties']['foo'] = {'type': 'string'}
        self.expect('karpenter.sh_nodepools.yaml', ch, 'spec.foo: field: ours present upstream absent')

        def ch2(c):
            node(c, ['status', 'conditions'])['x-kubernetes-list-type'] = 'atomic'
        self.expect('karpenter.sh_nodepools.yaml', ch2, 'status.conditions: x-kubernetes-list-type')

    def test_version_and_columns(self):
        def ch(c):
            c['spec']['versions'][0]['additionalPrinterColumns'][1]['jsonPath'] = '.status.resources.nodes'
        self.expect('karpenter.sh_nodepools.yaml', ch, 'additionalPrinterColumns')

        def ch2(c):
            del c['spec']['versions'][0]['subresources']['scale']
        self.expect('karpenter.sh_nodepools.yaml', ch2, 'spec.versions[v1].subresources')

    def test_descriptions(self):
        ours, theirs = self.pairs['karpenter.sh_nodepools.yaml']

        def copied(c):
            node(c, ['spec', 'weight'])['description'] = node(theirs, ['spec', 'weight'])['description']
        self.expect('karpenter.sh_nodepools.yaml', copied, 'spec.weight: description: ours copied verbatim')

        def missing(c):
            del node(c, ['spec', 'limits'])['description']
        self.expect('karpenter.sh_nodepools.yaml', missing, 'spec.limits: description: ours missing')

        def reworded(c):
            node(c, ['spec', 'limits'])['description'] = 'something else'
        self.assertEqual(self.diff('karpenter.sh_nodepools.yaml', reworded), [])



class VersionTest(unittest.TestCase):
    """The oracle's Karpenter version comes from tests/k8s/versions only."""

    def versions(self, text):
        d = tempfile.mkdtemp(prefix='nw-versions-')
        self.addCleanup(shutil.rmtree, d, True)
        p = os.path.join(d, 'versions')
        if text is not None:
            with open(p, 'w') as f:
                f.write(text)
        return p

    def test_pinned(self):
        self.assertEqual(upstream.pinned(self.versions('K8S_VERSION=v1.35.4\nKARPENTER_VERSION=v1.2.3\n')),
                         'v1.2.3')
        with open(upstream.VERSIONS) as f:
            self.assertIn('KARPENTER_VERSION=%s\n' % upstream.VERSION, f.read())

    def test_missing_is_an_error_naming_file_and_key(self):
        for text, words in (('K8S_VERSION=v1.35.4\n', 'no KARPENTER_VERSION= line'),
                            ('KARPENTER_VERSION=\n', 'is not a module version'),
                            (None, 'cannot read the pinned versions')):
            p = self.versions(text)
            with self.assertRaises(upstream.UpstreamError) as e:
                upstream.pinned(p)
            self.assertIn(p, str(e.exception))
            self.assertIn(words, str(e.exception))


if __name__ == '__main__':
    unittest.main()
