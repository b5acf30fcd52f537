# net.metadata-gcp: the GCP metadata server as a client speaks it: GET with
# "Metadata-Flavor: Google" (the server answers 403 without it, and names itself with the same
# header in its answer). Any HTTP answer is reached.

TARGET = PARAMS.get("target", "{canary.http}")
PATH = PARAMS.get("path", "/computeMetadata/v1/instance/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def steps_of(host, port):
    steps = []
    answer = http_step(steps, "get-with-flavor", host, port, "GET", PATH, TIMEOUT_S,
                       {"Metadata-Flavor": "Google"})
    steps[-1]["flavor_google"] = bool(answer and answer[1].get("metadata-flavor") == "Google")
    return steps


run_metadata_probe(TARGET, steps_of)
