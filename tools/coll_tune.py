#!/usr/bin/env python3
"""roam's collectives autotuner (ACCLAiM, Wilkins thesis ch. 3): measure, tune, export, evaluate.

  tools/coll_tune.py grid      --bench B --ranks 2,4,8 [--sizes ...] --out data.jsonl
        every algorithm and radix at every point, by the benchmark (or --simulated)
  tune      --backend mpi --bench B --max-ranks 8 --out rules.json [--mpich-out m.json]
        the ACCLAiM loop per collective, then roam's rules file (and MPICH's JSON)
  check     --bench B rules.json
        loads a rules file with roam's own reader (bench_coll --default-choices --rules)
  mpich     rules.json --out mpich.json [--base generic.json]
        MPICH's collective-selection JSON from a roam rules file
  evaluate  --table data.jsonl | --simulated
        the tuner against roam's shipped defaults, the binomial-only roam and the MPI
        library, as markdown tables (issue 29 item 5)

docs/guide/collectives_tuning.md tells the steps and what each option means. Needs Python 3
with Debian's numpy and scikit-learn (python3-sklearn; ./run deps installs it).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from coll_tuner import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli.main(sys.argv[1:]))
