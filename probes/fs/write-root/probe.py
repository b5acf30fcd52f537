# fs.write-root: can the script create files in system directories? EROFS proves a read-only
# mount; EACCES only proves this user lacks permission (root, or a writable mount, would succeed).

PATHS = list(PARAMS.get("paths", ["/", "/etc", "/usr/bin"]))
# Not a nonce-only name: the control arm may run at the same time on the same host (the
# invocation id differs), and another arm's file must not turn into EEXIST here.
NAME = ".sandprobe-%s-%s" % (NONCE, INVOCATION)


def try_create(directory):
    path = os.path.join(directory, NAME)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        return {"path": directory, "created": False, "errno": errno_name(exc)}
    try:
        os.unlink(path)  # at once: the control arm writes to a real machine
        removed = True
    except OSError:
        removed = False
    return {"path": directory, "created": True, "errno": None, "removed": removed}


emit("start", paths=PATHS)
attempts = [try_create(p) for p in PATHS]
created = [a["path"] for a in attempts if a["created"]]
errnos = sorted({a["errno"] for a in attempts if a["errno"]})
if created:
    result("created", "positive", None, "created a file in: %s" % ", ".join(created),
           created=created, attempts=attempts)
elif "EROFS" in errnos and set(errnos) <= {"EROFS", "ENOENT", "ENOTDIR"}:
    result("refused", "positive", ",".join(errnos), "read-only filesystem (EROFS)",
           created=[], attempts=attempts)
else:
    result("refused", "absence", ",".join(errnos) or None, "refused, but not with EROFS: "
           "EACCES/EPERM/ENOENT are weaker evidence than a read-only mount", created=[],
           attempts=attempts)
