"""Run one callgrind process over many regions and turn its dumps into counts.

`measure(cases, paths, phases)` writes a worker spec, runs
``valgrind --tool=callgrind ... python -c WORKER_BOOTSTRAP spec.json out.json``
once, parses the dump files (one per chunk of each region, matched by label) and
returns per-repetition instruction counts: for each chunk
``(chunk total - loop-only chunk total) / chunk reps``, so loop and toggle overhead
cancel; the median chunk is reported, so a one-off event in one chunk does not count.
Each row also records where that median chunk's instructions went: every function's
exclusive (self) cost per repetition, less the loop-only chunk's, the small ones summed
in "(other)" (`top_functions`); `report.attribute` explains a delta with them.

Why these valgrind options: ``--instr-atstart=no`` skips instrumentation during
``import torch`` (about 14 s instead of 50 s here), the worker starts it with a client
request; ``--collect-atstart=no`` counts only between toggles; ``--cache-sim=no`` and
``--branch-sim=no`` keep only the instruction event. The fixed environment
(PYTHONHASHSEED=0, one thread everywhere, malloc tunables) and relative paths keep runs
identical: the same selection with the same code gives the same counts. A different
selection, or any code change that shifts memory layout, moves eager counts by up to
about 1% (Python's method cache and pointer-keyed hash tables depend on addresses),
native counts by less; `report.check` has a band and an instruction floor for that.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.counting.cases import PATHS, PHASES, CaseError, CaseSpec, region_phases
from harness.counting.report import OTHER

DEFAULT_REPS = 50
DEFAULT_CHUNKS = 5  # counted reps run in this many dumped chunks; the median chunk counts
DEFAULT_WARMUP = 64  # at least the counted reps are always warmed (see worker.Counter)
NATIVE_PATHS = ("owned", "borrowed")
#: a row keeps the functions costing at least FUNCTION_SHARE of its instructions (and at
#: least FUNCTION_MIN per repetition); the rest goes into OTHER. At 0.02% about 300-500
#: functions are kept and OTHER holds 1-3% of a row (measured on the seed and chain rows)
FUNCTION_SHARE = 0.0002
FUNCTION_MIN = 1.0

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

# torch is imported before any harness module, so torch's objects and interned names
# sit at the same addresses whatever the harness's own code looks like (edits to it
# would otherwise shift eager counts by up to ~1% through Python's method cache).
WORKER_BOOTSTRAP = "import sys, torch; from harness.counting.worker import main; sys.exit(main())"

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
    """One callgrind output file: which dump it is, its label, its total costs and each
    function's exclusive (self) instruction count."""

    path: str
    part: int
    trigger: str
    label: str | None
    totals: dict[str, int]
    #: function name -> self Ir; unnamed code (a bare address) is one entry per object
    functions: dict[str, int] = field(default_factory=dict)

    @property
    def instructions(self) -> int:
        return self.totals["Ir"]


_TRIGGER_LABEL = re.compile(r"^Client Request: (.*)$")
_ADDRESS = re.compile(r"^0x[0-9a-fA-F]+$")
_RECURSION = re.compile(r"'\d+$")  # callgrind's name'2 for a function's second recursion level
# Names in a dump are compressed per kind: the first use is "(id) name", later ones "(id)".
# Objects (ob=, cob=), files (fl=, fi=, fe=, cfi=, cfl=) and functions (fn=, cfn=) each
# have their own id space.
_NAME_KINDS = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl",
               "cfl": "fl", "fn": "fn", "cfn": "fn"}
_COMPRESSED = re.compile(r"^\((\d+)\)(?: (.*))?$")


def _function_key(name: str, obj: str) -> str:
    """Unnamed code (a bare address, which moves from build to build) counts as one entry
    per object, e.g. ``??? [libffi.so.8]``; named functions are keyed by name alone, so
    the same function compares across torch builds and venvs; recursion levels
    (``name'2``) count as the function itself."""
    name = _RECURSION.sub("", name)
    if _ADDRESS.match(name):
        return f"??? [{os.path.basename(obj) or '???'}]"
    return name


