"""A resolver stub for the tests: a DNS server on <address>:53 (UDP and TCP) that forwards the
queries for ONE zone to the harness's DNS canary and answers REFUSED to everything else, so a
sandbox whose resolv.conf (or Docker --dns) points here can never send a query off the machine.
It stands in for the host's resolver in the path real code takes: getaddrinfo -> resolv.conf ->
(Docker's embedded resolver ->) this stub -> the zone's server (the canary). See
docs/probes.md, net.dns-resolver. Stdlib only.

Forwarding keeps the transport: a query over TCP (RFC 1035 section 4.2.2, two-byte length
prefix) goes to the canary over TCP, one over UDP over UDP. Counters in `stats` say what came in
and what was forwarded or refused, per transport, with the client addresses.

Usage as a program (stops on SIGTERM/SIGINT; prints "ready" once both sockets listen):
  python3 resolver_stub.py --listen 127.53.0.1 --zone sandprobe.test --upstream 127.0.0.1:PORT
"""
import argparse
import signal
import socket
import socketserver
import struct
import sys
import threading

REFUSED = 5
MAX_MESSAGE = 4096
UPSTREAM_TIMEOUT_S = 3


def question_name(message):
    """The first question's name, lower case, dotted, no trailing dot; None if malformed."""
    if len(message) < 12 or struct.unpack("!H", message[4:6])[0] < 1:
        return None
    labels, pos = [], 12
    while True:
        if pos >= len(message):
            return None
        length = message[pos]
        if length == 0:
            break
        if length > 63 or pos + 1 + length > len(message):
            return None  # compression pointers are never in a query's question
        labels.append(message[pos + 1:pos + 1 + length].decode("ascii", "replace").lower())
        pos += 1 + length
    if pos + 5 > len(message):
        return None
    return ".".join(labels), pos + 5


def refused(message, question_end):
    """REFUSED with the query's id, RD copied, the question echoed and nothing else."""
    qid, flags = struct.unpack("!HH", message[:4])
    return struct.pack("!6H", qid, 0x8000 | (flags & 0x0100) | REFUSED, 1, 0, 0, 0) + \
        message[12:question_end]


def recv_exact(sock, count):
    data = b""
    while len(data) < count:
        chunk = sock.recv(count - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data


class ResolverStub:
    """Serves until close(). address: an IPv4 address to bind (loopback, or the gateway of a
    network the test made); port: 53 for resolv.conf and docker --dns (no port can be named
    there); zone: "sandprobe.test"; upstream: (host, port) of the DNS canary, UDP and TCP."""

    def __init__(self, address, zone, upstream, port=53):
        self.zone = zone.strip(".").lower()
        self.upstream = upstream
        self.lock = threading.Lock()
        self.stats = {"udp": 0, "tcp": 0, "forwarded": [], "refused": [], "clients": set()}
        stub = self

        class Udp(socketserver.BaseRequestHandler):
            def handle(self):
                data, sock = self.request
                reply = stub.answer(data, "udp", self.client_address)
                if reply:
                    sock.sendto(reply, self.client_address)

        class Tcp(socketserver.BaseRequestHandler):
            def handle(self):
                self.request.settimeout(UPSTREAM_TIMEOUT_S)
                try:
                    while True:  # several queries may share one stream (glibc use-vc)
                        length, = struct.unpack("!H", recv_exact(self.request, 2))
                        if length > MAX_MESSAGE:
                            return
                        reply = stub.answer(recv_exact(self.request, length), "tcp",
                                            self.client_address)
                        if reply:
                            self.request.sendall(struct.pack("!H", len(reply)) + reply)
                except (OSError, ConnectionError):
                    return

        class UdpServer(socketserver.ThreadingMixIn, socketserver.UDPServer):
            daemon_threads = True

        class TcpServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.servers = [UdpServer((address, port), Udp), TcpServer((address, port), Tcp)]
        self.threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in self.servers]
        for t in self.threads:
            t.start()

    def in_zone(self, name):
        return name == self.zone or name.endswith("." + self.zone)

    def answer(self, message, transport, client):
        parsed = question_name(message)
        if parsed is None or message[2] & 0x80:
            return None  # not a query: dropped
        name, question_end = parsed
        with self.lock:
            self.stats[transport] += 1
            self.stats["clients"].add(client[0])
        if not self.in_zone(name):
            with self.lock:
                self.stats["refused"].append((transport, name))
            return refused(message, question_end)
        with self.lock:
            self.stats["forwarded"].append((transport, name))
        try:
            return self.forward(message, transport)
        except OSError:
            return None  # the canary did not answer: neither does the stub (like a timeout)

    def forward(self, message, transport):
        if transport == "udp":
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.settimeout(UPSTREAM_TIMEOUT_S)
                s.connect(self.upstream)
                s.send(message)
                while True:
                    reply = s.recv(MAX_MESSAGE)
                    if reply[:2] == message[:2]:
                        return reply
        with socket.create_connection(self.upstream, timeout=UPSTREAM_TIMEOUT_S) as s:
            s.sendall(struct.pack("!H", len(message)) + message)
            length, = struct.unpack("!H", recv_exact(s, 2))
            return recv_exact(s, length)

    def snapshot(self):
        with self.lock:
            return {"udp": self.stats["udp"], "tcp": self.stats["tcp"],
                    "forwarded": list(self.stats["forwarded"]),
                    "refused": list(self.stats["refused"]),
                    "clients": sorted(self.stats["clients"])}

    def close(self):
        for s in self.servers:
            s.shutdown()
            s.server_close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", required=True, help="IPv4 address to bind")
    parser.add_argument("--port", type=int, default=53)
    parser.add_argument("--zone", required=True, help="the one zone forwarded")
    parser.add_argument("--upstream", required=True, help="host:port of the DNS canary")
    args = parser.parse_args()
    host, _, port = args.upstream.rpartition(":")
    stub = ResolverStub(args.listen, args.zone, (host, int(port)), args.port)
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    print("ready", flush=True)
    done.wait()
    stub.close()
    print(stub.snapshot(), file=sys.stderr)


if __name__ == "__main__":
    main()
