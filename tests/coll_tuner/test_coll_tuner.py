"""Unit tests of the collectives autotuner (tools/coll_tuner), on synthetic data with known
answers. Needs numpy and scikit-learn (python3-sklearn, which ./run installs): without them
the tests fail, they do not skip. With ROAM_BENCH_COLL naming bench_coll, the rules files it
writes are also loaded by roam's own reader.

  python3 -m unittest discover -s tests/coll_tuner -t tests/coll_tuner
"""

import json
import math
import os
import random
import subprocess
import sys
import tempfile
import unittest

import numpy  # noqa: F401  (a missing numpy fails here)
import sklearn  # noqa: F401  (a missing scikit-learn fails here, loudly)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))

from coll_tuner import (cli, dataset, evaluate, fixed_radix, measure, model, rules,  # noqa: E402
                        sampling, simulate)
from coll_tuner.space import (COLLECTIVES, Point, Space, candidates, label,  # noqa: E402
                              near, nearest_pow2, non_pow2_size, pow2_between)
from coll_tuner.tune import Options, tune  # noqa: E402

BENCH = os.environ.get("ROAM_BENCH_COLL")


class Emission(unittest.TestCase):
    def test_abc_rules_and_pruning(self):
        values = [8, 16, 32, 64]
        old = {8: "X", 16: "X", 32: "Y", 64: "Y"}
        # B (24, halfway between A = 16 and C = 32) takes a third choice: three rules.
        got = rules.level(values, lambda v: {24: "Z"}.get(v, old.get(v)))
        self.assertEqual(got, ((16, "X"), (31, "Z"), (None, "Y")))
        # ALG-A = ALG-B: one rule up to C - 1, then C's.
        got = rules.level(values, lambda v: {24: "X"}.get(v, old.get(v)))
        self.assertEqual(got, ((31, "X"), (None, "Y")))
        # ALG-B = ALG-C: A's rule, then C's from A + 1 on.
        got = rules.level(values, lambda v: {24: "Y"}.get(v, old.get(v)))
        self.assertEqual(got, ((16, "X"), (None, "Y")))
        # No change: one "=any" rule; B never asked.
        asked = []
        got = rules.level(values, lambda v: asked.append(v) or "X")
        self.assertEqual(got, ((None, "X"),))
        self.assertNotIn(24, asked)
        # Two changes, B between each; adjacent values without a whole number between them.
        got = rules.level([1, 2, 4], lambda v: {1: "X", 2: "Y", 3: "Z", 4: "X"}[v])
        self.assertEqual(got, ((1, "X"), (2, "Y"), (3, "Z"), (None, "X")))

    def test_levels_nest_and_midpoints_of_ranks(self):
        space = Space([(16, 1), (32, 1), (32, 2)], [8, 16])
        # The choice depends on ranks only: 16 -> X, 32 -> Y, 24 (B) -> X.
        best = lambda p: "linear" if p.ranks <= 24 else "knomial:2"  # noqa: E731
        got = rules.emit(best, space)
        leaf = lambda c: ((None, ((None, c),)),)  # noqa: E731
        self.assertEqual(got, ((31, leaf("linear")), (None, leaf("knomial:2"))))


