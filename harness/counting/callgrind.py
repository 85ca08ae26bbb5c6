"""Run one callgrind process over many regions and turn its dumps into counts.

`measure(cases, paths, phases)` writes a worker spec, runs
``valgrind --tool=callgrind ... python -m harness.counting.worker SPEC OUT`` once,
parses one dump file per region and returns per-repetition instruction counts:
``(region total - loop-only total) / reps``, so loop and toggle overhead cancel.

Why these valgrind options: ``--instr-atstart=no`` skips instrumentation during
``import torch`` (about 14 s instead of 50 s here), the worker starts it with a client
request; ``--collect-atstart=no`` counts only between toggles; ``--cache-sim=no`` and
``--branch-sim=no`` keep only the instruction event (exact and repeatable); the fixed
environment (PYTHONHASHSEED=0, one thread everywhere) keeps runs identical.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from harness.counting.cases import PATHS, PHASES, CaseError, CaseSpec

DEFAULT_REPS = 50
DEFAULT_WARMUP = 64  # at least the counted reps are always warmed (see worker.Counter)
NATIVE_PATHS = ("owned", "borrowed")

# Client requests the worker needs (torch exposes only the toggles). Built per run with
# the system C compiler into the run's directory; the build takes well under a second.
CLIENT_REQUESTS_SOURCE = r"""
#include <valgrind/callgrind.h>
void cg_start_instrumentation(void) { CALLGRIND_START_INSTRUMENTATION; }
void cg_toggle_collect(void) { CALLGRIND_TOGGLE_COLLECT; }
void cg_dump_stats_at(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
void cg_nop(void) { }
int cg_running_on_valgrind(void) { return RUNNING_ON_VALGRIND; }
"""

FIXED_ENV = {
    "PYTHONHASHSEED": "0",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "TORCH_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    # A large malloc thread cache (and no trimming or dynamic mmap threshold) makes
    # allocation cost independent of what earlier regions left behind.
    "GLIBC_TUNABLES": "glibc.malloc.tcache_count=65535:glibc.malloc.trim_threshold=1073741824"
                      ":glibc.malloc.mmap_threshold=1073741824",
}
# Settings that change what torch runs; the worker must not inherit them.
DROPPED_ENV = ("TORCH_LOGS", "TORCHDYNAMO_VERBOSE", "PYTORCH_JIT", "TORCH_COMPILE_DEBUG",
               "PYTHONMALLOC", "PYTHONDEVMODE", "PYTHONWARNINGS")


class CountingError(RuntimeError):
    """The callgrind run itself failed (not a case): the message says why and what to do."""


class ValgrindNotFound(CountingError):
    pass


def find_valgrind() -> str:
    found = shutil.which("valgrind")
    if found is None:
        raise ValgrindNotFound("valgrind was not found on PATH; instruction counts need "
                               "callgrind: install it with `apt-get install valgrind`.")
    return found


def valgrind_version(valgrind: str | None = None) -> str:
    out = subprocess.run([valgrind or find_valgrind(), "--version"], capture_output=True,
                         text=True, check=True).stdout.strip()
    return out.removeprefix("valgrind-")


# --- callgrind dump files -----------------------------------------------------------------


@dataclass(frozen=True)
class Dump:
    """One callgrind output file: which dump it is, its label and its total costs."""

    path: str
    part: int
    trigger: str
    label: str | None
    totals: dict[str, int]

    @property
    def instructions(self) -> int:
        return self.totals["Ir"]


_TRIGGER_LABEL = re.compile(r"^Client Request: (.*)$")


def parse_dump(path: str | os.PathLike[str]) -> Dump:
    """Parse a callgrind output file's header and totals (not its per-function costs)."""
    part, trigger, events, totals, summary = 0, "", [], None, None
    with open(path) as f:
        for line in f:
            if line.startswith("part:"):
                part = int(line.split(":", 1)[1])
            elif line.startswith("desc: Trigger:"):
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
            elif line.startswith("summary:"):
                summary = [int(v) for v in line.split(":", 1)[1].split()]
            elif line.startswith("totals:"):
                totals = [int(v) for v in line.split(":", 1)[1].split()]
    values = totals if totals is not None else summary
    if not events or values is None:
        raise CountingError(f"{path} is not a complete callgrind dump (no events or totals "
                            "line); rerun, and check the disk is not full")
    values = values + [0] * (len(events) - len(values))  # trailing zero costs may be omitted
    match = _TRIGGER_LABEL.match(trigger)
    return Dump(str(path), part, trigger, match.group(1) if match else None,
                dict(zip(events, values)))


def read_dumps(directory: str | os.PathLike[str], base: str = "callgrind.out") -> list[Dump]:
    """The client-request dumps (``base.1``, ``base.2``, ...) in the order they were made."""
    dumps = [parse_dump(p) for p in Path(directory).glob(f"{base}.*") if p.suffix[1:].isdigit()]
    return sorted(dumps, key=lambda d: d.part)


# --- the run --------------------------------------------------------------------------------


@dataclass
class Measurement:
    """Raw outcome of one callgrind run; `results` holds one row per (case, path, phase)."""

    torch: str
    valgrind: str
    python: str
    control: str
    reps: int
    startup_seconds: float
    seconds_per_region: float
    regions: int
    results: list[dict[str, Any]] = field(default_factory=list)

    def to_plain(self) -> dict[str, Any]:
        return {
            "torch": self.torch, "valgrind": self.valgrind, "python": self.python,
            "control": self.control, "reps": self.reps,
            "startup_seconds": round(self.startup_seconds, 2),
            "seconds_per_region": round(self.seconds_per_region, 3),
            "regions": self.regions, "results": self.results,
        }


def build_client_requests(directory: str | os.PathLike[str]) -> tuple[str | None, str]:
    """Compile the client-request helper; returns (library path, "") or (None, why not)."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None, "no C compiler (cc) found"
    source = Path(directory, "cg_client_requests.c")
    library = Path(directory, "libcg_client_requests.so")
    source.write_text(CLIENT_REQUESTS_SOURCE)
    proc = subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(library), str(source)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, f"{compiler} could not build the client-request helper: {proc.stderr.strip()[:300]}"
    return str(library), ""


def load_native(paths: Sequence[str]) -> tuple[Any, str | None]:
    """(harness.native, None) when a native path is asked for and builds; (None, why not)
    otherwise. Runs in the parent first (so a build happens outside valgrind) and again
    in the worker, where the build is already cached."""
    if not any(p in NATIVE_PATHS for p in paths):
        return None, None
    try:
        import harness.native as native
    except ImportError as e:
        return None, f"harness.native is not available ({type(e).__name__}: {e})"
    try:
        build = getattr(native, "build", None)
        if build is not None:
            build()
    except Exception as e:  # NativeBuildError, or the compiler's own failure
        return None, f"native build failed ({type(e).__name__}: {e})"
    return native, None


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(FIXED_ENV)
    package_root = str(Path(__file__).resolve().parents[2])  # the directory holding harness/
    extra = [package_root, os.getcwd(), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in extra if p)
    return env


def _regions(cases: Sequence[CaseSpec], paths: Sequence[str], phases: Sequence[str],
             skipped_paths: Iterable[str]) -> list[dict[str, Any]]:
    skipped = set(skipped_paths)
    regions = [{"phase": f"{phase}-loop"} for phase in phases]
    for index, _case in enumerate(cases):
        for path in paths:
            if path in skipped:
                continue
            for phase in phases:
                regions.append({"case": index, "path": path, "phase": phase})
    for i, region in enumerate(regions):
        region["label"] = f"r{i}"
    return regions


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def measure(cases: Sequence[CaseSpec], paths: Sequence[str] = ("eager",),
            phases: Sequence[str] = PHASES, *, reps: int = DEFAULT_REPS,
            warmup: int = DEFAULT_WARMUP, timeout: float | None = None,
            keep_dir: str | os.PathLike[str] | None = None) -> Measurement:
    """Count every (case, path, phase) in one callgrind process.

    Native paths that cannot be built here are reported as unsupported with the reason.
    `keep_dir` keeps the spec, log and dump files there (a fresh temp dir otherwise).
    """
    for path in paths:
        if path not in PATHS:
            raise CaseError(f"unknown path {path!r}; valid paths: {', '.join(PATHS)}")
    for phase in phases:
        if phase not in PHASES:
            raise CaseError(f"unknown phase {phase!r}; valid phases: {', '.join(PHASES)}")
    if reps < 1 or warmup < 1:
        raise CaseError(f"reps={reps} and warmup={warmup} must both be at least 1")
    valgrind = find_valgrind()
    _, native_reason = load_native(paths)
    skipped = NATIVE_PATHS if native_reason else ()

    if keep_dir is not None:
        Path(keep_dir).mkdir(parents=True, exist_ok=True)
        return _measure_in(Path(keep_dir), valgrind, cases, paths, phases, reps, warmup,
                           timeout, native_reason, skipped)
    with tempfile.TemporaryDirectory(prefix="harness-callgrind-") as tmp:
        return _measure_in(Path(tmp), valgrind, cases, paths, phases, reps, warmup, timeout,
                           native_reason, skipped)


def _measure_in(workdir: Path, valgrind: str, cases: Sequence[CaseSpec], paths: Sequence[str],
                phases: Sequence[str], reps: int, warmup: int, timeout: float | None,
                native_reason: str | None, skipped: Sequence[str]) -> Measurement:
    library, why_not = build_client_requests(workdir)
    control = {"kind": "client", "library": library} if library else {"kind": "torch"}
    regions = _regions(cases, paths, phases, skipped)
    spec = {"cases": [c.to_plain() for c in cases],
            "paths": [p for p in paths if p not in skipped], "reps": reps,
            "warmup": warmup, "control": control, "regions": regions}
    spec_path, out_path, log_path = workdir / "spec.json", workdir / "out.json", workdir / "valgrind.log"
    spec_path.write_text(json.dumps(spec, indent=1))
    for old in workdir.glob("callgrind.out*"):
        old.unlink()

    command = [
        valgrind, "--tool=callgrind", "--quiet",
        f"--instr-atstart={'no' if library else 'yes'}", "--collect-atstart=no",
        "--cache-sim=no", "--branch-sim=no", "--dump-instr=no", "--dump-line=no",
        f"--callgrind-out-file={workdir / 'callgrind.out'}",
        sys.executable, "-m", "harness.counting.worker", str(spec_path), str(out_path),
    ]
    if timeout is None:
        timeout = 300 + 10 * len(regions)
    launched = time.time()
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=_worker_env(),
                                  timeout=timeout, cwd=workdir)
        except subprocess.TimeoutExpired:
            raise CountingError(f"callgrind ran past {timeout:.0f} s on {len(regions)} regions; "
                                "count fewer cases or pass a larger timeout") from None
    if proc.returncode != 0 or not out_path.exists():
        raise CountingError(f"the callgrind worker exited with status {proc.returncode}; its "
                            f"output ends with:\n{_tail(log_path)}")
    out = json.loads(out_path.read_text())
    if not out["under_valgrind"]:
        raise CountingError("the worker did not see valgrind (RUNNING_ON_VALGRIND is 0); "
                            f"check that {valgrind} really is valgrind")

    totals = _totals_by_label(workdir, out["regions"], labelled=bool(library))
    loop = {phase: totals[f"r{i}"] for i, phase in enumerate(phases)}
    records = {r["label"]: r for r in out["regions"]}
    results = []
    for region in regions[len(phases):]:
        case = cases[region["case"]]
        record = records[region["label"]]
        row = _row(case, region["path"], region["phase"], out["inputs"][str(region["case"])], reps)
        if record["status"] == "dumped":
            row["instructions"] = round((totals[region["label"]] - loop[region["phase"]]) / reps)
        else:
            row[record["status"]] = record["reason"]
        results.append(row)
    for index, case in enumerate(cases):
        for path in paths:
            if path in skipped:
                for phase in phases:
                    row = _row(case, path, phase, out["inputs"][str(index)], reps)
                    results.append({**row, "unsupported": native_reason})
    order = {(c.scenario, c.name): i for i, c in enumerate(cases)}
    results.sort(key=lambda r: (order[(r["scenario"], r["case"])], PATHS.index(r["path"]),
                                PHASES.index(r["phase"])))
    return Measurement(
        torch=out["torch"], valgrind=valgrind_version(valgrind), python=out["python"],
        control="client-requests" if library else f"torch-toggles ({why_not})", reps=reps,
        startup_seconds=out["ready_at"] - launched,
        seconds_per_region=(out["finished_at"] - out["ready_at"]) / max(len(regions), 1),
        regions=len(regions), results=results)


def _row(case: CaseSpec, path: str, phase: str, counted_inputs: int | None, reps: int) -> dict[str, Any]:
    inputs = case.inputs if case.inputs is not None else counted_inputs
    return {"scenario": case.scenario, "case": case.name, "path": path, "phase": phase,
            "inputs": inputs, "instructions": None, "reps": reps}


def _totals_by_label(workdir: Path, records: list[dict[str, Any]], labelled: bool) -> dict[str, int]:
    dumps = read_dumps(workdir)
    dumped = [r["label"] for r in records if r["status"] == "dumped"]
    if len(dumps) != len(dumped):
        raise CountingError(f"expected {len(dumped)} callgrind dumps in {workdir}, found "
                            f"{len(dumps)}; another process may share the directory")
    totals = {}
    for label, dump in zip(dumped, dumps):
        if labelled and dump.label != label:
            raise CountingError(f"dump {dump.path} is labelled {dump.label!r}, expected {label!r}")
        totals[label] = dump.instructions
    return totals


__all__ = [
    "CountingError", "DEFAULT_REPS", "Dump", "Measurement", "ValgrindNotFound",
    "build_client_requests", "find_valgrind", "load_native", "measure", "parse_dump",
    "read_dumps", "valgrind_version",
]
