#!/usr/bin/env python3
"""A run-code HTTP service used to test sandprobe's `http` driver.

THIS IS A TEST FIXTURE, NOT A PRODUCT. It exists so the end-to-end tests can point sandprobe at a
real service in two shapes: one that leaks (unsafe) and one that contains (isolated). Do not
deploy it anywhere.

API (the driver's `preset: code-json`):
  POST /execute {"code": "<python>"} -> 200 {"stdout", "stderr", "exit_code"}
                                        (+ "error": "timed out" when its own timeout fires,
                                         + "truncated": true when it cut the output)
  GET  /healthz                      -> 200 {"ok": true}

Modes:
  unsafe    `python3 -u -c CODE` as a plain subprocess of the server, with the server's own
            environment and working directory: the pattern that leaks the server's credentials.
            On its timeout it kills that child only; the child's descendants live on (that is the
            bug this mode demonstrates). No output cap.
  isolated  each evaluation in a fresh container through the Docker Engine API on
            /var/run/docker.sock (stdlib http.client over AF_UNIX), with the HostConfig of
            manifests/docker/hardened.yaml (read from that file by the small parser below), user
            65534, image sandprobe-probe:local (never pulled), `timeout -k 2 T` inside, output cut
            at --output-cap bytes per stream, container force-removed after every evaluation.

Faults for tests (after --fault-after normal evaluations, default 1 so sandprobe's preflight
passes): hang (never answer /execute), garbage (200 with a non-JSON body), huge (200 with a
64 MiB body and no Content-Length), die-after=N (answer N evaluations, then exit while handling
the next one, without an answer).

It binds 127.0.0.1 only (port 0 = any free port) and prints `READY http://127.0.0.1:<port>`.
On SIGTERM/SIGINT (and before dying on purpose) it kills every process it started, including
descendants that detached (it is their child subreaper), and removes its containers.
Standard library only.
"""
import argparse
import ctypes
import http.client
import json
import os
import re
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
HARDENED = os.path.join(HERE, "..", "..", "..", "manifests", "docker", "hardened.yaml")
DOCKER_SOCK = "/var/run/docker.sock"
API = "/v1.41"
HUGE_BYTES = 64 << 20
PR_SET_CHILD_SUBREAPER = 36

STATE = {"served": 0, "lock": threading.Lock(), "stop": threading.Event(), "active": set()}


# ----------------------------------------------------------------------------- hardened set

def _split_top(text):
    """Splits on commas outside quotes and brackets."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    return [p for p in parts + [cur] if p.strip()]


def _flow_value(text):
    """A YAML scalar or flow collection of the simple kind hardened.yaml uses."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        return [_flow_value(x) for x in _split_top(text[1:-1])]
    if text.startswith("{") and text.endswith("}"):
        out = {}
        for item in _split_top(text[1:-1]):
            k, _, v = item.partition(":")
            out[k.strip()] = _flow_value(v)
        return out
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def hardened_host_config(path=HARDENED):
    """The `hostConfig:` block of manifests/docker/hardened.yaml as a dict (a parser for the
    `Key: value` / flow-value lines that file uses, not for YAML in general)."""
    out, inside, indent = {}, False, None
    with open(path) as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line.strip() == "hostConfig:":
                inside = True
                continue
            if inside:
                this = len(line) - len(line.lstrip())
                indent = this if indent is None else indent
                if this < indent:
                    break
                key, _, value = line.strip().partition(":")
                out[key] = _flow_value(value)
    if not out.get("NetworkMode"):
        raise SystemExit("fixture: no hostConfig found in %s" % path)
    return out


# ----------------------------------------------------------------------------- Docker Engine API

class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def engine(method, path, body=None, timeout=30, limit=4 << 20):
    """One Engine API call -> (status, parsed JSON or raw bytes)."""
    conn = UnixConnection(ARGS.docker_sock, timeout)
    try:
        headers = {"Content-Type": "application/json"} if body is not None else {}
        conn.request(method, API + path, body=None if body is None else json.dumps(body),
                     headers=headers)
        resp = conn.getresponse()
        data = resp.read(limit)
    finally:
        conn.close()
    try:
        return resp.status, json.loads(data) if data else None
    except ValueError:
        return resp.status, data


