"""AWS simulator, the Price List Query API (AWS JSON 1.1): GetProducts for AmazonEC2.

Products are the catalog's types (catalog.py) in the simulator's region, as the real API
lists them: one "Compute Instance" product per type (tenancy Shared; bare metal types are
"Compute Instance (bare metal)" with tenancy Dedicated, as Karpenter's query expects),
Linux with no pre-installed software, capacitystatus Used, plus a Windows product and an
"AllocatedCapacityReservation" product per type (dearer; a client that does not filter
gets wrong prices).  Each PriceList entry is a JSON document in a string with
product.attributes and terms.OnDemand.<sku>.priceDimensions.<id>.pricePerUnit.USD.
Filters: TERM_MATCH on any product attribute (and serviceCode); MaxResults 1..100;
NextToken opaque.  Requests must be SigV4-signed for service "pricing" in the Pricing
API's region (us-east-1, or ap-south-1 / eu-central-1 / cn-northwest-1 by the
simulator's region prefix).  Faults (throttle, errors, deny, latency) apply with the
action name GetProducts.

A mixin of aws.AwsSim.  Python 3 standard library only; shares no code with nodewarden.
"""

from aws_util import *  # noqa: F401,F403


PricingError = JsonApiError


def pricing_region(region):
    for prefix, r in (('ap-', 'ap-south-1'), ('cn-', 'cn-northwest-1'), ('eu-', 'eu-central-1')):
        if region.startswith(prefix):
            return r
    return 'us-east-1'


_LOCATIONS = {'us-east-1': 'US East (N. Virginia)', 'us-east-2': 'US East (Ohio)',
              'us-west-2': 'US West (Oregon)', 'eu-west-1': 'EU (Ireland)',
              'ap-southeast-2': 'Asia Pacific (Sydney)'}


class PricingMixin:
    def _pricing_products(self):
        out = []
        for n in catalog.names():
            t = catalog.get(n)
            metal = t['bare_metal']
            base = {'instanceType': n, 'regionCode': self.region,
                    'location': _LOCATIONS.get(self.region, self.region),
                    'servicecode': 'AmazonEC2', 'vcpu': str(t['vcpu']),
                    'memory': '%g GiB' % (t['memory_mib'] / 1024.0),
                    'tenancy': 'Dedicated' if metal else 'Shared',
                    'productFamily': 'Compute Instance (bare metal)' if metal else 'Compute Instance',
                    'operatingSystem': 'Linux', 'preInstalledSw': 'NA',
                    'capacitystatus': 'Used', 'marketoption': 'OnDemand',
                    'licenseModel': 'No License required'}
            od = t['on_demand']
            out.append((dict(base), od))
            out.append((dict(base, operatingSystem='Windows', licenseModel='License Included'),
                        round(od * 1.5 + 0.046 * t['vcpu'], 4)))
            out.append((dict(base, capacitystatus='AllocatedCapacityReservation'), round(od * 1.1, 4)))
        return out

    @staticmethod
    def _pricing_doc(attrs, price, idx):
        sku = 'SIM%013d' % idx
        term = sku + '.JRTCKXETXF'
        return json.dumps({
            'product': {'productFamily': attrs['productFamily'], 'attributes': attrs, 'sku': sku},
            'serviceCode': 'AmazonEC2',
            'terms': {'OnDemand': {term: {
                'priceDimensions': {term + '.6YS6EN2CT7': {
                    'unit': 'Hrs', 'endRange': 'Inf', 'beginRange': '0',
                    'description': '$%.4f per On Demand %s %s Instance Hour' % (
                        price, attrs['operatingSystem'], attrs['instanceType']),
                    'appliesTo': [], 'rateCode': term + '.6YS6EN2CT7',
                    'pricePerUnit': {'USD': '%.10f' % price}}},
                'sku': sku, 'effectiveDate': '2026-11-01T00:00:00Z', 'offerTermCode': 'JRTCKXETXF',
                'termAttributes': {}}}},
            'version': '20261101000000', 'publicationDate': '2026-11-01T00:00:00Z'})

    def _pricing(self, method, raw_path, raw_query, headers, body, target):
        def handler(action, params):
            if action != 'GetProducts':
                raise PricingError('InvalidParameterException',
                                   'The simulator implements GetProducts only, not %s' % action)
            return self._pricing_GetProducts(params)
        return json11_call(self, 'pricing', pricing_region(self.region), method, raw_path, raw_query,
                           headers, body, target, handler, 'pricing')

    def _pricing_GetProducts(self, p):
        allowed = {'ServiceCode', 'Filters', 'FormatVersion', 'MaxResults', 'NextToken'}
        extra = set(p) - allowed
        if extra:
            raise PricingError('InvalidParameterException', 'unknown parameter(s) %s' % sorted(extra))
        if p.get('ServiceCode') != 'AmazonEC2':
            raise PricingError('NotFoundException', 'the simulator prices AmazonEC2 only, not %r'
                               % p.get('ServiceCode'))
        if p.get('FormatVersion', 'aws_v1') != 'aws_v1':
            raise PricingError('InvalidParameterException', 'FormatVersion must be aws_v1')
        mr = p.get('MaxResults', 100)
        if not isinstance(mr, int) or isinstance(mr, bool) or not 1 <= mr <= 100:
            raise PricingError('InvalidParameterException', 'MaxResults must be within 1..100')
        filters = p.get('Filters') or []
        if not isinstance(filters, list):
            raise PricingError('InvalidParameterException', 'Filters must be a list')
        want = []
        for f in filters:
            if not isinstance(f, dict) or f.get('Type') != 'TERM_MATCH' or \
                    not isinstance(f.get('Field'), str) or not isinstance(f.get('Value'), str):
                raise PricingError('InvalidParameterException',
                                   'each filter needs Type TERM_MATCH, Field and Value: %r' % (f,))
            want.append((f['Field'].lower(), f['Value'].lower()))
        with self.lock:
            prods = self._pricing_products()
        rows = []
        for idx, (attrs, price) in enumerate(prods):
            low = {k.lower(): str(v).lower() for k, v in attrs.items()}
            low['servicecode'] = 'amazonec2'
            if all(low.get(k) == v for k, v in want):
                rows.append(self._pricing_doc(attrs, price, idx))
        start = 0
        tok = p.get('NextToken')
        if tok is not None:
            try:
                start = int(base64.b64decode(tok.encode()).decode().split(':', 1)[1])
            except (ValueError, IndexError, UnicodeDecodeError):
                raise PricingError('InvalidNextTokenException', 'The NextToken is not valid')
        page = rows[start:start + mr]
        out = {'FormatVersion': 'aws_v1', 'PriceList': page}
        if start + mr < len(rows):
            out['NextToken'] = base64.b64encode(('products:%d' % (start + mr)).encode()).decode()
        return out
