"""The generalized algorithms at their default radix against the fixed-radix versions they
generalize, as the MPI library implements them (thesis 4.5: "within 1.06x in the worst
case"). Each pair runs in one bench_coll --grid run: roam's algorithm (--choices) and the MPI
library's collective with Open MPI's tuned component forced to the fixed-radix algorithm
(OMPI_MCA_coll_tuned_<collective>_algorithm), alternating call by call. The pairs' runs
alternate too, and every pair is repeated; the report is the median ratio (roam over MPI)
per collective and size, with its range over the repeats.
"""

import json
import os
import shlex
import statistics
import subprocess

from . import dataset
from .space import is_pow2

# roam's choice, then {collective: Open MPI's tuned algorithm id of its fixed-radix version}.
PAIRS = (
    ("knomial:2", {"bcast": (6, "binomial"), "reduce": (5, "binomial"),
                   "gather": (2, "binomial")}),
    ("recursive_multiplying:2", {"allgather": (3, "recursive_doubling"),
                                 "allreduce": (3, "recursive_doubling"),
                                 "bcast": (8, "scatter_allgather")}),
    ("k_ring:1", {"allgather": (4, "ring"), "allreduce": (4, "ring"),
                  "bcast": (9, "scatter_allgather_ring")}),
    ("reduce_scatter_allgather:2", {"allreduce": (6, "rabenseifner")}),
)
# Where Open MPI 4.1 runs another algorithm than the one forced (coll/base): the
# scatter-allgather broadcasts run its linear one with fewer elements than ranks, the ring
# allreduce recursive doubling with fewer elements than ranks, Rabenseifner's allreduce
# the linear one with fewer elements than the largest power of two not above P, and the
# recursive-doubling allgather Bruck's on a rank count that is not a power of two.
# bench_coll's vectors are doubles. No pair at those points.
ELEMENT_BYTES = 8


def pow2_floor(n):
    return 1 << (n.bit_length() - 1)


def compared(collective, mpi_name, ranks, nbytes):
    """Whether Open MPI runs its algorithm `mpi_name` for `collective` at this point."""
    elements = nbytes // ELEMENT_BYTES
    if collective == "bcast" and mpi_name in ("scatter_allgather", "scatter_allgather_ring"):
        return elements >= ranks
    if collective == "allreduce" and mpi_name == "ring":
        return elements >= ranks
    if collective == "allreduce" and mpi_name == "rabenseifner":
        return elements >= pow2_floor(ranks)
    if collective == "allgather" and mpi_name == "recursive_doubling":
        return is_pow2(ranks)
    return True


def run_pair(bench, ranks, choice, forced, sizes, runs, target_ms, mpiexec):
    """{(collective, bytes): roam_us / mpi_us} of one run of one pair."""
    env = dict(os.environ, OMPI_MCA_coll_tuned_use_dynamic_rules="1")
    for collective, (number, _) in forced.items():
        env[f"OMPI_MCA_coll_tuned_{collective}_algorithm"] = str(number)
    words = shlex.split(mpiexec) + ["-n", str(ranks), bench, "--grid",
                                    "--collectives", ",".join(forced), "--choices", choice,
                                    "--sizes", ",".join(map(str, sizes)), "--runs", str(runs),
                                    "--target-ms", str(target_ms)]
    done = subprocess.run(words, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0 or "WRONG" in done.stdout:
        raise RuntimeError(f"{shlex.join(words)} failed (exit status {done.returncode}): "
                           f"{(done.stderr or done.stdout).strip()[-2000:]}")
    results = dataset.parse_output(done.stdout, shlex.join(words))
    out = {}
    for collective in forced:
        for point, times in results.times.get(collective, {}).items():
            (ours,) = times.values()
            out[(collective, point.bytes)] = ours / results.mpi[collective][point]
    return out


def measure(bench, ranks_list, sizes, runs, target_ms, repeats, mpiexec, log):
    """[{ranks, collective, roam, mpi, sizes, median, low, high}] over every pair."""
    ratios = {}  # (ranks, choice, collective, bytes) -> [ratio per repeat]
    for repeat in range(repeats):
        for ranks in ranks_list:
            for choice, forced in PAIRS:
                log(f"repeat {repeat + 1}/{repeats}: {ranks} ranks, {choice}")
                got = run_pair(bench, ranks, choice, forced, sizes, runs, target_ms, mpiexec)
                for (collective, nbytes), r in got.items():
                    ratios.setdefault((ranks, choice, collective, nbytes), []).append(r)
    rows = []
    for ranks in ranks_list:
        for choice, forced in PAIRS:
            for collective, (_, name) in forced.items():
                kept = [s for s in sizes if compared(collective, name, ranks, s)]
                per_size = [ratios[(ranks, choice, collective, s)] for s in kept]
                rows.append({"ranks": ranks, "collective": collective, "roam": choice,
                             "mpi": name, "sizes": kept,
                             "median": [statistics.median(r) for r in per_size],
                             "low": [min(r) for r in per_size],
                             "high": [max(r) for r in per_size]})
    return rows


def report(rows, repeats, as_json):
    print(f"roam's generalized algorithm at its default radix over Open MPI's fixed-radix "
          f"version (median of {repeats} runs, [range]; below 1: roam faster; —: Open MPI "
          f"runs another algorithm there)\n")
    sizes = sorted({s for r in rows for s in r["sizes"]})
    print("| ranks | collective | roam | Open MPI | " + " | ".join(f"{s} B" for s in sizes)
          + " | geomean |")
    print("|---" * (5 + len(sizes)) + "|")
    shown = [r for r in rows if r["median"]]  # not a pair Open MPI never ran at these points
    for r in shown:
        at = {s: (m, lo, hi) for s, m, lo, hi in zip(r["sizes"], r["median"], r["low"],
                                                      r["high"])}
        cells = [f"{at[s][0]:.2f} [{at[s][1]:.2f}, {at[s][2]:.2f}]" if s in at else "—"
                 for s in sizes]
        print(f"| {r['ranks']} | {r['collective']} | {r['roam']} | {r['mpi']} | "
              + " | ".join(cells) + f" | {statistics.geometric_mean(r['median']):.3f} |")
    every = [m for r in shown for m in r["median"]]
    if every:
        print(f"\ngeometric mean of the medians {statistics.geometric_mean(every):.3f}; worst "
              f"{max(every):.2f}; per pair worst geomean "
              f"{max(statistics.geometric_mean(r['median']) for r in shown):.3f}")
    else:
        print("\nOpen MPI ran none of the fixed-radix algorithms at these sizes and ranks")
    if as_json:
        print(json.dumps({"bench": "coll_fixed_radix", "pairs": rows}, separators=(",", ":")))
