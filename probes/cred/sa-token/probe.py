# cred.sa-token: can the script read a Kubernetes service-account token (or the harness's planted
# canary token file)? Only the length and a sha256 prefix of a file ever leave this process.

PATHS = list(PARAMS.get("paths", ["/var/run/secrets/kubernetes.io/serviceaccount/token"]))
CANARY_PATH = PARAMS.get("canary_path", "{canary.token_file}")
# Refusals that prove the file is not there for us; anything else (EISDIR, EIO) is weaker.
DENIED = {"ENOENT", "EACCES", "ENOTDIR", "EPERM"}


def inspect(path):
    fact = {"path": path, "readable": False, "length": None, "sha256_prefix": None, "errno": None}
    try:
        with open(path, "rb") as f:
            data = f.read(1 << 20)  # tokens are a few KiB; a bound keeps a hostile file harmless
    except OSError as exc:
        fact["errno"] = errno_name(exc)
        return fact
    digest = sha256_prefix(data) if data else None
    fact.update(readable=True, length=len(data), sha256_prefix=digest)
    return fact


emit("start", paths=PATHS, canary_path=CANARY_PATH)
files = [inspect(p) for p in PATHS]
canary = inspect(CANARY_PATH) if CANARY_PATH else None
checked = files + ([canary] if canary else [])
# The canary counts like any token path: it is how a control arm without a real pod shows exposure.
leaked = [f["path"] for f in checked if f["readable"] and f["length"]]
facts = dict(files=files, canary_readable=bool(canary and canary["readable"] and canary["length"]),
             canary=canary, readable_paths=leaked)
if leaked:
    result("readable", "positive", None, "readable, non-empty: %s" % ", ".join(leaked), **facts)
else:
    errnos = sorted({f["errno"] for f in checked if f["errno"]})
    proof = "positive" if all(f["errno"] in DENIED for f in checked) else "absence"
    result("unreadable", proof, ",".join(errnos) or None, "no non-empty token readable", **facts)
