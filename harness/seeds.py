"""Seeds from known bugs: every registered torch issue as an example campaigns start from.

Each registry entry (harness/known_issues) says, in its trigger, the graph structure its bug
needs. `find_seed` searches the campaign's own strategy (`graph_strategy`, for one `drawing`)
for the smallest graph whose structure triggers the entry, and keeps its *choice sequence*,
the form Hypothesis' example database stores: decoded by the same strategy it is that graph
again, so a seed is an ordinary saved example. `python -m harness seeds --write` searches every
entry under every drawing and writes SEEDS_FILE (package data); a test checks that each kept
seed still decodes to a graph that triggers its entry.

A campaign starts from them (`check_seeds`, after the replay of saved failures): within
SEED_SHARE of its budget it checks the seeds of entries on its paths, in a random order, then
mutants of them: a seed's choice sequence with one to three choices changed, decoded by the
strategy (a choice that no longer fits becomes the simplest one, as Hypothesis does when it
replays a changed sequence), so each mutant is a valid graph near a known bug. A mutant that
fails is saved under its causes like any failing example, and shrunk from there.
`python -m harness nightly` checks them the same way before HypoFuzz starts.

The upstream issues the registry names (`KnownIssue.upstream`) are the reports the entries'
reproducers were distilled from; the seed of an entry stands for its upstream report too.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import hypothesis
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis.database import ExampleDatabase, choices_from_bytes, choices_to_bytes
from hypothesis.internal.conjecture.data import ConjectureData

from harness import known_issues
from harness.engine import Drawing, current_choices, drawing, graph_strategy
from harness.known_issues import KnownIssue
from harness.paths import Path as ExecPath
from harness.records import OnRecord, harness_error_record, now
from harness.replay import check_outside_the_engine, decode, draw_graph
from harness.spec import GraphSpec

SEEDS_FILE = Path(__file__).resolve().parent / "known_issues" / "seeds.json"
#: how to write the seeds again (with the installed Hypothesis): every entry under every drawing
REGENERATE = "python -m harness seeds --write"
#: Hypothesis releases between which a choice sequence decodes to the same graph. A seed is Hypothesis'
#: internal choice format, which the strategy reads as that release draws: the seeds 6.170.27 wrote all
#: decode to their graphs under 6.156.1, three of them to other graphs under 6.155.7 (each release's
#: decoding of every seed, tests/test_seeds.py; docs/seeds.md). Outside one range nothing is known.
CHOICES_COMPATIBLE: tuple[tuple[str, str], ...] = (("6.156.1", "6.170.27"),)
#: the share of a campaign's fuzzing budget that seeds and their mutants may take
SEED_SHARE = 0.15
#: examples find_seed draws per entry and drawing before it gives up
SEARCH_EXAMPLES = 3000
#: and the seconds it may take, and of them the seconds of shrinking once one is found (the
#: example shrunk so far is kept: a seed need not be minimal, its mutants move away from it anyway)
SEARCH_SECONDS = 20.0
SHRINK_SECONDS = 4.0
#: the four graphs() options a campaign can draw with (harness.engine.drawing)
DRAWINGS: tuple[Drawing, ...] = tuple({"favour_torch_func": f, "favour_dynamo": d} for f in (False, True)
                                      for d in (False, True))


def drawing_name(drawn: Drawing) -> str:
    return "+".join(k.removeprefix("favour_") for k, v in sorted(drawn.items()) if v) or "default"


def triggered_anywhere(issue: KnownIssue, spec: GraphSpec) -> bool:
    """The entry's structure is in `spec` for at least one of its paths."""
    return any(t(spec) for t in (issue.trigger, *issue.path_triggers.values()))


class _Triggered(Exception):
    pass


class _SearchTimeUp(KeyboardInterrupt):
    """The search's time is spent: Hypothesis lets a KeyboardInterrupt through at once, and the
    best example so far is already in our hands (as harness.shrink's _TimeUp)."""


def find_seed(issue: KnownIssue, drawn: Drawing, device: str = "cpu",
              examples: int = SEARCH_EXAMPLES, seconds: float = SEARCH_SECONDS) -> bytes | None:
    """The choice sequence of the smallest graph of graphs(**drawn) that Hypothesis finds whose
    structure triggers `issue` (generation, then Hypothesis' shrinker for SHRINK_SECONDS, within
    `seconds` in all), or None."""
    found: list[str] = []
    until = [time.perf_counter() + seconds]

    @settings(max_examples=examples, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,
              phases=[Phase.generate, Phase.shrink])
    @given(graph_strategy(device, drawn))
    def search(spec: GraphSpec) -> None:
        if time.perf_counter() > until[0]:
            raise _SearchTimeUp
        if triggered_anywhere(issue, spec):
            if not found:
                until[0] = min(until[0], time.perf_counter() + SHRINK_SECONDS)
            found.append(current_choices())  # the last one is the shrunk example's (its final replay)
            raise _Triggered

    try:
        search()
    except (_Triggered, _SearchTimeUp):
        pass
    return base64.b64decode(found[-1]) if found else None


