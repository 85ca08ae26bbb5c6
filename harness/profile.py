"""Where a campaign's time goes: `python -m harness profile` (docs/profile.md).

One process runs the campaign's own fuzz loop (harness.campaign.fuzz: Hypothesis
generation, check(), gradcheck) over N examples, with a StageTimer in stages.STAGE_TIMER so
that check() reports its stages. After each example the same graph runs once more on the
same paths with no oracle at all (the path's applier through the runner, lifetimes off):
the raw execution the whole check is measured against, side by side, in the same run.

Stages are exclusive (a stage inside another counts for itself only), so they add up to the
time per example. The lifetime oracle works in two places: the rules checked after the runs
(the "lifetimes" stage, split out of compare) and the tracking inside each path's run (the
"lifetime tracking" stage: its records at the checkpoints, and the release checks after the
run, with the search for what holds a tensor left alive). A known torch issue's workaround
variant, checked inside compare, is one stage of its own ("workarounds"), all of its runs
included, so that the paths' stages are the example's own runs.

The twin-form oracle (harness/oracles/twins.py) is one stage, "twins" (building its twin and
running it on every path, comparing): the same examples without it cost the total less that
stage, so one run gives ms/example with and without twins side by side.
"""

from __future__ import annotations

import contextlib
import gc
import json
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field