class SyntheticGrid(unittest.TestCase):
    """Algorithm X (linear) is best below 4 KiB and Y (recursive doubling) from 4 KiB on, at
    every rank count; the others are slower everywhere. The tuner must find it."""

    def table(self):
        results = dataset.Results()
        rng = random.Random(7)
        for ranks in (2, 4, 8, 16):
            for size in pow2_between(8, 1 << 20):
                for lab in candidates("allgather", ranks):
                    base = 10.0 + size / 1000.0
                    if lab == "linear":
                        t = base * (0.5 if size < 4096 else 2.0)
                    elif lab == label("recursive_multiplying", 2, ranks):
                        t = base * (1.5 if size < 4096 else 0.6)
                    else:
                        t = base * (1.2 + 0.05 * (sum(map(ord, lab)) % 5))
                    t *= 1 + 0.01 * rng.random()
                    alg, _, k = lab.partition(":")
                    radix = 0 if alg == "linear" else (ranks if k == "P" else int(k))
                    results.add({"collective": "allgather", "ranks": ranks, "ppn": 1,
                                 "bytes": size, "alg": alg, "k": radix, "us": t})
        return results

    def test_rules_choose_x_then_y(self):
        results = self.table()
        space = Space([(r, 1) for r in (2, 4, 8, 16)], pow2_between(8, 1 << 20))
        backend = measure.TableBackend(results)
        res = tune("allgather", space, backend,
                   Options(trees=32, max_fraction=0.5, threshold=1e-6, seed=3))
        self.assertLessEqual(len(res.measured), 0.5 * len(space.points()))
        doc = rules.to_roam({"allgather": rules.emit(res.best, space)}, 16)
        rules.check_shape(doc)
        for ranks in (2, 4, 8, 16):
            for size in pow2_between(8, 1 << 20):
                want = "linear" if size < 4096 else label("recursive_multiplying", 2, ranks)
                got = rules.select_label(doc, "allgather", Point(ranks, 1, size))
                self.assertEqual(got, want, f"{ranks} ranks, {size} bytes")
        m = evaluate.metrics(results.times["allgather"],
                             lambda p: rules.select_label(doc, "allgather", p))
        self.assertEqual(m["accuracy"], 1.0)
        if BENCH:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                f.write(rules.dumps(doc))
            try:
                points = results.points("allgather")
                roam = evaluate.roam_choices(BENCH, "allgather", points, rules_file=f.name)
                for p in points:
                    self.assertEqual(roam[p], rules.select_label(doc, "allgather", p))
            finally:
                os.remove(f.name)


class Jackknife(unittest.TestCase):
    def test_matches_a_hand_computation(self):
        # Three trees, two rows. Row 0: predictions 1, 3, 5: mean 3; leave-one-out means
        # 4, 3, 2; sum of squares (3-4)^2 + 0 + (3-2)^2 = 2; over n - 1 = 2: 1. Row 1: 0.
        got = model.jackknife_variance([[1.0, 2.0], [3.0, 2.0], [5.0, 2.0]])
        self.assertTrue(numpy.allclose(got, [1.0, 0.0]))
        # Four trees: 0, 0, 0, 4: mean 1; leave-one-out means 4/3 (x3), 0; sum of squares
        # 3 (1/3)^2 + 1 = 4/3; over 3: 4/9.
        self.assertAlmostEqual(float(model.jackknife_variance([[0], [0], [0], [4]])[0]), 4 / 9)

    def test_point_variance_is_the_mean_of_its_rows(self):
        class Stub:
            position = {"a": 0, "b": 1}

            def per_tree(self, rows):
                return numpy.array([[1.0 if lab == "a" else 0.0 for _, lab in rows],
                                    [3.0 if lab == "a" else 0.0 for _, lab in rows],
                                    [5.0 if lab == "a" else 0.0 for _, lab in rows]])

        p = Point(2, 1, 8)
        by_point, total = sampling.point_variances(Stub(), [p], lambda q: ["a", "b"])
        self.assertAlmostEqual(by_point[p], 0.5)
        self.assertAlmostEqual(total, 1.0)