def write_seeds(path: Path = SEEDS_FILE, device: str = "cpu", ids: list[str] | None = None,
                seconds: float = SEARCH_SECONDS, progress: Callable[[str], None] = lambda line: None) -> dict:
    """Search every entry (or those of `ids`, keeping the others' seeds) under every drawing and
    write the seeds file; returns its content."""
    seeds = load_seeds(path) if ids else {}
    for issue in known_issues.by_ids(ids):
        for drawn in DRAWINGS:
            started = time.perf_counter()
            choices = find_seed(issue, drawn, device, seconds=seconds)
            spec = decode(choices, device, drawn) if choices is not None else None
            name = drawing_name(drawn)
            if spec is not None:
                seeds.setdefault(issue.id, {})[name] = {"choices": base64.b64encode(choices).decode(),
                                                        "spec": spec.to_json()}
            progress(f"{issue.id} [{name}]: {'seed found' if spec else 'no seed'} "
                     f"({time.perf_counter() - started:.1f} s)")
    content = {"generated_by": REGENERATE, "hypothesis": hypothesis.__version__,
               "search_examples": SEARCH_EXAMPLES, "seeds": seeds}
    path.write_text(json.dumps(content, indent=1, sort_keys=True) + "\n")
    return content


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


def choices_compatible(written_by: str, installed: str) -> bool:
    """A choice sequence Hypothesis `written_by` saved decodes to the same graph under `installed`."""
    def within(low: str, high: str, version: str) -> bool:
        return _release(low) <= _release(version) <= _release(high)
    return written_by == installed or any(within(low, high, written_by) and within(low, high, installed)
                                          for low, high in CHOICES_COMPATIBLE)


def seeds_refused(path: Path = SEEDS_FILE) -> str | None:
    """Why the seeds file cannot be used with the installed Hypothesis (one sentence), or None."""
    if not path.exists():
        return None
    written_by = json.loads(path.read_text()).get("hypothesis")
    installed = hypothesis.__version__
    if written_by is None:
        return (f"{path.name} does not say which Hypothesis wrote its choice sequences, so Hypothesis {installed} "
                f"may decode them to other graphs: write them again with `{REGENERATE}`.")
    if not choices_compatible(written_by, installed):
        return (f"{path.name} was written by Hypothesis {written_by}, whose choice sequences Hypothesis {installed} "
                f"may decode to other graphs: write them again with `{REGENERATE}` (or install a Hypothesis "
                f"release in {', '.join(f'{low} to {high}' for low, high in CHOICES_COMPATIBLE)}).")
    return None


def load_seeds(path: Path = SEEDS_FILE) -> dict[str, dict[str, dict[str, str]]]:
    """entry id -> drawing name -> {"choices": base64, "spec": JSON}."""
    return json.loads(path.read_text())["seeds"] if path.exists() else {}


def campaign_seeds(paths: list[ExecPath], drawn: Drawing) -> list[tuple[str, bytes]]:
    """(entry id, choice sequence) of the seeds a campaign over `paths` starts from: the entries
    that name one of its paths (fixed in this torch or not: a seed checks the fix too), found
    under the campaign's drawing."""
    name, seeds = drawing_name(drawn), load_seeds()
    return [(k.id, base64.b64decode(seeds[k.id][name]["choices"])) for k in known_issues.KNOWN_ISSUES
            if k.id in seeds and name in seeds[k.id] and any(k.affects_path(p.name) for p in paths)]


def mutated(choices: bytes, rng: random.Random) -> list:
    """`choices` with one to three of its choices changed: a boolean flipped, an integer moved by
    a little, a float scaled."""
    parsed = list(choices_from_bytes(choices) or ())
    for _ in range(rng.randint(1, 3)):
        if not parsed:
            break
        i = rng.randrange(len(parsed))
        c = parsed[i]
        if isinstance(c, bool):
            parsed[i] = not c
        elif isinstance(c, int):  # never to where it was (0 - 1 would fit back to 0)
            parsed[i] = c + rng.choice((1, 2, 5)) if c <= 0 else max(0, c + rng.choice((-2, -1, 1, 2, 5)))
        elif isinstance(c, float):
            parsed[i] = c * rng.choice((0.5, 2.0, -1.0))
    return parsed


