"""Where the tuner's times come from. Each backend measures every candidate choice at the
points it is given and counts what that cost (seconds of benchmarking).

  command    runs a command that prints the benchmark's "grid " lines, by default
             mpiexec -n RANKS bench_coll --grid ... (--bench-cmd replaces it: any program
             printing the same lines plugs in, such as roam's virtual nodes)
  table      looks the times up in an exhaustive dataset (dataset.py): the thesis' way to
             evaluate a tuner in simulation, where a measurement is a lookup
  simulated  the simulated machine (simulate.py)
"""

import os
import shlex
import subprocess
import time

from . import dataset
from .space import Point, candidates, is_pow2, near

DEFAULT_COMMAND = ("mpiexec --bind-to none -n {ranks} {bench} --grid --collectives {collective} "
                   "--sizes {sizes} --runs {runs} --target-ms {target_ms}")


def bench_seconds(us, runs=3, target_ms=5.0):
    """What the benchmark spends on one choice at one point taking `us` µs per call: a checked
    call, a calibrating call, then `runs` runs of calls filling about target_ms each (at least
    3, at most 2000 calls: bench/coll.cpp's reps_for)."""
    reps = min(max(int(target_ms * 1000.0 / max(us, 1.0)), 3), 2000)
    return (2 + runs * reps) * us * 1e-6


class Backend:
    """A source of measurements; `cost_s` adds up what they cost."""

    name = "backend"

    def __init__(self):
        self.cost_s = 0.0
        self.measured = dataset.Results()  # everything measured, as grid records

    def measure(self, collective, points):
        """{point: {label: µs}} for every candidate at each point."""
        raise NotImplementedError

    def non_pow2_sizes(self, collective, point):
        """Sizes not a power of two whose nearest power of two is point.bytes, measurable at
        point's configuration (empty: none)."""
        low, high = (3 * point.bytes + 3) // 4, (3 * point.bytes) // 2
        return [s for s in range(low, high + 1) if not is_pow2(s)]

    def _record(self, collective, point, times):
        for lab, us in times.items():
            alg, _, k = lab.partition(":")
            radix = 0 if alg == "linear" else (point.ranks if k == "P" else int(k))
            self.measured.add({"collective": collective, "ranks": point.ranks, "ppn": point.ppn,
                               "bytes": point.bytes, "alg": alg, "k": radix, "us": us})


class TableBackend(Backend):
    """Lookups in an exhaustive dataset; each costs what the benchmark would have spent."""

    name = "table"

    def __init__(self, results, runs=3, target_ms=5.0):
        super().__init__()
        self.results, self.runs, self.target_ms = results, runs, target_ms

    def measure(self, collective, points):
        table = self.results.times.get(collective)
        if table is None:
            raise KeyError(f"the dataset has no {collective} (it has "
                           f"{', '.join(self.results.collectives()) or 'nothing'})")
        out = {}
        for p in points:
            if p not in table:
                raise KeyError(f"the dataset has no {collective} at {p.ranks} ranks, {p.ppn} "
                               f"per node, {p.bytes} bytes")
            out[p] = dict(table[p])
            self.cost_s += sum(bench_seconds(us, self.runs, self.target_ms)
                               for us in out[p].values())
            self._record(collective, p, out[p])
        return out

    def non_pow2_sizes(self, collective, point):
        table = self.results.times.get(collective, {})
        return sorted(q.bytes for q in table
                      if (q.ranks, q.ppn) == (point.ranks, point.ppn) and not is_pow2(q.bytes)
                      and near(q.bytes, point.bytes))


class SimulatedBackend(Backend):
    """The simulated machine's times (deterministic noise included)."""

    name = "simulated"

    def __init__(self, machine, algorithms=None, runs=3, target_ms=5.0):
        super().__init__()
        self.machine, self.runs, self.target_ms = machine, runs, target_ms
        self.algorithms = algorithms

    def measure(self, collective, points):
        out = {}
        for p in points:
            labels = candidates(collective, p.ranks, self.algorithms or self.machine.algorithms)
            out[p] = {lab: self.machine.time_us(collective, lab, p) for lab in labels}
            self.cost_s += sum(bench_seconds(us, self.runs, self.target_ms)
                               for us in out[p].values())
            self._record(collective, p, out[p])
        return out


