#!/usr/bin/env python3
"""Generate data/prices.json, nodewarden's embedded on-demand price table.

Source: aws/karpenter-provider-aws pkg/providers/pricing/zz_generated.pricing_aws.go
(InitialOnDemandPricesAWS, the "us-east-1" map: Linux, shared tenancy, USD per hour,
written by Karpenter's codegen from the AWS Pricing API). Karpenter serves that table
in every region that has no table of its own (pricing.go Reset: "fall back to the
always available us-east-1") until its Pricing API refresh succeeds; nodewarden does
the same (scaler/cloud/catalog.h).

Run: python3 tools/gen_prices.py <path to zz_generated.pricing_aws.go> > data/prices.json
(after `go mod download github.com/aws/karpenter-provider-aws@<version>` the file is
under $(go env GOMODCACHE)/github.com/aws/karpenter-provider-aws@<version>/pkg/providers/pricing/).
"""
import json
import re
import sys


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_prices.py zz_generated.pricing_aws.go")
    src = open(sys.argv[1]).read()
    m = re.search(r"// generated at (\S+) for (\S+)", src)
    if not m:
        sys.exit("gen_prices.py: no 'generated at' line in %s" % sys.argv[1])
    body = re.search(r'"us-east-1": \{(.*?)\n\t\},', src, re.S)
    if not body:
        sys.exit("gen_prices.py: no us-east-1 table in %s" % sys.argv[1])
    prices = {}
    for name, price in re.findall(r'"([a-z0-9-]+\.[a-z0-9-]+)": ([0-9.]+)', body.group(1)):
        prices[name] = float(price)
    if len(prices) < 100:
        sys.exit("gen_prices.py: only %d prices parsed" % len(prices))
    ver = re.search(r"karpenter-provider-aws@(v[0-9.]+)", sys.argv[1])
    doc = {
        "source": "aws/karpenter-provider-aws %s pkg/providers/pricing/zz_generated.pricing_aws.go "
                  "(generated at %s for us-east-1); see tools/gen_prices.py"
                  % (ver.group(1) if ver else "", m.group(1)),
        "region": "us-east-1",
        "onDemand": dict(sorted(prices.items())),
    }
    print(json.dumps(doc, indent=0, separators=(",", ":")))


main()
