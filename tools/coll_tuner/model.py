"""The tuner's model: one random forest per collective (scikit-learn's RandomForestRegressor),
as ACCLAiM has it (thesis 3.9.2), and the jackknife variance of its trees (3.8.1).

Features of a row (a point and a choice), FACT's scaling x -> log2(x) + 1 (thesis 2.4):
  log2(ranks) + 1, log2(ppn) + 1, log2(bytes) + 1, then the choice, encoded (--encoding):
  schedule (default)      family_radix, and two numbers of the choice's schedule at that
                          point (shape()): its rounds, log2(ceil(log_k P)) + 1, and its fold,
                          log2(P / q), q the largest power of k not above P (0 when P is a
                          power of k). Linear counts as radix P, one round.
  family_radix            one column per algorithm (one-hot) and the radix as a number,
                          log2(k) + 1 with k the radix the choice runs with at that point
                          (P for "alg:P"; 0 for linear)
  onehot                  one column per label ("knomial:4", "knomial:P", ...)
  index                   the label's position in the list, one column (the public ACCLAiM
                          code's "algorithm as a feature")
Why: the algorithms are unordered categories, so an index would let a split group unrelated
ones, while the radix is ordered and "transitive" (if k = 4 beats k = 2, k = 3 probably lies
between: thesis ch. 8): as a number a tree learns "radix above 4" in one split that one-hot
labels need many for, and "alg:P" sits where its radix is at each rank count. The schedule's
shape adds what log2 features cannot express: whether P is a power of k. Recursive
multiplying's ranges (P not a power of k) add a round and hand the whole result back, a
jump in time between neighbouring radices that a forest on (ranks, k) alone learns only
from many points. On the simulated grid at 15 % of the points, schedule roughly halves the
Significant Mistake Proportion of family_radix (docs/guide/collectives_tuning.md).
Target: FACT's "algorithm scaling followed by log10": log10(t / t_ref) + 1, t_ref the time
of a fixed reference choice at the same point (the binomial tree, knomial k=2, which every
collective has; the thesis divides by the fastest algorithm, the public code by the first:
a fixed reference keeps a point's targets unchanged when more choices are measured).
Forest: --trees (128) trees, each split considering --max-features (half) of the features:
more diverse trees than scikit-learn's default (all features), which made both the choices
and the jackknife's variance better on the simulated grid.
"""

import math

import numpy as np
from sklearn.ensemble import RandomForestRegressor

from .space import ALGORITHMS, parse_label, radix_of, reference

ENCODINGS = ("schedule", "family_radix", "onehot", "index")


