#!/usr/bin/env bash
# The prepared CUDA check (issue 13): on a fresh GPU machine, within 8 minutes of wall time,
#   1. makes sure a GPU is visible and torch can use it (else one sentence on stderr, exit 2);
#   2. installs what is missing from wheel folders, if given (the GPU machine reaches no
#      package registry: carry wheels, see docs/gpu.md);
#   3. builds the native extension (owned/borrowed paths; without it those two are left out,
#      and the summary says why);
#   4. runs the tests in tests/cuda and, at the same time, two 3-minute campaigns:
#      every path on CUDA, and eager/owned/borrowed on cpu,cuda (CUDA judged against the CPU);
#   5. writes summary.txt: examples per path, failures, unsupported reasons, memory-baseline
#      checks, wall time.
#
# usage: scripts/gpu-check.sh [OUT_DIR]      (default: $OUT when set, else ./gpu-check-out)
# environment: PYTHON (default python3), HARNESS_TORCH_WHEELS and HARNESS_WHEELS (folders of
#   wheels to install torch and the other requirements from, when the machine lacks them),
#   GPU_CHECK_BUDGET (campaign seconds, default 180), GPU_CHECK_WORKERS (default 6),
#   GPU_CHECK_REHEARSAL=1 (every step on the CPU instead, to test this script where there is
#   no GPU; the summary says so and no GPU result comes of it).
# Exit: 0 all checks passed; 1 a test or campaign failed; 2 no usable GPU or environment.
# At most 8 files are written to OUT_DIR (what the device tool brings back).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT_DIR=${1:-${OUT:-$PWD/gpu-check-out}}
PYTHON=${PYTHON:-python3}
BUDGET=${GPU_CHECK_BUDGET:-180}
WORKERS=${GPU_CHECK_WORKERS:-6}
WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)
START=$(date +%s)

die() {  # one sentence on stderr, exit 2
  echo "gpu-check: $*" >&2
  exit 2
}

DEVICE=cuda CROSS=cpu,cuda
REHEARSAL=${GPU_CHECK_REHEARSAL:-}
[[ "$REHEARSAL" == 1 ]] && DEVICE=cpu CROSS=cpu

# --- 1. a GPU, and a torch that can use it ----------------------------------------------
if [[ "$REHEARSAL" == 1 ]]; then
  :
elif ! command -v nvidia-smi >/dev/null 2>&1; then
  die "no GPU is visible (nvidia-smi is not installed); run this on a machine with an NVIDIA GPU and its driver."
elif ! GPUS=$(nvidia-smi -L 2>&1) || ! grep -q '^GPU ' <<<"$GPUS"; then
  die "no GPU is visible (nvidia-smi -L lists none: $(head -n1 <<<"$GPUS")); run this on a machine with an NVIDIA GPU and its driver."
fi
command -v "$PYTHON" >/dev/null 2>&1 || die "no Python interpreter '$PYTHON' here; set PYTHON to one that has torch."

install_from() {  # install_from FOLDER REQUIREMENT...: wheels only, no registry
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$WORK/site" --find-links "$1" "${@:2}" >>"$WORK/install.log" 2>&1
}
export PYTHONPATH="$ROOT:$WORK/site${PYTHONPATH:+:$PYTHONPATH}"

torch_problem() {  # prints why torch cannot use the GPU; nothing when it can
  "$PYTHON" - <<'PY' 2>&1
import sys
try:
    import torch
except ImportError as e:
    print(f"torch is not installed ({e})")
    sys.exit()
if not torch.cuda.is_available():
    if torch.version.cuda is None:
        print(f"torch {torch.__version__} at {sys.executable} cannot use the GPU (a CPU-only build)")
    else:
        print(f"torch {torch.__version__} at {sys.executable} cannot use the GPU (built for CUDA "
              f"{torch.version.cuda}, torch.cuda.is_available() is False)")
PY
}
PROBLEM=$(torch_problem)
[[ "$REHEARSAL" == 1 ]] && PROBLEM=
if [[ -n "$PROBLEM" && -n "${HARNESS_TORCH_WHEELS:-}" ]]; then
  install_from "$HARNESS_TORCH_WHEELS" torch && PROBLEM=$(torch_problem)
[[ "$REHEARSAL" == 1 ]] && PROBLEM=
fi
if [[ -n "$PROBLEM" ]]; then
  die "$PROBLEM; put a CUDA build of torch that matches the driver in a folder named by HARNESS_TORCH_WHEELS and run again."
fi
missing() {  # the requirements not importable (ninja: not on PATH; torch's build needs it)
  "$PYTHON" -c '
import importlib.util
from torch.utils.cpp_extension import is_ninja_available
missing = [m for m in ("hypothesis", "pytest", "numpy") if importlib.util.find_spec(m) is None]
print(" ".join(missing + ([] if is_ninja_available() else ["ninja"])))'
}
export PATH="$WORK/site/bin:$PATH"  # where a ninja wheel installed below puts its binary
MISSING=$(missing)
if [[ -n "$MISSING" && -n "${HARNESS_WHEELS:-}" ]]; then
  install_from "$HARNESS_WHEELS" $MISSING
  MISSING=$(missing)
