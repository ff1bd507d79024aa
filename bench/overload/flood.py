#!/usr/bin/env python3
"""bench/overload/flood.py — the hostile side of bench/overload/run.

Holds IDLE plain TCP connections that never start a TLS handshake and DRIP TLS
connections that, once their handshake is done, send the start of a request and then
one more header byte every DRIP_EVERY seconds, from ADDRS loopback addresses
(127.0.0.2, 127.0.0.3, ...; 127.0.0.1 is the real client's). Whenever the server closes
one, it opens another (at most REOPEN_RATE a second), as an attacker would. One process,
one epoll loop: non-blocking connects, TLS handshakes driven by readiness.

Prints one JSON line a second on stdout: connections it holds (idle, dripping, TLS
handshakes in progress), how many the server closed and how many it reopened. Stops
on SIGTERM or after --seconds.

    flood.py --port P [--idle 10000] [--drip 500] [--addrs 40] [--seconds 0]
"""
import argparse
import errno
import json
import resource
import selectors
import signal
import socket
import ssl
import sys
import time

IP_BIND_ADDRESS_NO_PORT = 24  # linux/in.h: the port is picked at connect, not at bind
PREFIX = b"POST /validate/pods HTTP/1.1\r\nHost: nodewarden.nodewarden.svc\r\nX-Drip: "


class Conn:
    __slots__ = ("kind", "sock", "tls", "state", "addr")

    def __init__(self, kind, addr):
        self.kind, self.addr = kind, addr
        self.sock = self.tls = None
        self.state = "connect"


class Flood:
    def __init__(self, a):
        self.a = a
        self.sel = selectors.DefaultSelector()
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        self.conns = set()
        self.want = {"idle": a.idle, "drip": a.drip}
        self.have = {"idle": 0, "drip": 0}
        self.closed = self.opened = self.failed = 0
        self.next_addr = 0
        self.stop = False

    def open(self, kind):
        addr = "127.0.0.%d" % (2 + self.next_addr % self.a.addrs)
        self.next_addr += 1
        c = Conn(kind, addr)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.setsockopt(socket.IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, 1)
            s.bind((addr, 0))
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", self.a.port))
        except OSError:
            s.close()
            self.failed += 1
            return False
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.failed += 1
            return False
        c.sock = s
        self.sel.register(s, selectors.EVENT_WRITE, c)
        self.conns.add(c)
        self.have[kind] += 1
        self.opened += 1
        return True

    def drop(self, c, by_server=True):
        try:
            self.sel.unregister(c.sock)
        except (KeyError, ValueError):
            pass
        (c.tls or c.sock).close()
        self.conns.discard(c)
        self.have[c.kind] -= 1
        if by_server:
            self.closed += 1

    def handshake(self, c):
        try:
            c.tls.do_handshake()
        except ssl.SSLWantReadError:
            self.sel.modify(c.sock, selectors.EVENT_READ, c)
            return
        except ssl.SSLWantWriteError:
            self.sel.modify(c.sock, selectors.EVENT_WRITE, c)
            return
        except (ssl.SSLError, OSError):
            self.drop(c)
            return
        try:
            c.tls.send(PREFIX)
        except (ssl.SSLError, OSError):
            self.drop(c)
            return
        c.state = "drip"
        self.sel.modify(c.sock, selectors.EVENT_READ, c)

    def event(self, c, mask):
        if c.state == "connect":
            if c.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                self.drop(c)
                return
            if c.kind == "idle":
                c.state = "idle"
                self.sel.modify(c.sock, selectors.EVENT_READ, c)
                return
            c.tls = self.ctx.wrap_socket(c.sock, do_handshake_on_connect=False)
            c.sock = c.tls
            c.state = "tls"
            self.sel.unregister(c.tls)
            self.sel.register(c.tls, selectors.EVENT_WRITE, c)
            self.handshake(c)
            return
        if c.state == "tls":
            self.handshake(c)
            return
        # idle or dripping: readable means the server closed it (or answered, then closes)
        try:
            data = (c.tls or c.sock).recv(4096)
        except (ssl.SSLWantReadError, BlockingIOError):
            return
        except (ssl.SSLError, OSError):
            data = b""
        if not data:
            self.drop(c)

    def drip(self):
        for c in list(self.conns):
            if c.state == "drip":
                try:
                    c.tls.send(b"a")
                except (ssl.SSLWantWriteError, BlockingIOError):
                    pass
                except (ssl.SSLError, OSError):
                    self.drop(c)

    def refill(self, budget):
        for kind in ("drip", "idle"):
            while budget > 0 and self.have[kind] < self.want[kind]:
                budget -= 1
                if not self.open(kind):
                    return

    def counts(self):
        tls = sum(1 for c in self.conns if c.state in ("tls", "connect") and c.kind == "drip")
        return {"t": round(time.monotonic(), 3), "idle": self.have["idle"],
                "drip": self.have["drip"] - tls, "handshaking": tls,
                "closed_by_server": self.closed, "opened": self.opened,
                "open_failed": self.failed}

    def run(self):
        start = last = time.monotonic()
        next_drip = next_report = start
        tokens = float(self.a.reopen_rate)  # opens allowed now (a token bucket, 1 s deep)
        while not self.stop:
            now = time.monotonic()
            if self.a.seconds and now - start > self.a.seconds:
                break
            tokens = min(float(self.a.reopen_rate), tokens + (now - last) * self.a.reopen_rate)
            last = now
            before = self.opened + self.failed
            self.refill(int(tokens))
            tokens -= self.opened + self.failed - before
            for key, mask in self.sel.select(0.01):
                self.event(key.data, mask)
            now = time.monotonic()
            if now >= next_drip:
                self.drip()
                next_drip = now + self.a.drip_every
            if now >= next_report:
                print(json.dumps(self.counts()), flush=True)
                next_report = now + 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--idle", type=int, default=10000)
    p.add_argument("--drip", type=int, default=500)
    p.add_argument("--addrs", type=int, default=40)
    p.add_argument("--drip-every", type=float, default=1.0)
    p.add_argument("--reopen-rate", type=int, default=5000)
    p.add_argument("--seconds", type=float, default=0)
    a = p.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.idle + a.drip + 100
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if soft < need:
            sys.exit("flood.py: %d connections need %d descriptors; RLIMIT_NOFILE allows %d"
                     % (a.idle + a.drip, need, soft))
    f = Flood(a)
    signal.signal(signal.SIGTERM, lambda *_: setattr(f, "stop", True))
    f.run()


if __name__ == "__main__":
    main()
