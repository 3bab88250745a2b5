"""The ACCLAiM loop for one collective (thesis 3.8, and the reconstruction of its pseudo-code):

  measure the initial points (every choice at each)
  loop:
    fit the forest on everything measured (targets scaled by the reference choice)
    jackknife variance at every candidate point; record their sum
    stop when the sum has settled (sampling.Convergence), or when the budget is spent
    measure the unmeasured candidate of highest variance (every fifth: a non-power-of-two
    size near it)

Initial points: the candidate configurations at the corners of the space (fewest and most
ranks, most ppn on the fewest nodes, most nodes at the least ppn) at the smallest and largest
size, and the middle configuration at the middle size: at most nine.
"""

import time
from dataclasses import dataclass, field

from .model import Forest
from .sampling import Convergence, next_point, point_variances
from .space import ALGORITHMS, Point, candidates, parse_label, seeded


@dataclass
class Options:
    encoding: str = "schedule"
    trees: int = 128
    seed: int = 1
    threshold: float = 0.005
    threshold_mode: str = "relative"
    window: int = 4
    min_iterations: int = 5
    max_fraction: float = 0.15   # of the grid's points measured
    budget_s: float = float("inf")  # benchmark seconds
    batch: int = 1               # points measured per iteration
    max_features: float = 0.5    # of the features each split considers (scikit-learn's)


@dataclass
class Result:
    collective: str
    forest: Forest
    measured: dict                       # {point: {label: µs}}
    labels_at: object                    # point -> the labels a point can take
    history: list = field(default_factory=list)   # summed variance per iteration
    iterations: int = 0
    stopped: str = ""
    cost_s: float = 0.0
    seconds: float = 0.0

    def best(self, point):
        return self.forest.best(point, self.labels_at(point))


def initial_points(space):
    configs = space.candidate_configs
    sizes = space.candidate_sizes
    nodes = lambda c: c[0] // c[1]  # noqa: E731
    corners = {min(configs), max(configs),
               max(configs, key=lambda c: (c[1], -nodes(c))),
               max(configs, key=lambda c: (nodes(c), -c[1]))}
    points = {Point(r, p, s) for r, p in corners for s in (sizes[0], sizes[-1])}
    middle = sorted(configs)[len(configs) // 2]
    points.add(Point(middle[0], middle[1], sizes[len(sizes) // 2]))
    return sorted(points)


def algorithms_in(measured):
    return tuple(a for a in ALGORITHMS
                 if any(parse_label(lab)[0] == a for times in measured.values() for lab in times))


def tune(collective, space, backend, options=Options(), log=None):
    """Runs the loop; returns a Result whose best(point) is the trained choice."""
    started = time.monotonic()
    cost_before = backend.cost_s
    measured = dict(backend.measure(collective, initial_points(space)))
    algorithms = algorithms_in(measured)

    def labels_at(p):
        return candidates(collective, p.ranks, algorithms)

    universe = candidates(collective, 1 << 30, algorithms)
    grid_size = len(space.points())
    cands = space.candidates()
    rng = seeded(options.seed, collective)
    conv = Convergence(options.threshold, options.threshold_mode, options.window,
                       options.min_iterations)
    result = Result(collective, None, measured, labels_at)
    iteration = 0
    while True:
        forest = Forest(universe, options.encoding, options.trees, options.seed,
                        max_features=options.max_features)
        forest.fit(measured)
        result.forest = forest
        variances, total = point_variances(forest, cands, labels_at)
        result.history.append(total)
        cost = backend.cost_s - cost_before
        if conv.add(total):
            result.stopped = "converged"
            break
        if len(measured) + options.batch > options.max_fraction * grid_size:
            result.stopped = "budget: points"
            break
        if cost >= options.budget_s:
            result.stopped = "budget: seconds"
            break
        batch = []
        for _ in range(options.batch):
            iteration += 1
            p = next_point(variances, set(measured) | set(batch), iteration, rng,
                           lambda q: backend.non_pow2_sizes(collective, q))
            if p is None:
                break
            batch.append(p)
            variances.pop(Point(p.ranks, p.ppn, p.bytes), None)
        if not batch:
            result.stopped = "every candidate measured"
            break
        measured.update(backend.measure(collective, batch))
        if log:
            log(f"{collective}: iteration {iteration}: measured "
                + ", ".join(f"{q.ranks}x{q.bytes}B" for q in batch)
                + f"; summed variance {total:.3g}")
    result.iterations = iteration
    result.cost_s = backend.cost_s - cost_before
    result.seconds = time.monotonic() - started
    return result
