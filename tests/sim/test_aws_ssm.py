"""SSM Parameter Store (GetParameter, JSON 1.1): the EKS-optimized and Bottlerocket image
parameters and their images, pinned releases, custom parameters from the control API,
ParameterNotFound, signing and the JSON protocol's checks, faults."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import aws_ssm  # noqa: E402
import awsclient  # noqa: E402

AL2023 = '/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/%s/%s/%s/image_id'


class Ssm(unittest.TestCase):
    def setUp(self):
        self.sim = aws.AwsSim(region='us-west-2')
        self.srv = aws.serve(self.sim)
        self.ctl = awsclient.FakeControl()
        self.sim.register_control(self.ctl)
        self.c = awsclient.Client(self.srv.url, self.sim.access_key, self.sim.secret_key, 'us-west-2')

    def tearDown(self):
        self.srv.close()
        self.sim.stop()

    def get(self, name):
        st, out = self.c.ssm('GetParameter', {'Name': name})
        self.assertEqual(st, 200, out)
        p = out['Parameter']
        self.assertEqual(p['Name'], name)
        return p['Value']

    def image(self, iid):
        st, root = self.c.ec2('DescribeImages', awsclient.filters(('image-id', [iid])))
        self.assertEqual(st, 200)
        items = root.findall('./imagesSet/item')
        self.assertEqual(len(items), 1, iid)
        return items[0]

    def test_eks_parameters_name_images(self):
        seen = set()
        for arch, variants in (('x86_64', ('standard', 'nvidia', 'neuron')), ('arm64', ('standard', 'nvidia'))):
            for v in variants:
                iid = self.get(AL2023 % (arch, v, 'recommended'))
                rel = 'amazon-eks-node-al2023-%s-%s-1.31-%s' % (arch, v, aws_ssm.IMAGE_RELEASE)
                self.assertEqual(self.get(AL2023 % (arch, v, rel)), iid, 'pinned = recommended')
                im = self.image(iid)
                self.assertEqual(im.find('architecture').text, arch)
                self.assertEqual(im.find('name').text, rel)
                seen.add(iid)
        self.assertEqual(len(seen), 5, 'one image per architecture and variant')
        gpu = self.get('/aws/service/eks/optimized-ami/1.31/amazon-linux-2-gpu/recommended/image_id')
        self.assertEqual(self.image(gpu).find('architecture').text, 'x86_64')
        br = self.get('/aws/service/bottlerocket/aws-k8s-1.35-nvidia/arm64/latest/image_id')
        self.assertEqual(self.get('/aws/service/bottlerocket/aws-k8s-1.35-nvidia/arm64/%s/image_id'
                                  % aws_ssm.BOTTLEROCKET_RELEASE), br)
        self.assertEqual(self.image(br).find('architecture').text, 'arm64')
        # the Amazon-alias listing is unchanged (EKS images are owned by the EKS account)
        st, root = self.c.ec2('DescribeImages', {'Owner.1': 'amazon'})
        self.assertEqual(len(root.findall('./imagesSet/item')), 1)

    def test_not_found_and_custom(self):
        st, out = self.c.ssm('GetParameter', {'Name': AL2023 % ('arm64', 'neuron', 'recommended')})
        self.assertEqual((st, out['__type']), (400, 'ParameterNotFound'), 'no arm64 neuron AL2023')
        st, out = self.c.ssm('GetParameter', {'Name': '/aws/service/eks/optimized-ami/1.20/'
                                                      'amazon-linux-2023/x86_64/standard/recommended/image_id'})
        self.assertEqual(st, 400)
        self.assertEqual(self.ctl.call('POST', '/aws/ssm', {'/team/ami': 'ami-0sim0000000000001'})[0], 200)
        self.assertEqual(self.get('/team/ami'), 'ami-0sim0000000000001')
        self.ctl.call('POST', '/aws/ssm', {'/team/ami': None})
        self.assertEqual(self.c.ssm('GetParameter', {'Name': '/team/ami'})[0], 400)

    def test_protocol_and_faults(self):
        st, out = self.c.ssm('GetParameter', {'Name': '/x'}, sign=False)
        self.assertEqual(st, 403, out)
        st, out = self.c.ssm('GetParameter', {'Name': '/x'}, ctype='application/json')
        self.assertEqual((st, out['__type']), (400, 'SerializationException'))
        st, out = self.c.ssm('GetParameter', {})
        self.assertEqual((st, out['__type']), (400, 'ValidationException'))
        st, out = self.c.ssm('PutParameter', {'Name': '/x', 'Value': 'y'})
        self.assertEqual((st, out['__type']), (400, 'InvalidAction'))
        self.ctl.call('POST', '/aws/deny', {'actions': ['GetParameter']})
        st, out = self.c.ssm('GetParameter', {'Name': AL2023 % ('x86_64', 'standard', 'recommended')})
        self.assertEqual((st, out['__type']), (400, 'AccessDeniedException'))
        calls = [c for c in self.ctl.call('GET', '/aws/calls')[1]['calls'] if c.get('service') == 'ssm']
        self.assertTrue(calls and calls[-1]['action'] == 'GetParameter', calls[-1:])


if __name__ == '__main__':
    unittest.main()
