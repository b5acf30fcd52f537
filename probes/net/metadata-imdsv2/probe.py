# net.metadata-imdsv2: AWS IMDSv2 as a client speaks it. A GET without a token (IMDSv1), then a
# PUT for a session token and a GET with it: a sandbox whose filter stops only the tokenless GET
# (the request net.metadata sends) still lets the token flow through. Any HTTP answer to any of
# the three is reached, a 401 included: the packets got there and back.

TARGET = PARAMS.get("target", "{canary.http}")
PATH = PARAMS.get("path", "/latest/meta-data/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))

run_metadata_probe(TARGET, lambda host, port: imds_sequence(host, port, PATH, TIMEOUT_S))
