# net.metadata-alt: a metadata service at an address outside 169.254.0.0/16, in the shared address
# space 100.64.0.0/10 some clouds use (Alibaba Cloud: 100.100.100.200). A sandbox that blocks
# link-local addresses only leaks here. A plain GET; any HTTP answer is reached.

TARGET = PARAMS.get("target", "{canary.http}")
PATH = PARAMS.get("path", "/latest/meta-data/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def steps_of(host, port):
    steps = []
    http_step(steps, "get", host, port, "GET", PATH, TIMEOUT_S)
    return steps


run_metadata_probe(TARGET, steps_of)
