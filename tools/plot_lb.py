#!/usr/bin/env python3
"""Draws lb_synthetic's per-unit traces: one row per (node, worker), each unit of work a
segment from its start to its end (like Fig. 11 of the PREMA thesis), one PNG per CSV.

    python3 tools/plot_lb.py build/lb_synthetic/oneshot_*.csv

Needs matplotlib (Debian: python3-matplotlib). Prints the paths it wrote on stderr."""
import csv
import sys
from collections import defaultdict

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.exit("plot_lb.py: matplotlib is not installed (apt-get install python3-matplotlib)")


def plot(path):
    rows = defaultdict(list)
    policy = "?"
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            policy = r["policy"]
            rows[(int(r["node"]), int(r["worker"]))].append(
                (float(r["start_s"]), float(r["end_s"]), float(r["weight"])))
    keys = sorted(rows)
    fig, ax = plt.subplots(figsize=(10, 0.35 * max(4, len(keys)) + 1))
    for y, key in enumerate(keys):
        for start, end, weight in rows[key]:
            ax.broken_barh([(start, end - start)], (y - 0.4, 0.8),
                           facecolors="tab:red" if weight > 1 else "tab:blue",
                           edgecolors="black", linewidth=0.3)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"node {n} w{w}" for n, w in keys])
    ax.set_xlabel("seconds since the start")
    ax.set_title(f"{policy}: units of work per worker (red: heavy)")
    ax.invert_yaxis()
    fig.tight_layout()
    out = path.rsplit(".", 1)[0] + ".png"
    fig.savefig(out, dpi=90)
    plt.close(fig)
    print(out, file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        plot(p)
