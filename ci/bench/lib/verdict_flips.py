"""Verdict flips between repeated runs of one suite (ci/bench/reliability.d/flips).

A row is one (arm, probe) cell of a report.json (docs/design.md, "Reports"): for a candidate arm
its verdict and evidence kind (`verdicts`), for a control arm its observation's exposure and
evidence kind (`observations`; a flipping control turns the candidate INCONCLUSIVE). A probe that
a suite lists twice is told apart by its place (#1, #2) because parameters carry per-run canary
ports. A row FLIPS when its state is not the same in every run of a condition; a row missing
from a run counts as the state "missing". Between two conditions (idle, load) a row flips when
both were steady but disagree.
"""
import collections
import json


def row_states(report):
    """{row name: state} of one report (a dict loaded from report.json)."""
    states, seen = {}, collections.Counter()

    def put(arm, probe, state):
        seen[(arm, probe)] += 1
        n = seen[(arm, probe)]
        states[f"{arm} {probe}" + (f" #{n}" if n > 1 else "")] = state

    candidates = {a["name"] for a in report.get("arms", []) if a.get("role") == "candidate"}
    for v in report.get("verdicts", []):
        put(v["candidate"], v["probe"], f"{v['verdict']}/{v.get('evidence_kind', '')}")
    for o in report.get("observations", []):
        if o["arm"] not in candidates:
            put(o["arm"], o["probe"], f"{o['exposure']}/{o.get('evidence_kind', '')}")
    return states


def row_labels(report):
    """{row name: observation label} of every arm ("OOM killed", "SIGKILL", "REACHED"): the
    evidence behind a verdict, which can change while the verdict holds (informational)."""
    labels, seen = {}, collections.Counter()
    for o in report.get("observations", []):
        seen[(o["arm"], o["probe"])] += 1
        n = seen[(o["arm"], o["probe"])]
        labels[f"{o['arm']} {o['probe']}" + (f" #{n}" if n > 1 else "")] = o.get("label", "")
    return labels


def tally(runs):
    """{row: Counter(state -> runs)} over a list of row_states() results."""
    rows = sorted(set().union(*runs)) if runs else []
    return {r: collections.Counter(run.get(r, "missing") for run in runs) for r in rows}


def flipped(counts):
    """The rows of a tally() whose state is not the same in every run: {row: Counter}."""
    return {r: c for r, c in counts.items() if len(c) > 1}


def between(a, b):
    """Rows steady in tally a and in tally b but with different states: {row: (state a, b)}."""
    out = {}
    for r in sorted(set(a) | set(b)):
        ca, cb = a.get(r), b.get(r)
        if ca is None or cb is None:
            out[r] = (next(iter(ca)) if ca else "missing", next(iter(cb)) if cb else "missing")
        elif len(ca) == 1 and len(cb) == 1 and ca.keys() != cb.keys():
            out[r] = (next(iter(ca)), next(iter(cb)))
    return out


def describe(counter):
    """'PASS/positive x19, INCONCLUSIVE/none x1' (most frequent first)."""
    return ", ".join(f"{s} x{n}" for s, n in counter.most_common())


def load(paths, rows=row_states):
    runs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            runs.append(rows(json.load(f)))
    return runs


if __name__ == "__main__":  # verdict_flips.py REPORT.json... : the flipped rows as JSON
    import sys
    counts = tally(load(sys.argv[1:]))
    json.dump({"rows": len(counts), "flips": {r: dict(c) for r, c in flipped(counts).items()}},
              sys.stdout, indent=1)
    print()
