"""Benchmark results as the benchmark prints them: one JSON object per "grid " line.

  grid {"collective":"allreduce","ranks":4,"ppn":4,"bytes":8,"alg":"knomial","k":4,"us":12.3}

bench_coll --grid prints one per algorithm and radix, one with "alg":"mpi" (the MPI
library's own collective) and one with "alg":"default" and "choice":"knomial k=2" (roam's
automatic choice). A dataset file holds the same objects one per line, with or without the
"grid " prefix; lines that are neither (the benchmark's other output) are skipped when
parsing a run's output and refused in a file.
"""

import gzip
import json

from .space import Point, label

PREFIX = "grid "
REQUIRED = ("collective", "ranks", "ppn", "bytes", "alg", "us")


class Results:
    """Times by collective and point: the candidates' by label, the MPI library's, and roam's
    automatic choice (its label) where the benchmark printed them."""

    def __init__(self):
        self.times = {}    # collective -> Point -> {label: µs}
        self.mpi = {}      # collective -> Point -> µs
        self.default = {}  # collective -> Point -> (label, µs)
        self.records = []  # every record, in order (for writing back)

    def add(self, record):
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ValueError(f"a grid record lacks {', '.join(missing)}: {json.dumps(record)}")
        c = record["collective"]
        point = Point(int(record["ranks"]), int(record["ppn"]), int(record["bytes"]))
        us = float(record["us"])
        alg = record["alg"]
        if alg == "mpi":
            self.mpi.setdefault(c, {})[point] = us
        elif alg == "default":
            name, _, k = record.get("choice", "").partition(" k=")
            self.default.setdefault(c, {})[point] = (label(name, int(k or 0), point.ranks), us)
        else:
            lab = label(alg, int(record.get("k", 0)), point.ranks)
            self.times.setdefault(c, {}).setdefault(point, {})[lab] = us
        self.records.append(record)

    def merge(self, other):
        for r in other.records:
            self.add(r)

    def collectives(self):
        return [c for c in self.times]

    def points(self, collective):
        return sorted(self.times.get(collective, {}))

    def write(self, path):
        with (gzip.open(path, "wt") if str(path).endswith(".gz") else open(path, "w")) as f:
            for r in self.records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")


def parse_output(text, source):
    """The results in a benchmark run's output (`source` names it in errors)."""
    results = Results()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith(PREFIX):
            continue
        try:
            results.add(json.loads(line[len(PREFIX):]))
        except (ValueError, TypeError) as e:
            raise ValueError(f"{source}: line {number}: {e}: {line!r}") from None
    return results


def load(path):
    """A dataset file: JSON objects one per line, each optionally prefixed "grid " (gzipped
    when its name ends in .gz)."""
    results = Results()
    with (gzip.open(path, "rt") if str(path).endswith(".gz") else open(path)) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith(PREFIX):
                line = line[len(PREFIX):]
            try:
                results.add(json.loads(line))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{number}: {e}") from None
    return results