def shape(alg, k, ranks):
    """(rounds, fold) of a choice's schedule on `ranks` ranks with radix k (space.radix_of):
    rounds, log2 of the number of tree levels or recursive-multiplying steps, ceil(log_k P)
    (k-ring: of its groups, ceil(P / k); linear: 1 round); fold, log2(P / q) with q the
    largest power of k not above P: 0 when P is a power of k, else the ranges that
    recursive multiplying folds in and out (k-ring: 1 when k does not divide P)."""
    if ranks <= 1:
        return 0.0, 0.0
    if alg == "linear":
        return 1.0, 0.0  # one round, every rank at once: like radix P
    if alg == "k_ring":
        groups = -(-ranks // k)
        return math.log2(groups) + 1, float(ranks % k != 0)
    k = max(k, 2)
    q, levels = 1, 0
    while q * k <= ranks:
        q *= k
        levels += 1
    return math.log2(levels + (q != ranks)) + 1, math.log2(ranks / q)


def scaled(times, ref_label):
    """{label: log10(t / t_ref) + 1} of one point's times."""
    ref = times.get(ref_label)
    if ref is None or ref <= 0:
        ref = min(times.values())
    return {lab: math.log10(max(t, 1e-9) / ref) + 1 for lab, t in times.items()}


def jackknife_variance(per_tree):
    """The jackknife variance of each column of per_tree (trees x rows), as the thesis states
    it (3.8.1): x_p the mean of the n trees' predictions, x_i the mean without tree i,
    sigma^2 = sum_i (x_p - x_i)^2 / (n - 1). (x_p - x_i = (p_i - x_p) / (n - 1), so this is
    sum_i (p_i - x_p)^2 / (n - 1)^3. The public code divides by n (n - 1) instead: a constant
    factor, which moves no argmax but scales the convergence threshold.)"""
    p = np.asarray(per_tree, dtype=float)
    n = p.shape[0]
    if n < 2:
        raise ValueError("the jackknife needs at least two trees")
    x_p = p.mean(axis=0)
    x_i = (n * x_p - p) / (n - 1)
    return ((x_p - x_i) ** 2).sum(axis=0) / (n - 1)


class Forest:
    """A random forest over (point, label) rows of one collective."""

    def __init__(self, labels, encoding="schedule", trees=128, seed=0, min_samples_leaf=1,
                 max_features=0.5):
        if encoding not in ENCODINGS:
            raise ValueError(f"unknown encoding '{encoding}' ({', '.join(ENCODINGS)})")
        self.labels = sorted(set(labels))
        self.position = {lab: i for i, lab in enumerate(self.labels)}
        self.families = [a for a in ALGORITHMS if any(lab.split(":")[0] == a for lab in self.labels)]
        self.encoding = encoding
        self.forest = RandomForestRegressor(n_estimators=trees, random_state=seed,
                                            min_samples_leaf=min_samples_leaf,
                                            max_features=max_features, n_jobs=1)
        self.fitted = False

    def features(self, rows):
        """The feature matrix of (point, label) rows."""
        rows = list(rows)
        base = np.array([[math.log2(p.ranks) + 1, math.log2(p.ppn) + 1,
                          math.log2(max(p.bytes, 1)) + 1] for p, _ in rows], dtype=float)
        base = base.reshape(len(rows), 3)
        if self.encoding == "index":
            extra = np.array([[self.position[lab]] for _, lab in rows], dtype=float)
        elif self.encoding == "onehot":
            extra = np.zeros((len(rows), len(self.labels)))
            for i, (_, lab) in enumerate(rows):
                extra[i, self.position[lab]] = 1
        else:
            more = 3 if self.encoding == "schedule" else 1
            extra = np.zeros((len(rows), len(self.families) + more))
            for i, (p, lab) in enumerate(rows):
                alg, _ = parse_label(lab)
                extra[i, self.families.index(alg)] = 1
                k = radix_of(lab, p.ranks)
                if more == 3 and alg == "linear":
                    k = p.ranks  # its one round reaches every rank, as a radix P does
                extra[i, len(self.families)] = math.log2(k) + 1 if k else 0
                if more == 3:
                    extra[i, -2:] = shape(alg, k, p.ranks)
        return np.hstack([base, extra.reshape(len(rows), -1)])

    def fit(self, measured, ref=reference):
        """Trains on measured = {point: {label: µs}}; `ref(ranks)` names the reference."""
        rows, y = [], []
        for point, times in measured.items():
            for lab, v in scaled(times, ref(point.ranks)).items():
                if lab in self.position:
                    rows.append((point, lab))
                    y.append(v)
        if not rows:
            raise ValueError("nothing to train on")
        self.forest.fit(self.features(rows), np.array(y))
        self.fitted = True
        return self

    def per_tree(self, rows):
        """Each tree's predictions (trees x rows)."""
        x = self.features(rows)
        return np.array([t.predict(x) for t in self.forest.estimators_])

    def predict(self, rows):
        return self.forest.predict(self.features(rows))

    def best(self, point, labels):
        """The label of `labels` with the least predicted scaled time at `point`."""
        labels = [lab for lab in labels if lab in self.position]
        pred = self.predict([(point, lab) for lab in labels])
        return labels[int(np.argmin(pred))]
