"""The one Prometheus text parser of the end-to-end tests."""
import re
import ssl
import urllib.request

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')
_LABEL = re.compile(r'(\w+)="([^"]*)"')


class Metrics:
    """Samples of one scrape. m.get('name{a="b"}', default) looks a series up by its exact
    text; m.value(name, **labels) is the first series of that name whose labels include
    the given ones (0 when none); m.sum(name, **labels) adds every such series."""

    def __init__(self, text):
        self.text = text
        self.samples = []  # (name, labels dict, key text, value)
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            m = _LINE.match(line)
            if not m:
                continue
            try:
                v = float(m.group(3))
            except ValueError:
                continue
            self.samples.append((m.group(1), dict(_LABEL.findall(m.group(2) or "")),
                                 m.group(1) + (m.group(2) or ""), v))
        self.by_key = {k: v for _, _, k, v in self.samples}

    def get(self, key, default=None):
        return self.by_key.get(key, default)

    def __getitem__(self, key):
        return self.by_key[key]

    def _match(self, name, labels):
        return [v for n, got, _, v in self.samples
                if n == name and all(got.get(k) == str(x) for k, x in labels.items())]

    def value(self, name, **labels):
        vs = self._match(name, labels)
        return vs[0] if vs else 0

    def sum(self, name, **labels):
        return sum(self._match(name, labels))


def scrape(url, cafile=None, timeout=10):
    """GET url (https without verification unless cafile is given) -> Metrics."""
    ctx = None
    if url.startswith("https:"):
        ctx = ssl.create_default_context(cafile=cafile)
        if not cafile:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=ctx, timeout=timeout) as r:
        return Metrics(r.read().decode())