def read_logs(cid, cap):
    """stdout, stderr (each cut at cap bytes) and whether anything was cut, from the multiplexed
    log stream; reading stops at the cap."""
    conn = UnixConnection(ARGS.docker_sock, 30)
    out, err, cut = bytearray(), bytearray(), False
    try:
        conn.request("GET", API + "/containers/%s/logs?stdout=1&stderr=1" % cid)
        resp = conn.getresponse()
        while True:
            header = resp.read(8)
            if len(header) < 8:
                break
            size = struct.unpack(">I", header[4:])[0]
            payload = resp.read(size)
            buf = err if header[0] == 2 else out
            room = cap - len(buf)
            buf += payload[:max(room, 0)]
            if len(payload) > room:
                cut = True
                break
    finally:
        conn.close()
    return out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), cut


def remove_container(cid):
    try:
        engine("DELETE", "/containers/%s?force=1" % cid, timeout=30)
    except OSError:
        pass


def run_isolated(code):
    name = "sandprobe-fixture-%s-%s" % (INSTANCE, secrets.token_hex(3))
    body = {"Image": ARGS.image, "User": "65534:65534",
            "Cmd": ["timeout", "-k", "2", str(ARGS.timeout), "python3", "-u", "-c", code],
            "Labels": {"sandprobe.fixture": INSTANCE}, "HostConfig": HOST_CONFIG}
    status, created = engine("POST", "/containers/create?name=" + name, body)
    if status != 201:
        return {"error": "container create failed: HTTP %d %s" % (status, str(created)[:200])}
    cid = created["Id"]
    with STATE["lock"]:
        STATE["active"].add(cid)
    try:
        status, _ = engine("POST", "/containers/%s/start" % cid)
        if status not in (204, 304):
            return {"error": "container start failed: HTTP %d" % status}
        waited = True
        try:
            engine("POST", "/containers/%s/wait" % cid, timeout=ARGS.timeout + 10)
        except OSError:  # socket timeout: it outlived timeout -k 2 by far
            waited = False
        stdout, stderr, cut = read_logs(cid, ARGS.output_cap)
        _, info = engine("GET", "/containers/%s/json" % cid)
        code_ = (info or {}).get("State", {}).get("ExitCode", -1) if waited else -9
        reply = {"stdout": stdout, "stderr": stderr, "exit_code": code_}
        if not waited or code_ in (124, 137) and not info["State"].get("OOMKilled"):
            reply["error"] = "timed out"
        if cut:
            reply["truncated"] = True
        return reply
    finally:
        remove_container(cid)
        with STATE["lock"]:
            STATE["active"].discard(cid)


# ----------------------------------------------------------------------------- unsafe mode

