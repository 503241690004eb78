#!/usr/bin/env python3
"""Draws the PNG plots of a rocebench report.

usage: plot.py INPUT.json OUTDIR

INPUT.json is what reports::plot_input() writes. A missing point is drawn as a gap in its line and
a red cross on the axis, never interpolated. Run with MPLBACKEND=Agg (the C++ side sets it).
"""
import json
import math
import re
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MAX_LINES = 12  # more lines than this in one plot cannot be told apart


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "plot"


def values(points, key):
    return [math.nan if p.get(key) is None else p[key] for p in points]


def mark_missing(ax, xs, ys, color, at=0):
    """A red cross on the axis (at y=`at`) where a point has no value."""
    gaps = [x for x, y in zip(xs, ys) if math.isnan(y)]
    if gaps:
        ax.plot(gaps, [at] * len(gaps), "x", color=color, markersize=9, mew=2, clip_on=False, label="_missing")


def save(fig, outdir, name, bottom=0.0):
    """`bottom`: the share of the figure's height kept free below the axes (a legend there)."""
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(f"{outdir}/{name}.png", dpi=110)
    plt.close(fig)


def key_text(key, names):
    """The series key as words, in the order of `names` (the report's labels)."""
    words = []
    for name in names:
        v = key.get(name)
        if v is None:
            continue
        if name == "batch":
            words.append(f"batch {v}")
        elif name == "bucket_mb":
            words.append("one bucket after backward" if v == 0 else f"buckets of {v:g} MiB")
        elif name == "servers":
            words.append(f"{v} server" + ("" if v == 1 else "s"))
        elif name == "timeline":
            words.append(f"timeline {v}")
        else:
            words.append(str(v))
    return " ".join(words)


def speedup(data, outdir):
    # One figure per model and engine: a replayed timeline and real compute are different experiments.
    by_model = {}
    for s in data.get("scaling", []):
        by_model.setdefault((s["model"] or "model", s["key"].get("engine", "")), []).append(s)
    engines_of = {}
    for model, engine in by_model:
        engines_of.setdefault(model, []).append(engine)
    for (model, engine), series in sorted(by_model.items()):
        series = series[:MAX_LINES]
        # What all lines share goes in the title; each legend entry says only how its line differs.
        names = [n for n in series[0]["key_order"] if any(n in s["key"] for s in series)]
        shared = [n for n in names if all(s["key"].get(n) == series[0]["key"].get(n) for s in series)]
        differing = [n for n in names if n not in shared] or ["mode"]
        fig, (ax_s, ax_e) = plt.subplots(1, 2, figsize=(11, 4.6))
        for s in series:
            xs = [p["gpus"] for p in s["points"]]
            sp = values(s["points"], "speedup")
            eff = values(s["points"], "efficiency")
            base = s["base_gpus"]
            label = key_text(s["key"], differing) + ("" if base in (0, 1) else f" (relative to {base})")
            line, = ax_s.plot(xs, sp, "o-", label=label)
            ax_e.plot(xs, eff, "o-", color=line.get_color(), label=label)
            mark_missing(ax_s, xs, sp, "red", at=1)  # log axis: 1 is its bottom
            mark_missing(ax_e, xs, eff, "red")
            ideal = [p["ideal"] for p in s["points"]]
            ax_s.plot(xs, ideal, "--", color="grey", alpha=0.5)
            predicted = values(s["points"], "predicted_speedup")
            if any(not math.isnan(v) for v in predicted):
                pairs_ = [(x, 1.0 if x == base else v) for x, v in zip(xs, predicted) if x == base or not math.isnan(v)]
                ax_s.plot([x for x, _ in pairs_], [v for _, v in pairs_], ":", marker="^", color=line.get_color(),
                          alpha=0.8, label="_predicted")
        ax_s.plot([], [], "--", color="grey", alpha=0.5, label="ideal")
        if any(p.get("predicted_speedup") is not None for s in series for p in s["points"]):
            ax_s.plot([], [], "k:", marker="^", alpha=0.8, label="predicted")
        for ax in (ax_s, ax_e):
            ax.set_xscale("log", base=2)
            ax.set_xlabel(series[0].get("ranks", "GPUs"))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
            ax.grid(True, alpha=0.3)
        ax_s.set_yscale("log", base=2)
        ax_s.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax_s.set_ylabel("speedup S(N) = X(N) / X(base)")
        ax_s.set_title("speedup")
        ax_e.set_ylabel("efficiency S(N) / (N / base)")
        ax_e.set_ylim(0, 1.1)
        ax_e.set_title("efficiency")
        # Below the axes, so that no line hides behind it.
        handles, labels = ax_s.get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=2 if len(labels) > 3 else len(labels), frameon=False)
        fig.suptitle(key_text(series[0]["key"], shared), fontsize=10)
        save(fig, outdir, f"speedup_{slug(model)}" + (f"_{slug(engine)}" if len(engines_of[model]) > 1 else ""),
             bottom=0.06 * math.ceil(len(labels) / 2))


