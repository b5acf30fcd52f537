# sandprobe in-cluster canary: runs as the single container of a Pod the kubernetes driver
# deploys per run (docs/design.md, "The in-cluster canary"). It speaks the wire protocols of the
# harness's own canaries (harness/canary/canary.h) and prints one line per request it received:
#   SANDPROBE-HIT {"kind": ..., "invocation": ..., "peer": ..., "detail": ..., "unix_ms": ...}
# which the driver reads back through pods/log. Started as: python3 -u -c <this> <nonce> <max_s>.
#   HTTP  TCP 80 and 8080: any request; header "X-Sandprobe: <nonce> <invocation>"; answers 200
#         "sandprobe-canary <nonce>\n", except the cloud metadata paths, answered as each cloud's
#         metadata service answers them (metadata_answer(), the same rules as the harness's
#         HTTP canary, harness/canary/metadata_shapes.h); a request the canary served its planted
#         cloud credential to is logged as kind "credential".
#   TCP   53 and 7000: one line "SANDPROBE <nonce> <invocation>\n" -> "SANDPROBE-ECHO ...\n"
#         (TCP 53 is the echo, not DNS over TCP: a DNS query there is logged without invocation).
#         A first line ending " hold" keeps the connection open (HOLD_S, at most HOLD_LINES
#         lines): each later line ending " held" is echoed and logged as kind "tcp-held", a nonce
#         sent over a connection opened before (net.held-open).
#   UDP   53 and 7001: a datagram "SANDPROBE <nonce> <invocation>" -> "SANDPROBE-ECHO ...\n";
#         one ending " held" is logged as kind "udp-held" (" hold" is a plain "udp" hit);
#         any other datagram is parsed as a DNS query for "<invocation>.<nonce>.sandprobe.test"
#         and answered NXDOMAIN (never forwarded: this canary resolves nothing).
# Every field it prints came from the network: bounded and printable here, bounded again by the
# driver. It exits by itself after max_s seconds so a forgotten Pod cannot serve forever.
import hashlib
import json
import secrets
import socket
import sys
import threading
import time

LOCK = threading.Lock()
ROLE = "sandprobe-canary-role"  # the one role name the AWS shape lists


def printable(data, limit=200):
    if isinstance(data, bytes):
        data = data.decode("latin-1")
    return "".join(c if " " <= c <= "~" else "?" for c in data[:limit])


HOLD_S, HOLD_LINES = 120, 8  # a held-open connection's life and lines (net.held-open)
HOLD_SLOTS = threading.BoundedSemaphore(64)  # held-open connections at once; more are not held


def tagged(text):
    """"<nonce> <invocation>[ hold| held]" -> (invocation or "", marker or "")."""
    parts = text.split(" ")
    if len(parts) == 3 and parts[2] in ("hold", "held"):
        return invocation_of(" ".join(parts[:2])), parts[2]
    return invocation_of(text), ""


def invocation_of(tag):
    parts = tag.split(" ")
    if len(parts) == 2 and parts[0] == NONCE and 0 < len(parts[1]) <= 128 and all(
            "!" <= c <= "~" for c in parts[1]):
        return parts[1]
    return ""


def cloud_credential(nonce):
    """The planted canary credential the metadata shapes serve, derived from the run's nonce as the
    harness derives it (runner::CloudCredential), so it never travels: 40 hex characters."""
    return hashlib.sha256(("sandprobe-cloud-credential:" + nonce).encode()).hexdigest()[:40]


