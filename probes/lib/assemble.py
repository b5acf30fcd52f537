#!/usr/bin/env python3
"""Build the deployed program string of one probe, exactly as the C++ harness does.

    assemble.py PROBE_DIR --params JSON [--nonce N] [--invocation I]

Output (stdout), a single `python3 -u -c` program:

    # sandprobe probe <id>
    _SANDPROBE = "<base64 of canonical JSON {"invocation","nonce","params","probe"}>"
    <probes/lib/preamble.py>
    <PROBE_DIR/probe.py>

The JSON is what harness/core/params.cc BuildScript() writes with nlohmann::json's dump():
keys sorted, no spaces, UTF-8 (no ASCII escapes), i.e. json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False), so the two builds compare byte for byte for strings,
integers, booleans, null, lists and objects (floats may be spelled differently). Base64 is
standard, padded, one line. A newline is added after the preamble if it lacks one, as there.
Parameters are taken as given:
the harness fills defaults from probe.yaml, so pass every parameter the script should see
(each probe.py falls back to the same defaults, checked by test_catalogue.py).

Exit status: 0 ok, 2 usage error or an assembled script over 64 KiB (the single -c argument cap).
"""
import argparse
import base64
import json
import os
import re
import secrets
import sys

MAX_SCRIPT_BYTES = 64 * 1024
LIB_DIR = os.path.dirname(os.path.abspath(__file__))


def probe_id(probe_dir):
    """The `id:` of PROBE_DIR/probe.yaml (a top-level plain scalar)."""
    with open(os.path.join(probe_dir, "probe.yaml"), encoding="utf-8") as f:
        for line in f:
            m = re.match(r"id:\s*([A-Za-z0-9_.-]+)\s*(#.*)?$", line)
            if m:
                return m.group(1)
    raise ValueError("%s/probe.yaml has no id" % probe_dir)


def config_line(probe, nonce, invocation, params):
    cfg = {"probe": probe, "nonce": nonce, "invocation": invocation, "params": params}
    blob = json.dumps(cfg, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return '_SANDPROBE = "%s"\n' % base64.b64encode(blob.encode("utf-8")).decode("ascii")


def assemble(probe_dir, params, nonce, invocation):
    """The deployed script as a str. Raises ValueError when it is over MAX_SCRIPT_BYTES."""
    pid = probe_id(probe_dir)
    with open(os.path.join(LIB_DIR, "preamble.py"), encoding="utf-8") as f:
        preamble = f.read()
    with open(os.path.join(probe_dir, "probe.py"), encoding="utf-8") as f:
        body = f.read()
    if not preamble.endswith("\n"):
        preamble += "\n"
    script = "# sandprobe probe %s\n%s%s%s" % (
        pid, config_line(pid, nonce, invocation, params), preamble, body)
    size = len(script.encode("utf-8"))
    if size > MAX_SCRIPT_BYTES:
        raise ValueError("assembled %s is %d bytes, over the %d byte cap"
                         % (pid, size, MAX_SCRIPT_BYTES))
    return script


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("probe_dir")
    ap.add_argument("--params", default="{}", help="JSON object of parameters")
    ap.add_argument("--nonce", default=None, help="16 hex digits (random if omitted)")
    ap.add_argument("--invocation", default=None,
                    help="short id such as i3f9a2c (random if omitted)")
    args = ap.parse_args(argv)
    try:
        params = json.loads(args.params)
        if not isinstance(params, dict):
            raise ValueError("--params must be a JSON object")
        nonce = args.nonce or secrets.token_hex(8)
        if not re.fullmatch(r"[0-9a-f]{16}", nonce):
            raise ValueError("--nonce must be 16 lowercase hex digits")
        invocation = args.invocation or "i" + secrets.token_hex(3)
        if not re.fullmatch(r"[a-z0-9]{1,32}", invocation):
            raise ValueError("--invocation must be 1-32 of [a-z0-9]")
        script = assemble(args.probe_dir, params, nonce, invocation)
    except (OSError, ValueError) as exc:
        print("assemble.py: %s" % exc, file=sys.stderr)
        return 2
    sys.stdout.write(script)
    return 0


if __name__ == "__main__":
    sys.exit(main())