def parse_dump(path: str | os.PathLike[str]) -> Dump:
    """Parse a callgrind output file: header, totals and per-function self costs.

    A cost line belongs to the current ``fn=`` as self cost, except the one line right
    after a ``calls=`` line: that is the inclusive cost of the call (already counted as
    self cost inside the callee), so it is skipped. The self costs add up to the totals;
    a dump where they do not is rejected.
    """
    part, trigger, events, positions, ir, totals, summary = 0, "", [], 1, 0, None, None
    names: dict[str, dict[str, str]] = {"ob": {}, "fl": {}, "fn": {}}
    functions: dict[str, int] = {}
    obj, current, skip_next_cost, self_total = "", None, False, 0
    with open(path) as f:
        for line in f:
            first = line[:1]
            if first.isdigit() or first in "+-*":
                if skip_next_cost:
                    skip_next_cost = False
                    continue
                if current is None or not events:
                    continue
                fields = line.split()
                cost = int(fields[positions + ir]) if len(fields) > positions + ir else 0
                functions[current] = functions.get(current, 0) + cost
                self_total += cost
                continue
            key, sep, value = line.rstrip("\n").partition("=")
            if sep and key in _NAME_KINDS:
                name = _expand(names[_NAME_KINDS[key]], value.strip())
                if key == "ob":
                    obj = name
                elif key == "fn":
                    current = _function_key(name, obj)
                continue
            if sep and key == "calls":
                skip_next_cost = True
            elif line.startswith("part:"):
                part = int(line.split(":", 1)[1])
            elif line.startswith("desc: Trigger:"):
                trigger = line.split(":", 2)[2].strip()
            elif line.startswith("positions:"):
                positions = len(line.split(":", 1)[1].split())
            elif line.startswith("events:"):
                events = line.split(":", 1)[1].split()
                ir = events.index("Ir") if "Ir" in events else 0
            elif line.startswith("summary:"):
                summary = [int(v) for v in line.split(":", 1)[1].split()]
            elif line.startswith("totals:"):
                totals = [int(v) for v in line.split(":", 1)[1].split()]
    values = totals if totals is not None else summary
    if not events or values is None:
        raise CountingError(f"{path} is not a complete callgrind dump (no events or totals "
                            "line); rerun, and check the disk is not full")
    values = values + [0] * (len(events) - len(values))  # trailing zero costs may be omitted
    by_event = dict(zip(events, values))
    if "Ir" in by_event and self_total != by_event["Ir"]:
        raise CountingError(f"{path}: the functions' self costs add up to {self_total:,} "
                            f"instructions, the dump's total is {by_event['Ir']:,}; the dump "
                            "is damaged or in a format this parser does not know")
    match = _TRIGGER_LABEL.match(trigger)
    return Dump(str(path), part, trigger, match.group(1) if match else None, by_event,
                {k: v for k, v in functions.items() if v})


def _expand(table: dict[str, str], value: str) -> str:
    """A compressed name: "(id) name" defines id, "(id)" refers to it; plain names pass."""
    match = _COMPRESSED.match(value)
    if match is None:
        return value
    ident, name = match.groups()
    if name is not None:
        table[ident] = name
        return name
    try:
        return table[ident]
    except KeyError:
        raise CountingError(f"callgrind dump refers to name id ({ident}) before defining "
                            "it; the dump is damaged") from None


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
    reps: int
    chunks: int
    startup_seconds: float
    seconds_per_region: float
    regions: int
    results: list[dict[str, Any]] = field(default_factory=list)
    #: how native paths were called: "extension" (its C entry) or "facade"; None if unused
    native_entry: str | None = None

    def to_plain(self) -> dict[str, Any]:
        return {
            "torch": self.torch, "valgrind": self.valgrind, "python": self.python,
            "reps": self.reps, "chunks": self.chunks,
            "startup_seconds": round(self.startup_seconds, 2),
            "seconds_per_region": round(self.seconds_per_region, 3),
            "regions": self.regions, "native_entry": self.native_entry,
            "results": self.results,
        }


