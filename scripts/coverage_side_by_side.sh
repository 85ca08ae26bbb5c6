#!/usr/bin/env bash
# Branch coverage of torch's custom-Function modules (harness/torch_coverage.py, FUNCTION_MODULES) by
# the `python -m harness fuzz` campaigns of two checkouts of the harness, run at the same time on the
# same machine so that load hits both alike, each for BUDGET; prints each campaign's summary line and the
# two coverage tables side by side. Both are measured the same way, by `coverage run` over `fuzz` (its
# workers too: coverage.py's subprocess, _exit and fork patches), with the include list of CANDIDATE_DIR's
# harness/torch_coverage.py: BASELINE_DIR needs no coverage command of its own (landed code before it).
#
# usage: scripts/coverage_side_by_side.sh BASELINE_DIR CANDIDATE_DIR [PATHS] [BUDGET] [OUT]
#        (defaults: eager,compiled,dynamo,func.grad,func.vmap, 3m, a new temporary folder);
#        e.g. git worktree add ../cov-baseline b512d71 first
# environment: PYTHON (default: python3), WORKERS (fuzz --workers, default 0: in the measured process, where
# coverage.py loses nothing; a worker killed at the budget's end mid-example loses all its data)
set -euo pipefail
usage="usage: scripts/coverage_side_by_side.sh BASELINE_DIR CANDIDATE_DIR [PATHS] [BUDGET] [OUT]"
BASE=$(cd "${1:?$usage}" && pwd)
CAND=$(cd "${2:?$usage}" && pwd)
PATHS=${3:-eager,compiled,dynamo,func.grad,func.vmap}
BUDGET=${4:-3m}
OUT=${5:-$(mktemp -d)}
PYTHON=${PYTHON:-python3}
WORKERS=${WORKERS:-0}
[ -f "$CAND/harness/torch_coverage.py" ] || { echo "error: $CAND has no harness/torch_coverage.py (the include list and the \
report); give a checkout with the coverage command as CANDIDATE_DIR (the same one twice measures the noise)." >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for side in base cand; do
    [ -e "$OUT/$side" ] && { echo "error: $OUT/$side exists already; give a new OUT folder." >&2; exit 2; }
    (cd "$CAND" && PYTHONPATH=$CAND "$PYTHON" -m harness.torch_coverage config "$OUT/$side" > /dev/null)
done
measure() {  # side, checkout
    (cd "$2" && PYTHONPATH=$2 "$PYTHON" -m coverage run --rcfile="$OUT/$1/coveragerc" -m harness fuzz \
        --paths "$PATHS" --budget "$BUDGET" --workers "$WORKERS" --out "$OUT/$1" \
        --json "$OUT/$1/summary.json" > "$OUT/$1.log" 2>&1) || true  # exit 1/3: failures, unchecked paths
}
measure base "$BASE" &
measure cand "$CAND" &
wait
for side in base cand; do
    dir=$BASE; [ "$side" = cand ] && dir=$CAND
    echo "$side ($dir): $(grep -m 1 "^torch .* examples (" "$OUT/$side.log" || echo "no summary; see $OUT/$side.log")"
done
echo
(cd "$CAND" && PYTHONPATH=$CAND "$PYTHON" -m harness.torch_coverage compare "$OUT/base" "$OUT/cand" \
    --names "baseline,candidate")
echo
echo "campaigns, logs and coverage data under $OUT (uncovered.txt of each: python -m harness.torch_coverage report DIR)"
