#!/usr/bin/env python3
"""tools/trace_views.py on lb_synthetic's trace agrees with lb_synthetic's own records.

    trace_views_test.py TRACE_VIEWS TRACE UNITS_CSV

UNITS_CSV holds every unit of work the benchmark ran (node, worker, start_s, end_s).
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(what):
    print("trace_views_test: FAILED: " + what, file=sys.stderr)
    sys.exit(1)


views, trace, units_csv = sys.argv[1:4]
with open(units_csv) as f:
    units = list(csv.DictReader(f))
busy_s = sum(float(u["end_s"]) - float(u["start_s"]) for u in units)
# Every worker of the job, those that ran no unit included (the trace names them all).
with open(trace) as f:
    workers = len({e["args"]["name"] for e in json.load(f)["traceEvents"]
                   if e["ph"] == "M" and e["name"] == "thread_name"
                   and re.match(r"roam-w\d+\.\d+$", e["args"]["name"])})
with tempfile.TemporaryDirectory() as out:
    run = subprocess.run([sys.executable, views, trace, "--out", out, "--bins", "50"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(run.stdout)
    if run.returncode != 0:
        fail("trace_views.py exited with %d" % run.returncode)
    stem = os.path.join(out, os.path.splitext(os.path.basename(trace))[0])
    for suffix in ("_utilization.png", "_timeline.png", "_handler_times.png", "_message_sizes.png"):
        if not os.path.exists(stem + suffix) or os.path.getsize(stem + suffix) < 2000:
            fail("no picture %s%s" % (stem, suffix))
    with open(stem + "_handlers.csv") as f:
        handlers = {r["handler"]: r for r in csv.DictReader(f)}
    compute = handlers.get("work_object::compute")
    if compute is None:
        fail("the handler table lacks work_object::compute: %s" % sorted(handlers))
    if int(compute["runs"]) != len(units):
        fail("the table counts %s runs of compute, the benchmark ran %d units" % (compute["runs"], len(units)))
    total_s = float(compute["total_ms"]) / 1e3
    if abs(total_s / busy_s - 1) > 0.02:
        fail("the table's compute time %.6f s differs from the busy time %.6f s by more than 2%%" % (total_s, busy_s))
    all_s = sum(float(r["total_ms"]) for r in handlers.values()) / 1e3
    with open(stem + "_utilization.csv") as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    if len(header) - 1 != len({u["node"] for u in units}):
        fail("utilization columns %s, the benchmark ran on %d nodes" % (header, len({u["node"] for u in units})))
    if workers % (len(header) - 1) != 0:
        fail("%d workers named in the trace, not as many on each of %d nodes" % (workers, len(header) - 1))
    values = [float(v) for r in rows for v in r[1:]]
    if min(values) < 0 or max(values) > 1.0001:
        fail("a utilization outside [0, 1]: %g .. %g" % (min(values), max(values)))
    bin_s = float(rows[1][0]) - float(rows[0][0])
    # Each node's column is the mean over its workers: back to worker-seconds.
    per_node_workers = workers / (len(header) - 1)
    from_bins = sum(values) * bin_s * per_node_workers
    print("trace_views_test: busy %.6f s (units), %.6f s (compute runs), %.6f s (utilization), "
          "%.6f s (all handlers)" % (busy_s, total_s, from_bins, all_s))
    if not busy_s * 0.98 <= from_bins <= all_s * 1.02:
        fail("the utilization adds up to %.6f worker-seconds, outside [%.6f, %.6f]" %
             (from_bins, busy_s * 0.98, all_s * 1.02))
print("trace_views_test: passed")