def throughput(data, outdir):
    """Total images/s against GPUs, and beside it the efficiency, one figure per model with
    predictions: each sync mode in its own colour, measured lines solid with filled markers,
    predicted ones dashed with hollow markers and drawn from the largest measured point of their sync
    mode on (at the measured sizes a hollow marker only, to compare), and the ideal (N × the one-GPU
    images/s) in grey."""
    for figure in data.get("throughput", []):
        series = figure["series"][:MAX_LINES]
        fig, (ax, ax_e) = plt.subplots(1, 2, figsize=(12, 5), gridspec_kw={"width_ratios": [3, 2]})
        colours = {}
        for s in series:
            colours.setdefault(s["sync"], f"C{len(colours) % 10}")
        all_gpus = sorted({p["gpus"] for s in series for p in s["points"]})
        ideals = []  # one grey line per distinct one-GPU rate (a measured CPU and a predicted GPU differ)
        for s in series:
            per_gpu = s.get("ideal_per_gpu")
            if per_gpu and all(abs(per_gpu - o) > 0.05 * o for o, _ in ideals):  # within 5%: one line
                ideals.append((per_gpu, s["kind"]))
        for per_gpu, kind in ideals:
            ax.plot(all_gpus, [per_gpu * n for n in all_gpus], "-.", color="grey", alpha=0.6, lw=1,
                    label=f"ideal ({kind} 1 GPU × N)")
        ax_e.axhline(1.0, ls="-.", color="grey", alpha=0.6, lw=1)
        for s in sorted(series, key=lambda s: s["kind"]):  # measured first, drawn under the predicted
            colour = colours[s["sync"]]
            xs = [p["gpus"] for p in s["points"]]
            ys = values(s["points"], "images_per_s")
            effs = values(s["points"], "efficiency")
            if s["kind"] == "measured":
                ax.plot(xs, ys, "o-", color=colour, lw=2, label=s["line"])
                ax_e.plot(xs, effs, "o-", color=colour, lw=2)
                known = [y for y in ys if not math.isnan(y)]
                mark_missing(ax, xs, ys, "red", at=min(known) if known else 1)  # log axis: no 0
                continue
            beyond = s.get("beyond_gpus") or 0
            for axis, vs, label in ((ax, ys, s["line"]), (ax_e, effs, "_")):
                far = [(x, v) for x, v in zip(xs, vs) if x >= beyond and not math.isnan(v)]
                near = [(x, v) for x, v in zip(xs, vs) if x < beyond and not math.isnan(v)]
                axis.plot([x for x, _ in far], [v for _, v in far], "--", marker="o", mfc="white", color=colour, lw=1.6,
                          label=label)
                if near:
                    axis.plot([x for x, _ in near], [v for _, v in near], "o", mfc="white", color=colour, alpha=0.7,
                              label="_predicted at a measured size")
        ax.set_yscale("log", base=2)
        ax.set_ylabel("total images/s")
        ax.set_title("images/s against GPUs", fontsize=10)
        ax_e.set_ylim(0, 1.1)
        ax_e.set_ylabel("efficiency (images/s over N × one GPU's)")
        ax_e.set_title("efficiency", fontsize=10)
        for axis in (ax, ax_e):
            axis.set_xscale("log", base=2)
            axis.set_xlabel("GPUs")
            axis.grid(True, which="both", alpha=0.3)
            axis.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
        fig.suptitle(f"{figure['model']}: solid lines measured, dashed lines predicted (models.predict, not measured)",
                     fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3, frameon=False)
        save(fig, outdir, f"throughput_{slug(figure['model'])}", bottom=0.05 * math.ceil(len(labels) / 3))


def curves(data, key, outdir, prefix, xlabel):
    by_op = {}
    for c in data.get(key, []):
        by_op.setdefault(c["op"], []).append(c)
    for op, cs in sorted(by_op.items()):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for c in cs[:MAX_LINES]:
            xs = [p["x"] for p in c["points"]]
            ys = values(c["points"], "busbw")
            line, = ax.plot(xs, ys, "o-", markersize=3, label=c["label"])
            mark_missing(ax, xs, ys, "red")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("busbw (GB/s)")
        ax.set_title(f"{op}: bus bandwidth")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
        save(fig, outdir, f"{prefix}_{slug(op)}")


