"""The command line of tools/coll_tune.py (its docstring lists the commands)."""

import argparse
import json
import math
import os
import sys
import time

from . import dataset, evaluate, measure, rules
from .model import ENCODINGS
from .space import COLLECTIVES, Point, Space, pow2_between
from .tune import Options, tune

USAGE = """roam's collectives autotuner (ACCLAiM, Wilkins' thesis ch. 3). Commands:
  grid      every algorithm and radix at every point, by the benchmark (or --simulated)
  tune      the ACCLAiM loop per collective, then roam's rules file (and MPICH's JSON)
  check     load a rules file with roam's own reader (bench_coll --default-choices --rules)
  mpich     MPICH's collective-selection JSON from a roam rules file
  evaluate  the tuner against roam's defaults, the binomial tree and the MPI library
  fixed-radix  the generalized algorithms at radix 2 (k-ring: 1) against Open MPI's
            fixed-radix versions of them, in the same runs
"coll_tune.py COMMAND --help" lists a command's options; docs/guide/collectives_tuning.md
tells the steps."""

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_BENCH = os.path.join(ROOT, "build", "default", "bench", "bench_coll")
TUNED = ("bcast", "reduce", "allgather", "allreduce")


def log(message):
    print(f"coll_tune: {message}", file=sys.stderr, flush=True)


