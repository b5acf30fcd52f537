# net.live-change: reach over time while the driver changes the running pod (kubernetes
# liveChange: a label added so that a policy comes to select the pod, or removed). Every
# interval_s, for window_s, a NEW TCP connection to the echo canary (a flow connection tracking
# has not seen), each tagged with the nonce: the canary logs each one with its time, and the
# harness judges those times against the driver's change (classify.live_change). The probe's own
# account (which tries answered) is reported, never judged: it cannot know when the change came.
import time

# No default target: a suite names the in-cluster canary ({canary.cluster.tcp}), which also makes
# the driver deploy it.
TARGET = PARAMS.get("target", "")
WINDOW_S = float(PARAMS.get("window_s", 12))
INTERVAL_S = float(PARAMS.get("interval_s", 0.25))
TIMEOUT_S = float(PARAMS.get("timeout_s", 1))
MAX_TRIES = 400  # bounds the record: 400 x [ms, "ECONNREFUSED"] is about 10 KiB
MIN_INTERVAL_S = 0.05


def main():
    emit("start", target=TARGET, window_s=WINDOW_S, interval_s=INTERVAL_S)
    if not isinstance(TARGET, str):
        return result("error", "absence", "EINVAL", "target must be a string host:port")
    if not TARGET or "{" in TARGET:  # blank, or a placeholder nobody filled: send nothing
        return result("no_target", "absence", None, "no target given (set params.target, e.g. "
                      "{canary.cluster.tcp})")
    if not (0 < TIMEOUT_S <= 10 and 0 < WINDOW_S <= 600 and INTERVAL_S <= WINDOW_S):
        return result("error", "absence", "EINVAL", "need 0 < timeout_s <= 10, 0 < window_s <= 600 "
                      "and interval_s <= window_s")
    try:
        host, port = split_hostport(TARGET, 7000)
    except ValueError:
        return result("error", "absence", "EINVAL", "target must be host:port")
    interval = max(MIN_INTERVAL_S, INTERVAL_S)
    start = time.time()
    tries, answered, last = [], 0, 0
    while len(tries) < MAX_TRIES and time.time() - start < WINDOW_S:
        began = time.time()
        try:
            outcome, _, err, _, _ = tcp_echo(host, port, TIMEOUT_S)
        except (UnicodeError, ValueError) as exc:  # a host no socket takes
            outcome, err = "error", errno_name(exc)
        last = int(began * 1000)
        answered += outcome == "reached"
        tries.append([last - int(start * 1000), "ok" if outcome == "reached" else err or outcome])
        left = WINDOW_S - (time.time() - start)
        time.sleep(max(0, min(left, interval - (time.time() - began))))
    first_held = next((t[0] for t in tries if t[1] != "ok"), None)
    # canary_decides: the kubernetes driver reads the canary's log again when it lags.
    result("sent", "absence", None, "%d tries over %.1fs, %d answered (the canary's log and the "
           "driver's change decide)" % (len(tries), time.time() - start, answered),
           target=TARGET, tries=tries, answered=answered, first_try_unix_ms=int(start * 1000),
           last_try_unix_ms=last, first_not_answered_ms=first_held,
           truncated=len(tries) >= MAX_TRIES and time.time() - start < WINDOW_S,
           canary_decides=True)

main()
