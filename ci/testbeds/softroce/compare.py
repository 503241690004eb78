#!/usr/bin/env python3
"""rocebench next to perftest: judges interleaved rounds of both tools on the same device.

Input: lines "ROUND TEST TOOL FIGURE" (TOOL perftest | rocebench; FIGURE t_typical in us for *_lat,
BW average in Gb/s for *_bw; no FIGURE: the run gave none, which fails the test).

The rule, per test, from each tool's n runs:
  mode jumps  runs more than 3x away from the median of both tools' runs are dropped (and counted): under
              TCG a whole run can land on multiples of the guest's 4 ms tick, for either tool
  ratio       R = median(rocebench) / median(perftest)
  spread      s = max(1.4826 * MAD, range / d2(n)) / median of each tool (relative run-to-run standard deviation,
              by whichever estimator sees more: MAD alone misses a second mode; perftest's write_bw at 64 KiB lands
              at ~0.30 or ~0.42 Gb/s from run to run, and 3 runs of 4 in one mode give a MAD of almost 0)
  tolerance   tol = max(target, 3 * 1.2533 * sqrt(s_pt^2 / n_pt + s_rb^2 / n_rb))  (three standard errors
              of the ratio of two medians; target 5% latency, 2% bandwidth: never asked closer than that)
  verdict     |R - 1| <= tol: agree; else DISAGREE. A test left with a tolerance of 1/3 or more (or fewer
              than 2 runs of a tool) could not tell a factor 2 from agreement: TOO NOISY. Why 1/3: a test
              that agrees has R up to 1 + tol; halved, R/2 disagrees for sure only while 1 - (1 + tol)/2 > tol.
Exit 0 when every test agrees, 1 when one disagrees or lacks a figure, 77 when none disagrees but one was
too noisy to judge, 2 on bad input. --scale F multiplies every rocebench figure by F first (a
deliberately wrong comparison: 0.5 halves the bandwidth and the latency).
"""
import argparse
import math
import statistics
import sys

TARGET = {"lat": 0.05, "bw": 0.02}
TOO_NOISY = 1 / 3  # the widest tolerance at which every agreeing test, halved, disagrees
MODE_JUMP = 3.0
AGREE, DISAGREE, NOISY = 0, 1, 77


def load(path, scale):
    runs = {}  # test -> tool -> [figure or None]
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) not in (3, 4) or fields[2] not in ("perftest", "rocebench"):
                sys.exit(f"{path}:{lineno}: expected 'ROUND TEST perftest|rocebench [FIGURE]', got {line.strip()!r}")
            _, test, tool = fields[:3]
            try:
                value = float(fields[3]) if len(fields) == 4 else None
            except ValueError:
                sys.exit(f"{path}:{lineno}: FIGURE {fields[3]!r} is not a number")
            if value is not None and tool == "rocebench":
                value *= scale
            runs.setdefault(test, {"perftest": [], "rocebench": []})[tool].append(value)
    return runs


# The mean range of n normal samples in standard deviations (d2 of control charts), n = 2..10.
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


def spread(values):
    m = statistics.median(values)
    mad = 1.4826 * statistics.median(abs(x - m) for x in values)
    by_range = (max(values) - min(values)) / D2[min(len(values), 10)]
    return m, max(mad, by_range) / m


def judge(test, tools):
    """(verdict, one line about the test)."""
    kind = "bw" if test.endswith("bw") else "lat"
    unit = "BW average Gb/s" if kind == "bw" else "t_typical us"
    missing = {t: v.count(None) for t, v in tools.items() if None in v}
    if missing or not all(tools.values()):
        return DISAGREE, f"{test:9} {unit}: runs without a figure: {missing or 'a tool has no run'}"
    pooled = statistics.median(tools["perftest"] + tools["rocebench"])
    kept = {t: [x for x in v if pooled / MODE_JUMP <= x <= pooled * MODE_JUMP] for t, v in tools.items()}
    dropped = sum(len(tools[t]) - len(kept[t]) for t in tools)
    pt, rb = kept["perftest"], kept["rocebench"]
    head = f"{test:9} {unit}: perftest {tools['perftest']}, rocebench {tools['rocebench']}, {dropped} mode jump(s) dropped"
    if len(pt) < 2 or len(rb) < 2:
        return NOISY, f"{head}: fewer than 2 runs of a tool left: TOO NOISY"
    (mp, sp), (mr, sr) = spread(pt), spread(rb)
    r = mr / mp
    tol = max(TARGET[kind], 3 * 1.2533 * math.sqrt(sp * sp / len(pt) + sr * sr / len(rb)))
    verdict = AGREE if abs(r - 1) <= tol else DISAGREE
    if verdict == AGREE and tol >= TOO_NOISY:
        verdict = NOISY
    words = {AGREE: "agree", DISAGREE: "DISAGREE", NOISY: "TOO NOISY (could not tell a factor 2)"}[verdict]
    return verdict, (f"{head}; medians perftest {mp:.3f} (spread {sp:.3f}, n={len(pt)}), rocebench {mr:.3f} "
                     f"(spread {sr:.3f}, n={len(rb)}): ratio {r:.3f}, tolerance {tol:.3f}: {words}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rounds", help="file of 'ROUND TEST TOOL FIGURE' lines")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply rocebench's figures by this first")
    a = ap.parse_args()
    try:
        runs = load(a.rounds, a.scale)
    except OSError as e:
        sys.exit(f"cannot read {a.rounds}: {e.strerror}")
    if not runs:
        print(f"{a.rounds}: no rounds")
        return DISAGREE
    verdicts = set()
    for test, tools in runs.items():
        verdict, line = judge(test, tools)
        print(line)
        verdicts.add(verdict)
    return DISAGREE if DISAGREE in verdicts else NOISY if NOISY in verdicts else AGREE


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as e:  # bad input: exit 2 with the message
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
