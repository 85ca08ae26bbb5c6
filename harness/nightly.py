"""`python -m harness nightly`: the campaign's property under HypoFuzz, the coverage-guided
fuzzer for Hypothesis tests, for a budget; then the campaign's report (docs/nightly.md).

HypoFuzz runs the property (harness/fuzz_target.py) itself, in `--workers` processes of its own,
so this process writes the campaign's settings to DIR/nightly.json and names it in the
environment (CONFIG_ENV). Everything else is the campaign's: the folder (examples.jsonl, one
record per example, which every worker appends to; reproducers per cause; report.md/html), the
example database (--database: a folder, or redis://host:port shared by every machine, which
HypoFuzz also keeps its corpus and failures in), the failures saved there replayed first
(harness.replay) and the known torch issues explaining only their mismatches.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.selection import campaign_paths

#: the environment variable naming a nightly's NightlyConfig file, for the property
CONFIG_ENV = "HARNESS_NIGHTLY_CONFIG"
CONFIG_NAME = "nightly.json"
#: HypoFuzz's own output (collection, worker start-up, its failures' tracebacks)
HYPOFUZZ_LOG_NAME = "hypofuzz.log"
FUZZ_TARGET = Path(__file__).with_name("fuzz_target.py")
#: the property's pytest node id in HypoFuzz (its pytest runs with --rootdir the folder above
#: harness/): part of HypoFuzz's database key for it (hypofuzz_key)
FUZZ_NODE_ID = "harness/fuzz_target.py::test_campaign_property"
#: the share of the budget the failures saved before may take to replay, before HypoFuzz starts
REPLAY_SHARE = 0.15
#: how long HypoFuzz's processes get to stop after SIGINT, once the budget is spent, before SIGKILL
STOP_GRACE_S = 10.0
#: `hypothesis fuzz`'s exit status once every worker's test has failed (it exits 2 on a usage
#: error, and with pytest's status when collection fails)
FOUND_EVERYWHERE = 1
#: what multiprocessing prints before the traceback of a worker process that raised
WORKER_DIED = "\nProcess Process-"
#: what a worker dies of when the hub, and the multiprocessing manager with it, is gone
HUB_GONE = ("ConnectionResetError", "BrokenPipeError", "EOFError", "ConnectionRefusedError")
MISSING_HYPOFUZZ = ("nightly runs the property under HypoFuzz, which is not installed in this Python "
                    f"({sys.executable}); install it with pip install -e '.[fuzz]'")


@dataclass(frozen=True)
class NightlyConfig:
    """What the property needs to know, as `fuzz` takes it on its command line."""

    paths: str  # comma-separated path names, as --paths
    device: str  # as --device: cpu, cuda or cpu,cuda
    out: str  # the campaign folder
    database: str  # --database, or the folder's own examples-db
    lifetimes: bool = True
    #: an unknown failure is recorded, its reproducer written and its example saved for `fuzz`
    #: campaigns to replay and shrink, but not raised: HypoFuzz goes on fuzzing (a raise ends its
    #: fuzzing of the property in that worker, which shrinks instead)
    keep_fuzzing: bool = False
    #: the twin-form oracle on every example (harness/oracles/twins.py), as fuzz has it by default
    twins: bool = True
    #: the known bugs' seeds and their mutants checked before HypoFuzz starts (harness/seeds.py)
    seeds: bool = True

    def write(self) -> Path:
        file = Path(self.out) / CONFIG_NAME
        file.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return file

    @classmethod
    def read(cls, file: str | Path) -> NightlyConfig:
        return cls(**json.loads(Path(file).read_text()))

    def example_database(self) -> Any:
        from harness.cluster import example_database
        from harness.records import DATABASE_NAME

        return example_database(self.database, Path(self.out) / DATABASE_NAME)


def hypofuzz_missing() -> str | None:
    """Why this Python cannot run HypoFuzz, or None."""
    return MISSING_HYPOFUZZ if importlib.util.find_spec("hypofuzz") is None else None


def open_log(out: str | Path, *, shared: bool = False):
    """The campaign log; shared: for a HypoFuzz worker, beside the others (records.ExampleLog)."""
    from harness.records import ExampleLog, log_path

    return ExampleLog(log_path(out), shared=shared)


def hypofuzz_command(workers: int, out: Path) -> list[str]:
    """`hypothesis fuzz` on the property, through this Python (whose Hypothesis loads HypoFuzz's
    command); pytest reads no project configuration (no filterwarnings=error, no addopts), and
    names the property FUZZ_NODE_ID wherever the folder is (its rootdir would be the folder)."""
    ini = out / "nightly-pytest.ini"
    ini.write_text("[pytest]\n")
    return [sys.executable, "-c", "import sys; from hypothesis.extra.cli import main; sys.exit(main(prog_name='hypothesis'))",
            "fuzz", "--numprocesses", str(workers), "--no-dashboard", "--",
            str(FUZZ_TARGET), "-c", str(ini), "--rootdir", str(FUZZ_TARGET.parent.parent), "-p", "no:cacheprovider",
            "-q"]


def hypofuzz_key() -> bytes:
    """HypoFuzz's database key of the property (its corpus is under it): the campaign's key
    (engine.graph_test_key) with the property's node id in the digest."""
    from harness.engine import graph_test_key

    return graph_test_key(FUZZ_NODE_ID)