def latency_cdf(data, outdir):
    entries = data.get("latency", [])
    if not entries:
        return
    # The smallest message size of each probe: the latency people quote.
    smallest = {}
    for e in entries:
        key = e["series"]
        if key not in smallest or e["bytes"] < smallest[key]["bytes"]:
            smallest[key] = e
    levels = [("lat_us_min", 0.0), ("lat_us_p50", 0.5), ("lat_us_p99", 0.99), ("lat_us_p99_9", 0.999), ("lat_us_max", 1.0)]
    fig, ax = plt.subplots(figsize=(9, 4.8))
    from_quantiles = False
    for e in sorted(smallest.values(), key=lambda e: e["label"])[:MAX_LINES]:
        if e.get("samples"):
            # The empirical CDF of the recorded samples (thinned evenly by rank when there were many).
            xs = e["samples"]
            ys = [(i + 1) / len(xs) for i in range(len(xs))]
            ax.step(xs, ys, where="post", label=f"{e['label']} (n={e['n']})")
        else:
            pts = [(e["quantiles"][k], q) for k, q in levels if k in e["quantiles"]]
            if len(pts) < 2:
                continue
            from_quantiles = True
            ax.step([x for x, _ in pts], [q for _, q in pts], where="post", linestyle="--", marker="o", markersize=3,
                    label=f"{e['label']} (percentiles only)")
    ax.set_xscale("log")
    ax.set_xlabel("latency (µs)")
    ax.set_ylabel("fraction of messages")
    ax.set_ylim(0, 1.02)
    ax.set_title("latency CDF at the smallest size" + (" (dashed: records kept only percentiles)" if from_quantiles else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, outdir, "latency_cdf")


def pairs(data, outdir):
    for m in data.get("pairs", []):
        hosts = m["hosts"]
        grid = [[math.nan if c is None or c["value"] is None else c["value"] for c in row] for row in m["matrix"]]
        fig, ax = plt.subplots(figsize=(1.2 + 0.6 * len(hosts), 1.0 + 0.5 * len(hosts)))
        img = ax.imshow(grid, cmap="viridis_r" if "lat" in m["metric"] else "viridis")
        fig.colorbar(img, ax=ax, label=m["metric"])
        for i, row in enumerate(m["matrix"]):
            for j, c in enumerate(row):
                if i == j:
                    continue
                if c is None or c["value"] is None:
                    ax.text(j, i, "missing", ha="center", va="center", color="red", fontsize=6)
                elif c["flagged"]:
                    ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", lw=2))
        ax.set_xticks(range(len(hosts)), hosts, rotation=90, fontsize=7)
        ax.set_yticks(range(len(hosts)), hosts, fontsize=7)
        ax.set_xlabel("destination")
        ax.set_ylabel("source")
        ax.set_title(f"all pairs: {m['test']} (red: flagged)")
        save(fig, outdir, f"pairs_{slug(m['test'])}")


def trends(data, outdir):
    ts = data.get("trends", [])
    runs = data.get("runs", [])
    if not ts or len(runs) < 2:
        return
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for t in ts[:MAX_LINES]:
        first = next((v for v in t["values"] if v), None)
        if not first:
            continue
        ys = [math.nan if v is None else v / first for v in t["values"]]
        ax.plot(range(len(runs)), ys, "o-", markersize=3, label=f"{t['label']} ({t['metric']})")
    ax.axhline(1.0, color="k", alpha=0.3)
    times = data.get("run_times", [])
    ticks = [f"{r}\n{t[:16].replace('T', ' ')}" if t else r for r, t in zip(runs, times)] if times else runs
    ax.set_xticks(range(len(runs)), ticks, rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("relative to the first run")
    order = "by run time" if data.get("runs_by_time") else "in the order given (not every run has a run record)"
    ax.set_title(f"headline metrics across runs, {order}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6)
    save(fig, outdir, "trends")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    outdir = sys.argv[2]
    throughput(data, outdir)
    speedup(data, outdir)
    curves(data, "busbw_by_size", outdir, "busbw_size", "message size (bytes)")
    curves(data, "busbw_by_ranks", outdir, "busbw_ranks", "ranks")
    latency_cdf(data, outdir)
    pairs(data, outdir)
    trends(data, outdir)


if __name__ == "__main__":
    main()
