"""Asks a DNS server (UDP) for NAME's A record; exit 0 when an answer equals WANT.

Usage: python3 dns_query.py SERVER NAME WANT. Used by ci/cluster/up to wait until cluster DNS
answers through its Service address. Standard library only; one query, a 2 s timeout.
"""
import random
import socket
import struct
import sys


def query(server: str, name: str) -> list[str]:
    qid = random.randrange(1 << 16)
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    q += struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.sendto(q, (server, 53))
        data, _ = s.recvfrom(4096)
    rid, flags, qd, an = struct.unpack(">HHHH", data[:8])
    if rid != qid or flags & 0xF:
        return []
    pos = len(q)
    out = []
    for _ in range(an):
        if data[pos] & 0xC0 == 0xC0:
            pos += 2
        else:
            while data[pos]:
                pos += data[pos] + 1
            pos += 1
        rtype, _, _, rdlen = struct.unpack(">HHIH", data[pos:pos + 10])
        pos += 10
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(data[pos:pos + 4]))
        pos += rdlen
    return out


if __name__ == "__main__":
    server, name, want = sys.argv[1:4]
    try:
        answers = query(server, name)
    except OSError as e:
        sys.exit(f"{server}: {e}")
    sys.exit(0 if want in answers else f"{name} -> {answers}")
