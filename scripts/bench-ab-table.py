"""Reads the runs of scripts/bench-ab (a-N.json, b-N.json in one folder)
and prints, per scenario, fabriq against libzmq in the same run for build
A and for build B (medians over the runs), B's figure over A's, and the
A/A band: libzmq against itself (the A' trial) over every run of both
builds. A change is a result only outside that band.

    python3 scripts/bench-ab-table.py target/ab/run-...
"""

import json
import statistics
import sys
from pathlib import Path


def figure(trial, pattern):
    """Higher is better: msg/s, or 1/p50 for round trips."""
    m = trial.get("metrics") or {}
    if pattern == "reqrep":
        lat = m.get("latency") or {}
        p50 = lat.get("p50_ns")
        return 1e9 / p50 if p50 else None
    return m.get("msg_per_s")


def per_run(path):
    """key -> (fabriq/libzmq, libzmq A'/A) for one run."""
    out = {}
    data = json.loads(Path(path).read_text())
    for sc in data["scenarios"]:
        pattern = sc["key"].split("/")[0]
        by_slot = {}
        for t in sc["trials"]:
            if t.get("ok"):
                f = figure(t, pattern)
                if f:
                    by_slot.setdefault(t["slot"], []).append(f)
        a, b, a2 = (by_slot.get(s) for s in ("A", "B", "A2"))
        if a and b:
            out[sc["key"]] = (
                statistics.median(b) / statistics.median(a),
                statistics.median(a2) / statistics.median(a) if a2 else None,
            )
    return out


def main():
    folder = Path(sys.argv[1])
    runs = {"a": [], "b": []}
    for p in sorted(folder.glob("*.json")):
        runs[p.name[0]].append(per_run(p))
    keys = []
    for r in runs["a"] + runs["b"]:
        for k in r:
            if k not in keys:
                keys.append(k)
    print(f"pairs: {len(runs['a'])} A runs, {len(runs['b'])} B runs; "
          "figures are fabriq/libzmq in the same run (REQ/REP: libzmq p50 / fabriq p50)")
    print()
    print("| scenario | A: fabriq/libzmq | B: fabriq/libzmq | B/A | A/A band (libzmq A'/A) | verdict |")
    print("|---|---|---|---|---|---|")
    worse = 0
    for k in keys:
        ra = [r[k][0] for r in runs["a"] if k in r]
        rb = [r[k][0] for r in runs["b"] if k in r]
        band = [r[k][1] for r in runs["a"] + runs["b"] if k in r and r[k][1]]
        if not ra or not rb:
            continue
        ma, mb = statistics.median(ra), statistics.median(rb)
        ratio = mb / ma
        lo, hi = (min(band), max(band)) if band else (None, None)
        if lo is None:
            verdict = "no band"
        elif ratio < lo:
            verdict = "SLOWER"
            worse += 1
        elif ratio > hi:
            verdict = "faster"
        else:
            verdict = "within noise"
        band_text = f"{lo:.2f}-{hi:.2f}" if lo is not None else "n/a"
        print(f"| {k} | {ma:.2f} ({min(ra):.2f}-{max(ra):.2f}) | "
              f"{mb:.2f} ({min(rb):.2f}-{max(rb):.2f}) | {ratio:.2f} | {band_text} | {verdict} |")
    print()
    print(f"scenarios slower than the A/A band: {worse}")


if __name__ == "__main__":
    main()
