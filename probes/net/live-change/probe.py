# net.live-change: reach over time while the driver changes the running pod (kubernetes
# liveChange: a label added so that a policy comes to select the pod, or removed). Every
# interval_s, for window_s, a NEW TCP connection to the echo canary (a flow connection tracking
# has not seen), each tagged with the nonce: the canary logs each one with its time, and the
# harness judges those times against the driver's change (classify.live_change). The probe's own
# account (which tries answered) is reported, never judged: it cannot know when the change came.
import time

TARGET = PARAMS.get("target", "{canary.cluster.tcp}")
WINDOW_S = float(PARAMS.get("window_s", 12))
INTERVAL_S = float(PARAMS.get("interval_s", 0.25))
TIMEOUT_S = float(PARAMS.get("timeout_s", 1))
MAX_TRIES = 400  # bounds the record: 400 x [ms, "ECONNREFUSED"] is about 10 KiB


def main():
    emit("start", target=TARGET, window_s=WINDOW_S, interval_s=INTERVAL_S)
    if not TARGET:
        return result("no_target", "absence", None, "no target given (set params.target)")
    try:
        host, port = split_hostport(TARGET, 7000)
    except ValueError:
        return result("error", "absence", "EINVAL", "target must be host:port")
    start = time.time()
    tries, answered, last = [], 0, 0
    while len(tries) < MAX_TRIES and time.time() - start < WINDOW_S:
        began = time.time()
        outcome, _, err, _, _ = tcp_echo(host, port, TIMEOUT_S)
        last = int(began * 1000)
        answered += outcome == "reached"
        tries.append([last - int(start * 1000), "ok" if outcome == "reached" else err or outcome])
        time.sleep(max(0, INTERVAL_S - (time.time() - began)))
    first_held = next((t[0] for t in tries if t[1] != "ok"), None)
    result("sent", "absence", None, "%d tries over %.1fs, %d answered (the canary's log and the "
           "driver's change decide)" % (len(tries), time.time() - start, answered),
           target=TARGET, tries=tries, answered=answered, first_try_unix_ms=int(start * 1000),
           last_try_unix_ms=last, first_not_answered_ms=first_held)


main()