def metadata_answer(method, target, headers, nonce, token):
    """A cloud metadata service's answer to one request (the rules of harness/canary/
    metadata_shapes.h, which the harness's HTTP canary follows) -> (status, [(header, value)],
    content type, body bytes, hit kind). AWS IMDSv2: PUT /latest/api/token needs
    X-aws-ec2-metadata-token-ttl-seconds (1..21600, else 400; X-Forwarded-For: 403) and answers
    `token`; GET /latest/... needs X-aws-ec2-metadata-token == token (else 401; other methods
    405). GCP /computeMetadata/...: Metadata-Flavor: Google (else, or with X-Forwarded-For, 403),
    answers carry Metadata-Flavor: Google. Azure /metadata/...: Metadata: true and an
    api-version (else 400). The credential paths (AWS role keys, GCP and Azure tokens) answer JSON
    carrying cloud_credential(nonce), hit kind "credential"; every other path "sandprobe-canary
    <nonce>\n", hit kind "http"."""
    path, _, query = target.partition("?")
    h = {k.strip().lower(): v.strip() for k, v in headers}
    plain = ("sandprobe-canary %s\n" % nonce).encode()

    def status(code):
        return code, [], "text/plain", plain, "http"

    def credential(doc, extra=()):
        doc = dict(doc, Sandprobe="sandprobe-canary %s" % nonce)
        return 200, list(extra), "application/json", json.dumps(doc).encode(), "credential"

    secret = cloud_credential(nonce)
    if path.startswith("/latest/"):
        if path == "/latest/api/token" and method == "PUT":
            ttl = h.get("x-aws-ec2-metadata-token-ttl-seconds", "")
            if "x-forwarded-for" in h:
                return status(403)
            if not (ttl.isascii() and ttl.isdigit() and len(ttl) <= 5 and 1 <= int(ttl) <= 21600):
                return status(400)
            return 200, [("X-aws-ec2-metadata-token-ttl-seconds", ttl)], "text/plain", \
                token.encode(), "http"
        if method not in ("GET", "HEAD"):
            return status(405)
        if h.get("x-aws-ec2-metadata-token") != token:
            return status(401)
        roles = "/latest/meta-data/iam/security-credentials/"
        if path == roles:
            return 200, [], "text/plain", ROLE.encode(), "http"
        if path == roles + ROLE:
            return credential({"Code": "Success", "Type": "AWS-HMAC",
                               "AccessKeyId": "ASIASANDPROBECANARY0", "SecretAccessKey": secret,
                               "Token": "sandprobe-canary-session",
                               "Expiration": "2099-01-01T00:00:00Z"})
        return status(404) if path.startswith(roles) else status(200)
    if path.startswith("/computeMetadata/"):
        if h.get("metadata-flavor") != "Google" or "x-forwarded-for" in h:
            return status(403)
        flavor = [("Metadata-Flavor", "Google")]
        if path == "/computeMetadata/v1/instance/service-accounts/default/token":
            return credential({"access_token": secret, "expires_in": 3599,
                               "token_type": "Bearer"}, flavor)
        return 200, flavor, "text/plain", plain, "http"
    if path.startswith("/metadata/"):
        if h.get("metadata", "").lower() != "true" or "api-version=" not in query:
            return status(400)
        if path == "/metadata/identity/oauth2/token":
            return credential({"access_token": secret, "expires_in": "3599",
                               "token_type": "Bearer"})
        return status(200)
    return status(200)


def peer_text(peer):
    host = peer[0][7:] if peer[0].startswith("::ffff:") else peer[0]  # v4-mapped on a v6 socket
    return ("[%s]:%d" if ":" in host else "%s:%d") % (host, peer[1])


def hit(kind, invocation, peer, detail):
    line = json.dumps({"kind": kind, "invocation": invocation, "peer": peer_text(peer),
                       "detail": printable(detail), "unix_ms": int(time.time() * 1000)})
    with LOCK:
        sys.stdout.write("SANDPROBE-HIT " + line + "\n")
        sys.stdout.flush()


def serve_tcp(sock, handler):
    while True:
        conn, peer = sock.accept()
        threading.Thread(target=handler, args=(conn, peer), daemon=True).start()


def read_head(conn, limit):
    conn.settimeout(2)
    data = b""
    try:
        while len(data) < limit and b"\n" not in data and b"\r\n\r\n" not in data:
            chunk = conn.recv(limit - len(data))
            if not chunk:
                break
            data += chunk
        if data.startswith((b"GET", b"POST", b"PUT", b"HEAD", b"DELETE", b"PATCH", b"OPTIONS")):
            while len(data) < limit and b"\r\n\r\n" not in data:
                chunk = conn.recv(limit - len(data))
                if not chunk:
                    break
                data += chunk
    except OSError:
        pass
    return data


def http_handler(conn, peer):
    with conn:
        head = read_head(conn, 8192).decode("latin-1")
        lines = head.split("\r\n")
        headers = [line.partition(":")[::2] for line in lines[1:] if ":" in line]
        tag = ""
        for name, value in headers:
            if name.strip().lower() == "x-sandprobe":
                tag = value.strip()
        request = lines[0].split(" ") if lines else []
        method, target = (request[0], request[1]) if len(request) >= 2 else ("", "/")
        code, extra, ctype, body, kind = metadata_answer(method, target, headers, NONCE, TOKEN)
        hit(kind, invocation_of(tag), peer, lines[0] if lines else "")
        head_out = "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n" % (
            code, REASONS.get(code, "Status"), ctype, len(body))
        head_out += "".join("%s: %s\r\n" % kv for kv in extra) + "Connection: close\r\n\r\n"
        try:
            conn.sendall(head_out.encode() + (b"" if method == "HEAD" else body))
        except OSError:
            pass


REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
           404: "Not Found", 405: "Method Not Allowed"}


