"""roam's collectives autotuner: ACCLAiM (Wilkins, thesis ch. 3) for roam's algorithms.

One module per concept:
  space     the feature space: points (ranks, ppn, bytes), choices (algorithm + radix) and
            their labels, powers of two, the every-fifth non-power-of-two sizes
  dataset   the benchmark's "grid " lines (bench_coll --grid) read and written as JSON lines
  measure   where times come from: the benchmark under mpiexec (or any command printing the
            same lines), an exhaustive table, or the simulated machine
  simulate  the simulated machine: a LogGP-style model of roam's algorithms' schedules
  model     the random forest per collective, its features and the jackknife variance
  sampling  ACCLAiM's choice of the next point and its convergence test
  tune      the ACCLAiM loop for one collective
  rules     rules from a trained model (A/B/C midpoints, pruning), roam's rules file and
            MPICH's selection JSON
  evaluate  the metrics (Average Slowdown, Significant Mistake Proportion, accuracy,
            collection cost) of a way of choosing, over an exhaustive grid

The command line is tools/coll_tune.py; docs/guide/collectives_tuning.md tells the steps.
Python 3 with Debian's numpy and scikit-learn (python3-sklearn).
"""
