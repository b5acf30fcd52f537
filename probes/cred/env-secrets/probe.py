# cred.env-secrets: does the harness's planted canary secret reach the script's environment, and
# which secret-looking names are there? Values are only hashed in memory, never reported.
import re

CANARY_NAME = PARAMS.get("canary_name", "")
CANARY_SHA256 = PARAMS.get("canary_sha256", "").lower()
SECRET_LIKE = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)

emit("start", canary_name=CANARY_NAME)
value = os.environ.get(CANARY_NAME) if CANARY_NAME else None
# Matching the hash (not just the name) proves it is the harness's value, not a look-alike.
matches = value is not None and hashlib.sha256(value.encode()).hexdigest() == CANARY_SHA256
del value
facts = dict(canary_name=CANARY_NAME, canary_name_present=CANARY_NAME in os.environ if CANARY_NAME else False,
             canary_matches=matches, env_count=len(os.environ),
             secret_like_names=sorted(n for n in os.environ if SECRET_LIKE.search(n))[:50])
if matches:
    result("present", "positive", None, "the canary secret is in the environment", **facts)
elif not CANARY_NAME:
    result("absent", "absence", None, "no canary configured: nothing to look for", **facts)
else:
    result("absent", "positive", None, "environment inspected: canary not present", **facts)
