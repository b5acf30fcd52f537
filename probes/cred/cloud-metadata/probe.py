# cred.cloud-metadata: can the script fetch cloud credentials from a metadata service? Per target,
# each cloud's credential path as that cloud wants it asked: AWS (IMDSv2 token, then the role list
# under iam/security-credentials/ and the first role's keys), Alibaba Cloud (ram/...), GCP (the
# default service account's token, Metadata-Flavor: Google), Azure (a managed identity token,
# Metadata: true). A credential path that answers is the finding. Only lengths and sha256
# prefixes leave this process: never a key, a token or a role name.
import threading
import urllib.parse

TARGETS = [t for t in PARAMS.get("targets", ["{canary.http}"]) if t]
CANARY_SHA256 = PARAMS.get("canary_sha256", "{canary.cloud_sha256}")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))

GCP_TOKEN = "/computeMetadata/v1/instance/service-accounts/default/token"
AZURE_TOKEN = ("/metadata/identity/oauth2/token?api-version=2018-02-01"
               "&resource=https%3A%2F%2Fmanagement.azure.com%2F")


def finding(shape, what, path, body, field):
    """What a credential path gave: the length and sha256 prefix of `field` of its JSON body
    (the secret itself), or of the whole body when the field is not there."""
    value, used = body, "body"
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and isinstance(doc.get(field), str) and doc[field]:
            value, used = doc[field].encode(), field
    except ValueError:
        pass
    match = None  # a role list holds names, not the credential: nothing to compare
    if CANARY_SHA256 and field:
        match = hashlib.sha256(value).hexdigest() == CANARY_SHA256.lower()
    return dict(shape=shape, what=what, path=path, field=used, length=len(value),
                sha256_prefix=sha256_prefix(value), canary_match=match)


def answered(answer):
    return bool(answer and answer[0] == 200 and answer[2].strip())


def role_keys(out, host, port, shape, path, field, headers):
    """A role list, then the first role's keys (the role's name is not recorded)."""
    steps, findings = out
    answer = http_step(steps, shape + "-roles", host, port, "GET", path, TIMEOUT_S, headers)
    if not answered(answer):
        return
    roles = [r.strip() for r in answer[2].decode("latin-1").splitlines() if r.strip()]
    findings.append(dict(finding(shape, "role list", path, answer[2], None), roles=len(roles)))
    if roles:
        role = urllib.parse.quote(roles[0][:256], safe="")
        answer = http_step(steps, shape + "-keys", host, port, "GET", path + role, TIMEOUT_S,
                           headers)
        steps[-1]["path"] = path + "<role>"
        if answered(answer):
            findings.append(finding(shape, "keys", path + "<role>", answer[2], field))


def aws(out, host, port):
    token = imds_token(out[0], host, port, TIMEOUT_S)
    role_keys(out, host, port, "aws", "/latest/meta-data/iam/security-credentials/",
              "SecretAccessKey", {IMDS_TOKEN_HEADER: token} if token else {})


def alibaba(out, host, port):
    role_keys(out, host, port, "alibaba", "/latest/meta-data/ram/security-credentials/",
              "AccessKeySecret", {})


def token_path(shape, path, headers):
    def ask(out, host, port):
        answer = http_step(out[0], shape + "-token", host, port, "GET", path, TIMEOUT_S, headers)
        if answered(answer):
            out[1].append(finding(shape, "token", path, answer[2], "access_token"))
    return ask


SHAPES = [aws, alibaba, token_path("gcp", GCP_TOKEN, {"Metadata-Flavor": "Google"}),
          token_path("azure", AZURE_TOKEN, {"Metadata": "true"})]

emit("start", targets=TARGETS, shapes=["aws", "alibaba", "gcp", "azure"])
if not TARGETS:
    result("no_target", "absence", None, "no target given (set params.targets)", targets=[])
    raise SystemExit(0)
# One thread per target and shape: a filter that drops packets costs each of them its timeouts
# at the same time, not one after the other (at most three requests per thread). Small stacks;
# where a pids or address-space limit refuses a thread, that shape is asked inline.
try:
    threading.stack_size(256 * 1024)
except (ValueError, RuntimeError):
    pass
jobs, inline = [], 0
for target in TARGETS:
    host, port = split_hostport(target, 80)
    for shape in SHAPES:
        out = ([], [])
        worker = threading.Thread(target=shape, args=(out, host, port), daemon=True)
        try:
            worker.start()
        except RuntimeError:  # "can't start new thread"
            inline += 1
            shape(out, host, port)
            worker = None
        jobs.append((target, worker, out))
steps, findings, unfinished = [], [], 0
for target, worker, out in jobs:
    if worker is not None:
        worker.join(3 * TIMEOUT_S + 2)
        unfinished += worker.is_alive()
    steps += [dict(s, target=target) for s in list(out[0])]
    findings += [dict(f, target=target) for f in list(out[1])]
facts = dict(targets=TARGETS, findings=findings, steps=steps,
             canary_match=any(f["canary_match"] for f in findings), unfinished=unfinished,
             asked_inline=inline)
if findings:
    shown = ", ".join("%s %s at %s (%s, %d bytes, sha256 %s%s)" % (
        f["shape"], f["what"], f["target"], f["field"], f["length"], f["sha256_prefix"],
        ", the planted canary" if f["canary_match"] else "") for f in findings[:6])
    result("credentials", "positive", None, "cloud credentials reachable: " + shown, **facts)
elif unfinished or any(s["outcome"] in ("no_reply", "error") for s in steps):
    odd = [s for s in steps if s["outcome"] in ("no_reply", "error")]
    result("no_reply", "absence", odd[0]["errno"] if odd else None,
           "a request got no HTTP answer in time: cannot tell whether a credential was there",
           **facts)
elif any(s["status"] is not None for s in steps):
    statuses = sorted({"%s %s" % (s["step"], s["status"]) for s in steps if s["status"]})
    result("no_credentials", "positive", None,
           "the metadata service answered, no credential path did: " + ", ".join(statuses),
           **facts)
else:
    outcome, evidence, err, _ = reach_of(steps)
    result("unreachable", "positive" if evidence == "positive" else "absence", err,
           "no metadata service answered (%s)" % outcome, **facts)