def ints(text):
    try:
        return [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas: '{text}'")


def floats(text):
    try:
        out = [float(x) for x in text.split(",")]
    except ValueError:
        out = []
    if len(out) not in (3, 4) or any(not (x >= 0 and math.isfinite(x)) for x in out):
        raise argparse.ArgumentTypeError(
            f"expected ALPHA,BETA,GAMMA[,OVERHEAD] (non-negative numbers): '{text}'")
    return out


def names(text):
    out = [x for x in text.split(",") if x]
    for x in out:
        if x not in COLLECTIVES:
            raise argparse.ArgumentTypeError(f"unknown collective '{x}' ({', '.join(COLLECTIVES)})")
    return out


def add_bench_options(p):
    p.add_argument("--bench", default=DEFAULT_BENCH,
                   help="the bench_coll binary (default: build/default/bench/bench_coll)")
    p.add_argument("--bench-cmd", default=measure.DEFAULT_COMMAND,
                   help="the command printing grid lines for one configuration; placeholders "
                        "{ranks} {ppn} {nodes} {bench} {collective} {sizes} {runs} {target_ms}")
    p.add_argument("--bench-args", default="",
                   help="more arguments for every benchmark run (e.g. \"--choices knomial\")")
    p.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    p.add_argument("--target-ms", type=float, default=5.0, help="ms of calls per run")
    p.add_argument("--timeout-s", type=int, default=1800, help="limit for one benchmark run")


def command_backend(args):
    return measure.CommandBackend(args.bench, args.bench_cmd, args.runs, args.target_ms,
                                  args.timeout_s, args.bench_args.split(), log)


def cmd_grid(args):
    sizes = args.sizes or pow2_between(8, 1 << 20)
    if args.simulated:
        from . import simulate
        machine = simulate.Machine.from_args(args)
        backend = measure.SimulatedBackend(machine, runs=args.runs, target_ms=args.target_ms)
        configs = [(n * p, p) for n in args.nodes for p in (args.ppn or pow2_between(1, 64))]
    else:
        backend = command_backend(args)
        configs = [(r, r if args.ppn is None else args.ppn[0]) for r in args.ranks]
    out = open(args.out, "a" if args.append else "w")
    started = time.monotonic()
    for collective in args.collectives:
        for ranks, ppn in configs:
            points = [Point(ranks, ppn, s) for s in sizes]
            before = len(backend.measured.records)
            backend.measure(collective, points)
            for r in backend.measured.records[before:]:
                out.write(json.dumps(r, separators=(",", ":")) + "\n")
            out.flush()
            log(f"{collective} on {ranks} ranks ({ppn} per node): {len(sizes)} sizes, "
                f"{time.monotonic() - started:.0f} s so far")
    out.close()
    log(f"wrote {args.out}: {len(backend.measured.records)} records, benchmark time "
        f"{backend.cost_s:.0f} s")
    return 0


def add_sim_options(p):
    p.add_argument("--sim-noise", type=float, default=None,
                   help="simulated machine: the noise's spread (default 0.03)")
    p.add_argument("--sim-seed", type=int, default=None, help="simulated machine: noise seed")
    p.add_argument("--sim-ports", type=int, default=None,
                   help="simulated machine: network ports per node (default 4)")


def add_model_options(p):
    o = Options()
    p.add_argument("--encoding", default=o.encoding, choices=ENCODINGS,
                   help="how the forest sees a choice (model.py)")
    p.add_argument("--trees", type=int, default=o.trees, help="trees of each forest")
    p.add_argument("--seed", type=int, default=o.seed, help="the forests' and the sampling's seed")
    p.add_argument("--threshold", type=float, default=o.threshold,
                   help="convergence: the summed variance's change per iteration below this "
                        "(relative: a fraction of it; the thesis: 1e-9 absolute)")
    p.add_argument("--threshold-mode", default=o.threshold_mode, choices=("relative", "absolute"))
    p.add_argument("--window", type=int, default=o.window,
                   help="convergence: consecutive iterations under the threshold")
    p.add_argument("--min-iterations", type=int, default=o.min_iterations)
    p.add_argument("--max-fraction", type=float, default=o.max_fraction,
                   help="stop after measuring this fraction of the grid's points")
    p.add_argument("--budget-s", type=float, default=o.budget_s,
                   help="stop after this many seconds of benchmarking per collective")
    p.add_argument("--batch", type=int, default=o.batch, help="points measured per iteration")
    p.add_argument("--max-features", type=float, default=o.max_features,
                   help="the fraction of the features each split of a tree considers")


def options_of(args):
    return Options(encoding=args.encoding, trees=args.trees, seed=args.seed,
                   threshold=args.threshold, threshold_mode=args.threshold_mode,
                   window=args.window, min_iterations=args.min_iterations,
                   max_fraction=args.max_fraction, budget_s=args.budget_s, batch=args.batch,
                   max_features=args.max_features)


def space_of(args):
    sizes = args.sizes or pow2_between(8, 1 << 20)
    if args.nodes:
        return Space.of_nodes(args.nodes, args.ppn or [1], sizes)
    if not args.ranks:
        raise ValueError("say where to tune: --ranks R,... (one node) or --nodes N,... --ppn P,...")
    return Space([(r, r) for r in args.ranks], sizes)


def space_of_table(results, collective):
    points = results.points(collective)
    return Space(set((p.ranks, p.ppn) for p in points), set(p.bytes for p in points))


def check_rules(bench, path):
    """Loads the rules file with roam's reader (bench_coll --default-choices --rules), and
    returns its choice for one call per collective."""
    probe = [Point(4, 1, 1024)]
    return {c: evaluate.roam_choices(bench, c, probe, rules_file=path)[probe[0]]
            for c in COLLECTIVES}


def write_rules(args, doc, max_ranks):
    text = rules.dumps(doc)
    rules.check_shape(doc)
    with open(args.out, "w") as f:
        f.write(text)
    log(f"wrote {args.out}")
    if os.path.isfile(args.bench):
        check_rules(args.bench, args.out)
        log(f"{args.out} loads in roam ({args.bench} --default-choices --rules)")
    else:
        log(f"not checked with roam's reader: no {args.bench} (build bench_coll, then "
            f"tools/coll_tune.py check {args.out})")
    if args.mpich_out:
        base = None
        if args.mpich_base:
            with open(args.mpich_base) as f:
                base = json.load(f)
        with open(args.mpich_out, "w") as f:
            json.dump(rules.to_mpich(doc, max_ranks, base), f, indent=2)
            f.write("\n")
        log(f"wrote {args.mpich_out}")


def cmd_tune(args):
    options = options_of(args)
    if args.backend == "table":
        if not args.table:
            raise ValueError("--backend table needs --table FILE")
        results = dataset.load(args.table)
        backend = measure.TableBackend(results, args.runs, args.target_ms)
    elif args.backend == "simulated":
        from . import simulate
        backend = measure.SimulatedBackend(simulate.Machine.from_args(args), runs=args.runs,
                                           target_ms=args.target_ms)
    else:
        backend = command_backend(args)
    by_collective, max_ranks = {}, 1
    for c in args.collectives:
        space = space_of_table(results, c) if args.backend == "table" else space_of(args)
        max_ranks = max(max_ranks, max(space.rank_values()))
        res = tune(c, space, backend, options, log if args.verbose else None)
        log(f"{c}: {len(res.measured)} points measured of {len(space.points())} "
            f"({len(res.measured) / len(space.points()):.1%}), {res.iterations} iterations, "
            f"stopped: {res.stopped}; benchmark time {res.cost_s:.1f} s")
        by_collective[c] = rules.emit(res.best, space)
    if args.measured_out:
        backend.measured.write(args.measured_out)
        log(f"wrote {args.measured_out} (what was measured, as grid records)")
    write_rules(args, rules.to_roam(by_collective, max_ranks), max_ranks)
    return 0


def cmd_check(args):
    with open(args.rules) as f:
        doc = json.load(f)
    rules.check_shape(doc)
    got = check_rules(args.bench, args.rules)
    log(f"{args.rules} loads in roam; at 4 ranks, 1 per node, 1024 bytes: "
        + ", ".join(f"{c} {lab}" for c, lab in got.items()))
    return 0


def cmd_mpich(args):
    with open(args.rules) as f:
        doc = json.load(f)
    rules.check_shape(doc)
    max_ranks = args.max_ranks
    if max_ranks is None:
        bounds = [int(k.split("<=")[1]) for by_ranks in doc.values() for k in by_ranks if "<=" in k]
        max_ranks = 2 * max(bounds) if bounds else 1024
    base = None
    if args.base:
        with open(args.base) as f:
            base = json.load(f)
    with open(args.out, "w") as f:
        json.dump(rules.to_mpich(doc, max_ranks, base), f, indent=2)
        f.write("\n")
    log(f"wrote {args.out}")
    return 0


def cmd_fixed_radix(args):
    from . import fixed_radix
    if not (os.path.isfile(args.bench) and os.access(args.bench, os.X_OK)):
        raise RuntimeError(f"the benchmark {args.bench} is not an executable file: build it "
                           f"(cmake --build BUILD --target bench_coll) or give --bench")
    rows = fixed_radix.measure(args.bench, args.ranks, args.sizes, args.runs, args.target_ms,
                               args.repeats, args.mpiexec, log)
    fixed_radix.report(rows, args.repeats, args.json)
    return 0


def simulated_truth(args, machine, space, collectives):
    """{collective: {point: {label: µs}}} of the simulated grid, from --cache when it holds
    this machine's grid, else computed (and written there)."""
    stamp = f"# simulated machine: {machine!r}"
    if args.cache and os.path.exists(args.cache):
        with open(args.cache) as f:
            first = f.readline().rstrip("\n")
        if first == stamp:
            results = dataset.load(args.cache)
            if all(c in results.times for c in collectives):
                log(f"the simulated grid from {args.cache}")
                return {c: results.times[c] for c in collectives}
        log(f"{args.cache} holds another machine's or other collectives' grid: recomputing")
    backend = measure.SimulatedBackend(machine)
    started = time.monotonic()
    truth = {}
    for c in collectives:
        truth[c] = backend.measure(c, space.points())
        log(f"simulated {c}: {len(truth[c])} points ({time.monotonic() - started:.0f} s)")
    if args.cache:
        with open(args.cache, "w") as f:
            f.write(stamp + "\n")
            for r in backend.measured.records:
                f.write(json.dumps(r, separators=(",", ":")) + "\n")
    return truth


def mean_of(rows):
    keys = rows[0].keys()
    out = {}
    for k in keys:
        vals = [r[k] for r in rows]
        out[k] = None if any(v is None for v in vals) else sum(vals) / len(vals)
    return out


def non_pow2_table(args, machine, space, collectives, docs, have_bench):
    """The tuner's rules (each seed's), roam's defaults and the binomial tree at sizes that
    are not powers of two: --non-pow2 points per collective, each a random candidate
    configuration and a random size near a random power of two of the grid (seeded)."""
    from .space import candidates, non_pow2_size, seeded
    rng = seeded(args.seeds[0], "non-pow2 test")
    configs = space.candidate_configs
    sizes = [s for s in space.size_values() if s >= 4]
    points = sorted(set(Point(*rng.choice(configs), non_pow2_size(rng.choice(sizes), rng))
                        for _ in range(args.non_pow2)))
    print(f"\n### simulated grid, {len(points)} points at sizes that are not powers of two\n")
    print(evaluate.HEADER)
    for c in collectives:
        truth = {p: {lab: machine.time_us(c, lab, p) for lab in candidates(c, p.ranks)}
                 for p in points}
        ms = [evaluate.metrics(truth, lambda p: rules.select_label(d, c, p), points)
              for d in docs]
        if ms:
            print(evaluate.row(f"{c}: tuner", mean_of(ms)))
        if have_bench:
            picks = evaluate.roam_choices(args.bench, c, points, model=machine.hockney())
            print(evaluate.row(f"{c}: roam defaults", evaluate.metrics(truth, picks.get, points)))
        print(evaluate.row(f"{c}: binomial only", evaluate.metrics(truth, evaluate.binomial,
                                                                   points)))


def cmd_evaluate(args):
    from . import simulate
    runs, target_ms = args.runs, args.target_ms
    if args.simulated:
        machine = simulate.Machine.from_args(args)
        collectives = args.collectives or list(COLLECTIVES)
        sizes = args.sizes or pow2_between(8, 1 << 20)
        sim_space = Space.of_nodes(args.nodes, args.ppn, sizes)
        truth = simulated_truth(args, machine, sim_space, collectives)
        spaces = {c: sim_space for c in collectives}
        results = judge = None
        title = (f"simulated grid: {len(args.nodes)} node counts ({args.nodes[0]} ... "
                 f"{args.nodes[-1]}) x {len(args.ppn)} ppn ({args.ppn[0]} ... {args.ppn[-1]}) x "
                 f"{len(sizes)} sizes ({sizes[0]} B ... {sizes[-1]} B)")
    elif args.table:
        results = dataset.load(args.table)
        collectives = args.collectives or [c for c in COLLECTIVES if c in results.times]
        judge = dataset.load(args.truth) if args.truth else results
        for c in collectives:
            if c not in judge.times or set(judge.times[c]) != set(results.times.get(c, {})):
                raise ValueError(f"{args.truth} does not hold the same {c} points as {args.table}")
        truth = {c: judge.times[c] for c in collectives}
        spaces = {c: space_of_table(results, c) for c in collectives}
        title = f"measured grid {args.table}" + (f", judged on {args.truth}" if args.truth else "")
    else:
        raise ValueError("evaluate what: --table FILE or --simulated")
    have_bench = os.path.isfile(args.bench)
    if args.defaults_model and (args.simulated or not have_bench):
        raise ValueError("--defaults-model judges a measured table (--table) and needs "
                         f"bench_coll (--bench; {args.bench} is not there)" if not args.simulated
                         else "--defaults-model is for --table: the simulated grid's defaults "
                              "come from the simulated machine's own model")
    max_ranks = max(max(s.rank_values()) for s in spaces.values())
    tuned = {c: [] for c in collectives}
    docs = []
    for seed in [] if args.baselines_only else args.seeds:
        options = options_of(args)
        options.seed = seed
        if args.simulated:
            backend = measure.SimulatedBackend(machine, runs=runs, target_ms=target_ms)
        else:
            backend = measure.TableBackend(results, runs, target_ms)
        by_collective, stats = {}, {}
        for c in collectives:
            res = tune(c, spaces[c], backend, options, log if args.verbose else None)
            by_collective[c] = rules.emit(res.best, spaces[c])
            stats[c] = (len(res.measured), res.cost_s, res.iterations, res.stopped)
            log(f"seed {seed}: {c}: {len(res.measured)} points measured, {res.iterations} "
                f"iterations ({res.stopped}), {res.seconds:.0f} s")
        doc = rules.to_roam(by_collective, max_ranks)
        rules.check_shape(doc)
        docs.append(doc)
        path = args.rules_out if args.rules_out and seed == args.seeds[0] else \
            f"/tmp/coll_tune_rules_{os.getpid()}.json"
        with open(path, "w") as f:
            f.write(rules.dumps(doc))
        for c in collectives:
            points = sorted(truth[c])
            if have_bench:
                # roam's reader must load the file and choose as the tuner's evaluation does.
                theirs = evaluate.roam_choices(args.bench, c, points, rules_file=path)
                wrong = [p for p in points if theirs[p] != rules.select_label(doc, c, p)]
                if wrong:
                    raise RuntimeError(f"roam chooses otherwise than the evaluation at {len(wrong)} "
                                       f"{c} points of {path}, such as {wrong[0]}")
            m = evaluate.metrics(truth[c], lambda p: rules.select_label(doc, c, p), points)
            m["measured"], m["cost"] = stats[c][0], stats[c][1]
            tuned[c].append(m)
        if path != args.rules_out:
            os.remove(path)
    print(f"\n### {title}\n")
    if args.baselines_only:
        print("No tuner runs (--baselines-only)." + ("" if have_bench else
              " (roam's defaults not evaluated: no bench_coll.)") + "\n")
    else:
        print(f"Tuner: seeds {','.join(map(str, args.seeds))} (mean), encoding "
              f"{args.encoding}, {args.trees} trees (max_features {args.max_features:g}), "
              f"threshold {args.threshold:g} ({args.threshold_mode}), window "
              f"{args.window}, at most {args.max_fraction:.0%} of the grid; benchmark time as "
              f"bench_coll --runs {runs} --target-ms {target_ms:g} would spend it."
              + ("" if have_bench else " (roam's defaults not evaluated: no bench_coll.)") + "\n")
    print(evaluate.HEADER)
    for c in collectives:
        points = sorted(truth[c])
        total = evaluate.exhaustive_seconds(truth[c], runs, target_ms)
        if tuned[c]:
            m = mean_of(tuned[c])
            print(evaluate.row(f"{c}: tuner", m, round(m["measured"]), m["cost"], total))
        if results is not None and args.defaults_model and have_bench:
            picks = evaluate.roam_choices(args.bench, c, points, model=args.defaults_model)
            missing = [p for p in points if picks[p] not in truth[c][p]]
            if missing:
                raise ValueError(f"the table has no {picks[missing[0]]} at {missing[0]}")
            print(evaluate.row(f"{c}: roam defaults", evaluate.metrics(truth[c], picks.get,
                                                                       points)))
        elif results is not None and c in judge.default:
            dflt = judge.default[c]
            print(evaluate.row(f"{c}: roam defaults", evaluate.metrics(
                truth[c], lambda p: dflt[p][0] if dflt[p][0] in truth[c][p] else dflt[p][1],
                points)))
        elif args.simulated and have_bench:
            picks = evaluate.roam_choices(args.bench, c, points, model=machine.hockney())
            print(evaluate.row(f"{c}: roam defaults", evaluate.metrics(truth[c], picks.get, points)))
        print(evaluate.row(f"{c}: binomial only", evaluate.metrics(truth[c], evaluate.binomial,
                                                                   points)))
        if results is not None and c in judge.mpi:
            print(evaluate.row(f"{c}: MPI library", evaluate.metrics(truth[c], judge.mpi[c].get,
                                                                     points)))
        if results is not None and args.truth:
            seen = results.times[c]
            print(evaluate.row(f"{c}: exhaustive", evaluate.metrics(
                truth[c], lambda p: min(seen[p], key=seen[p].get), points),
                len(points), total, total))
    if args.simulated and args.non_pow2:
        non_pow2_table(args, machine, sim_space, collectives, docs, have_bench)
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="coll_tune.py", description=USAGE,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("grid", help="measure every algorithm and radix at every point")
    add_bench_options(g)
    g.add_argument("--collectives", type=names, default=list(TUNED))
    g.add_argument("--ranks", type=ints, default=[2, 4],
                   help="rank counts (one mpiexec run each; ppn = ranks: one node)")
    g.add_argument("--ppn", type=ints, default=None,
                   help="with --simulated: processes per node; otherwise the one ppn the "
                        "--bench-cmd places (default: all ranks on one node)")
    g.add_argument("--nodes", type=ints, default=pow2_between(16, 4096),
                   help="with --simulated: node counts")
    g.add_argument("--sizes", type=ints, default=None, help="bytes per rank (8 ... 1 MiB)")
    g.add_argument("--simulated", action="store_true", help="the simulated machine's times")
    g.add_argument("--append", action="store_true", help="append to --out")
    g.add_argument("--out", required=True, help="the dataset file (JSON lines)")
    add_sim_options(g)
    g.set_defaults(run=cmd_grid)

    t = sub.add_parser("tune", help="the ACCLAiM loop per collective, then the rules files")
    add_bench_options(t)
    add_model_options(t)
    t.add_argument("--backend", default="mpi", choices=("mpi", "table", "simulated"),
                   help="mpi: run --bench-cmd; table: look up --table; simulated: the model")
    t.add_argument("--table", help="--backend table: the exhaustive dataset (JSON lines)")
    t.add_argument("--collectives", type=names, default=list(TUNED))
    t.add_argument("--ranks", type=ints, help="rank counts on one node (ppn = ranks)")
    t.add_argument("--nodes", type=ints, help="node counts (with --ppn)")
    t.add_argument("--ppn", type=ints, help="processes per node (with --nodes)")
    t.add_argument("--sizes", type=ints, default=None, help="bytes per rank (8 ... 1 MiB)")
    t.add_argument("--out", required=True, help="roam's rules file to write")
    t.add_argument("--mpich-out", help="also MPICH's selection JSON")
    t.add_argument("--mpich-base", help="MPICH's own JSON, whose other entries to keep")
    t.add_argument("--measured-out", help="what was measured, as grid records (JSON lines)")
    t.add_argument("--verbose", action="store_true", help="log every iteration")
    add_sim_options(t)
    t.set_defaults(run=cmd_tune)

    k = sub.add_parser("check", help="load a rules file with roam's own reader")
    k.add_argument("rules")
    k.add_argument("--bench", default=DEFAULT_BENCH)
    k.set_defaults(run=cmd_check)

    m = sub.add_parser("mpich", help="MPICH's selection JSON from a roam rules file")
    m.add_argument("rules")
    m.add_argument("--out", required=True)
    m.add_argument("--base", help="MPICH's own JSON (its other collectives are kept)")
    m.add_argument("--max-ranks", type=int, help="the rank count behind comm_size=any")
    m.set_defaults(run=cmd_mpich)

    f = sub.add_parser("fixed-radix", help="the generalized algorithms at their default "
                                           "radix against Open MPI's fixed-radix versions")
    f.add_argument("--bench", default=DEFAULT_BENCH)
    f.add_argument("--ranks", type=ints, default=[4, 8])
    f.add_argument("--sizes", type=ints, default=[8, 64, 512, 4096, 32768, 262144, 1048576])
    f.add_argument("--runs", type=int, default=5)
    f.add_argument("--target-ms", type=float, default=5.0)
    f.add_argument("--repeats", type=int, default=3, help="runs of every pair, alternating")
    f.add_argument("--mpiexec", default="mpiexec --bind-to none",
                   help="the launcher, before -n RANKS")
    f.add_argument("--json", action="store_true", help="one JSON object as the last line")
    f.set_defaults(run=cmd_fixed_radix)

    e = sub.add_parser("evaluate", help="the tuner, roam's defaults, binomial and MPI compared")
    add_bench_options(e)
    add_model_options(e)
    e.add_argument("--table", help="an exhaustive dataset (the tuner uses --backend table)")
    e.add_argument("--truth", help="a second measurement of the same grid, on which every "
                                   "chooser is judged (the tuner trains on --table); adds the "
                                   "exhaustive chooser: --table's best at every point")
    e.add_argument("--simulated", action="store_true", help="the simulated grid")
    e.add_argument("--nodes", type=ints, default=pow2_between(16, 4096))
    e.add_argument("--ppn", type=ints, default=pow2_between(1, 64))
    e.add_argument("--sizes", type=ints, default=None)
    e.add_argument("--collectives", type=names, default=None)
    e.add_argument("--seeds", type=ints, default=[1], help="tuner runs (mean reported)")
    e.add_argument("--cache", help="--simulated: the exhaustive grid's file (made if absent)")
    e.add_argument("--non-pow2", type=int, default=0,
                   help="--simulated: also judge the rules at this many random points whose "
                        "size is not a power of two")
    e.add_argument("--defaults-model", type=floats, default=None,
                   help="--table: judge the defaults of this cost model ALPHA,BETA,GAMMA"
                        "[,OVERHEAD] (through bench_coll --default-choices) instead of the "
                        "choices the measurement recorded")
    e.add_argument("--baselines-only", action="store_true",
                   help="judge roam's defaults, the binomial tree and the MPI library only "
                        "(no tuner runs)")
    e.add_argument("--rules-out", help="the tuner's rules file (first seed)")
    e.add_argument("--verbose", action="store_true", help="log every iteration")
    add_sim_options(e)
    e.set_defaults(run=cmd_evaluate)

    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (RuntimeError, ValueError, KeyError, OSError) as e:
        log(str(e).strip("'\""))
        return 1
