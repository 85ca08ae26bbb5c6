"""`python -m harness selfeval`: does a campaign find each seeded fault, and how fast?

Each fault runs in its own worker process (`python -m harness.selfeval.evaluate CONFIG`):
the fault is installed there, then an ordinary campaign (harness.campaign.run_campaign,
with the lifetime oracle) fuzzes the fault's paths until its first failure or the end of
the budget, shrinks that failure and writes its reproducer. Fuzzing gets the whole
per-fault budget; shrinking and writing get the campaign's usual share on top of it.

A fault that kills or stalls its worker counts as detected the way `fuzz --workers N`
records it (a crash, a hang), but only when the example it died on (from its heartbeat, with
the examples and seconds) runs clean without the fault in a child process: a crash that
happens without the fault too is not the fault's, and the fault counts as missed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from harness.campaign import SHRINK_SHARE

#: beyond the budget, what a worker may take to start (import torch, build the variant)
#: and to shrink, before it counts as hung
STARTUP_S = 240.0

#: the table's fault column: the longest name (dynamo_needs_input_grad_of_intermediates_false)
NAME_WIDTH = 46


@dataclass
class Outcome:
    fault: str
    family: str
    status: str  # detected | missed | not run
    seconds: float | None = None  # from the campaign's start to the first failure
    examples: int | None = None  # examples checked up to and including the first failure
    repro_lines: int | None = None  # the shrunk reproducer, without the embedded harness modules
    how: str = ""  # the failure signature, "crash ..."/"hang", or why it did not run
    reproducer: str = ""
    paths: str = ""
    #: failures found on the way that the example shows without the fault too (not counted)
    unrelated: list[str] = field(default_factory=list)

    def row(self) -> str:
        def cell(value: Any, fmt: str = "") -> str:
            return "-" if value is None else format(value, fmt)
        return (f"{self.fault:<{NAME_WIDTH}} {self.family:<9} {self.status:<9} {cell(self.seconds, '.1f'):>7} "
                f"{cell(self.examples):>8} {cell(self.repro_lines):>6}  {self.how[:90]}")


HEADER = (f"{'fault':<{NAME_WIDTH}} {'family':<9} {'result':<9} {'seconds':>7} {'examples':>8} {'lines':>6}  "
          "how it was found")


def reproducer_lines(path: str | Path) -> int:
    """Lines a reader of the reproducer reads: the script without its `_SOURCES` block
    (the embedded harness modules, one line each)."""
    lines = Path(path).read_text().splitlines()
    if "_SOURCES = {" in lines:
        start = lines.index("_SOURCES = {")
        end = lines.index("}", start)
        lines = lines[:start] + lines[end + 1:]
    return len(lines)


def why_not_runnable(path_names: tuple[str, ...]) -> str | None:
    from harness import paths

    for name in path_names:
        try:
            path = paths.get(name)
        except paths.UnknownPathError:
            return f"path {name!r} is not registered in this checkout"
        why = path.available()
        if why is not None:
            return f"path {name!r} cannot run here: {why}"
    return None


def evaluate(names: list[str], budget_s: float, out_dir: Path, workers: int = 1,
             on_result=None, twins: bool = True) -> list[Outcome]:
    """Each named fault in a worker process, `workers` at a time; twins: the campaigns run the
    twin-form oracle, as `fuzz` does by default."""
    from harness import selfeval

    out_dir.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> Outcome:
        fault = selfeval.get(name)
        why = why_not_runnable(("eager", *fault.paths))
        outcome = (Outcome(name, fault.family, "not run", how=why) if why is not None
                   else _run_worker(fault, budget_s, out_dir, twins))
        if on_result is not None:
            on_result(outcome)
        return outcome

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        return list(pool.map(one, names))


def _run_worker(fault: Any, budget_s: float, out_dir: Path, twins: bool = True) -> Outcome:
    scratch = Path(tempfile.mkdtemp(prefix=f"selfeval-{fault.name}-"))
    config = {"fault": fault.name, "paths": ["eager", *[p for p in fault.paths if p != "eager"]],
              "budget_s": budget_s, "out_dir": str(out_dir / fault.name),
              "heartbeat": str(scratch / "heartbeat.json"), "result": str(scratch / "result.json"),
              "twins": twins}
    limit = budget_s / (1 - SHRINK_SHARE) + STARTUP_S
    with open(scratch / "stderr.txt", "w") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "harness.selfeval.evaluate", json.dumps(config)],
                                   stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            code = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            code = None
    result = Path(config["result"])
    if code == 0 and result.exists():
        return Outcome(**json.loads(result.read_text()))
    beat = json.loads(Path(config["heartbeat"]).read_text()) if Path(config["heartbeat"]).exists() else {}
    if not beat.get("examples"):  # ended before its first example: an environment problem
        tail = (scratch / "stderr.txt").read_text().strip().splitlines()[-3:]
        return Outcome(fault.name, fault.family, "not run", how=f"worker failed to start: {' | '.join(tail)}")
    what = (f"hang (no result within {limit:.0f} s)" if code is None else
            f"crash (signal {-code})" if code < 0 else f"crash (exit code {code})")
    if not runs_clean_without_faults(beat.get("spec"), config["paths"], scratch):
        return Outcome(fault.name, fault.family, "missed", how=f"{what}, and its example fails without the fault "
                       "too: not the fault's", paths=",".join(fault.paths), unrelated=[what])
    return Outcome(fault.name, fault.family, "detected", round(beat["seconds"], 1), beat["examples"], None,
                   f"{what}: the campaign's worker isolation records it", paths=",".join(fault.paths))


#: what the example a worker died on may take to run again without the fault (start-up included)
RERUN_S = 180.0


def runs_clean_without_faults(spec_json: str | None, path_names: list[str], scratch: Path) -> bool:
    """Whether `python -m harness check` of that spec on those paths, in a child process with no
    fault installed, exits 0 within RERUN_S (no crash, no hang, no failure)."""
    import os

    from harness import selfeval

    if spec_json is None:
        return False
    spec_file = scratch / "died_on.json"
    spec_file.write_text(spec_json)
    env = {k: v for k, v in os.environ.items() if k != selfeval.ENV}
    env["PYTHONPATH"] = os.pathsep.join(p for p in env.get("PYTHONPATH", "").split(os.pathsep)
                                        if p and Path(p) != selfeval.SITE_DIR)
    try:
        done = subprocess.run([sys.executable, "-m", "harness", "check", str(spec_file), "--paths",
                               ",".join(path_names)], env=env, capture_output=True, timeout=RERUN_S, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def _fails_without(fault_name: str, failure: Any, remove: Callable[[], None]) -> tuple[bool, Callable[[], None]]:
    """Whether `failure`'s example fails with the fault removed too (then the campaign found
    something else: a harness or torch problem, not the fault). Returns that and the new
    remover, the fault being installed again."""
    from harness import paths, selfeval
    from harness.check import check
    from harness.shrink import twins_of_cause
    from harness.check import gradcheck_verdict

    remove()
    try:
        if failure.paths:
            still = bool(check(failure.spec, [paths.get(n) for n in sorted(failure.paths)],
                               twins=twins_of_cause(failure.signature)).failed)
        else:  # a float64 gradcheck failure
            still = gradcheck_verdict(failure.spec, "cpu")[0] == "failed"
    finally:
        remove = selfeval.install(fault_name)
    return still, remove


def _worker_main(config: dict[str, Any]) -> int:
    from harness import paths, selfeval
    from harness.campaign import run_campaign

    fault = selfeval.get(config["fault"])
    remove = selfeval.install(fault.name)
    heartbeat, started = Path(config["heartbeat"]), time.perf_counter()
    first: dict[str, Any] = {}  # seconds and examples at the first failure the fault causes
    examples = [0]  # checked so far
    unrelated: list[str] = []  # failures that happen without the fault as well

    def beat(spec) -> None:  # before each example: what a crash or hang is charged with
        if not first:
            heartbeat.write_text(json.dumps({"examples": examples[0] + 1, "seconds": time.perf_counter() - started,
                                             "spec": spec.to_json()}))

    def progress(result) -> None:
        nonlocal remove
        examples[0] = result.examples
        for cause, failure in list(result.failures.items()):
            if first:
                break
            still, remove = _fails_without(fault.name, failure, remove)
            if still:  # not the fault's: dropped, so the campaign goes on looking
                unrelated.append(cause)
                del result.failures[cause]
        if result.failures and not first:
            first.update(seconds=result.seconds, examples=result.examples)

    # fuzzing stops at (1 - SHRINK_SHARE) of a campaign's budget: give it all of ours
    result = run_campaign([paths.get(n) for n in config["paths"]], budget_s=config["budget_s"] / (1 - SHRINK_SHARE),
                          out_dir=config["out_dir"], until_failure=True, on_example=beat, on_progress=progress,
                          twins=config.get("twins", True))
    outcome = Outcome(fault.name, fault.family, "missed", how=f"{result.examples} examples, no failure",
                      paths=",".join(config["paths"]), unrelated=unrelated)
    if result.failures:
        failure = next(iter(result.failures.values()))
        outcome = Outcome(fault.name, fault.family, "detected", round(first["seconds"], 1), first["examples"],
                          reproducer_lines(failure.reproducer) if failure.reproducer else None,
                          f"on {','.join(sorted(failure.paths)) or 'no path'}: {failure.signature}",
                          failure.reproducer or "", ",".join(config["paths"]), unrelated)
    Path(config["result"]).write_text(json.dumps(asdict(outcome)))
    return 0


def main(names: list[str] | None, budget_s: float, json_path: str | None, out_dir: str, workers: int,
         twins: bool = True) -> int:
    from harness import selfeval

    chosen = names or [f.name for f in selfeval.FAULTS if f.evaluated]
    for name in chosen:
        selfeval.get(name)  # unknown names fail before anything runs
    print(f"{len(chosen)} seeded faults, {budget_s:.0f} s of fuzzing each, {workers} at a time, "
          f"{'with' if twins else 'without'} the twin-form oracle\n")
    print(HEADER, flush=True)
    started = time.perf_counter()
    outcomes = evaluate(chosen, budget_s, Path(out_dir), workers, on_result=lambda o: print(o.row(), flush=True),
                        twins=twins)
    for o in outcomes:
        for cause in o.unrelated:
            print(f"  not the fault's ({o.fault}; fails without it too): {cause}")
    ran = [o for o in outcomes if o.status != "not run"]
    found = [o for o in ran if o.status == "detected" and o.seconds is not None and o.seconds <= budget_s]
    share = 100 * len(found) / len(ran) if ran else 0.0
    print(f"\ndetected {len(found)} of {len(ran)} run ({share:.0f}%) within {budget_s:.0f} s each; "
          f"{len(outcomes) - len(ran)} not run here; {time.perf_counter() - started:.0f} s in all")
    if json_path:
        Path(json_path).write_text(json.dumps({
            "budget_s": budget_s, "twins": twins, "detected": len(found), "run": len(ran), "share": round(share, 1),
            "faults": [asdict(o) for o in outcomes]}, indent=2) + "\n")
        print(f"written to {json_path}")
    return 0 if ran and len(found) == len(ran) else 1


if __name__ == "__main__":
    sys.exit(_worker_main(json.loads(sys.argv[1])))
