"""The in-cluster canary script (cluster_canary.py) on its real ports, inside a network namespace
of its own (`unshare -n`, as root: CI runs as root), so nothing is bound on this machine's
addresses: HTTP, TCP echo, UDP echo and DNS answer in the harness canaries' protocols, the HTTP
port answers the cloud metadata paths as the clouds do (the credential paths with the planted
credential derived from the nonce), and each request leaves one SANDPROBE-HIT line carrying the
invocation only with the right nonce."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CANARY = os.path.join(HERE, "cluster_canary.py")
NONCE = "n0nce42"

CLIENT = textwrap.dedent(r'''
    import json, socket, struct, subprocess, sys, time, urllib.error, urllib.request
    canary = subprocess.Popen([sys.executable, "-u", sys.argv[1], sys.argv[2], "30"],
                              stdout=subprocess.PIPE, text=True)
    assert canary.stdout.readline().strip() == "SANDPROBE-CANARY-READY"
    out = {}
    def http(method, path, **headers):
        headers["X-Sandprobe"] = sys.argv[2] + " inv-cloud"
        req = urllib.request.Request("http://127.0.0.1:80" + path, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=3) as r:
                return r.status, dict(r.headers), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()
    for port in (80, 8080):
        req = urllib.request.Request("http://127.0.0.1:%d/" % port,
                                     headers={"X-Sandprobe": sys.argv[2] + " inv-http"})
        out["http%d" % port] = urllib.request.urlopen(req, timeout=3).read().decode()
    # The cloud metadata shapes (metadata_answer): IMDSv2, GCP, Azure.
    roles = "/latest/meta-data/iam/security-credentials/"
    out["imds-no-token"] = http("GET", "/latest/meta-data/")[0]
    out["imds-no-ttl"] = http("PUT", "/latest/api/token")[0]
    status, _, token = http("PUT", "/latest/api/token",
                            **{"X-aws-ec2-metadata-token-ttl-seconds": "60"})
    out["imds-token"] = (status, len(token))
    auth = {"X-aws-ec2-metadata-token": token}
    out["imds-roles"] = http("GET", roles, **auth)[::2]
    out["imds-keys"] = json.loads(http("GET", roles + "sandprobe-canary-role", **auth)[2])
    out["gcp-no-flavor"] = http("GET", "/computeMetadata/v1/instance/")[0]
    status, headers, body = http(
        "GET", "/computeMetadata/v1/instance/service-accounts/default/token",
        **{"Metadata-Flavor": "Google"})
    out["gcp-token"] = (status, headers.get("Metadata-Flavor"), json.loads(body))
    out["azure-no-header"] = http("GET", "/metadata/instance?api-version=2021-02-01")[0]
    out["azure-token"] = json.loads(http(
        "GET", "/metadata/identity/oauth2/token?api-version=2018-02-01&resource=x",
        Metadata="true")[2])
    for port in (53, 7000):
        with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
            s.sendall(("SANDPROBE %s inv-tcp\n" % sys.argv[2]).encode())
            out["tcp%d" % port] = s.recv(200).decode()
    with socket.create_connection(("127.0.0.1", 7000), timeout=3) as s:
        s.sendall(b"SANDPROBE wrong inv-forged\n")
        out["tcp-forged"] = s.recv(200).decode()
    for port in (53, 7001):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(3)
            s.sendto(("SANDPROBE %s inv-udp\n" % sys.argv[2]).encode(), ("127.0.0.1", port))
            out["udp%d" % port] = s.recv(200).decode()
    # net.held-open: " hold" keeps the connection; each later " held" line is echoed and logged
    # as tcp-held; a plain first line closes after its echo; a " held" datagram is udp-held.
    with socket.create_connection(("127.0.0.1", 7000), timeout=3) as s:
        s.sendall(("SANDPROBE %s inv-hold hold\n" % sys.argv[2]).encode())
        first = s.recv(200).decode()
        time.sleep(0.3)
        s.sendall(("SANDPROBE %s inv-hold held\n" % sys.argv[2]).encode())
        out["tcp-held"] = [first, s.recv(200).decode()]
    with socket.create_connection(("127.0.0.1", 7000), timeout=3) as s:
        s.sendall(("SANDPROBE %s inv-plain\n" % sys.argv[2]).encode())
        out["tcp-plain"] = [s.recv(200).decode(), s.recv(200).decode()]  # echo, then EOF
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        s.connect(("127.0.0.1", 7001))
        for marker in ("hold", "held"):
            s.send(("SANDPROBE %s inv-uhold %s" % (sys.argv[2], marker)).encode())
            out["udp-" + marker] = s.recv(200).decode()
    name = "inv-dns.%s.sandprobe.test" % sys.argv[2].upper()
    q = struct.pack("!6H", 0x1234, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack("!2H", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        s.sendto(q, ("127.0.0.1", 53))
        r = s.recv(512)
    out["dns"] = {"id": r[:2].hex(), "qr": bool(r[2] & 0x80), "rcode": r[3] & 0xF,
                  "question": r[12:] == q[12:]}
    time.sleep(0.3)
    canary.kill()
    out["hits"] = [json.loads(l[len("SANDPROBE-HIT "):]) for l in canary.stdout.read().splitlines()
                   if l.startswith("SANDPROBE-HIT ")]
    print(json.dumps(out))
''')


class ClusterCanaryTest(unittest.TestCase):
    def test_protocols_and_hit_lines(self):
        self.assertEqual(os.geteuid(), 0, "needs root for unshare -n (CI runs as root)")
        unshare = shutil.which("unshare")
        self.assertIsNotNone(unshare, "util-linux unshare is missing")
        script = "ip link set lo up && exec %s -c \"$0\" \"$@\"" % sys.executable
        r = subprocess.run([unshare, "-n", "sh", "-c", script, CLIENT, CANARY, NONCE],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out["http80"], "sandprobe-canary %s\n" % NONCE)
        secret = hashlib.sha256(("sandprobe-cloud-credential:" + NONCE).encode()).hexdigest()[:40]
        self.assertEqual((out["imds-no-token"], out["imds-no-ttl"], out["imds-token"][0]),
                         (401, 400, 200))
        self.assertGreater(out["imds-token"][1], 20)
        self.assertEqual(out["imds-roles"], [200, "sandprobe-canary-role"])
        self.assertEqual(out["imds-keys"]["SecretAccessKey"], secret)
        self.assertEqual((out["gcp-no-flavor"], out["gcp-token"][:2]), (403, [200, "Google"]))
        self.assertEqual(out["gcp-token"][2]["access_token"], secret)
        self.assertEqual(out["azure-no-header"], 400)
        self.assertEqual(out["azure-token"]["access_token"], secret)
        self.assertEqual(out["http8080"], "sandprobe-canary %s\n" % NONCE)
        for key in ("tcp53", "tcp7000"):
            self.assertEqual(out[key], "SANDPROBE-ECHO %s inv-tcp\n" % NONCE)
        self.assertEqual(out["tcp-forged"], "")  # a wrong nonce gets no echo
        for key in ("udp53", "udp7001"):
            self.assertEqual(out[key], "SANDPROBE-ECHO %s inv-udp\n" % NONCE)
        self.assertEqual(out["dns"], {"id": "1234", "qr": True, "rcode": 3, "question": True})
        echo = "SANDPROBE-ECHO %s %%s\n" % NONCE
        self.assertEqual(out["tcp-held"], [echo % "inv-hold"] * 2)
        self.assertEqual(out["tcp-plain"], [echo % "inv-plain", ""])
        self.assertEqual((out["udp-hold"], out["udp-held"]), (echo % "inv-uhold",) * 2)
        by_inv = {}
        for h in out["hits"]:
            by_inv.setdefault(h["invocation"], []).append(h["kind"])
        self.assertEqual(sorted(by_inv["inv-http"]), ["http", "http"])
        # Every cloud request logged; the three that carried the credential as kind credential.
        self.assertEqual(sorted(by_inv["inv-cloud"]), ["credential"] * 3 + ["http"] * 6)
        self.assertEqual(sorted(by_inv["inv-tcp"]), ["tcp", "tcp"])
        self.assertEqual(sorted(by_inv["inv-udp"]), ["udp", "udp"])
        self.assertEqual(by_inv["inv-hold"], ["tcp", "tcp-held"])
        self.assertEqual(by_inv["inv-uhold"], ["udp", "udp-held"])
        self.assertEqual(by_inv["inv-dns"], ["dns"])  # the nonce label compared case-insensitively
        self.assertEqual(by_inv[""], ["tcp"])  # the forged line: logged, no invocation
        for h in out["hits"]:
            self.assertRegex(h["peer"], r"^127\.0\.0\.1:\d+$")
            self.assertIsInstance(h["unix_ms"], int)


if __name__ == "__main__":
    unittest.main()