def build_client_requests(directory: str | os.PathLike[str]) -> str:
    """Compile the client-request helper into `directory`; returns the library's path."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise CountingError("no C compiler found (cc); instruction counting builds a small "
                            "callgrind client-request helper: install one with `apt-get install gcc`")
    source = Path(directory, "cg_client_requests.c")
    library = Path(directory, "libcg_client_requests.so")
    source.write_text(CLIENT_REQUESTS_SOURCE)
    proc = subprocess.run([compiler, "-O1", "-shared", "-fPIC", "-o", str(library), str(source)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        hint = ("valgrind's headers are missing: install them with `apt-get install valgrind` "
                "(valgrind-devel on Fedora)" if "callgrind.h" in proc.stderr
                else "see the compiler output above")
        raise CountingError(f"{compiler} could not build the callgrind client-request helper "
                            f"({proc.stderr.strip()[:300]}); {hint}")
    return str(library)


def load_native(paths: Sequence[str]) -> tuple[Any, str | None]:
    """(harness.native, None) when a native path is asked for and builds; (None, why not)
    otherwise. Runs in the parent first (so a build happens outside valgrind) and again
    in the worker, where the build is already cached."""
    if not any(p in NATIVE_PATHS for p in paths):
        return None, None
    try:
        from harness import native
    except ImportError as e:
        return None, f"harness.native is not available ({type(e).__name__}: {e})"
    try:
        build = getattr(native, "build", None)
        if build is not None:
            build()
    except (RuntimeError, OSError, ImportError) as e:  # NativeBuildError is a RuntimeError
        return None, f"native build failed ({type(e).__name__}: {e})"
    return native, None


def _worker_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(FIXED_ENV)
    package_root = str(Path(__file__).resolve().parents[2])  # the directory holding harness/
    extra = [package_root, env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in extra if p)
    return env


def _check_repetitions(reps: int, warmup: int, chunks: int) -> None:
    if reps < 1 or warmup < 1 or chunks < 1 or reps % chunks:
        raise CaseError(f"reps={reps}, warmup={warmup}, chunks={chunks}: all must be at least 1 "
                        "and reps a multiple of chunks (e.g. reps=50, chunks=5)")


def write_worker_spec(workdir: str | os.PathLike[str], cases: Sequence[CaseSpec],
                      paths: Sequence[str], phases: Sequence[str], *, reps: int = DEFAULT_REPS,
                      warmup: int = DEFAULT_WARMUP, chunks: int = DEFAULT_CHUNKS) -> dict[str, Any]:
    """Build the client-request helper and write ``spec.json`` into `workdir` (the worker
    runs there); loop-only regions come first. Returns the spec."""
    _check_repetitions(reps, warmup, chunks)
    library = Path(build_client_requests(workdir)).name
    regions: list[dict[str, Any]] = [{"phase": f"{phase}-loop"} for phase in phases]
    regions += [{"case": index, "path": path, "phase": phase}
                for index in range(len(cases)) for path in paths
                for phase in region_phases(path, phases)]
    for i, region in enumerate(regions):
        region["label"] = f"r{i}"
    spec = {"cases": [c.to_plain() for c in cases], "paths": list(paths), "reps": reps,
            "warmup": warmup, "chunks": chunks, "client_requests": f"./{library}", "regions": regions}
    Path(workdir, "spec.json").write_text(json.dumps(spec, indent=1))
    return spec


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def measure(cases: Sequence[CaseSpec], paths: Sequence[str] = ("eager",),
            phases: Sequence[str] = PHASES, *, reps: int = DEFAULT_REPS,
            warmup: int = DEFAULT_WARMUP, chunks: int = DEFAULT_CHUNKS,
            timeout: float | None = None,
            keep_dir: str | os.PathLike[str] | None = None,
            functions: bool = True) -> Measurement:
    """Count every (case, path, phase) in one callgrind process.

    Native paths that cannot be built here are reported as unsupported with the reason.
    With `functions`, each row also says where its instructions went (`top_functions`).
    `keep_dir` receives a copy of the spec, log and dump files (also when the run fails).
    """
    for path in paths:
        if path not in PATHS:
            raise CaseError(f"unknown path {path!r}; valid paths: {', '.join(PATHS)}")
    for phase in phases:
        if phase not in PHASES:
            raise CaseError(f"unknown phase {phase!r}; valid phases: {', '.join(PHASES)}")
    _check_repetitions(reps, warmup, chunks)
    valgrind = find_valgrind()
    _, native_reason = load_native(paths)
    skipped = NATIVE_PATHS if native_reason else ()

    # Always a fresh temp dir of the same name length: the length of the worker's
    # directory name shifts its memory layout (and so a few counts); keep_dir gets a copy.
    with tempfile.TemporaryDirectory(prefix="harness-callgrind-") as tmp:
        try:
            return _measure_in(Path(tmp), valgrind, cases, paths, phases, reps, warmup, chunks,
                               timeout, native_reason, skipped, functions)
        finally:
            if keep_dir is not None:
                shutil.copytree(tmp, keep_dir, dirs_exist_ok=True)


def _measure_in(workdir: Path, valgrind: str, cases: Sequence[CaseSpec], paths: Sequence[str],
                phases: Sequence[str], reps: int, warmup: int, chunks: int, timeout: float | None,
                native_reason: str | None, skipped: Sequence[str], functions: bool) -> Measurement:
    runnable = [p for p in paths if p not in skipped]
    regions = write_worker_spec(workdir, cases, runnable, phases, reps=reps, warmup=warmup,
                                chunks=chunks)["regions"]
    launched = time.time()
    out = _run_worker(workdir, valgrind, timeout if timeout is not None else 300 + 10 * len(regions))
    dumps = _dumps_by_label(workdir, out["regions"], chunks)
    loop = {phase: dumps[f"r{i}"] for i, phase in enumerate(phases)}
    records = {r["label"]: r for r in out["regions"]}
    results = []
    for region in regions[len(phases):]:
        record = records[region["label"]]
        row = _row(cases[region["case"]], region["path"], region["phase"],
                   out["inputs"][str(region["case"])], reps)
        if record["status"] == "dumped":
            row.update(_counts(dumps[region["label"]], loop[region["phase"]], reps // chunks,
                               functions))
        else:
            row[record["status"]] = record["reason"]
        results.append(row)
    for index, case in enumerate(cases):
        for path in skipped:
            if path in paths:
                results += [{**_row(case, path, phase, out["inputs"][str(index)], reps),
                             "unsupported": native_reason} for phase in region_phases(path, phases)]
    order = {(c.scenario, c.name): i for i, c in enumerate(cases)}
    results.sort(key=lambda r: (order[(r["scenario"], r["case"])], PATHS.index(r["path"]),
                                PHASES.index(r["phase"])))
    return Measurement(
        torch=out["torch"], valgrind=valgrind_version(valgrind), python=out["python"], reps=reps,
        chunks=chunks,
        startup_seconds=out["ready_at"] - launched,
        seconds_per_region=(out["finished_at"] - out["ready_at"]) / len(regions),
        regions=len(regions), results=results, native_entry=out.get("native_entry"))


def _run_worker(workdir: Path, valgrind: str, timeout: float) -> dict[str, Any]:
    """Run the worker under callgrind in `workdir` (holding spec.json); returns out.json."""
    for old in workdir.glob("callgrind.out*"):
        old.unlink()
    out_path, log_path = workdir / "out.json", workdir / "valgrind.log"
    out_path.unlink(missing_ok=True)
    command = [
        valgrind, "--tool=callgrind", "--quiet", "--instr-atstart=no", "--collect-atstart=no",
        "--cache-sim=no", "--branch-sim=no", "--dump-instr=no", "--dump-line=no",
        "--callgrind-out-file=callgrind.out",
        # Relative names and -P (no cwd on sys.path): what the client process sees does
        # not depend on where the run directory is, which keeps its heap layout identical.
        sys.executable, "-P", "-c", WORKER_BOOTSTRAP, "spec.json", out_path.name,
    ]
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=_worker_env(),
                                  timeout=timeout, cwd=workdir, check=False)
        except subprocess.TimeoutExpired:
            raise CountingError(f"callgrind ran past {timeout:.0f} s; count fewer cases or pass "
                                "a larger timeout") from None
    if proc.returncode != 0 or not out_path.exists():
        raise CountingError(f"the callgrind worker exited with status {proc.returncode}; its "
                            f"output ends with:\n{_tail(log_path)}")
    out = json.loads(out_path.read_text())
    if not out["under_valgrind"]:
        raise CountingError("the worker did not see valgrind (RUNNING_ON_VALGRIND is 0); "
                            f"check that {valgrind} really is valgrind")
    return out


def _row(case: CaseSpec, path: str, phase: str, counted_inputs: int | None, reps: int) -> dict[str, Any]:
    inputs = case.inputs if case.inputs is not None else counted_inputs
    return {"scenario": case.scenario, "case": case.name, "path": path, "phase": phase,
            "inputs": inputs, "instructions": None, "reps": reps}


def _dumps_by_label(workdir: Path, records: list[dict[str, Any]], chunks: int) -> dict[str, list[Dump]]:
    """Region label -> its chunks' dumps, in order."""
    by_dump: dict[str, Dump] = {}
    for dump in read_dumps(workdir):
        if dump.label is None or dump.label in by_dump:
            raise CountingError(f"unexpected callgrind dump {dump.path} (trigger {dump.trigger!r}); "
                                "another process may share the directory")
        by_dump[dump.label] = dump
    found: dict[str, list[Dump]] = {}
    for record in records:
        if record["status"] != "dumped":
            continue
        labels = [f"{record['label']}.{k}" for k in range(chunks)]
        missing = [label for label in labels if label not in by_dump]
        if missing:
            raise CountingError(f"callgrind wrote no dump for {', '.join(missing)} in {workdir}; "
                                "rerun with keep_dir/--keep-dumps and read valgrind.log")
        found[record["label"]] = [by_dump[label] for label in labels]
    return found


