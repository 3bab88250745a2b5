#!/usr/bin/env python3
"""Views of a roam trace (--roam-trace): where the time went, per worker and per handler.

    python3 tools/trace_views.py TRACE.json [--out DIR] [--bins N]

Writes, beside the trace (or in DIR), files named after it:
  <stem>_utilization.png   utilization over time: each node (the share of its workers' time
                           spent in handlers, whichever node a handler ran for) and each
                           worker (a heat map), as Projections' time profile
  <stem>_utilization.csv   the same numbers: bin start (s), then one column per node
  <stem>_timeline.png      each worker's handler runs over time, coloured by handler (the
                           load-balance picture that tools/plot_lb.py draws from lb_synthetic's
                           own records, here from any traced run)
  <stem>_handlers.csv      per handler: runs, total, mean and longest time (also printed;
                           a run that suspended counts once, with every part's time)
  <stem>_handler_times.png a histogram of run times of the handlers that took the most time
  <stem>_message_sizes.png a histogram of the payload sizes of the messages handlers ran
Prints the table and the paths it wrote. Needs matplotlib and numpy (Debian:
python3-matplotlib python3-numpy).
"""
import argparse
import collections
import csv
import json
import os
import re
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
except ImportError:
    sys.exit("trace_views.py: matplotlib and numpy are needed (apt-get install python3-matplotlib python3-numpy)")


def load(path):
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    nodes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e["ph"] == "M" and e["name"] == "thread_name"}
    runs = [e for e in events if e["ph"] == "X" and e.get("cat") == "handler"]
    return nodes, threads, runs


def outermost(runs):
    """The runs of one track that no other run of that track contains (a handler that runs
    another inline counts once)."""
    out, end = [], -1.0
    for r in sorted(runs, key=lambda r: (r["ts"], -r["dur"])):
        if r["ts"] >= end:
            out.append(r)
            end = r["ts"] + r["dur"]
    return out


WORKER = re.compile(r"roam-w(\d+)\.(\d+)$")


def node_number(nodes, pid):
    name = nodes.get(pid, "node %d" % (pid - 1))
    return int(name.split()[-1]) if name.split()[-1].isdigit() else pid - 1


def thread_tracks(nodes, threads, runs):
    """The handler runs of each thread. A worker (named roam-w<node>.<index>) is one track
    whatever node its runs were for (in one process a worker may deliver to, and admit for,
    another node); other threads are a track per (node, thread). Returns the tracks of the
    workers, or of every thread when none is named as a worker, each as (label, node, runs)."""
    workers, others = collections.defaultdict(list), collections.defaultdict(list)
    for name in threads.values():  # every worker, those that ran nothing included
        match = WORKER.match(name)
        if match:
            workers[(int(match.group(1)), int(match.group(2)))]
    for r in runs:
        name = threads.get((r["pid"], r["tid"]), "")
        match = WORKER.match(name)
        if match:
            workers[(int(match.group(1)), int(match.group(2)))].append(r)
        else:
            others[(r["pid"], r["tid"])].append(r)
    if workers:
        return [("node %d %s" % (n, "roam-w%d.%d" % (n, i)), n, workers[(n, i)]) for n, i in sorted(workers)]
    return [("node %d %s" % (node_number(nodes, pid), threads.get((pid, tid), "thread %d" % tid)),
             node_number(nodes, pid), others[(pid, tid)]) for pid, tid in sorted(others)]


