# proc.sibling: can one evaluation see or signal another evaluation that is in flight at the same
# moment? The runner runs two calls at once (PARAMS["concurrent_with"] names the other) and then a
# closing call that reads both results (PARAMS["previous"]). Each call of the pair takes a name
# both can compute (comm, never a cmdline or environ), looks for the other's name in its /proc
# for overlap_s, and tries signal 0 on what it finds: a permission check that delivers nothing.
import errno, time

CALL = int(PARAMS.get("call", 1) or 1)
PARTNER = int(PARAMS.get("concurrent_with", 0) or 0)
OVERLAP_S = min(max(float(PARAMS.get("overlap_s", 3)), 0.5), 20.0)
PREVIOUS = [e for e in PARAMS.get("previous", []) or [] if isinstance(e, dict)]


def one_of_the_pair():
    named = set_comm(call_tag("spsb", CALL))
    emit("start", call=CALL, partner=PARTNER, named=named, overlap_s=OVERLAP_S)
    began, seen, signal_ok, signal_errno = time.time(), None, None, None
    until = time.monotonic() + OVERLAP_S
    while time.monotonic() < until:
        pids = pids_named(call_tag("spsb", PARTNER))
        if pids and seen is None:
            seen = pids[0]
            try:
                os.kill(seen, 0)
                signal_ok = True
            except OSError as exc:  # EPERM: seen, not signalable; ESRCH: gone meanwhile
                signal_ok = False if exc.errno == errno.EPERM else None
                signal_errno = errno_name(exc)
        time.sleep(0.1)
    result("looked", "absence" if seen is None else "positive", signal_errno,
           "call %d %s call %d" % (CALL, "saw" if seen else "did not see", PARTNER),
           call=CALL, concurrent_with=PARTNER, named=named, seen_pid=seen, could_signal=signal_ok,
           window=[round(began, 3), round(time.time(), 3)])


def saw_the_other(a, b):
    saw = ["call %s saw call %s (pid %s) and %s" % (
        me["call"], me["concurrent_with"], me["seen_pid"],
        "could signal it" if me.get("could_signal") else
        "could not signal it (%s)" % (me.get("errno") or "gone"))
        for me in (a, b) if me.get("seen_pid")]
    if saw:
        return "sibling_visible", "positive", None, "; ".join(saw)
    return None


def unnamed(a, b):
    if not (a.get("named") and b.get("named")):
        return "looked", "absence", None, "a call of the pair could not take its name"
    return None


def closing():
    judge_pair(CALL, PREVIOUS, ["named"], saw_the_other, unnamed, nothing="nothing to see",
               neither=" and neither saw the other")


if PARTNER:
    one_of_the_pair()
else:
    closing()