class NonPow2(unittest.TestCase):
    def test_sizes_near_their_power_of_two(self):
        rng = random.Random(1)
        seen = set(non_pow2_size(8, rng) for _ in range(400))
        self.assertEqual(seen, {6, 7, 9, 10, 11, 12})  # the thesis' example: 6 ... 12, not 8
        for s in pow2_between(4, 1 << 20):
            for _ in range(20):
                x = non_pow2_size(s, rng)
                self.assertNotEqual(x & (x - 1), 0, x)
                self.assertLessEqual(abs(x - s), abs(x - 2 * s))
                self.assertLessEqual(abs(x - s), abs(x - s // 2))
        self.assertEqual(nearest_pow2(11), 8)
        self.assertEqual(nearest_pow2(13), 16)

    def test_every_fifth_point(self):
        rng = random.Random(2)
        p, q = Point(4, 4, 1024), Point(8, 8, 64)
        variances = {p: 2.0, q: 1.0}
        sizes = lambda point: [s for s in range(768, 1537) if s & (s - 1)]  # noqa: E731
        for iteration in range(1, 21):
            got = sampling.next_point(variances, set(), iteration, rng, sizes)
            if iteration % 5 == 0:
                self.assertEqual((got.ranks, got.ppn), (4, 4))
                self.assertNotEqual(got.bytes & (got.bytes - 1), 0)
                self.assertTrue(near(got.bytes, 1024), got.bytes)
            else:
                self.assertEqual(got, p)
        # Measured points are not chosen again; without non-P2 sizes the P2 point is kept.
        self.assertEqual(sampling.next_point(variances, {p}, 1, rng, sizes), q)
        self.assertEqual(sampling.next_point(variances, set(), 5, rng, lambda x: []), p)
        self.assertIsNone(sampling.next_point(variances, {p, q}, 1, rng, sizes))


class Converging(unittest.TestCase):
    def test_four_consecutive_small_changes(self):
        c = sampling.Convergence(threshold=0.01, mode="relative", window=4, min_iterations=5)
        for v in (10.0, 5.0, 4.0, 3.99, 3.985):
            self.assertFalse(c.add(v))
        self.assertFalse(c.add(3.98))  # three small changes so far
        self.assertTrue(c.add(3.979))  # the fourth
        self.assertFalse(c.add(5.0))   # a jump starts over
        a = sampling.Convergence(threshold=1e-9, mode="absolute", window=4, min_iterations=5)
        for v in (1.0, 1.0, 1.0, 1.0):
            self.assertFalse(a.add(v))  # fewer than min_iterations
        self.assertTrue(a.add(1.0))
        with self.assertRaises(ValueError):
            sampling.Convergence(mode="sideways")


class Files(unittest.TestCase):
    def rules_doc(self):
        space = Space([(4, 1), (8, 1), (8, 2)], [8, 64, 4096])
        best = lambda p: "knomial:P" if p.bytes < 100 else "recursive_multiplying:4"  # noqa: E731
        return rules.to_roam({"allreduce": rules.emit(best, space),
                              "bcast": rules.emit(lambda p: "k_ring:1", space),
                              "gather": rules.emit(lambda p: "linear", space)}, 8)

    def test_roam_rules_file(self):
        doc = json.loads(rules.dumps(self.rules_doc()))
        self.assertEqual(list(doc), [f"collective={c}" for c in COLLECTIVES])

        def ends_in_any(d, names):
            keys = list(d)
            self.assertEqual(keys[-1], f"{names[0]}=any")
            for k in keys[:-1]:
                self.assertTrue(k.startswith(f"{names[0]}<="), k)
            for k in keys:
                if len(names) > 1:
                    ends_in_any(d[k], names[1:])
                else:
                    (alg, opts), = d[k].items()
                    self.assertTrue(alg.startswith("algorithm="))
                    if alg == "algorithm=linear":
                        self.assertEqual(opts, {})
                    else:
                        (radix, empty), = opts.items()
                        smallest = 1 if alg == "algorithm=k_ring" else 2
                        self.assertGreaterEqual(int(radix[2:]), smallest)
                        self.assertEqual(empty, {})

        for by_ranks in doc.values():
            ends_in_any(by_ranks, ["comm_size", "ppn", "msg_size"])
        rules.check_shape(doc)
        # Untuned collectives: the binomial tree; "alg:P" written as the rule's rank bound.
        self.assertEqual(rules.select(doc, "reduce", 4, 1, 8), ("knomial", 2))
        # The choice is the same at every rank count: one comm_size=any rule, whose "P" is
        # the largest rank count (8), which acts as the rank count at 3 ranks.
        self.assertEqual(rules.select(doc, "allreduce", 3, 1, 8), ("knomial", 8))
        self.assertEqual(rules.select_label(doc, "allreduce", Point(3, 1, 8)), "knomial:P")
        self.assertEqual(rules.select(doc, "allreduce", 8, 1, 4096), ("recursive_multiplying", 4))
        self.assertEqual(rules.select(doc, "bcast", 8, 2, 8), ("k_ring", 1))
        if BENCH:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                f.write(rules.dumps(doc))
            try:
                got = subprocess.run([BENCH, "--default-choices", "--rules", f.name],
                                     input="allreduce 3 1 8\nbcast 8 2 8\ngather 5 1 9\n",
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(got.returncode, 0, got.stderr)
                self.assertEqual(got.stdout.split("\n")[:3], [
                    "allreduce 3 1 8 knomial 8", "bcast 8 2 8 k_ring 1", "gather 5 1 9 linear 0"])
            finally:
                os.remove(f.name)

    def test_a_malformed_file_is_refused(self):
        bad = self.rules_doc()
        del bad["collective=gather"]
        with self.assertRaises(ValueError):
            rules.check_shape(bad)
        if BENCH:
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump(bad, f)
            try:
                got = subprocess.run([BENCH, "--default-choices", "--rules", f.name], input="",
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(got.returncode, 1)
                self.assertIn("no rules for gather", got.stderr)
            finally:
                os.remove(f.name)

    def test_mpich_json(self):
        doc = rules.to_mpich(self.rules_doc(), 8)
        self.assertEqual(set(doc), {f"collective={c}" for c in COLLECTIVES})
        allreduce = doc["collective=allreduce"]["comm_type=intra"]["is_commutative=yes"]
        self.assertEqual(list(allreduce), ["comm_size=any"])
        ppn = allreduce["comm_size=any"]
        self.assertEqual(list(ppn)[-1], "comm_avg_ppn=any")
        msgs = ppn["comm_avg_ppn=any"]
        self.assertEqual(list(msgs), ["avg_msg_size<=64", "avg_msg_size=any"])
        self.assertEqual(msgs["avg_msg_size<=64"], {"algorithm=MPIR_Allreduce_intra_tree":
                                                    {"tree_type=knomial_1": {}, "k=8": {}}})
        self.assertEqual(msgs["avg_msg_size=any"],
                         {"algorithm=MPIR_Allreduce_intra_recursive_multiplying": {"k=4": {}}})
        bcast = doc["collective=bcast"]["comm_type=intra"]["comm_size=any"]["comm_avg_ppn=any"]
        self.assertEqual(bcast, {"avg_msg_size=any": {
            "algorithm=MPIR_Bcast_intra_scatter_ring_allgather": {}}})
        # MPICH's allgather rules count the whole result: total_msg_size.
        gather = self.rules_doc()
        gather["collective=allgather"] = {"comm_size<=4": {"ppn=any": {
            "msg_size<=64": {"algorithm=recursive_multiplying": {"k=2": {}}},
            "msg_size=any": {"algorithm=k_ring": {"k=1": {}}}}},
            "comm_size=any": {"ppn=any": {"msg_size=any": {"algorithm=linear": {}}}}}
        ag = rules.to_mpich(gather, 8)["collective=allgather"]["comm_type=intra"]
        self.assertEqual(list(ag["comm_size<=4"]["comm_avg_ppn=any"]),
                         ["total_msg_size<=256", "total_msg_size=any"])
        self.assertEqual(ag["comm_size=any"]["comm_avg_ppn=any"]["total_msg_size=any"],
                         {"algorithm=MPIR_Allgather_intra_k_brucks": {"k=8": {}}})
        # A base file keeps its other collectives and entries.
        base = {"collective=barrier": {"x": {}}, "collective=bcast": {"comm_type=inter": {"y": {}}}}
        merged = rules.to_mpich(self.rules_doc(), 8, base)
        self.assertIn("collective=barrier", merged)
        self.assertIn("comm_type=inter", merged["collective=bcast"])


class Simulated(unittest.TestCase):
    def test_bigger_messages_cost_more(self):
        m = simulate.Machine()
        for c in COLLECTIVES:
            for ranks, ppn in ((16, 1), (64, 4), (2048, 64)):
                for lab in candidates(c, ranks):
                    times = [m.exact_us(c, lab, Point(ranks, ppn, s))
                             for s in pow2_between(8, 1 << 20)]
                    for a, b in zip(times, times[1:]):
                        self.assertLess(a, b, f"{c} {lab} at {ranks}x{ppn}")

    def test_the_model_has_the_thesis_trends(self):
        m = simulate.Machine()
        t = lambda c, lab, p: m.exact_us(c, lab, p)  # noqa: E731
        # Small messages: a larger k-nomial radix beats the binomial tree.
        small = Point(4096, 1, 8)
        self.assertLess(t("bcast", "knomial:4", small), t("bcast", "knomial:2", small))
        # Large allreduce: reduce-scatter + allgather beats recursive doubling.
        big = Point(1024, 1, 1 << 20)
        self.assertLess(t("allreduce", "reduce_scatter_allgather:2", big),
                        t("allreduce", "recursive_multiplying:2", big))
        # Large allgather at 8 ppn: k-ring groups of a node beat the ring.
        node = Point(256, 8, 1 << 16)
        self.assertLess(t("allgather", "k_ring:8", node), t("allgather", "k_ring:1", node))
        # Noise is small, deterministic and seeded.
        a, b = m.time_us("bcast", "linear", small), simulate.Machine().time_us("bcast", "linear", small)
        self.assertEqual(a, b)
        self.assertLess(abs(math.log(a / t("bcast", "linear", small))), 0.2)
        self.assertNotEqual(simulate.Machine(seed=2).time_us("bcast", "linear", small), a)

    def test_tuner_on_the_simulated_machine(self):
        space = Space.of_nodes([16, 32, 64], [1, 4], pow2_between(8, 1 << 16))
        backend = measure.SimulatedBackend(simulate.Machine())
        res = tune("reduce", space, backend, Options(trees=16, max_fraction=0.3, seed=1))
        doc = rules.to_roam({"reduce": rules.emit(res.best, space)}, 256)
        truth = measure.SimulatedBackend(simulate.Machine()).measure("reduce", space.points())
        m = evaluate.metrics(truth, lambda p: rules.select_label(doc, "reduce", p))
        self.assertLess(m["slowdown"], 1.15)
        self.assertGreater(res.cost_s, 0)


class DefaultChoices(unittest.TestCase):
    @unittest.skipUnless(BENCH, "ROAM_BENCH_COLL names no bench_coll")
    def test_bench_prints_roam_rules_choices(self):
        got = subprocess.run([BENCH, "--default-choices", "--model", "2,0.0001,0.00025"],
                             input="bcast 4 1 8\nallreduce 1024 4 1048576\n",
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(got.returncode, 0, got.stderr)
        lines = got.stdout.splitlines()
        self.assertEqual(len(lines), 2)
        for line, query in zip(lines, ("bcast 4 1 8", "allreduce 1024 4 1048576")):
            self.assertTrue(line.startswith(query + " "), line)
            self.assertEqual(len(line.split()), 6)
        bad = subprocess.run([BENCH, "--default-choices", "--model", "2,0.0001,0.00025"],
                             input="scan 4 1 8\n", capture_output=True, text=True, timeout=60)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("stdin line 1", bad.stderr)

    @unittest.skipUnless(BENCH, "ROAM_BENCH_COLL names no bench_coll")
    def test_the_overhead_keeps_the_radix_small_at_scale(self):
        # The simulated machine's model, overhead included: no choice posts thousands of
        # messages at once (without the overhead term the model chose k = P).
        model = ",".join(repr(float(x)) for x in simulate.Machine().hockney())
        self.assertEqual(len(model.split(",")), 4)
        query = "".join(f"{c} 4096 16 8\n" for c in ("bcast", "gather", "allgather",
                                                     "allreduce"))
        got = subprocess.run([BENCH, "--default-choices", "--model", model], input=query,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(got.returncode, 0, got.stderr)
        for line in got.stdout.splitlines():
            self.assertLessEqual(int(line.split()[5]), 64, line)


class FixedRadix(unittest.TestCase):
    def test_ratios_of_roam_over_the_forced_library_algorithm(self):
        # A stand-in launcher: prints, for the collectives it is asked for, roam's choice
        # at 10 µs and the library's at 8 µs (20 µs for gather), and shows the environment
        # that forces the library's algorithm.
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "launch")
            with open(fake, "w") as f:
                f.write('''#!/usr/bin/env python3
import json, os, sys
a = sys.argv
colls = a[a.index("--collectives") + 1].split(",")
alg, _, k = a[a.index("--choices") + 1].partition(":")
for c in colls:
    forced = os.environ[f"OMPI_MCA_coll_tuned_{c}_algorithm"]
    assert os.environ["OMPI_MCA_coll_tuned_use_dynamic_rules"] == "1"
    for b in a[a.index("--sizes") + 1].split(","):
        p = {"collective": c, "ranks": 4, "ppn": 4, "bytes": int(b)}
        print("grid " + json.dumps(dict(p, alg=alg, k=int(k), us=10.0)))
        print("grid " + json.dumps(dict(p, alg="mpi", k=0, us=20.0 if c == "gather" else 8.0,
                                        forced=forced)))
''')
            os.chmod(fake, 0o755)
            rows = fixed_radix.measure("bench", [4], [8, 64], 1, 1.0, 2, fake, lambda m: None)
        self.assertEqual(len(rows), sum(len(f) for _, f in fixed_radix.PAIRS))
        by = {(r["collective"], r["roam"]): r for r in rows}
        self.assertEqual(by[("gather", "knomial:2")]["median"], [0.5, 0.5])
        # Open MPI's ring allreduce runs recursive doubling for one double on 4 ranks.
        self.assertEqual(by[("allreduce", "k_ring:1")]["sizes"], [64])
        self.assertEqual(by[("allreduce", "k_ring:1")]["median"], [1.25])
        self.assertEqual(by[("allreduce", "k_ring:1")]["mpi"], "ring")
        self.assertEqual(by[("allgather", "k_ring:1")]["sizes"], [8, 64])

    def test_the_points_where_open_mpi_runs_another_algorithm(self):
        c = fixed_radix.compared
        self.assertFalse(c("bcast", "scatter_allgather", 8, 56))  # 7 doubles, 8 ranks
        self.assertTrue(c("bcast", "scatter_allgather", 8, 64))
        self.assertFalse(c("allreduce", "ring", 4, 8))
        self.assertTrue(c("allreduce", "rabenseifner", 6, 32))  # 4 doubles, 4 = pof2(6)
        self.assertFalse(c("allreduce", "rabenseifner", 6, 24))
        self.assertFalse(c("allgather", "recursive_doubling", 6, 1 << 20))  # Bruck's instead
        self.assertTrue(c("allgather", "recursive_doubling", 8, 8))
        self.assertTrue(c("bcast", "binomial", 3, 8))

    def test_the_report_skips_pairs_without_points_and_ends_with_json(self):
        import contextlib
        import io
        rows = [{"ranks": 4, "collective": "allreduce", "roam": "k_ring:1", "mpi": "ring",
                 "sizes": [], "median": [], "low": [], "high": []},
                {"ranks": 4, "collective": "bcast", "roam": "knomial:2", "mpi": "binomial",
                 "sizes": [8, 64], "median": [1.0, 4.0], "low": [0.5, 3.0], "high": [2.0, 5.0]}]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fixed_radix.report(rows, 3, True)
        lines = out.getvalue().splitlines()
        self.assertNotIn("ring", "".join(l for l in lines if l.startswith("|")))
        self.assertIn("| 4 | bcast | knomial:2 | binomial | 1.00 [0.50, 2.00] | 4.00 [3.00, 5.00] "
                      "| 2.000 |", lines)
        self.assertIn("geometric mean of the medians 2.000; worst 4.00", out.getvalue())
        self.assertEqual(json.loads(lines[-1])["pairs"], rows)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            fixed_radix.report(rows[:1], 3, False)
        self.assertIn("Open MPI ran none", out.getvalue())

    def test_a_failing_run_names_its_command(self):
        with self.assertRaisesRegex(RuntimeError, "false -n 4 bench --grid"):
            fixed_radix.run_pair("bench", 4, "knomial:2", {"bcast": (6, "binomial")}, [8], 1,
                                 1.0, "false")


class DefaultsModel(unittest.TestCase):
    def test_refused_without_a_table_or_a_bench(self):
        import contextlib
        import io
        with contextlib.redirect_stderr(io.StringIO()) as err:
            status = cli.main(["evaluate", "--simulated", "--baselines-only", "--nodes", "16",
                               "--ppn", "1", "--sizes", "8", "--collectives", "bcast",
                               "--defaults-model", "2,1e-4,3e-5,0.2"])
        self.assertNotEqual(status, 0)
        self.assertIn("--defaults-model is for --table", err.getvalue())


class BaselinesOnly(unittest.TestCase):
    def test_no_tuner_rows(self):
        import contextlib
        import io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = cli.main(["evaluate", "--simulated", "--baselines-only", "--nodes", "16",
                               "--ppn", "1,2", "--sizes", "8,64", "--collectives", "bcast",
                               "--bench", "/nonexistent/bench_coll"])
        self.assertEqual(status, 0)
        text = out.getvalue()
        self.assertIn("| bcast: binomial only |", text)
        self.assertNotIn("bcast: tuner", text)
        self.assertIn("No tuner runs", text)


if __name__ == "__main__":
    unittest.main()