def mutant(choices: bytes, device: str, drawn: Drawing, rng: random.Random) -> tuple[GraphSpec, bytes] | None:
    """A graph near the one `choices` draws: the strategy draws from the mutated sequence and, where
    the change makes it ask for more choices than there are (a flipped "one more" boolean), goes on
    at random; a choice that no longer fits is fitted as Hypothesis does when it replays a changed
    sequence. Returns the graph and the choices it really drew (what a database saves), or None."""
    data = ConjectureData(prefix=mutated(choices, rng), random=rng)
    spec = draw_graph(data, device, drawn)
    return None if spec is None else (spec, choices_to_bytes(tuple(data.choices)))


def seeds_until(end: float) -> float:
    """When a campaign ending at `end` stops checking seeds: SEED_SHARE of the time left."""
    now_ = time.perf_counter()
    return now_ + SEED_SHARE * max(0.0, end - now_)


def check_seeds(paths: list[ExecPath], device: str, database: ExampleDatabase, lifetimes: bool, *,
                until: float, on_record: OnRecord, known: set[str], worker: str = "",
                on_example: Callable[[GraphSpec, str], None] | None = None,
                rng: random.Random | None = None, twins: bool = False) -> None:
    """Check the campaign's seeds, then mutants of them, until `until`. Each check is an "example"
    record marked with its seed's entry (and "mutant": true); a new cause is saved under it in
    `database` for shrinking, as the fuzz test saves one. Ends with a "seeded" record (with "refused",
    the sentence why, where the seeds' Hypothesis and the installed one may decode them differently)."""
    started, rng = time.perf_counter(), rng or random.Random()
    refused = seeds_refused()
    if refused is not None:
        on_record({"kind": "seeded", "t": now(), "seconds": 0.0, "available": 0, "seeds": 0, "mutants": 0,
                   "failed": 0, "refused": refused})
        return
    drawn = drawing(paths)
    seeds = campaign_seeds(paths, drawn)
    rng.shuffle(seeds)
    seen: set[GraphSpec] = set()
    counts = {"seeds": 0, "mutants": 0, "failed": 0}
    broken: list[BaseException] = []

    def one(entry: str, draw: Callable[[], tuple[GraphSpec, bytes] | None], is_mutant: bool) -> None:
        try:
            drawn_spec = draw()
            if drawn_spec is None or drawn_spec[0] in seen:  # a mutant that came back to a graph checked already
                return
            spec, value = drawn_spec
            seen.add(spec)
            found = check_outside_the_engine(spec, value, paths, device, lifetimes, database=database, known=known,
                                             on_record=on_record, marks={"seed": entry, "mutant": is_mutant},
                                             worker=worker, on_example=on_example, twins=twins)
        except Exception as e:  # noqa: BLE001 -- the harness's own error (decoding, checking): recorded, never a pass
            on_record(harness_error_record(f"checking the seed of {entry}" + (" (a mutant)" if is_mutant else ""), e))
            broken.append(e)  # no more seeds: fuzzing, with its own record of such errors, has the time
            return
        if found is not None:
            counts["mutants" if is_mutant else "seeds"] += 1
            counts["failed"] += bool(found)

    def original(value: bytes) -> tuple[GraphSpec, bytes] | None:
        spec = decode(value, device, drawn)
        return None if spec is None else (spec, value)

    for entry, value in seeds:
        if time.perf_counter() >= until or broken:
            break
        one(entry, functools.partial(original, value), False)
    attempt = 0
    while seeds and time.perf_counter() < until and not broken:  # mutants, round the seeds, until the seeds' time is spent
        entry, value = seeds[attempt % len(seeds)]
        attempt += 1
        one(entry, functools.partial(mutant, value, device, drawn, rng), True)
    on_record({"kind": "seeded", "t": now(), "seconds": round(time.perf_counter() - started, 3),
               "available": len(seeds), **counts})


def seed_table(seeds: dict[str, dict[str, dict[str, str]]], issues: Iterable[KnownIssue]) -> list[str]:
    """One line per entry: under which drawings a seed was found (python -m harness seeds)."""
    names = [drawing_name(d) for d in DRAWINGS]
    lines = [f"{'entry':60} " + " ".join(f"{n:>14}" for n in names)]
    for k in issues:
        lines.append(f"{k.id:60} " + " ".join(f"{'seed' if n in seeds.get(k.id, {}) else '-':>14}" for n in names))
    found = sum(bool(seeds.get(k.id)) for k in known_issues.KNOWN_ISSUES)
    lines.append(f"{found} of {len(known_issues.KNOWN_ISSUES)} entries have a seed under at least one drawing")
    return lines
