"""simctl's AWS verbs (the control routes under /aws that aws.py registers).

    ice TYPE|* ZONE|* [spot|on-demand|*] [--code CODE]   insufficient capacity for a pool
    clear-ice                                            remove every ICE rule
    throttle RATE [--actions A,B]                        RequestLimitExceeded for 1 in 1/RATE calls (0 clears)
    aws-errors RATE [--status 500|503] [--actions A,B]   5xx for 1 in 1/RATE calls (0 clears)
    aws-latency MS [--actions A,B]                       added latency (0 clears)
    deny ACTION...                                       UnauthorizedOperation for these actions (none: clear)
    interrupt INSTANCE [--warning SECONDS]               spot interruption warning, then termination
    rebalance INSTANCE | scheduled-change INSTANCE | state-change INSTANCE STATE
                                                         post that EventBridge event to the queue
    terminate INSTANCE                                   terminate from outside nodewarden
    spot-price TYPE ZONE PRICE                           override a spot price
    credentials-ttl SECONDS                              lifetime of new STS/IMDS credentials
    aws-faults | clear-aws-faults                        show / clear every AWS fault
    calls [--since N] [--action A]                       every AWS call made
    instances | tags | launch-templates | queue | kubelets
"""


def _opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        v = args[i + 1]
        del args[i:i + 2]
        return v
    return default


def _acts(args):
    a = _opt(args, '--actions')
    return a.split(',') if a else None


def run(verb, rest, call, url):
    """-> None if verb is not an AWS verb, else (status, json)."""
    rest = list(rest)
    if verb == 'ice':
        code = _opt(rest, '--code', 'InsufficientInstanceCapacity')
        body = {'instanceType': rest[0], 'zone': rest[1] if len(rest) > 1 else '*',
                'capacityType': rest[2] if len(rest) > 2 else '*', 'code': code}
        return call(url, 'POST', '/aws/ice', body)
    if verb == 'clear-ice':
        return call(url, 'DELETE', '/aws/ice')
    if verb == 'throttle':
        return call(url, 'POST', '/aws/throttle', {'rate': float(rest[0]), 'actions': _acts(rest)})
    if verb == 'aws-errors':
        status = int(_opt(rest, '--status', '500'))
        return call(url, 'POST', '/aws/errors', {'rate': float(rest[0]), 'status': status,
                                                 'actions': _acts(rest)})
    if verb == 'aws-latency':
        return call(url, 'POST', '/aws/latency', {'ms': int(rest[0]), 'actions': _acts(rest)})
    if verb == 'deny':
        return call(url, 'POST', '/aws/deny', {'actions': rest})
    if verb == 'interrupt':
        w = _opt(rest, '--warning')
        body = {'instanceId': rest[0]}
        if w is not None:
            body['warningSeconds'] = float(w)
        return call(url, 'POST', '/aws/interrupt', body)
    if verb in ('rebalance', 'scheduled-change'):
        return call(url, 'POST', '/aws/event', {'kind': verb, 'instanceId': rest[0]})
    if verb == 'state-change':
        return call(url, 'POST', '/aws/event', {'kind': verb, 'instanceId': rest[0], 'state': rest[1]})
    if verb == 'terminate':
        return call(url, 'POST', '/aws/terminate', {'instanceId': rest[0]})
    if verb == 'spot-price':
        return call(url, 'POST', '/aws/spot-price', {'instanceType': rest[0], 'zone': rest[1],
                                                     'price': float(rest[2])})
    if verb == 'credentials-ttl':
        return call(url, 'POST', '/aws/credentials', {'ttlSeconds': int(rest[0])})
    if verb == 'aws-faults':
        return call(url, 'GET', '/aws/faults')
    if verb == 'clear-aws-faults':
        return call(url, 'DELETE', '/aws/faults')
    if verb == 'calls':
        since = _opt(rest, '--since', '0')
        action = _opt(rest, '--action', '')
        return call(url, 'GET', '/aws/calls?since=%s&action=%s' % (since, action))
    if verb in ('instances', 'tags', 'launch-templates', 'queue', 'kubelets'):
        return call(url, 'GET', '/aws/' + verb)
    return None