class StageTimer:
    """Seconds per stage, exclusive: entering a stage pauses the one it is inside."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self._open: list[list] = []  # [name, since] of the stages entered, innermost last

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        now = time.perf_counter()
        if self._open:
            outer = self._open[-1]
            self.seconds[outer[0]] += now - outer[1]
        self._open.append([name, now])
        try:
            yield
        finally:
            end = time.perf_counter()
            inner, since = self._open.pop()
            self.seconds[inner] += end - since
            if self._open:
                self._open[-1][1] = end


@dataclass
class Profile:
    examples: int
    paths: list[str]
    #: exclusive milliseconds per example, by stage; they add up to the time per example
    stages: dict[str, float]
    #: the raw execution of the same graphs, ms per example, by path
    raw_ms: dict[str, float]
    #: the lifetime tracking inside the paths' runs, ms/example (its stage, timed directly)
    lifetimes_in_paths_ms: float
    #: the paths' runs in check() (their stages and the tracking in them) - their raw runs, ms/example:
    #: besides the tracking, what a path's first run of a graph costs more than its later ones
    paths_over_raw_ms: float
    loop_s: float
    #: the process's CPU time over the same loop (raw runs excluded): on a shared machine, what
    #: other processes' load does not inflate as much as wall time
    loop_cpu_s: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def ms_per_example(self) -> float:
        return sum(self.stages.values())

    @property
    def examples_per_second(self) -> float:
        return self.examples / self.loop_s if self.loop_s else 0.0

    @property
    def cpu_examples_per_second(self) -> float:
        return self.examples / self.loop_cpu_s if self.loop_cpu_s else 0.0

    @property
    def check_ms(self) -> float:
        """check() per example: every stage but generation and gradcheck (and the loop's own)."""
        return sum(ms for s, ms in self.stages.items() if s not in ("generation", "gradcheck", "other"))

    @property
    def without_twins_ms(self) -> float:
        """ms/example of the same examples without the twin-form oracle (its stage left out)."""
        return self.ms_per_example - self.stages.get("twins", 0.0)

    @property
    def raw_total_ms(self) -> float:
        return sum(self.raw_ms.values())

    def to_json(self) -> dict:
        raw = self.raw_total_ms
        return {
            "examples": self.examples, "paths": self.paths,
            "examples_per_second": round(self.examples_per_second, 2),
            "cpu_examples_per_second": round(self.cpu_examples_per_second, 2),
            "ms_per_example": round(self.ms_per_example, 3),
            "stages": {s: round(ms, 3) for s, ms in self.stages.items()},
            "shares": {s: round(ms / self.ms_per_example, 4) for s, ms in self.stages.items()},
            "lifetimes_in_paths_ms": round(self.lifetimes_in_paths_ms, 3),
            "paths_minus_raw_ms": round(self.paths_over_raw_ms, 3),
            "raw_ms": {p: round(ms, 3) for p, ms in self.raw_ms.items()},
            "check_over_raw": round(self.check_ms / raw, 2) if raw else None,
            "example_over_raw": round(self.ms_per_example / raw, 2) if raw else None,
            "without_twins_ms_per_example": round(self.without_twins_ms, 3),
            "with_over_without_twins": round(self.ms_per_example / self.without_twins_ms, 3)
            if self.without_twins_ms else None,
        }

    def table(self) -> str:
        total = self.ms_per_example
        head = (f"{self.examples} examples on {','.join(self.paths)}: {self.examples_per_second:.1f} examples/s, "
                f"{total:.2f} ms/example")
        cpu = f"(process CPU time: {self.cpu_examples_per_second:.1f} examples/s)"
        lines = [head, cpu, "", f"{'stage':<16} {'ms/example':>10} {'share':>7}"]
        for s, ms in self.stages.items():
            lines.append(f"{s:<16} {ms:>10.3f} {ms / total:>7.1%}")
        lines.append(f"{'total':<16} {total:>10.3f} {1:>7.1%}")
        raw = self.raw_total_ms
        lifetimes = (f"lifetime tracking inside the paths: {self.lifetimes_in_paths_ms:.3f} ms/example; the paths' "
                     f"runs less their raw runs: {self.paths_over_raw_ms:.3f}")
        raw_runs = ", ".join(f"{p} {ms:.3f}" for p, ms in self.raw_ms.items())
        lines += ["", lifetimes, f"raw execution of the same graphs, no oracle (ms/example): {raw_runs}; total {raw:.3f}"]
        if raw:
            lines.append(f"check / raw = {self.check_ms / raw:.2f}x; whole example (generation, check, gradcheck) "
                         f"/ raw = {total / raw:.2f}x")
        if self.stages.get("twins"):
            lines.append(f"twin-form oracle: {total:.2f} ms/example with it, {self.without_twins_ms:.2f} without "
                         f"(the same examples, its stage left out): {total / self.without_twins_ms:.2f}x")
        return "\n".join(lines)


def profile(path_names: list[str], examples: int, *, lifetimes: bool = True, device: str = "cpu",
            twins: bool = True) -> Profile:
    """Run the campaign's fuzz loop over `examples` examples and time every stage (with the
    twin-form oracle where `twins`, as `fuzz` runs by default)."""
    from hypothesis.database import InMemoryExampleDatabase

    from harness import paths as path_registry
    from harness.build import build
    from harness.campaign import fuzz, warm_up
    from harness.oracles.lifetimes import tracking_lifetimes
    from harness.stages import STAGE_TIMER

    paths = [path_registry.get(n) for n in path_names]
    warm_up(paths, device, lifetimes)  # as a campaign does: first-use imports and caches are not per example
    gc.collect()
    gc.freeze()  # fuzz() does this too; done here so its full collection is not in the first example
    timer = StageTimer()
    raw: dict[str, float] = defaultdict(float)
    seconds = defaultdict(float)
    count = [0]
    started = [0.0]
    current: list = [None]  # the spec being checked

    def on_example(spec) -> None:
        current[0] = spec
        started[0] = time.perf_counter()

    def on_record(record: dict) -> None:
        if record["kind"] != "example":
            return
        at, cpu_at = time.perf_counter(), time.process_time()
        seconds["generation"] += record["generate_ms"] / 1000
        # what follows check() in the loop: gradcheck, and making the record
        seconds["gradcheck"] += at - started[0] - record["check_ms"] / 1000
        count[0] += 1
        built = build(current[0], device)
        with tracking_lifetimes(False):
            for p in paths:
                since = time.perf_counter()
                path_registry.run_path(p, built)
                raw[p.name] += time.perf_counter() - since
        seconds["raw"] += time.perf_counter() - at
        seconds["raw cpu"] += time.process_time() - cpu_at

    token = STAGE_TIMER.set(timer)
    loop_start, loop_cpu_start = time.perf_counter(), time.process_time()
    try:
        fuzz(paths, until=float("inf"), device=device, database=InMemoryExampleDatabase(), lifetimes=lifetimes,
             on_record=on_record, known=set(), max_examples=examples, on_example=on_example, twins=twins,
             every_path=True)  # each stage's cost per example on every path asked for (no budget split)
    finally:
        STAGE_TIMER.reset(token)
    loop_s = time.perf_counter() - loop_start - seconds["raw"]
    loop_cpu_s = time.process_time() - loop_cpu_start - seconds["raw cpu"]
    n = max(count[0], 1)
    measured = {"generation": seconds["generation"], **timer.seconds, "gradcheck": seconds["gradcheck"]}
    path_stages = [f"path {p.name}" for p in paths]
    order = ["generation", "build", "math oracle", "error bounds", *path_stages, "lifetime tracking", "compare",
             "lifetimes", "workarounds", *(["twins"] if twins else []), "gradcheck"]
    stages = {s: 1000 * measured.get(s, 0.0) / n for s in order}
    stages["other"] = max(0.0, 1000 * loop_s / n - sum(stages.values()))  # Hypothesis' loop between examples
    raw_ms = {p.name: 1000 * raw[p.name] / n for p in paths}
    # (eager's run is timed as "path eager" only when it is one of `paths`; its tracking is always in the stage)
    over_raw = sum(stages[f"path {p.name}"] for p in paths) + stages["lifetime tracking"] - sum(raw_ms.values())
    return Profile(count[0], [p.name for p in paths], stages, raw_ms, stages["lifetime tracking"], over_raw, loop_s,
                   loop_cpu_s)


def write_profile(path_names: list[str], examples: int, *, json_file: str | None = None,
                  lifetimes: bool = True, twins: bool = True) -> int:
    """`python -m harness profile`: print the table, and write the JSON to `json_file`."""
    result = profile(path_names, examples, lifetimes=lifetimes, twins=twins)
    print(result.table())
    if json_file:
        with open(json_file, "w") as f:
            json.dump(result.to_json(), f, indent=2)
    return 0


__all__ = ["Profile", "StageTimer", "profile", "write_profile"]
