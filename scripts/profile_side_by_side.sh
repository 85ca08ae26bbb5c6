#!/usr/bin/env bash
# `python -m harness profile` of two checkouts of the harness, alternated ROUNDS times on the same
# machine at the same time, so that load hits both alike; prints each run's ms/example and the ratio
# of the medians (docs/profile.md). Each checkout is run from its own directory with the same python
# (its own `harness` package comes first on sys.path).
#
# usage: scripts/profile_side_by_side.sh BASELINE_DIR CANDIDATE_DIR [PATHS] [EXAMPLES] [ROUNDS]
#        (defaults: dynamo, 80, 3); e.g. git worktree add ../baseline 894f71f first
# environment: PYTHON (default: python3)
set -euo pipefail
BASE=${1:?usage: scripts/profile_side_by_side.sh BASELINE_DIR CANDIDATE_DIR [PATHS] [EXAMPLES] [ROUNDS]}
CAND=${2:?usage: scripts/profile_side_by_side.sh BASELINE_DIR CANDIDATE_DIR [PATHS] [EXAMPLES] [ROUNDS]}
PATHS=${3:-dynamo}
EXAMPLES=${4:-80}
ROUNDS=${5:-3}
PYTHON=${PYTHON:-python3}
out=$(mktemp -d)
for round in $(seq "$ROUNDS"); do
    for side in base cand; do
        dir=$BASE; [ "$side" = cand ] && dir=$CAND
        (cd "$dir" && "$PYTHON" -m harness profile --paths "$PATHS" --examples "$EXAMPLES" \
            --json "$out/$side.$round.json" > "$out/$side.$round.log" 2>&1)
        echo "round $round $side ($dir): $(grep -m 1 " examples on " "$out/$side.$round.log")"
    done
done
"$PYTHON" - "$out" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def ms(side, key):
    runs = [json.load(open(f"{out}/{side}.{r}.json")) for r in range(1, rounds + 1)]
    return [1000 / run[key] for run in runs]
for key, what in (("examples_per_second", "wall"), ("cpu_examples_per_second", "process CPU")):
    base, cand = ms("base", key), ms("cand", key)
    print(f"{what} ms/example, baseline: {[round(x) for x in base]}, candidate: {[round(x) for x in cand]}; "
          f"median ratio baseline/candidate: {statistics.median(base) / statistics.median(cand):.2f}x")
PY
