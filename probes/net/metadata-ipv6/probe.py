# net.metadata-ipv6: the metadata service's IPv6 endpoint (AWS: [fd00:ec2::254]), spoken as
# IMDSv2 (a GET without a token, the PUT for a token, the GET with it). A sandbox that blocks the
# IPv4 address only leaks here. Any HTTP answer is reached.

TARGET = PARAMS.get("target", "{canary.http6}")
PATH = PARAMS.get("path", "/latest/meta-data/")
TIMEOUT_S = float(PARAMS.get("timeout_s", 3))


def steps_of(host, port):
    steps = imds_sequence(host, port, PATH, TIMEOUT_S)
    try:  # said, not judged: a suite that aims this row at an IPv4 address measures IPv4
        ipv6 = ipaddress.ip_address(host.split("%")[0]).version == 6
    except ValueError:
        ipv6 = None  # a name: whichever family it resolves to
    for s in steps:
        s["ipv6_literal"] = ipv6
    return steps


run_metadata_probe(TARGET, steps_of)