def seed_hypofuzz_corpus(paths: list, database: Any) -> int:
    """Put the known bugs' seeds for `paths` (harness/seeds.py) into HypoFuzz's corpus of the
    property in `database`, which a HypoFuzz worker replays first when it starts and mutates
    from after; how many (none where the installed Hypothesis may decode them differently:
    seeds.seeds_refused)."""
    from hypofuzz.database import HypofuzzDatabase
    from hypothesis.database import choices_from_bytes

    from harness.engine import drawing
    from harness.seeds import campaign_seeds, seeds_refused

    if seeds_refused() is not None:
        return 0
    corpus, key, saved = HypofuzzDatabase(database).corpus, hypofuzz_key(), 0
    for _, value in campaign_seeds(paths, drawing(paths)):
        choices = choices_from_bytes(value)
        if choices is not None:
            corpus.save(key, choices)
            saved += 1
    return saved


def run_nightly(config: NightlyConfig, *, budget_s: float, workers: int, started: float,
                env: dict[str, str] | None = None) -> tuple[Any, str, str | None]:
    """Replay the saved failures, run HypoFuzz on the property until `started + budget_s`, stop it:
    (the campaign rebuilt from its log, how HypoFuzz ended, an error sentence if it never fuzzed)."""
    from harness.results import CampaignResult
    from harness.replay import replay_first
    from harness.records import log_path, now, read_log

    import torch

    out = Path(config.out)
    paths, device = campaign_paths(config.paths, config.device)
    database = config.example_database()
    end = started + budget_s
    log = open_log(out)
    log.write({"kind": "start", "t": now(), "paths": [p.name for p in paths], "device": device,
               "torch": torch.__version__, "budget_s": budget_s, "lifetimes": config.lifetimes, "resumed": False,
               "uncharged_s": 0.0, "engine": "hypofuzz", "twins": config.twins})
    replay_first([], paths, device, database, config.lifetimes, on_record=log.write, known=set(),
                 until=min(end, time.perf_counter() + REPLAY_SHARE * budget_s), twins=config.twins)
    if config.seeds:  # as fuzz starts: the known bugs' seeds and mutants of them, before HypoFuzz
        from harness.seeds import check_seeds, seeds_until

        known_first: set[str] = set()
        check_seeds(paths, device, database, config.lifetimes, until=seeds_until(end), on_record=log.write,
                    known=known_first, twins=config.twins)
        # and the seeds in HypoFuzz's corpus, for it to learn their coverage and mutate from them (the
        # property records an example checked here once: fuzz_target._Property)
        seed_hypofuzz_corpus(paths, database)
    status = run_hypofuzz(config, workers, end, env)
    how, error = how_it_ended(status, out / HYPOFUZZ_LOG_NAME)
    log.write({"kind": "end", "t": now(), "hypofuzz": how})
    log.close()
    return CampaignResult.from_records(read_log(log_path(out))), how, error


def run_hypofuzz(config: NightlyConfig, workers: int, end: float, env: dict[str, str] | None = None) -> int | None:
    """HypoFuzz on the property with `config`'s settings until it exits or `end` (perf_counter):
    its exit status, or None when `end` stopped it. Its output goes to the folder's hypofuzz.log."""
    out = Path(config.out)
    config_file = config.write()
    child_env = dict(os.environ if env is None else env)
    child_env[CONFIG_ENV] = str(config_file.resolve())
    # the harness HypoFuzz's workers import is this one (a checkout, an installed wheel)
    child_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parent.parent), child_env.get("PYTHONPATH", "")) if p)
    return _run_until(hypofuzz_command(workers, out), child_env, out / HYPOFUZZ_LOG_NAME, end)


def _run_until(command: list[str], env: dict[str, str], output: Path, end: float) -> int | None:
    """Run HypoFuzz in a session of its own (its hub and workers) until it exits or `end`: its
    exit status, or None when the budget stopped it."""
    with open(output, "ab") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            return process.wait(timeout=max(0.0, end - time.perf_counter()))
        except subprocess.TimeoutExpired:
            return None
        finally:
            _stop(process)


def how_it_ended(status: int | None, output: Path) -> tuple[str, str | None]:
    """(how HypoFuzz ended, in words; an error sentence when it never fuzzed)."""
    if status is None:
        return "stopped at the end of the budget", None
    text = output.read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    if status == FOUND_EVERYWHERE:  # the hub ends once no worker fuzzes, a dead one included
        died = [next((line for line in after.splitlines()[1:] if line.strip() and not line.startswith((" ", "Traceback"))),
                     "?") for after in text.split(WORKER_DIED)[1:]]  # each dead worker's exception
        # the hub's end takes down the manager its idle workers talk to: they die of that, not of a bug
        died = [d for d in died if not d.startswith(HUB_GONE)]
        if not died:
            return "exited by itself: every worker found a failure (HypoFuzz fuzzes a test until it fails)", None
        return (f"exited by itself: a worker died ({died[0]})",
                f"a HypoFuzz worker died ({died[0]}); its traceback is in {output}")
    return (f"exited at once with status {status}",
            f"HypoFuzz stopped without fuzzing (exit status {status}: {lines[-1] if lines else 'no output'}); "
            f"read {output}, fix what it says and run nightly again")


def _stop(process: subprocess.Popen) -> None:
    """SIGINT to HypoFuzz's whole session (as Ctrl-C), then SIGKILL to whatever is left of it (its
    workers outlive the hub: they are non-daemon processes that never return)."""
    for sig, grace in ((signal.SIGINT, STOP_GRACE_S), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=grace)


__all__ = ["CONFIG_ENV", "FUZZ_NODE_ID", "NightlyConfig", "hypofuzz_command", "hypofuzz_key", "hypofuzz_missing",
           "run_hypofuzz", "run_nightly", "seed_hypofuzz_corpus"]