def _counts(region: Sequence[Dump], loop: Sequence[Dump], chunk_reps: int,
            functions: bool) -> dict[str, Any]:
    """A region's per-repetition count (the median chunk, less the loop-only region's
    same chunk), its spread over the chunks and, with `functions`, where that median
    chunk's instructions went (see `top_functions`)."""
    per_rep = [(d.instructions - d0.instructions) / chunk_reps for d, d0 in zip(region, loop)]
    median = statistics.median(per_rep)
    counts: dict[str, Any] = {
        "instructions": round(median),
        "spread": round((max(per_rep) - min(per_rep)) / median, 4) if median else 0.0,
    }
    if functions:
        # the chunk(s) statistics.median took: the middle one, or the two middle ones
        order = sorted(range(len(per_rep)), key=per_rep.__getitem__)
        middle = len(order) // 2
        chosen = order[middle:middle + 1] if len(order) % 2 else order[middle - 1:middle + 1]
        per_function: dict[str, float] = {}
        for k in chosen:
            for diff in (region[k].functions, {n: -v for n, v in loop[k].functions.items()}):
                for name, cost in diff.items():
                    per_function[name] = per_function.get(name, 0.0) + cost / chunk_reps / len(chosen)
        counts["functions"] = top_functions(per_function, counts["instructions"])
    return counts


def top_functions(per_function: dict[str, float], instructions: int,
                  share: float = FUNCTION_SHARE, minimum: float = FUNCTION_MIN) -> dict[str, float]:
    """The functions costing at least `share` of `instructions` and `minimum` instructions
    per repetition (either sign: the loop-only region is subtracted), largest first,
    rounded to 0.1, and ``(other)`` holding the rest, so the values add up to
    `instructions`."""
    threshold = max(minimum, share * abs(instructions))
    kept = {name: round(cost, 1) for name, cost in
            sorted(per_function.items(), key=lambda item: (-abs(item[1]), item[0]))
            if abs(cost) >= threshold and name != OTHER}
    kept[OTHER] = round(instructions - sum(kept.values()), 1)
    return kept


__all__ = [
    "DEFAULT_CHUNKS",
    "DEFAULT_REPS",
    "FUNCTION_MIN",
    "FUNCTION_SHARE",
    "CountingError",
    "Dump",
    "Measurement",
    "ValgrindNotFound",
    "build_client_requests",
    "find_valgrind",
    "load_native",
    "measure",
    "parse_dump",
    "read_dumps",
    "top_functions",
    "valgrind_version",
    "write_worker_spec",
]
