"""The feature space of the tuner: points, choices and their labels.

A point is a call's features: the communicator's ranks, its processes per node (ppn) and the
bytes per rank (the vector of a bcast or a reduction, one rank's block of a gather or
allgather), as roam's rules file counts them.

A choice is an algorithm and its radix, named by a label:
  "linear"            (no radix)
  "knomial:4"         radix 4
  "knomial:P"         the radix equal to the rank count (one level, one group); any radix at
                      or above the rank count acts as the rank count, so at 8 ranks
                      "knomial:8" is "knomial:P".
The candidates at a point are the benchmark's (bench/coll.cpp, --grid): every algorithm that
serves the collective with radix 2 ... 8 below the rank count, and P; k_ring's radix is its
groups' size and starts at 1 (the classic ring).
"""

import math
import random
from typing import NamedTuple

COLLECTIVES = ("bcast", "reduce", "gather", "allgather", "allreduce")

# Which collectives each algorithm serves (roam::coll::serves, src/coll/tuning_rules.cpp).
SERVES = {
    "linear": set(COLLECTIVES),
    "knomial": set(COLLECTIVES),
    "recursive_multiplying": {"bcast", "allgather", "allreduce"},
    "reduce_scatter_allgather": {"allreduce"},
    "k_ring": {"bcast", "allgather", "allreduce"},
}
ALGORITHMS = tuple(SERVES)
# The radix a choice of k = 0 stands for, and the smallest one an algorithm takes.
DEFAULT_RADIX = {"linear": 0, "k_ring": 1}
SMALLEST_RADIX = {"k_ring": 1}
# The radices the grid tries below the rank count (and the rank count itself, "P").
GRID_RADICES = range(2, 9)
GRID_RING_RADICES = range(1, 9)
# roam's choice before the generalized algorithms, and the tuner's reference: the binomial
# tree (allgather = binomial gather + bcast, allreduce = binomial reduce + bcast).
BINOMIAL = ("knomial", 2)


class Point(NamedTuple):
    ranks: int
    ppn: int
    bytes: int


def default_radix(alg):
    return DEFAULT_RADIX.get(alg, 2)


def smallest_radix(alg):
    return SMALLEST_RADIX.get(alg, 2)


def label(alg, k, ranks):
    """The label of `alg` with radix `k` (0: its default) on `ranks` ranks."""
    if alg not in SERVES:
        raise ValueError(f"unknown algorithm '{alg}' (known: {', '.join(ALGORITHMS)})")
    if alg == "linear":
        return "linear"
    k = default_radix(alg) if k == 0 else k
    if k < smallest_radix(alg):
        raise ValueError(f"{alg} takes a radix of at least {smallest_radix(alg)}, not {k}")
    return f"{alg}:P" if k >= ranks else f"{alg}:{k}"


def parse_label(text):
    """(algorithm, radix) of a label: radix None for linear, "P" for the rank count."""
    alg, _, k = text.partition(":")
    if alg not in SERVES:
        raise ValueError(f"unknown algorithm in choice '{text}' (known: {', '.join(ALGORITHMS)})")
    if alg == "linear":
        if k:
            raise ValueError(f"linear takes no radix: '{text}'")
        return alg, None
    if k == "P":
        return alg, "P"
    if not k.isdigit() or int(k) < smallest_radix(alg):
        raise ValueError(f"'{text}': the radix must be P or a whole number of at least "
                         f"{smallest_radix(alg)}")
    return alg, int(k)


def radix_of(text, ranks):
    """The radix a label runs with on `ranks` ranks (0 for linear)."""
    alg, k = parse_label(text)
    if k is None:
        return 0
    return ranks if k == "P" else min(k, ranks)


def candidates(collective, ranks, algorithms=ALGORITHMS):
    """The labels the grid measures for `collective` on `ranks` ranks, among `algorithms`."""
    out = []
    for alg in ALGORITHMS:
        if alg not in algorithms or collective not in SERVES[alg]:
            continue
        if alg == "linear":
            out.append("linear")
            continue
        radices = GRID_RING_RADICES if alg == "k_ring" else GRID_RADICES
        out.extend(f"{alg}:{k}" for k in radices if k < ranks)
        out.append(f"{alg}:P")
    return out