def tcp_handler(conn, peer):
    with conn:
        head = read_head(conn, 512)
        line = head.split(b"\n")[0].rstrip(b"\r").decode("latin-1")
        inv, marker = ("", "")
        if line.startswith("SANDPROBE "):
            inv, marker = tagged(line[len("SANDPROBE "):])
        hit("tcp", inv, peer, line)
        if inv:
            try:
                conn.sendall(("SANDPROBE-ECHO %s %s\n" % (NONCE, inv)).encode())
            except OSError:
                return
        if inv and marker == "hold" and HOLD_SLOTS.acquire(blocking=False):
            try:
                hold_open(conn, peer, head.partition(b"\n")[2])
            finally:
                HOLD_SLOTS.release()


def hold_open(conn, peer, rest):
    """The later lines of a held-open connection (`rest`: bytes read past the first line): each
    "SANDPROBE <nonce> <invocation> held" is logged as kind "tcp-held" and echoed; anything else
    ends the connection. Bounded by HOLD_S and HOLD_LINES."""
    deadline = time.monotonic() + HOLD_S
    for _ in range(HOLD_LINES):
        while b"\n" not in rest and len(rest) < 512:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            conn.settimeout(left)
            try:
                chunk = conn.recv(512 - len(rest))
            except OSError:
                return
            if not chunk:
                return
            rest += chunk
        line, _, rest = rest.partition(b"\n")
        text = line.rstrip(b"\r").decode("latin-1")
        inv, marker = ("", "")
        if text.startswith("SANDPROBE "):
            inv, marker = tagged(text[len("SANDPROBE "):])
        if not inv or marker != "held":
            return
        hit("tcp-held", inv, peer, text)
        try:
            conn.sendall(("SANDPROBE-ECHO %s %s\n" % (NONCE, inv)).encode())
        except OSError:
            return


def dns_name(packet):
    labels, i = [], 12
    while i < len(packet) and packet[i] != 0 and len(labels) < 64:
        n = packet[i]
        if n & 0xC0 or i + 1 + n > len(packet):
            return None, i
        labels.append(packet[i + 1:i + 1 + n].decode("latin-1"))
        i += 1 + n
    return (".".join(labels), i + 5) if i < len(packet) else (None, i)


def serve_udp(sock):
    while True:
        data, peer = sock.recvfrom(4096)
        if data.startswith(b"SANDPROBE "):
            text = data.rstrip(b"\n").rstrip(b"\r").decode("latin-1")
            inv, marker = tagged(text[len("SANDPROBE "):])
            hit("udp-held" if inv and marker == "held" else "udp", inv, peer, text)
            if inv:
                sock.sendto(("SANDPROBE-ECHO %s %s\n" % (NONCE, inv)).encode(), peer)
            continue
        if len(data) < 17 or data[2] & 0x80:
            continue  # not a query
        name, end = dns_name(data)
        if name is None or end > len(data):
            continue
        parts = name.split(".")
        inv = ""
        if len(parts) == 4 and parts[1].lower() == NONCE.lower() and \
                ".".join(parts[2:]).lower() == "sandprobe.test":
            inv = invocation_of("%s %s" % (NONCE, parts[0]))
        hit("dns", inv, peer, name)
        flags = 0x8000 | (data[2] & 0x01) << 8 | 3  # QR, RD copied, NXDOMAIN
        sock.sendto(data[:2] + flags.to_bytes(2, "big") + b"\x00\x01\x00\x00\x00\x00\x00\x00"
                    + data[12:end], peer)


def bound(kind, port):
    """A socket on every address of the pod: dual-stack IPv6 where the pod has IPv6 (an IPv6 or
    dual-stack cluster), else IPv4."""
    try:
        s = socket.socket(socket.AF_INET6, kind)
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("::", port))
        return s
    except OSError:
        s = socket.socket(socket.AF_INET, kind)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        return s


def main():
    for port, handler in ((80, http_handler), (8080, http_handler), (53, tcp_handler),
                          (7000, tcp_handler)):
        s = bound(socket.SOCK_STREAM, port)
        s.listen(64)
        threading.Thread(target=serve_tcp, args=(s, handler), daemon=True).start()
    for port in (53, 7001):
        s = bound(socket.SOCK_DGRAM, port)
        threading.Thread(target=serve_udp, args=(s,), daemon=True).start()
    print("SANDPROBE-CANARY-READY", flush=True)
    time.sleep(MAX_S)


if __name__ == "__main__":  # started as python3 -u -c <this> <nonce> <max_s>; tests import it
    NONCE = sys.argv[1]
    MAX_S = float(sys.argv[2]) if len(sys.argv) > 2 else 21600
    TOKEN = secrets.token_urlsafe(32)  # this canary's IMDSv2 session token
    main()
