"""Cluster DNS of the FAKE cluster (docker kubelet, tests only): UDP+TCP on the pod network gateway.

Answers only from the fake's own Service objects, never forwards anything:
  - A for `<svc>.<ns>.svc.cluster.local` and `<svc>.<ns>.svc` (clients expand short names with the
    search path `<ns>.svc.cluster.local svc.cluster.local cluster.local` + ndots:5 themselves);
  - NOERROR with no answer for any other type (AAAA, ...) of a known name;
  - NXDOMAIN for every other name (the cluster DNS has no upstream here).
Every query is logged: {time, client, qname, qtype, rcode, answer}.
"""
import socket
import struct
import threading
import time

QTYPES = {1: "A", 28: "AAAA", 5: "CNAME", 12: "PTR", 15: "MX", 16: "TXT", 33: "SRV", 6: "SOA",
          2: "NS", 255: "ANY", 65: "HTTPS"}


def parse_query(data):
    """(id, flags, qname, qtype, qclass, end offset of the question) or None."""
    if len(data) < 12:
        return None
    qid, flags, qd = struct.unpack(">HHH", data[:6])
    if qd < 1:
        return None
    pos, labels = 12, []
    while pos < len(data):
        n = data[pos]
        if n == 0:
            pos += 1
            break
        if n & 0xC0:
            return None
        labels.append(data[pos + 1:pos + 1 + n].decode("ascii", "replace"))
        pos += 1 + n
    if pos + 4 > len(data):
        return None
    qtype, qclass = struct.unpack(">HH", data[pos:pos + 4])
    return qid, flags, ".".join(labels), qtype, qclass, pos + 4


class ClusterDNS:
    def __init__(self, address, lookup, log, log_lock):
        """lookup(name) -> IPv4 string or None; log: list the query records go to."""
        self.address = address
        self.lookup = lookup
        self.log = log
        self.log_lock = log_lock
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind((address, 53))
        self.tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.tcp.bind((address, 53))
        self.tcp.listen(64)
        self.stopping = False
        threading.Thread(target=self._udp_loop, daemon=True, name="dns-udp").start()
        threading.Thread(target=self._tcp_loop, daemon=True, name="dns-tcp").start()

    def answer(self, data, client):
        q = parse_query(data)
        if q is None:
            return None
        qid, flags, qname, qtype, qclass, end = q
        name = qname.lower().rstrip(".")
        ip = self.lookup(name)
        rd = flags & 0x0100
        answers = b""
        if ip is None:
            rcode = 3
        else:
            rcode = 0
            if qtype == 1 and qclass == 1:
                answers = (struct.pack(">HHHIH", 0xC00C, 1, 1, 5, 4) + socket.inet_aton(ip))
        hdr = struct.pack(">HHHHHH", qid, 0x8000 | 0x0400 | rd | rcode, 1,
                          1 if answers else 0, 0, 0)
        with self.log_lock:
            self.log.append({"time": time.time(), "client": client, "qname": qname,
                             "qtype": QTYPES.get(qtype, str(qtype)),
                             "rcode": "NXDOMAIN" if rcode == 3 else "NOERROR",
                             "answer": ip if answers else None})
            if len(self.log) > 5000:
                del self.log[:500]
        return hdr + data[12:end] + answers

    def _udp_loop(self):
        while not self.stopping:
            try:
                data, addr = self.udp.recvfrom(4096)
            except OSError:
                return
            try:
                reply = self.answer(data, addr[0])
                if reply:
                    self.udp.sendto(reply, addr)
            except OSError:
                pass

    def _tcp_loop(self):
        while not self.stopping:
            try:
                conn, addr = self.tcp.accept()
            except OSError:
                return
            threading.Thread(target=self._tcp_conn, args=(conn, addr[0]), daemon=True).start()

    def _tcp_conn(self, conn, client):
        conn.settimeout(5)
        try:
            while True:
                head = conn.recv(2)
                if len(head) < 2:
                    return
                (n,) = struct.unpack(">H", head)
                data = b""
                while len(data) < n:
                    chunk = conn.recv(n - len(data))
                    if not chunk:
                        return
                    data += chunk
                reply = self.answer(data, client)
                if reply:
                    conn.sendall(struct.pack(">H", len(reply)) + reply)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stopping = True
        for s in (self.udp, self.tcp):
            try:
                s.close()
            except OSError:
                pass
