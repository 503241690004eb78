# Trend pages of `rocebench history trends` (compiled into the binary): one PNG per series over
# time with its change points marked, and index.html with the most recent regressions first.
#   trends.py INPUT.json OUT_DIR
import html
import json
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLOURS = {"REGRESSED": "#c0392b", "IMPROVED": "#27ae60", "UNKNOWN": "#e67e22", "SAME": "#7f8c8d"}


def draw(s, out_dir):
    xs = list(range(len(s["points"])))
    ys = [p["value"] for p in s["points"]]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    ax.plot(xs, ys, marker="o", markersize=3, linewidth=1, color="#2c3e50")
    for c in s["changes"]:
        ax.axvline(c["index"] - 0.5, color="#8e44ad", linestyle="--", linewidth=1)
        ax.annotate(f"{c['step'] * 100:+.1f}%", (c["index"] - 0.5, max(ys)), fontsize=8, color="#8e44ad",
                    ha="left", va="top")
    if s.get("judged_from") is not None:
        ax.axvspan(s["judged_from"] - 0.5, len(xs) - 0.5, color=COLOURS[s["call"]], alpha=0.12)
    ticks = xs[:: max(1, len(xs) // 8)]
    ax.set_xticks(ticks)
    # Month, day and time: nightly runs differ by day, runs of one day by the hour.
    ax.set_xticklabels([s["points"][i]["time"][5:16].replace("T", " ") for i in ticks], rotation=30, fontsize=7)
    ax.set_ylabel(s["metric"])
    ax.set_title(textwrap.fill(f"{s['call']}: {s['label']}", 140), fontsize=7, color=COLOURS[s["call"]])
    fig.tight_layout()
    fig.savefig(f"{out_dir}/{s['id']}.png", dpi=90)
    plt.close(fig)


def main():
    doc = json.load(open(sys.argv[1]))
    out_dir = sys.argv[2]
    series = doc["series"]
    for s in series:
        draw(s, out_dir)
    order = {"REGRESSED": 0, "UNKNOWN": 1, "IMPROVED": 2, "SAME": 3}
    # Most recent regressions first: by verdict, then by the time of the judged step, newest first.
    series.sort(key=lambda s: s.get("since") or "", reverse=True)
    series.sort(key=lambda s: order[s["call"]])
    rows = []
    for s in series:
        since = s.get("since_run")
        rows.append(
            f"<tr><td style='color:{COLOURS[s['call']]}'><b>{s['call']}</b></td>"
            f"<td>{html.escape(s['machine'])}</td><td><a href='{s['id']}.png'>{html.escape(s['label'])}</a></td>"
            f"<td>{html.escape(s['why'])}</td><td>{html.escape(since or '')}</td></tr>")
    with open(f"{out_dir}/index.html", "w") as f:
        f.write("<!doctype html><meta charset='utf-8'><title>rocebench trends</title>"
                "<style>body{font-family:sans-serif;font-size:13px}td{padding:2px 8px;vertical-align:top}</style>"
                f"<h1>rocebench trends</h1><p>{len(series)} series from {html.escape(doc['db'])}; "
                "most recent regressions first.</p><table><tr><th>verdict</th><th>machine</th><th>series</th>"
                "<th>why</th><th>from run</th></tr>" + "\n".join(rows) + "</table>\n")


if __name__ == "__main__":
    main()
