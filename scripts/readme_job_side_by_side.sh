#!/usr/bin/env bash
# The README's main job (`python -m harness fuzz --budget 60s`) run two ways, alternated ROUNDS
# times on the same machine, so that load hits both alike: two checkouts (each run from its own
# directory), or one checkout with two sets of extra options. Prints each run's exit status, wall
# time, examples per path and the budget split (docs/profile.md, issue 37's README target).
#
# usage: scripts/readme_job_side_by_side.sh DIR_A DIR_B [ROUNDS] [OPTIONS_A] [OPTIONS_B]
#   e.g. scripts/readme_job_side_by_side.sh . . 3 "--workers 1" ""     (one worker against the default)
#        scripts/readme_job_side_by_side.sh ../baseline . 3           (after git worktree add ../baseline REV)
# environment: PYTHON (default: python3), BUDGET (default: 60s)
set -euo pipefail
A=${1:?usage: scripts/readme_job_side_by_side.sh DIR_A DIR_B [ROUNDS] [OPTIONS_A] [OPTIONS_B]}
B=${2:?usage: scripts/readme_job_side_by_side.sh DIR_A DIR_B [ROUNDS] [OPTIONS_A] [OPTIONS_B]}
ROUNDS=${3:-3}
OPTIONS_A=${4:-}
OPTIONS_B=${5:-}
PYTHON=${PYTHON:-python3}
BUDGET=${BUDGET:-60s}
out=$(mktemp -d)
for round in $(seq "$ROUNDS"); do
    for side in a b; do
        dir=$A options=$OPTIONS_A
        if [ "$side" = b ]; then dir=$B options=$OPTIONS_B; fi
        start=$(date +%s)
        # shellcheck disable=SC2086 -- the options are words
        status=0
        (cd "$dir" && "$PYTHON" -m harness fuzz --budget "$BUDGET" $options --out "$out/$side$round" \
            > "$out/$side$round.log" 2>&1) || status=$?
        counts=$(grep -E '^(eager|owned|borrowed|compiled|dynamo|func[^ ]*) ' "$out/$side$round.log" \
            | awk '{printf "%s %s, ", $1, $2}')
        split=$(grep -o 'torch.compile on .*alone on [0-9]* ([0-9.]* s)' "$out/$side$round.log" || true)
        echo "round $round $side ($dir $options): exit $status, wall $(( $(date +%s) - start )) s; ${counts}split: ${split:-none}"
    done
done
echo "logs and campaigns: $out"
