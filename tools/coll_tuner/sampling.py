"""ACCLAiM's choice of the next point to measure and its test of convergence (thesis 3.8.1 to
3.8.3).

Selection: the forest's jackknife variance (model.jackknife_variance) at every row of every
candidate point not yet measured (the candidates are powers of two: space.Space); a point's
variance is the mean over its choices' rows; the point of highest variance is measured next,
with every choice (the scaled target needs them all). Every fifth point (the "80-20" split)
is measured at a random size that is not a power of two and whose nearest power of two is
the chosen point's (space.non_pow2_size).

Convergence: the sum of the variances over all candidate rows, after each iteration. The
thesis stops when four consecutive iterations change it by less than 1e-9; the public code
when the last four values lie within 1e-3 of each other, after at least 5 iterations. The
absolute scale of the sum depends on the target's scaling and on how many candidates there
are, so the default here is relative: four consecutive changes each below `threshold` (1 %)
of the previous value; --threshold-mode absolute with --threshold 1e-9 is the thesis'. A
minimum of iterations and a budget (fraction of the candidates measured, benchmark seconds)
bound the loop.
"""

import numpy as np

from .model import jackknife_variance
from .space import Point, non_pow2_size

NON_POW2_EVERY = 5


def point_variances(forest, points, labels_at):
    """({point: variance}, total): each point's mean row variance and the sum over every
    row."""
    rows, owner = [], []
    for i, p in enumerate(points):
        for lab in labels_at(p):
            if lab in forest.position:
                rows.append((p, lab))
                owner.append(i)
    if not rows:
        return {}, 0.0
    var = jackknife_variance(forest.per_tree(rows))
    owner = np.array(owner)
    sums = np.bincount(owner, weights=var, minlength=len(points))
    counts = np.bincount(owner, minlength=len(points))
    by_point = {p: float(sums[i] / counts[i]) for i, p in enumerate(points) if counts[i]}
    return by_point, float(var.sum())


def next_point(variances, measured, iteration, rng, non_pow2_sizes):
    """The point to measure at `iteration` (1-based): the unmeasured candidate of highest
    variance, or on every fifth iteration a non-power-of-two size near it (when the backend
    has one: non_pow2_sizes(point) lists them). None when every candidate is measured."""
    todo = [(v, p) for p, v in variances.items() if p not in measured]
    if not todo:
        return None
    todo.sort(key=lambda vp: (-vp[0], vp[1]))
    best = todo[0][1]
    if iteration % NON_POW2_EVERY == 0:
        options = [s for s in non_pow2_sizes(best) if Point(best.ranks, best.ppn, s) not in measured]
        if options:
            size = non_pow2_size(best.bytes, rng)
            if size not in options:
                size = rng.choice(options)
            return Point(best.ranks, best.ppn, size)
    return best


class Convergence:
    """Whether the summed variance has settled: `window` consecutive changes each below
    `threshold` (relative to the previous value, or absolute), after `min_iterations`."""

    def __init__(self, threshold=0.01, mode="relative", window=4, min_iterations=5):
        if mode not in ("relative", "absolute"):
            raise ValueError(f"unknown threshold mode '{mode}' (relative, absolute)")
        self.threshold, self.mode, self.window = threshold, mode, window
        self.min_iterations = min_iterations
        self.history = []

    def add(self, total):
        self.history.append(total)
        return self.converged()

    def changes(self):
        h = self.history
        out = []
        for a, b in zip(h, h[1:]):
            d = abs(b - a)
            out.append(d / a if self.mode == "relative" and a > 0 else d)
        return out

    def converged(self):
        if len(self.history) < max(self.min_iterations, self.window + 1):
            return False
        return all(c < self.threshold for c in self.changes()[-self.window:])