def handler_table(runs):
    """Per handler: runs (a run that suspended and resumed counts once), total time (every
    part; a handler that runs another inline counts that time too) and the longest part."""
    stats = collections.defaultdict(lambda: [0, 0.0, 0.0])
    for r in runs:
        s = stats[r["name"]]
        s[0] += r["args"].get("part", 0) == 0
        s[1] += r["dur"]
        s[2] = max(s[2], r["dur"])
    return sorted(stats.items(), key=lambda kv: -kv[1][1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("trace")
    p.add_argument("--out", help="directory of the views (default: the trace's)")
    p.add_argument("--bins", type=int, default=200, help="time bins of the utilization views")
    a = p.parse_args()
    nodes, threads, runs = load(a.trace)
    if not runs:
        sys.exit("trace_views.py: %s has no handler runs" % a.trace)
    out_dir = a.out or os.path.dirname(os.path.abspath(a.trace))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.join(out_dir, os.path.splitext(os.path.basename(a.trace))[0])
    written = []

    # ---- per handler -----------------------------------------------------------------
    table = handler_table(runs)
    with open(stem + "_handlers.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["handler", "runs", "total_ms", "mean_us", "max_us"])
        for name, (count, total, longest) in table:
            w.writerow([name, count, "%.6f" % (total / 1e3), "%.3f" % (total / max(count, 1)), "%.3f" % longest])
    written.append(stem + "_handlers.csv")
    width = min(60, max(len(n) for n, _ in table))
    print("%-*s %9s %12s %11s %11s" % (width, "handler", "runs", "total_ms", "mean_us", "max_us"))
    for name, (count, total, longest) in table:
        print("%-*s %9d %12.3f %11.3f %11.3f" % (width, name[:width], count, total / 1e3, total / max(count, 1), longest))

    top = [name for name, _ in table[:6]]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    durations = [r["dur"] for r in runs]
    low, high = max(min(durations), 0.01), max(max(durations), 0.02)
    bins = np.logspace(np.log10(low), np.log10(high * 1.01), 50)
    for name in top:
        ax.hist([r["dur"] for r in runs if r["name"] == name], bins=bins, histtype="step", label=name[:50])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("run time (µs)")
    ax.set_ylabel("runs")
    ax.set_title("run times of the handlers that took the most time")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(stem + "_handler_times.png", dpi=90)
    plt.close(fig)
    written.append(stem + "_handler_times.png")

    sizes = [r["args"].get("bytes", 0) for r in runs if r["args"].get("part", 0) == 0]
    fig, ax = plt.subplots(figsize=(9, 4))
    edges = [0] + [2 ** k for k in range(0, 33)]
    counts, _ = np.histogram(sizes, bins=edges + [2 ** 33])
    used = [i for i, c in enumerate(counts) if c]
    labels = ["0" if edges[i] == 0 else "<%s" % human(edges[i + 1]) for i in used]
    ax.bar(range(len(used)), [counts[i] for i in used])
    ax.set_xticks(range(len(used)))
    ax.set_xticklabels(labels, rotation=45, fontsize=8)
    ax.set_xlabel("payload bytes")
    ax.set_ylabel("messages")
    ax.set_title("sizes of the messages handlers ran (%d messages)" % len(sizes))
    fig.tight_layout()
    fig.savefig(stem + "_message_sizes.png", dpi=90)
    plt.close(fig)
    written.append(stem + "_message_sizes.png")

    # ---- over time -------------------------------------------------------------------
    worker_tracks = thread_tracks(nodes, threads, runs)
    start = min(r["ts"] for r in runs)
    end = max(r["ts"] + r["dur"] for r in runs)
    span = max(end - start, 1e-3)
    edges = np.linspace(start, end, a.bins + 1)
    width_us = edges[1] - edges[0]
    busy = np.zeros((len(worker_tracks), a.bins))
    for row, (_, _, track_runs) in enumerate(worker_tracks):
        for r in outermost(track_runs):
            b0, b1 = r["ts"], r["ts"] + r["dur"]
            first = min(int((b0 - start) / width_us), a.bins - 1)
            last = min(int((b1 - start) / width_us), a.bins - 1)
            for b in range(first, last + 1):
                overlap = min(b1, edges[b + 1]) - max(b0, edges[b])
                if overlap > 0:
                    busy[row, b] += overlap
    busy = np.clip(busy / width_us, 0, 1)
    node_ids = sorted({node for _, node, _ in worker_tracks})
    per_node = {n: busy[[i for i, t in enumerate(worker_tracks) if t[1] == n]].mean(axis=0)
                for n in node_ids}
    with open(stem + "_utilization.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["start_s"] + ["node %d" % n for n in node_ids])
        for b in range(a.bins):
            w.writerow(["%.6f" % ((edges[b] - start) / 1e6)] + ["%.4f" % per_node[n][b] for n in node_ids])
    written.append(stem + "_utilization.csv")

    seconds = (edges[:-1] - start) / 1e6
    fig, (top_ax, map_ax) = plt.subplots(2, 1, figsize=(10, 3 + 0.22 * len(worker_tracks) + 3),
                                         gridspec_kw={"height_ratios": [3, max(2, 0.22 * len(worker_tracks))]})
    for n in node_ids:
        top_ax.plot(seconds, per_node[n] * 100, label="node %d" % n, linewidth=1)
    top_ax.set_ylabel("busy (%)")
    top_ax.set_ylim(0, 105)
    top_ax.set_title("utilization over time: time in handlers per node (mean %.0f %%)" % (busy.mean() * 100))
    if len(node_ids) <= 16:
        top_ax.legend(fontsize=7, ncol=min(8, len(node_ids)))
    image = map_ax.imshow(busy * 100, aspect="auto", interpolation="nearest", cmap="viridis",
                          extent=(0, span / 1e6, len(worker_tracks) - 0.5, -0.5), vmin=0, vmax=100)
    map_ax.set_yticks(range(len(worker_tracks)))
    map_ax.set_yticklabels([label for label, _, _ in worker_tracks], fontsize=6)
    map_ax.set_xlabel("seconds since the first handler")
    fig.colorbar(image, ax=map_ax, label="busy (%)")
    fig.tight_layout()
    fig.savefig(stem + "_utilization.png", dpi=90)
    plt.close(fig)
    written.append(stem + "_utilization.png")

    colours = {name: plt.cm.tab10(i % 10) for i, name in enumerate(top)}
    fig, ax = plt.subplots(figsize=(10, 0.35 * max(4, len(worker_tracks)) + 1.5))
    for row, (_, _, track_runs) in enumerate(worker_tracks):
        segments = collections.defaultdict(list)
        for r in outermost(track_runs):
            segments[r["name"] if r["name"] in colours else None].append(((r["ts"] - start) / 1e6, r["dur"] / 1e6))
        for name, bars in segments.items():
            ax.broken_barh(bars, (row - 0.4, 0.8), facecolors=colours.get(name, "lightgray"),
                           edgecolors="black" if len(bars) < 2000 else "none", linewidth=0.2)
    ax.set_yticks(range(len(worker_tracks)))
    ax.set_yticklabels([label for label, _, _ in worker_tracks], fontsize=7)
    ax.set_xlabel("seconds since the first handler")
    ax.set_title("handler runs per worker")
    ax.legend(handles=[matplotlib.patches.Patch(color=c, label=n[:50]) for n, c in colours.items()]
              + [matplotlib.patches.Patch(color="lightgray", label="other handlers")], fontsize=7,
              loc="upper right")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(stem + "_timeline.png", dpi=90)
    plt.close(fig)
    written.append(stem + "_timeline.png")

    for path in written:
        print("wrote", path, file=sys.stderr)


def human(n):
    for unit in ("", "Ki", "Mi", "Gi"):
        if n < 1024:
            return "%d%s" % (n, unit)
        n //= 1024
    return "%dTi" % n



if __name__ == "__main__":
    main()
