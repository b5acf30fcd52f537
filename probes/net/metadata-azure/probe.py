# net.metadata-azure: Azure's Instance Metadata Service as a client speaks it: GET with
# "Metadata: true" and an api-version (the service answers 400 without either). Any HTTP answer
# is reached.

TARGET = PARAMS.get("target", "{canary.http}")
PATH = PARAMS.get("path", "/metadata/instance?api-version=2021-02-01")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def steps_of(host, port):
    steps = []
    http_step(steps, "get-with-metadata-header", host, port, "GET", PATH, TIMEOUT_S,
              {"Metadata": "true"})
    return steps


run_metadata_probe(TARGET, steps_of)
