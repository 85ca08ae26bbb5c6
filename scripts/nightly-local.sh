#!/usr/bin/env bash
# The nightly workflow's steps (.github/workflows/nightly.yml), run here: the same commands, read
# from the workflow by scripts/nightly_local.py. Each run is a "night": its campaign goes to
# $NIGHTLY_WORKDIR/campaign, and the previous run's campaign becomes $NIGHTLY_WORKDIR/last, which
# `diff` compares it with, as GitHub compares with last night's artifact.
#
# usage: scripts/nightly-local.sh
# environment:
#   NIGHTLY_BUDGET    budget of the campaign (default 60s; the workflow's default is 3h)
#   NIGHTLY_TOXENV    the matrix entry, a tox env of tox.ini (default torch213)
#   NIGHTLY_USE_VENV  1: the current venv's python instead of the tox env (no tox needed)
#   NIGHTLY_WORKDIR   where the campaigns go (default campaigns/nightly-local in the repository)
#   NIGHTLY_DATABASE  a --database (redis://host:port, or a folder); unset: the workflow's
#                     github:OWNER/REPO/examples-db-<env>, which without GitHub is left out
#                     (Hypothesis warns that it cannot reach it) while examples-db gets the writes
#   PYTHON            the interpreter (default: $VIRTUAL_ENV/bin/python when a venv is active,
#                     else python3); it needs PyYAML, and with NIGHTLY_USE_VENV=1 the harness
# Exit status: the workflow's verdict (0, or 1 for new unknown failures since the previous run,
# or for any unknown failure on a first run; another status when a step failed).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python}}
exec "${PYTHON:-python3}" "$ROOT/scripts/nightly_local.py"
