"""AWS Signature Version 4 (header form): signing and verification.

Written from the AWS SigV4 specification ("Create a signed AWS API request":
canonical request, string to sign, signing key, signature) and checked against
the official test vector get-vanilla from awslabs/aws-c-auth
tests/aws-signing-test-suite/v4 (Apache-2.0).  Shares no code with nodewarden.

Only the Authorization-header form is supported (no presigned query strings,
no chunked/streaming payloads, no SigV4a); the simulator's services are EC2,
SQS and STS, which never need those.
"""

import calendar
import hashlib
import hmac
import re
import time
import urllib.parse

ALGORITHM = 'AWS4-HMAC-SHA256'
MAX_SKEW_SECONDS = 300

_UNRESERVED = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~'


def uri_encode(s, keep_slash=False):
    """RFC 3986 percent-encoding: everything but unreserved characters."""
    safe = _UNRESERVED + ('/' if keep_slash else '')
    if isinstance(s, str):
        s = s.encode('utf-8')
    return ''.join(chr(b) if chr(b) in safe else '%%%02X' % b for b in s)


def sha256_hex(data):
    if isinstance(data, str):
        data = data.encode('utf-8')
    return hashlib.sha256(data).hexdigest()


def _hmac(key, msg):
    return hmac.new(key, msg.encode('utf-8'), hashlib.sha256).digest()


def signing_key(secret, date, region, service):
    k = _hmac(('AWS4' + secret).encode('utf-8'), date)
    k = _hmac(k, region)
    k = _hmac(k, service)
    return _hmac(k, 'aws4_request')


def canonical_path(raw_path):
    """Canonical URI for non-S3 services: normalise the path as sent on the
    wire (drop '.' and '..' segments, collapse repeated slashes) and then
    percent-encode each segment once more (the wire path is already encoded
    once, so a '%' becomes '%25': AWS's "encode twice" rule)."""
    if not raw_path:
        return '/'
    segs = []
    for seg in raw_path.split('/'):
        if seg in ('', '.'):
            continue
        if seg == '..':
            if segs:
                segs.pop()
            continue
        segs.append(seg)
    path = '/' + '/'.join(uri_encode(s) for s in segs)
    if raw_path.endswith('/') and segs:
        path += '/'
    return path


def canonical_query(raw_query):
    """Parameters decoded, re-encoded per RFC 3986, sorted by name then value."""
    pairs = []
    if raw_query:
        for part in raw_query.split('&'):
            if part == '':
                continue
            if '=' in part:
                k, v = part.split('=', 1)
            else:
                k, v = part, ''
            k = urllib.parse.unquote_plus(k) if '+' in k else urllib.parse.unquote(k)
            v = urllib.parse.unquote(v)
            pairs.append((uri_encode(k), uri_encode(v)))
    pairs.sort()
    return '&'.join('%s=%s' % kv for kv in pairs)


def _trim(value):
    return re.sub(r'\s+', ' ', value.strip())


def canonical_request(method, raw_path, raw_query, headers, signed, payload_hash):
    """headers: dict lower-case name -> list of values."""
    lines = [method.upper(), canonical_path(raw_path), canonical_query(raw_query)]
    hdr = ''
    for name in signed:
        vals = headers.get(name, [])
        hdr += '%s:%s\n' % (name, ','.join(_trim(v) for v in vals))
    lines.append(hdr)
    lines.append(';'.join(signed))
    lines.append(payload_hash)
    return '\n'.join(lines)


def string_to_sign(amz_date, scope, creq):
    return '\n'.join([ALGORITHM, amz_date, scope, sha256_hex(creq)])


def _lower_headers(headers):
    """Accepts a dict, a list of (name, value) pairs, or an email.message.Message."""
    out = {}
    items = headers.items() if hasattr(headers, 'items') else headers
    for k, v in items:
        out.setdefault(k.lower(), []).append(v)
    return out


def sign(method, url, headers, body, access_key, secret, region, service,
         amz_date=None, session_token=None):
    """Return a copy of headers with X-Amz-Date, (X-Amz-Security-Token) and
    Authorization added.  url: 'http://host:port/path?query'."""
    if isinstance(body, str):
        body = body.encode('utf-8')
    u = urllib.parse.urlsplit(url)
    out = dict(headers)
    if not any(k.lower() == 'host' for k in out):
        out['Host'] = u.netloc
    if amz_date is None:
        amz_date = time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())
    out['X-Amz-Date'] = amz_date
    if session_token:
        out['X-Amz-Security-Token'] = session_token
    lh = _lower_headers(out)
    signed = sorted(lh)
    creq = canonical_request(method, u.path or '/', u.query, lh, signed, sha256_hex(body or b''))
    scope = '%s/%s/%s/aws4_request' % (amz_date[:8], region, service)
    sts = string_to_sign(amz_date, scope, creq)
    sig = hmac.new(signing_key(secret, amz_date[:8], region, service),
                   sts.encode('utf-8'), hashlib.sha256).hexdigest()
    out['Authorization'] = '%s Credential=%s/%s, SignedHeaders=%s, Signature=%s' % (
        ALGORITHM, access_key, scope, ';'.join(signed), sig)
    return out


