#!/usr/bin/env python3
"""Merges the parts of a roam trace that rank 0 could not read (ranks without a shared
file system) into the trace rank 0 wrote.

    trace_merge.py TRACE PART [PART ...]

TRACE is the file rank 0 wrote (--roam-trace); each PART a `TRACE.part<rank>` file of
another rank. Writes the merged trace over TRACE; the parts are left in place.
"""
import json
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    trace_file, parts = sys.argv[1], sys.argv[2:]
    with open(trace_file) as f:
        trace = json.load(f)
    for part in parts:
        with open(part) as f:
            text = f.read().strip()
        # A part is the ranks' events, each after a comma: the elements of a JSON array.
        events = json.loads("[" + text.lstrip(",") + "]") if text else []
        trace["traceEvents"].extend(events)
        print("%s: %d events" % (part, len(events)))
    with open(trace_file, "w") as f:
        json.dump(trace, f)
    print("%s: %d events in all" % (trace_file, len(trace["traceEvents"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
