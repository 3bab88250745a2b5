#!/usr/bin/env python3
"""Runs a traced command and checks its trace (the tracing layer's tests).

    check_trace.py --trace FILE [checks...] -- COMMAND...

The command must exit 0 and leave FILE, a Chrome trace-event JSON file; then every check
named on the command line must hold. Exits non-zero naming the first one that does not.
"""
import argparse
import collections
import csv
import glob
import json
import os
import subprocess
import sys


def fail(what):
    print("check_trace: FAILED: " + what, file=sys.stderr)
    sys.exit(1)


def main():
    args_list = sys.argv[1:]
    if "--" not in args_list:
        fail("usage: check_trace.py --trace FILE [checks] -- COMMAND...")
    cut = args_list.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--trace", required=True)
    p.add_argument("--nodes", type=int, help="the trace has exactly these nodes")
    p.add_argument("--handler", action="append", default=[],
                   help="NAME=N: exactly N runs of handler NAME that start at a message")
    p.add_argument("--suspended", action="append", default=[],
                   help="NAME=N: exactly N runs of NAME resumed after a suspension, each "
                        "linked to the run it continues")
    p.add_argument("--migrations", type=int, help="at least this many objects left a node")
    p.add_argument("--region", action="append", default=[],
                   help="NAME=N: exactly N regions NAME (one per node for a collective)")
    p.add_argument("--busy-csv", help="lb_synthetic's per-unit CSV directory: the spans of "
                                       "work_object::compute add up to its busy time within 2%%")
    p.add_argument("--limited", action="store_true",
                   help="the trace says a thread reached --roam-trace-limit")
    p.add_argument("--expect-output", help="text the command's output must contain")
    a = p.parse_args(args_list[:cut])
    command = args_list[cut + 1:]

    for stale in glob.glob(glob.escape(a.trace)) + glob.glob(glob.escape(a.trace) + ".part*"):
        os.remove(stale)
    run = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(run.stdout)
    if run.returncode != 0:
        fail("the command exited with %d" % run.returncode)
    if a.expect_output and a.expect_output not in run.stdout:
        fail("the output lacks '%s'" % a.expect_output)
    leftovers = glob.glob(a.trace + ".part*")
    if leftovers:
        fail("parts were left unmerged: %s" % leftovers)
    try:
        with open(a.trace) as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        fail("the trace does not load: %s" % e)
    events = trace["traceEvents"]
    print("check_trace: %d events: %s" % (len(events), dict(collections.Counter(e["ph"] for e in events))))

    names = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    for e in events:
        if e["ph"] in "XsfiC" and e.get("s") != "g" and e["pid"] not in names:
            fail("an event of a process without a name: %s" % e)
    if a.nodes is not None and sorted(names.values()) != sorted("node %d" % n for n in range(a.nodes)):
        fail("the trace names the processes %s, not nodes 0..%d" % (sorted(names.values()), a.nodes - 1))

    # Slices of one track nest (Perfetto draws nothing else): a slice that starts inside
    # another ends inside it too.
    tracks = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            if e["dur"] < 0:
                fail("a slice of negative duration: %s" % e)
            tracks[(e["pid"], e["tid"])].append(e)
    slack = 0.0015  # the format's resolution: a nanosecond, printed in microseconds
    for track, slices in tracks.items():
        slices.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ends = []
        for e in slices:
            while open_ends and open_ends[-1] <= e["ts"] + slack:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            if open_ends and end > open_ends[-1] + slack:
                fail("slices overlap without nesting on track %s: %s" % (track, e))
            open_ends.append(end)

    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = collections.defaultdict(list)
    for e in events:
        if e["ph"] == "f":
            ends[e["id"]].append(e)
    for flow, fs in ends.items():
        if len(fs) != 1:
            fail("flow %s ends %d times" % (flow, len(fs)))
        if flow not in starts:
            fail("flow %s ends but never starts: %s" % (flow, fs[0]))
        s = starts[flow]
        if s["cat"] != fs[0]["cat"]:
            fail("flow %s starts as %s and ends as %s" % (flow, s["cat"], fs[0]["cat"]))
        # Clocks of different processes are aligned to within half a round trip.
        if fs[0]["ts"] < s["ts"] - (0 if s["pid"] == fs[0]["pid"] else 50):
            fail("flow %s ends before it starts: %s, %s" % (flow, s, fs[0]))

    # Each slice that a flow ends at: the flow's end lies at the slice's start.
    slice_at = {}
    for e in events:
        if e["ph"] == "X":
            slice_at[(e["pid"], e["tid"], round(e["ts"], 3))] = e
    def flow_target(f):
        return slice_at.get((f["pid"], f["tid"], round(f["ts"], 3)))

    def check_runs(spec, resumed):
        """NAME=N: exactly N runs of NAME that start a handler (or that resume one), each at
        the end of an arrow from its send (from its suspension)."""
        name, count = spec.rsplit("=", 1)
        what, category = ("resumed runs", "resume") if resumed else ("runs", "message")
        runs = sum(1 for e in events if e["ph"] == "X" and e["name"] == name
                   and (e["args"]["part"] > 0) == resumed)
        if runs != int(count):
            fail("%d %s of handler %s, expected %s" % (runs, what, name, count))
        reached = sum(1 for fs in ends.values() if fs[0]["cat"] == category
                      and (flow_target(fs[0]) or {}).get("name") == name)
        if reached != int(count):
            fail("%d %s arrows end at %s, expected %s" % (reached, category, name, count))

    for spec in a.handler:
        check_runs(spec, False)
    for spec in a.suspended:
        check_runs(spec, True)

    if a.migrations is not None:
        moved = [e for e in events if e["ph"] == "i" and e.get("cat") == "migration"]
        if len(moved) < a.migrations:
            fail("%d objects left a node, expected at least %d" % (len(moved), a.migrations))

    for spec in a.region:
        name, count = spec.rsplit("=", 1)
        found = sum(1 for e in events if e["ph"] == "X" and e["name"] == name and e.get("cat") == "roam")
        if found != int(count):
            fail("%d regions %s, expected %s" % (found, name, count))

    if a.busy_csv:
        busy = 0.0
        for path in glob.glob(os.path.join(a.busy_csv, "*.csv")):
            with open(path) as f:
                busy += sum(float(r["end_s"]) - float(r["start_s"]) for r in csv.DictReader(f))
        spans = sum(e["dur"] for e in events
                    if e["ph"] == "X" and e["name"] == "work_object::compute") / 1e6
        if busy <= 0:
            fail("no busy time in %s" % a.busy_csv)
        print("check_trace: compute spans %.6f s, busy %.6f s (ratio %.4f)" % (spans, busy, spans / busy))
        if abs(spans / busy - 1) > 0.02:
            fail("handler spans (%.6f s) and busy time (%.6f s) differ by more than 2%%" % (spans, busy))
        sends = sum(1 for e in events if e["ph"] == "s" and e["cat"] == "message")
        print("check_trace: %d message flows start, %d end at a handler" % (sends, sum(1 for fs in ends.values() if fs[0]["cat"] == "message")))

    if a.limited:
        if not any(e["ph"] == "i" and e["name"].startswith("trace limit reached") for e in events):
            fail("no event marks where the trace limit was reached")
    print("check_trace: passed")


if __name__ == "__main__":
    main()
