"""The Price List Query API (GetProducts, JSON 1.1) and the control API's price and
instance-type changes: filters, paging, signing region, faults, and that a change shows in
GetProducts, DescribeInstanceTypes, -Offerings and DescribeSpotPriceHistory."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import aws  # noqa: E402
import awsclient  # noqa: E402
import catalog  # noqa: E402

# Karpenter's query (aws/karpenter-provider-aws pkg/providers/pricing/pricing.go)
BASE = [('regionCode', 'us-west-2'), ('serviceCode', 'AmazonEC2'), ('preInstalledSw', 'NA'),
        ('operatingSystem', 'Linux'), ('capacitystatus', 'Used'), ('marketoption', 'OnDemand')]
SHARED = BASE + [('tenancy', 'Shared'), ('productFamily', 'Compute Instance')]
METAL = BASE + [('tenancy', 'Dedicated'), ('productFamily', 'Compute Instance (bare metal)')]


def req(filters, **kw):
    d = {'ServiceCode': 'AmazonEC2', 'FormatVersion': 'aws_v1',
         'Filters': [{'Type': 'TERM_MATCH', 'Field': f, 'Value': v} for f, v in filters]}
    d.update(kw)
    return d


def prices(page):
    out = {}
    for doc in page['PriceList']:
        d = json.loads(doc)
        for term in d['terms']['OnDemand'].values():
            for dim in term['priceDimensions'].values():
                out[d['product']['attributes']['instanceType']] = float(dim['pricePerUnit']['USD'])
    return out


class Pricing(unittest.TestCase):
    def setUp(self):
        self.sim = aws.AwsSim(region='us-west-2')
        self.srv = aws.serve(self.sim)
        self.ctl = awsclient.FakeControl()
        self.sim.register_control(self.ctl)
        self.c = awsclient.Client(self.srv.url, self.sim.access_key, self.sim.secret_key, 'us-west-2')
        self.saved = {n: dict(t) for n, t in catalog.TYPES.items()}

    def tearDown(self):
        catalog.TYPES.clear()
        catalog.TYPES.update(self.saved)
        self.srv.close()
        self.sim.stop()

    def all_pages(self, filters, size=100):
        out, tok, pages = {}, None, 0
        while True:
            body = req(filters, MaxResults=size, **({'NextToken': tok} if tok else {}))
            st, page = self.c.pricing('GetProducts', body)
            self.assertEqual(st, 200, page)
            out.update(prices(page))
            pages += 1
            tok = page.get('NextToken')
            if not tok:
                return out, pages

    def test_karpenter_query_prices_every_type(self):
        shared, _ = self.all_pages(SHARED)
        metal, _ = self.all_pages(METAL)
        want = {n: t['on_demand'] for n, t in catalog.TYPES.items()}
        self.assertEqual({**shared, **metal}, want)
        self.assertTrue(metal and all(catalog.get(n)['bare_metal'] for n in metal))
        # without the OS filter the Windows products come back, dearer
        st, page = self.c.pricing('GetProducts', req([('regionCode', 'us-west-2'),
                                                      ('instanceType', 'm6i.large')]))
        self.assertEqual(st, 200)
        self.assertEqual(len(page['PriceList']), 3)

    def test_paging(self):
        one, pages = self.all_pages(SHARED, size=7)
        self.assertGreater(pages, 3)
        self.assertEqual(one, self.all_pages(SHARED)[0])
        st, e = self.c.pricing('GetProducts', req(SHARED, NextToken='bogus'))
        self.assertEqual((st, e['__type']), (400, 'InvalidNextTokenException'))
        st, e = self.c.pricing('GetProducts', req(SHARED, MaxResults=101))
        self.assertEqual((st, e['__type']), (400, 'InvalidParameterException'))

    def test_signing_region_and_faults(self):
        st, e = self.c.pricing('GetProducts', req(SHARED), region='us-west-2')
        self.assertEqual(st, 403)
        self.ctl.call('POST', '/aws/deny', {'actions': ['GetProducts']})
        st, e = self.c.pricing('GetProducts', req(SHARED))
        self.assertEqual((st, e['__type']), (400, 'AccessDeniedException'))
        self.ctl.call('POST', '/aws/deny', {'actions': []})
        self.ctl.call('POST', '/aws/errors', {'rate': 1.0, 'actions': ['GetProducts']})
        st, e = self.c.pricing('GetProducts', req(SHARED))
        self.assertEqual((st, e['__type']), (500, 'InternalErrorException'))
        # EC2 is not affected by a GetProducts fault
        st, _ = self.c.ec2('DescribeAvailabilityZones')
        self.assertEqual(st, 200)

    def test_price_change_and_new_type(self):
        st, r = self.ctl.call('POST', '/aws/on-demand-price', {'instanceType': 'm7i.large', 'price': 0.05})
        self.assertEqual(st, 200, r)
        self.assertEqual(self.all_pages(SHARED)[0]['m7i.large'], 0.05)
        self.assertEqual(self.ctl.call('POST', '/aws/on-demand-price',
                                       {'instanceType': 'nope.large', 'price': 1})[0], 400)
        self.assertEqual(self.ctl.call('POST', '/aws/on-demand-price',
                                       {'instanceType': 'm7i.large', 'price': -1})[0], 400)
        st, r = self.ctl.call('POST', '/aws/instance-types',
                              {'name': 'm9z.large', 'vcpu': 2, 'memoryMiB': 8192,
                               'onDemandPrice': 0.07})
        self.assertEqual(st, 200, r)
        self.assertEqual(self.all_pages(SHARED)[0]['m9z.large'], 0.07)
        st, root = self.c.ec2('DescribeInstanceTypes', {'InstanceType.1': 'm9z.large'})
        self.assertEqual(st, 200)
        self.assertEqual(root.find('.//instanceTypeSet/item/vCpuInfo/defaultVCpus').text, '2')
        st, root = self.c.ec2('DescribeInstanceTypeOfferings', {'LocationType': 'availability-zone'})
        zones = [i.find('location').text for i in root.findall('.//instanceTypeOfferingSet/item')
                 if i.find('instanceType').text == 'm9z.large']
        self.assertEqual(sorted(zones), self.sim.zones)
        st, root = self.c.ec2('DescribeSpotPriceHistory', {'InstanceType.1': 'm9z.large'})
        spot = [float(i.find('spotPrice').text) for i in root.findall('.//spotPriceHistorySet/item')]
        self.assertTrue(spot and all(0 < p < 0.07 for p in spot), spot)
        for bad in ({'name': 'nodot', 'vcpu': 2, 'memoryMiB': 1, 'onDemandPrice': 1},
                    {'name': 'a1.b', 'vcpu': 0, 'memoryMiB': 1, 'onDemandPrice': 1},
                    {'name': 'a1.b', 'vcpu': 2, 'memoryMiB': 1, 'onDemandPrice': 1, 'gpu': 1}):
            self.assertEqual(self.ctl.call('POST', '/aws/instance-types', bad)[0], 400, bad)


if __name__ == '__main__':
    unittest.main()
