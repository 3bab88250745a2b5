"""The metrics of a way of choosing (FACT's, thesis Table 3.2), over an exhaustive grid:

  Average Selected Algorithm Slowdown  mean over the grid's points of t(chosen) / t(best)
  Significant Mistake Proportion       fraction of points where t(chosen) > 1.10 t(best)
  Classification Accuracy              fraction of points where chosen is best
  collection cost                      fraction of the grid's points measured, and the
                                       benchmark time spent (also as a fraction of the
                                       exhaustive grid's)
"best" is the fastest of roam's algorithms and radices measured at the point. The MPI
library's collective is timed, not chosen among roam's: its slowdown can be below 1 and it
has no accuracy.
"""

import shlex
import subprocess

from .measure import bench_seconds
from .space import label

MISTAKE = 1.10


def metrics(truth, choose, points=None):
    """{slowdown, mistakes, accuracy, points} of choose(point) -> a label, or a time in µs
    (accuracy None then), over truth = {point: {label: µs}}."""
    points = sorted(truth) if points is None else points
    slow, mistakes, correct, labelled = 0.0, 0, 0, True
    for p in points:
        times = truth[p]
        best_label = min(times, key=times.get)
        best = times[best_label]
        c = choose(p)
        if isinstance(c, str):
            if c not in times:
                raise ValueError(f"the choice {c} at {p.ranks} ranks, {p.ppn} per node, "
                                 f"{p.bytes} bytes was not measured there")
            t = times[c]
            correct += c == best_label
        else:
            t, labelled = float(c), False
        slow += t / best
        mistakes += t > MISTAKE * best
    n = len(points)
    return {"slowdown": slow / n, "mistakes": mistakes / n,
            "accuracy": correct / n if labelled else None, "points": n}


def exhaustive_seconds(truth, runs, target_ms):
    return sum(bench_seconds(us, runs, target_ms) for times in truth.values()
               for us in times.values())


def binomial(point):
    """roam before the generalized algorithms: the binomial tree everywhere (allgather its
    gather + bcast, allreduce its reduce + bcast)."""
    return label("knomial", 2, point.ranks)


def roam_choices(bench, collective, points, model=None, rules_file=None):
    """{point: label} that roam's own rules pick: rules_from(cost_model{α, β, γ, o}) (model) or
    a rules file, through bench_coll --default-choices (no MPI run)."""
    words = [bench, "--default-choices"]
    words += ["--model", ",".join(repr(float(x)) for x in model)] if model else \
        ["--rules", rules_file]
    query = "".join(f"{collective} {p.ranks} {p.ppn} {p.bytes}\n" for p in points)
    try:
        done = subprocess.run(words, input=query, capture_output=True, text=True, timeout=600)
    except FileNotFoundError as e:
        raise RuntimeError(f"cannot run {shlex.join(words)}: {e}") from None
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(words)} failed (exit status {done.returncode}): "
                           f"{done.stderr.strip()[-2000:]}")
    out = {}
    lines = done.stdout.splitlines()
    if len(lines) != len(points):
        raise RuntimeError(f"{shlex.join(words)} answered {len(lines)} lines for "
                           f"{len(points)} queries")
    for p, line in zip(points, lines):
        f = line.split()
        out[p] = label(f[4], int(f[5]), p.ranks)
    return out


def row(name, m, measured=None, seconds=None, total_seconds=None):
    acc = "—" if m["accuracy"] is None else f"{m['accuracy']:.2f}"
    pts = "—" if measured is None else \
        f"{measured / m['points']:.1%} ({measured}/{int(m['points'])})"
    sec = "—" if seconds is None else \
        f"{seconds:.1f} s ({seconds / total_seconds:.1%})" if total_seconds else f"{seconds:.1f} s"
    return f"| {name} | {m['slowdown']:.3f} | {m['mistakes']:.3f} | {acc} | {pts} | {sec} |"


HEADER = ("| collective: chooser | Average Slowdown | Significant Mistakes | Accuracy | "
          "grid measured | benchmark time |\n|---|---|---|---|---|---|")