class SigError(Exception):
    """kind: 'missing' | 'malformed' | 'unknown-key' | 'mismatch' | 'expired' |
    'stale' | 'scope' | 'token'"""

    def __init__(self, kind, message):
        Exception.__init__(self, message)
        self.kind = kind
        self.message = message


_AUTH_RE = re.compile(
    r'^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)\s*,\s*SignedHeaders=([^,\s]+)\s*,\s*Signature=([0-9a-f]{64})\s*$')


def _parse_amz_date(s):
    try:
        return calendar.timegm(time.strptime(s, '%Y%m%dT%H%M%SZ'))
    except ValueError:
        return None


def verify(method, raw_path, raw_query, headers, body, lookup, region, service, now,
           max_skew=MAX_SKEW_SECONDS):
    """Verify a header-signed request.

    lookup(access_key) -> None (unknown) or dict {secret, token (or None),
    expires (epoch or None)}.  Returns the access key on success; raises
    SigError otherwise.
    """
    lh = _lower_headers(headers)
    auth = lh.get('authorization')
    if not auth:
        raise SigError('missing', 'Request is missing Authentication Token')
    m = _AUTH_RE.match(auth[0].strip())
    if not m:
        raise SigError('malformed', 'Authorization header is not a valid AWS4-HMAC-SHA256 header')
    cred, signed_s, sig = m.groups()
    parts = cred.split('/')
    if len(parts) != 5 or parts[4] != 'aws4_request':
        raise SigError('malformed', 'Credential should be scoped to a valid region and service')
    akid, date, c_region, c_service = parts[:4]
    signed = signed_s.split(';')
    if signed != sorted(signed) or any(s != s.lower() for s in signed):
        raise SigError('malformed', 'SignedHeaders must be sorted lower-case header names')
    if 'host' not in signed:
        raise SigError('malformed', "'Host' must be a signed header")
    if 'x-amz-date' in lh:
        amz_date = lh['x-amz-date'][0].strip()
        if 'x-amz-date' not in signed:
            raise SigError('malformed', "'X-Amz-Date' must be a signed header")
    else:
        raise SigError('malformed', 'Request is missing the X-Amz-Date header')
    t = _parse_amz_date(amz_date)
    if t is None:
        raise SigError('malformed', 'X-Amz-Date %r is not in YYYYMMDDTHHMMSSZ form' % amz_date)
    if amz_date[:8] != date:
        raise SigError('scope', 'Credential date %s does not match X-Amz-Date %s' % (date, amz_date))
    creds = lookup(akid)
    if creds is None:
        raise SigError('unknown-key', 'The security token included in the request is invalid '
                                      '(unknown access key %s)' % akid)
    if c_region != region:
        raise SigError('scope', "Credential should be scoped to a valid region, not '%s'; "
                                "expecting '%s'" % (c_region, region))
    if c_service != service:
        raise SigError('scope', "Credential should be scoped to correct service: '%s'" % service)
    if abs(now - t) > max_skew:
        raise SigError('stale', 'Signature expired: %s is now earlier or later than %s (%s +/- 5 min)'
                       % (amz_date, time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now)),
                          time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now))))
    token = creds.get('token')
    if token:
        got = lh.get('x-amz-security-token')
        if not got or got[0].strip() != token:
            raise SigError('token', 'The security token included in the request is invalid')
        if 'x-amz-security-token' not in signed:
            raise SigError('malformed', "'X-Amz-Security-Token' must be a signed header")
        if creds.get('expires') is not None and now >= creds['expires']:
            raise SigError('expired', 'The security token included in the request is expired')
    for name in signed:
        if name not in lh:
            raise SigError('mismatch', 'Signed header %s is not present' % name)
    if isinstance(body, str):
        body = body.encode('utf-8')
    payload_hash = sha256_hex(body or b'')
    declared = lh.get('x-amz-content-sha256')
    if declared and declared[0].strip() != payload_hash:
        raise SigError('mismatch', 'The provided x-amz-content-sha256 header does not match '
                                   'what was computed.')
    creq = canonical_request(method, raw_path, raw_query, lh, signed, payload_hash)
    scope = '%s/%s/%s/aws4_request' % (date, c_region, c_service)
    sts = string_to_sign(amz_date, scope, creq)
    want = hmac.new(signing_key(creds['secret'], date, c_region, c_service),
                    sts.encode('utf-8'), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, sig):
        raise SigError('mismatch', 'The request signature we calculated does not match the '
                                   'signature you provided. Check your AWS Secret Access Key '
                                   'and signing method.')
    return akid