def reference(ranks):
    """The label of the tuner's reference choice (the binomial tree) on `ranks` ranks."""
    return label(*BINOMIAL, ranks)


def is_pow2(x):
    return x >= 1 and int(x) == x and (int(x) & (int(x) - 1)) == 0


def pow2_between(low, high):
    """The powers of two in [low, high]."""
    out, v = [], 1
    while v <= high:
        if v >= low:
            out.append(v)
        v *= 2
    return out


def nearest_pow2(x):
    """The power of two nearest to x (the lower one of a tie)."""
    low = 1 << (int(x).bit_length() - 1)
    return low if x - low <= 2 * low - x else 2 * low


def near(x, size):
    """Whether `size` (a power of two) is a nearest power of two of x: 3/4 size <= x <=
    3/2 size (the ends are ties with size / 2 and 2 size)."""
    return math.ceil(0.75 * size) <= x <= math.floor(1.5 * size)


def non_pow2_size(size, rng):
    """ACCLAiM's non-power-of-two variant of a message size (thesis 3.8.2): a random size
    that is not a power of two and whose nearest power of two is `size` (for 8: one of 6, 7,
    9, 10, 11, 12; the ends are ties, which the thesis' example includes). `size` itself when
    there is none (1, 2)."""
    low, high = math.ceil(0.75 * size), math.floor(1.5 * size)
    options = [s for s in range(low, high + 1) if not is_pow2(s)]
    return rng.choice(options) if options else size


def midpoint(a, c):
    """ACCLAiM's B between two adjacent values A < C: the value halfway, or None when no whole
    number lies strictly between them."""
    if c - a < 2:
        return None
    return (a + c) // 2


class Space:
    """Where a tuner may measure: configurations (ranks, ppn) and message sizes.

    `configs` lists the (ranks, ppn) pairs the allocation can run; `sizes` the message sizes
    of the grid. The tuner's candidates are the points whose three features are powers of
    two (thesis 3.8.1), plus the full allocation's configuration when that is not one (its
    own size matters most and is always measurable); the evaluation grid is every point.
    """

    def __init__(self, configs, sizes):
        self.configs = sorted(set((int(r), int(p)) for r, p in configs))
        self.sizes = sorted(set(int(s) for s in sizes))
        if not self.configs or not self.sizes:
            raise ValueError("a space needs at least one (ranks, ppn) and one size")
        biggest = max(self.configs)
        self.candidate_configs = [c for c in self.configs
                                  if (is_pow2(c[0]) and is_pow2(c[1])) or c == biggest]
        self.candidate_sizes = [s for s in self.sizes if is_pow2(s)]

    @classmethod
    def of_nodes(cls, nodes, ppns, sizes):
        """Every node count of `nodes` with every ppn of `ppns` (ranks = nodes x ppn)."""
        return cls([(n * p, p) for n in nodes for p in ppns], sizes)

    def points(self):
        return [Point(r, p, s) for r, p in self.configs for s in self.sizes]

    def candidates(self):
        return [Point(r, p, s) for r, p in self.candidate_configs for s in self.candidate_sizes]

    def rank_values(self):
        """The candidates' rank counts, increasing."""
        return sorted(set(r for r, _ in self.candidate_configs))

    def ppn_values(self, ranks):
        """The candidates' ppn values at `ranks` ranks; for a rank count between them (a
        midpoint B), those of the nearest candidate rank counts, scaled to keep their node
        counts (ppn = ranks / nodes), which can be a non-power of two."""
        exact = sorted(set(p for r, p in self.candidate_configs if r == ranks))
        if exact:
            return exact
        values = self.rank_values()
        below = max([r for r in values if r < ranks], default=values[0])
        nodes = sorted(set(r // p for r, p in self.candidate_configs if r == below))
        out = sorted(set(max(1, round(ranks / n)) for n in nodes))
        return [p for p in out if p <= ranks] or [ranks]

    def size_values(self):
        return list(self.candidate_sizes)


def seeded(seed, *parts):
    """A random generator seeded by `seed` and the parts (stable across runs and Pythons)."""
    return random.Random(f"{seed}:" + ":".join(str(p) for p in parts))