fi
# without ninja only the native build fails, and step 2 says so; the rest is needed
[[ -z "${MISSING/ninja/}" ]] || die "the Python packages $MISSING are missing and no wheels for them were given; carry wheels in a folder named by HARNESS_WHEELS and run again."

mkdir -p "$OUT_DIR" || die "cannot write to $OUT_DIR; give a writable folder as the first argument."
SUMMARY=$OUT_DIR/summary.txt
{
  echo "gpu-check of $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'an unversioned tree') on $(date -u '+%Y-%m-%d %H:%M UTC')"
  if [[ "$REHEARSAL" == 1 ]]; then
    echo "REHEARSAL on the CPU (GPU_CHECK_REHEARSAL=1): every step ran on the CPU; no GPU was used."
  else
    echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -n1)"
  fi
  "$PYTHON" -c 'import sys, torch, hypothesis; print(f"python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), hypothesis {hypothesis.__version__}")'
} >"$SUMMARY"

# --- 2. the native extension --------------------------------------------------------------
export HARNESS_NATIVE_CACHE=${HARNESS_NATIVE_CACHE:-$WORK/native} MAX_JOBS=16 TORCHINDUCTOR_COMPILE_THREADS=2 PYTHONUNBUFFERED=1
cd "$ROOT"
PATHS="eager,owned,borrowed,compiled:capture,compiled:eager,compiled:aot_eager,compiled:inductor,dynamo:eager,dynamo:aot_eager,dynamo:inductor"
#: the paths also run on cpu,cuda (each on the CPU and as <path>@cuda): one per way of running a
#: Function, so that a cause seen on <path>@cuda alone is told apart from the release's own
CROSS_PATHS="eager,owned,borrowed,compiled:aot_eager,dynamo:aot_eager,dynamo:inductor"
if timeout 150 "$PYTHON" -m harness build-native >"$OUT_DIR/build.log" 2>&1; then
  echo "native extension: built in $(($(date +%s) - START)) s since the start" >>"$SUMMARY"
else
  echo "native extension: NOT built, so owned and borrowed are left out: $(tail -n1 "$OUT_DIR/build.log")" >>"$SUMMARY"
  PATHS=${PATHS/owned,borrowed,/}
fi
# every path that can run here (a missing compiler for inductor, say, is named in the summary)
{ read -r PATHS; read -r UNAVAILABLE; } < <("$PYTHON" - "$PATHS" <<'PY'
import sys
from harness import paths
ok, out = [], []
for name in sys.argv[1].split(","):
    why = paths.get(name).available()
    (ok if why is None else out).append(name if why is None else f"{name} ({why})")
print(",".join(ok))
print("; ".join(out).replace("\n", " "))
PY
)
[[ -z "$UNAVAILABLE" ]] || echo "paths that cannot run here: $UNAVAILABLE" >>"$SUMMARY"
CROSS_PATHS=$(tr , '\n' <<<"$CROSS_PATHS" | grep -Fxf <(tr , '\n' <<<"$PATHS") | paste -sd,)

# --- 3. tests and campaigns, side by side ---------------------------------------------------
FAILURES=$WORK/failures
campaign() {  # campaign NAME DEVICE PATHS WORKERS
  timeout $((BUDGET + 60)) "$PYTHON" -m harness fuzz --device "$2" --paths "$3" --workers "$4" \
    --budget "${BUDGET}s" --json "$OUT_DIR/campaign-$1.json" --out "$FAILURES/$1" \
    >"$OUT_DIR/campaign-$1.log" 2>&1
}
campaign cuda "$DEVICE" "$PATHS" "$WORKERS" &
CUDA_PID=$!
campaign cpu-cuda "$CROSS" "$CROSS_PATHS" "$WORKERS" &
CROSS_PID=$!
HARNESS_PROFILE=ci timeout $((BUDGET + 30)) "$PYTHON" -m pytest -p no:xdist -q -rA tests/cuda \
  >"$OUT_DIR/pytest.log" 2>&1
TESTS_RC=$?
wait "$CUDA_PID"; CUDA_RC=$?
wait "$CROSS_PID"; CROSS_RC=$?
if [[ -d "$FAILURES" ]]; then
  tar -C "$WORK" -czf "$OUT_DIR/failures.tgz" failures
fi

# --- 4. the summary -------------------------------------------------------------------------
"$PYTHON" "$ROOT/scripts/gpu_check_summary.py" --tests-log "$OUT_DIR/pytest.log" --tests-rc "$TESTS_RC" \
  --campaign "$DEVICE=$OUT_DIR/campaign-cuda.json:$CUDA_RC" \
  --campaign "$CROSS=$OUT_DIR/campaign-cpu-cuda.json:$CROSS_RC" \
  --wall-seconds $(($(date +%s) - START)) >>"$SUMMARY"
STATUS=$?
cat "$SUMMARY"
exit "$STATUS"
