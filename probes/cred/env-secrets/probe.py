# cred.env-secrets: does the harness's planted canary secret reach the script's environment, and
# which secret-looking names are there? Values are only hashed in memory, never reported.
import re

CANARY_NAME = PARAMS.get("canary_name", "{canary.env_name}")
CANARY_SHA256 = PARAMS.get("canary_sha256", "{canary.env_sha256}").lower()
SECRET_LIKE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)

emit("start", canary_name=CANARY_NAME)
present = bool(CANARY_NAME) and CANARY_NAME in os.environ
# Matching the hash (not just the name) proves it is the harness's value, not a look-alike.
# os.fsencode gives back the exact bytes the harness hashed.
value_hash = hashlib.sha256(os.fsencode(os.environ[CANARY_NAME])).hexdigest() if present else None
matches = value_hash == CANARY_SHA256
facts = dict(canary_name=CANARY_NAME, canary_name_present=present, canary_matches=matches,
             env_count=len(os.environ),
             secret_like_names=sorted(n for n in os.environ if SECRET_LIKE.search(n))[:50])
if matches:
    result("present", "positive", None, "the canary secret is in the environment", **facts)
elif not CANARY_NAME:
    result("absent", "absence", None, "no canary configured: nothing to look for", **facts)
else:
    result("absent", "positive", None, "environment inspected: canary value not present", **facts)