def run_unsafe(code):
    """python3 -u -c CODE as a plain child with the server's env and cwd; no output cap."""
    proc = subprocess.Popen([sys.executable, "-u", "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    with STATE["lock"]:
        STATE["active"].add(proc.pid)
    chunks = {"out": [], "err": []}

    def pump(stream, key):
        for block in iter(lambda: stream.read1(1 << 16), b""):
            chunks[key].append(block)

    readers = [threading.Thread(target=pump, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, "err"), daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout=ARGS.timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.kill()  # the child only: its descendants live on (the bug this mode shows)
        proc.wait()
    for r in readers:
        r.join(timeout=1)  # a descendant may still hold the pipes: do not wait for it
    with STATE["lock"]:
        STATE["active"].discard(proc.pid)
    reply = {"stdout": b"".join(chunks["out"]).decode("utf-8", "replace"),
             "stderr": b"".join(chunks["err"]).decode("utf-8", "replace"),
             "exit_code": proc.returncode}
    if timed_out:
        reply["error"] = "timed out"
    return reply


# ----------------------------------------------------------------------------- processes

def children_of(pid):
    kids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append((int(name), fields[0]))
    return kids


def reap_orphans():
    """Collect zombies of re-parented descendants (never the unsafe children being waited for)."""
    while not STATE["stop"].wait(0.5):
        with STATE["lock"]:
            active = set(STATE["active"])
        for pid, state in children_of(os.getpid()):
            if state == b"Z" and pid not in active:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass


def kill_everything():
    """SIGKILL every descendant (they are all our children once their parents die: we are their
    subreaper) and remove this instance's containers."""
    for _ in range(50):
        kids = children_of(os.getpid())
        if not kids:
            break
        for pid, _ in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid, _ in kids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.05)
    if ARGS.mode == "isolated":
        flt = json.dumps({"label": ["sandprobe.fixture=%s" % INSTANCE]})
        try:
            _, found = engine("GET", "/containers/json?all=1&filters=" + urllib.parse.quote(flt))
            for c in found or []:
                remove_container(c["Id"])
        except OSError:
            pass


# ----------------------------------------------------------------------------- HTTP

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read stdout for READY only
        pass

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/healthz":
            self.send_json(200, {"ok": True, "mode": ARGS.mode})
        else:
            self.send_json(404, {"error": "not found"})

    def do_POST(self):
        if self.path != "/execute":
            self.send_json(404, {"error": "not found"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > (1 << 20):
            self.send_json(413, {"error": "request too large"})
            return
        try:
            code = json.loads(self.rfile.read(length))["code"]
            assert isinstance(code, str)
        except (ValueError, KeyError, TypeError, AssertionError):
            self.send_json(400, {"error": "expected {\"code\": \"...\"}"})
            return
        with STATE["lock"]:
            STATE["served"] += 1
            n = STATE["served"]
        fault, after = ARGS.fault, ARGS.fault_after
        if fault and fault.startswith("die-after="):
            if n > int(fault.split("=", 1)[1]):
                kill_everything()
                os._exit(3)  # no answer: the client sees the connection close
        elif fault and n > after:
            if fault == "hang":
                STATE["stop"].wait(600)
                return
            if fault == "garbage":
                data = b"<html>502 Bad Gateway? no: 200 and not JSON {\"stdout\":"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if fault == "huge":
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Connection", "close")  # no Content-Length: read until close
                self.end_headers()
                self.close_connection = True
                try:
                    self.wfile.write(b'{"stdout": "')
                    block = b"x" * (1 << 20)
                    for _ in range(HUGE_BYTES >> 20):
                        self.wfile.write(block)
                    self.wfile.write(b'", "stderr": "", "exit_code": 0}')
                except OSError:
                    pass  # the client stopped reading (its deadline, or Ctrl-C)
                return
        try:
            reply = run_isolated(code) if ARGS.mode == "isolated" else run_unsafe(code)
        except OSError as exc:
            self.send_json(500, {"error": "evaluation failed: %s" % exc})
            return
        self.send_json(200, reply)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)  # a client that hung up is no news


def main():
    global ARGS, INSTANCE, HOST_CONFIG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["unsafe", "isolated"], required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--timeout", type=int, default=5, help="seconds per evaluation")
    ap.add_argument("--output-cap", type=int, default=1 << 20,
                    help="isolated: bytes kept per stream")
    ap.add_argument("--fault", default="",
                    help="hang | garbage | huge | die-after=N")
    ap.add_argument("--fault-after", type=int, default=1,
                    help="normal evaluations before hang/garbage/huge start")
    ap.add_argument("--image", default="sandprobe-probe:local")
    ap.add_argument("--docker-sock", default=DOCKER_SOCK)
    ARGS = ap.parse_args()
    if ARGS.fault and ARGS.fault not in ("hang", "garbage", "huge") and not re.fullmatch(
            r"die-after=\d+", ARGS.fault):
        ap.error("--fault: expected hang, garbage, huge or die-after=N")
    INSTANCE = "%d-%s" % (os.getpid(), secrets.token_hex(3))
    HOST_CONFIG = hardened_host_config() if ARGS.mode == "isolated" else None
    try:  # adopt detached descendants, so that stopping the fixture can kill them all
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    server = Server(("127.0.0.1", ARGS.port), Handler)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=reap_orphans, daemon=True).start()
    print("READY http://127.0.0.1:%d" % server.server_address[1], flush=True)
    while not stop.wait(0.5):
        pass
    STATE["stop"].set()
    server.shutdown()
    kill_everything()
    server.server_close()


if __name__ == "__main__":
    main()
