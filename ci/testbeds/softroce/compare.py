#!/usr/bin/env python3
"""rocebench next to perftest: judges interleaved rounds of both tools on the same device.

Input: lines "ROUND TEST TOOL FIGURE" (TOOL perftest | rocebench; FIGURE t_typical in us for *_lat,
BW average in Gb/s for *_bw; no FIGURE: the run gave none, which fails the test).

The rule, per test, from each tool's n runs:
  mode jumps  runs more than 3x away from the median of the tool's own runs are dropped (and counted): under
              TCG a whole run can land on multiples of the guest's 4 ms tick, for either tool. A tool's own
              median keeps at least half of its runs, however far the two tools are apart
  ratio       R = median(rocebench) / median(perftest)
  coarse      0.5 < R < 2, else DISAGREE: a factor 2 (bits for bytes, a lost round trip, a wrong size) is
              always a failure, never "too noisy"
  spread      s = max(1.4826 * MAD, range / d2(n)) / median of each tool (relative run-to-run standard deviation,
              by whichever estimator sees more: MAD alone misses a second mode; perftest's write_bw at 64 KiB lands
              at ~0.30 or ~0.42 Gb/s from run to run, and 3 runs of 4 in one mode give a MAD of almost 0)
  tolerance   tol = 3 * 1.2533 * sqrt(s_pt^2 / n_pt + s_rb^2 / n_rb)  (three standard errors of the ratio of
              two medians) + q_pt / 2 / median_pt + q_rb / 2 / median_rb, q being the step of the figures as
              the tool printed them (perftest prints 0.46 Gb/s: its median can be 0.005 off however many runs,
              1.1% of the figure)
  fine        |R - 1| <= target (5% latency, 2% bandwidth): agree. Beyond the target but within tol: the two
              tools' own spreads explain the difference: TOO NOISY to judge. Beyond tol: DISAGREE. Fewer than 2
              runs of a tool: no spread, TOO NOISY (the coarse check still judges).
Exit 0 when every test agrees, 1 when one disagrees or lacks a figure, 77 when none disagrees but one was
too noisy to judge, 2 on bad input. --coarse judges the coarse check alone (exit 0 or 1). --scale F
multiplies every rocebench figure by F first (a deliberately wrong comparison: 0.125 for bits as bytes).
"""
import argparse
import math
import statistics
import sys

TARGET = {"lat": 0.05, "bw": 0.02}
COARSE = 2.0  # rocebench within a factor of this of perftest, whatever the noise
MODE_JUMP = 3.0
AGREE, DISAGREE, NOISY = 0, 1, 77


def load(path, scale):
    """(runs: test -> tool -> [figure or None], resolution: test -> tool -> the coarsest printed step)."""
    runs, resolution = {}, {}
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
            step = printed_step(fields[3]) if value is not None else 0.0
            if value is not None and tool == "rocebench":
                value, step = value * scale, step * scale
            runs.setdefault(test, {"perftest": [], "rocebench": []})[tool].append(value)
            steps = resolution.setdefault(test, {})
            steps[tool] = max(steps.get(tool, 0.0), step)
    return runs, resolution


def printed_step(text):
    """The step of a figure as printed: 0.46 -> 0.01, 12 -> 1, 1.5e-3 -> 0.0001."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


# The mean range of n normal samples in standard deviations (d2 of control charts), n = 2..10.
D2 = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


def spread(values):
    m = statistics.median(values)
    mad = 1.4826 * statistics.median(abs(x - m) for x in values)
    by_range = (max(values) - min(values)) / D2[min(len(values), 10)]
    return m, max(mad, by_range) / m


def judge(test, tools, steps, coarse_only=False):
    """(verdict, one line about the test)."""
    kind = "bw" if test.endswith("bw") else "lat"
    unit = "BW average Gb/s" if kind == "bw" else "t_typical us"
    missing = {t: v.count(None) for t, v in tools.items() if None in v}
    if missing or not all(tools.values()):
        return DISAGREE, f"{test:9} {unit}: runs without a figure: {missing or 'a tool has no run'}"
    kept = {}
    for tool, runs in tools.items():
        own = statistics.median(runs)
        kept[tool] = [x for x in runs if own / MODE_JUMP <= x <= own * MODE_JUMP]
    dropped = sum(len(tools[t]) - len(kept[t]) for t in tools)
    pt, rb = kept["perftest"], kept["rocebench"]
    r = statistics.median(rb) / statistics.median(pt)
    head = (f"{test:9} {unit}: perftest {tools['perftest']}, rocebench {tools['rocebench']}, {dropped} mode jump(s) "
            f"dropped; ratio {r:.3f}")
    if not 1 / COARSE < r < COARSE:
        return DISAGREE, f"{head}: a factor {max(r, 1 / r):.2f} apart: DISAGREE"
    if coarse_only:
        return AGREE, f"{head}: within a factor {COARSE:g}: agree"
    if len(pt) < 2 or len(rb) < 2:
        return NOISY, f"{head}: fewer than 2 runs of a tool left, no spread: TOO NOISY"
    (mp, sp), (mr, sr) = spread(pt), spread(rb)
    rounding = steps.get("perftest", 0.0) / 2 / mp + steps.get("rocebench", 0.0) / 2 / mr
    tol = 3 * 1.2533 * math.sqrt(sp * sp / len(pt) + sr * sr / len(rb)) + rounding
    if abs(r - 1) <= TARGET[kind]:
        verdict, words = AGREE, f"within the target {TARGET[kind]:g}: agree"
    elif abs(r - 1) <= tol:
        verdict, words = NOISY, "the spreads explain the difference: TOO NOISY"
    else:
        verdict, words = DISAGREE, "beyond what the spreads explain: DISAGREE"
    return verdict, (f"{head}; medians perftest {mp:.3f} (spread {sp:.3f}, n={len(pt)}), rocebench {mr:.3f} "
                     f"(spread {sr:.3f}, n={len(rb)}), tolerance {tol:.3f} (printed rounding {rounding:.3f}): {words}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rounds", help="file of 'ROUND TEST TOOL FIGURE' lines")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply rocebench's figures by this first")
    ap.add_argument("--coarse", action="store_true", help="judge only the coarse check (within a factor 2)")
    a = ap.parse_args()
    try:
        runs, resolution = load(a.rounds, a.scale)
    except OSError as e:
        sys.exit(f"cannot read {a.rounds}: {e.strerror}")
    if not runs:
        print(f"{a.rounds}: no rounds")
        return DISAGREE
    verdicts = {}
    for test, tools in runs.items():
        verdict, line = judge(test, tools, resolution.get(test, {}), a.coarse)
        print(line)
        verdicts[test] = verdict
    noisy = [test for test, verdict in verdicts.items() if verdict == NOISY]
    if noisy and DISAGREE not in verdicts.values():
        print(f"SKIP: too noisy to judge finely: {', '.join(noisy)} (the tools' own spreads explain the difference)")
    return DISAGREE if DISAGREE in verdicts.values() else NOISY if noisy else AGREE


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as e:  # bad input: exit 2 with the message
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
