#!/usr/bin/env python3
"""tools/trace_merge.py appends the events of parts that rank 0 could not read."""
import json
import os
import subprocess
import sys
import tempfile

merge = sys.argv[1]
with tempfile.TemporaryDirectory() as d:
    trace = os.path.join(d, "t.json")
    with open(trace, "w") as f:
        f.write('{"traceEvents":[\n{"ph":"i","s":"g","name":"clocks aligned","pid":1,"tid":0,"ts":0.000}'
                ',\n{"ph":"X","name":"a","pid":1,"tid":1,"ts":1.000,"dur":2.000}\n],"otherData":{"ranks":3}}\n')
    parts = []
    for rank, name in ((1, "b"), (2, "c")):
        part = trace + ".part%d" % rank
        with open(part, "w") as f:
            f.write(',\n{"ph":"X","name":"%s","pid":%d,"tid":1,"ts":1.000,"dur":1.000}'
                    ',\n{"ph":"M","name":"process_name","pid":%d,"args":{"name":"node %d"}}' % (name, rank + 1, rank + 1, rank))
        parts.append(part)
    subprocess.run([sys.executable, merge, trace] + parts, check=True)
    with open(trace) as f:
        merged = json.load(f)
    names = sorted(e["name"] for e in merged["traceEvents"] if e["ph"] == "X")
    assert names == ["a", "b", "c"], names
    assert merged["otherData"]["ranks"] == 3
    assert len(merged["traceEvents"]) == 6, merged
print("trace_merge: passed")