class CommandBackend(Backend):
    """Runs a command per configuration that prints "grid " lines, by default the
    benchmark under mpiexec. The command is a template: {ranks}, {ppn}, {nodes}, {bench},
    {collective}, {sizes} (comma-separated), {runs} and {target_ms} are filled in; the
    results must be at the points asked for (a run that places another number of ranks per
    node is an error: give a command that places {ppn} per node)."""

    name = "command"

    def __init__(self, bench, template=DEFAULT_COMMAND, runs=3, target_ms=5.0, timeout_s=1800,
                 extra_args=(), log=None):
        super().__init__()
        self.bench, self.template = bench, template
        self.runs, self.target_ms, self.timeout_s = runs, target_ms, timeout_s
        self.extra_args = list(extra_args)
        self.log = log

    def command(self, collective, ranks, ppn, sizes):
        values = {"ranks": ranks, "ppn": ppn, "nodes": max(1, ranks // max(ppn, 1)),
                  "bench": self.bench, "collective": collective,
                  "sizes": ",".join(str(s) for s in sizes), "runs": self.runs,
                  "target_ms": self.target_ms}
        try:
            words = shlex.split(self.template.format(**values))
        except (KeyError, IndexError) as e:
            raise ValueError(f"--bench-cmd '{self.template}': unknown placeholder {e}; known: "
                             + ", ".join("{" + k + "}" for k in values)) from None
        return words + self.extra_args

    def run(self, words):
        """The output of one command; a clear error when it cannot run or fails."""
        if "{bench}" in self.template and not (os.path.isfile(self.bench)
                                               and os.access(self.bench, os.X_OK)):
            raise RuntimeError(f"the benchmark {self.bench} is not an executable file: build it "
                               f"(cmake --build BUILD --target bench_coll) or give --bench")
        started = time.monotonic()
        try:
            done = subprocess.run(words, capture_output=True, text=True, timeout=self.timeout_s)
        except FileNotFoundError as e:
            raise RuntimeError(f"cannot run {shlex.join(words)}: {e}") from None
        except subprocess.TimeoutExpired as e:
            tail = (e.stderr or b"")[-2000:]
            tail = tail.decode(errors="replace") if isinstance(tail, bytes) else tail
            raise RuntimeError(f"{shlex.join(words)} ran past {self.timeout_s} s and was "
                               f"stopped; its stderr ends:\n{tail}") from None
        self.cost_s += time.monotonic() - started
        if self.log:
            self.log(f"ran {shlex.join(words)} ({time.monotonic() - started:.1f} s)")
        if done.returncode != 0 or "WRONG" in done.stdout:
            raise RuntimeError(f"{shlex.join(words)} failed (exit status {done.returncode}"
                               f"{', a result was WRONG' if 'WRONG' in done.stdout else ''}); "
                               f"its stderr ends:\n{done.stderr[-2000:]}")
        return done.stdout

    def measure(self, collective, points):
        by_config = {}
        for p in points:
            by_config.setdefault((p.ranks, p.ppn), []).append(p.bytes)
        out = {}
        for (ranks, ppn), sizes in sorted(by_config.items()):
            words = self.command(collective, ranks, ppn, sorted(set(sizes)))
            got = dataset.parse_output(self.run(words), shlex.join(words))
            table = got.times.get(collective, {})
            for s in sizes:
                p = Point(ranks, ppn, s)
                if p not in table:
                    seen = sorted(set((q.ranks, q.ppn) for q in table))
                    raise RuntimeError(
                        f"{shlex.join(words)} printed no {collective} at {ranks} ranks, {ppn} "
                        f"per node, {s} bytes (it printed ranks/ppn {seen or 'nothing'}): "
                        f"give a --bench-cmd that runs {{ranks}} ranks, {{ppn}} per node")
                out[p] = dict(table[p])
            self.measured.merge(got)
        return out
