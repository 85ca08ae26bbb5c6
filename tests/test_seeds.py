"""Seeds from known bugs (harness/seeds.py): each kept seed is its entry's structure, campaigns
start from them and their mutants, and a new cause met there is saved for shrinking."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
import time

import pytest
from hypothesis.database import InMemoryExampleDatabase

from harness import known_issues, paths, seeds
from harness.engine import CauseDatabase, graph_test_key
from harness.replay import decode
from harness.selfeval import installed
from harness.spec import GraphSpec

SEEDS = seeds.load_seeds()
DRAWN = {seeds.drawing_name(d): d for d in seeds.DRAWINGS}
KEPT = [(entry, name, seed) for entry, by_drawing in sorted(SEEDS.items()) for name, seed in sorted(by_drawing.items())]


def test_most_entries_have_a_seed_and_every_seed_names_a_registry_entry():
    ids = {k.id for k in known_issues.KNOWN_ISSUES}
    assert set(SEEDS) <= ids
    assert len(SEEDS) >= 0.75 * len(ids), sorted(ids - set(SEEDS))


@pytest.mark.parametrize("entry, drawing, seed", KEPT, ids=[f"{e}-{d}" for e, d, _ in KEPT])
def test_each_seed_decodes_to_its_spec_and_triggers_its_entry(entry, drawing, seed):
    spec = decode(base64.b64decode(seed["choices"]), "cpu", DRAWN[drawing])
    assert spec is not None, "the generator changed since the seeds were written: python -m harness seeds --write"
    assert spec == GraphSpec.from_json(seed["spec"])
    issue = next(k for k in known_issues.KNOWN_ISSUES if k.id == entry)
    assert seeds.triggered_anywhere(issue, spec)


def test_mutants_are_valid_graphs_most_of_them_new_and_their_choices_draw_them_again():
    rng = random.Random(0)
    drawn = DRAWN["default"]
    values = [base64.b64decode(s["default"]["choices"]) for s in SEEDS.values() if "default" in s][:10]
    assert values
    near = [seeds.mutant(v, "cpu", drawn, rng) for v in values for _ in range(3)]
    originals = {decode(v, "cpu", drawn) for v in values}
    assert sum(m is not None for m in near) >= 0.8 * len(near)
    assert sum(m is not None and m[0] not in originals for m in near) >= 0.6 * len(near)
    for m in near:
        if m is not None:
            assert decode(m[1], "cpu", drawn) == m[0]  # saved for shrinking, it is the same graph


def test_a_campaign_starts_from_its_paths_seeds_through_the_cli(tmp_path):
    out, summary = tmp_path / "campaign", tmp_path / "summary.json"
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager,owned", "--budget", "40s",
                           "--out", str(out), "--json", str(summary)], capture_output=True, text=True, timeout=300)
    # on this torch every failure a seed shows is a registered one (the seeds are the registry's own
    # graphs): an unknown failure (exit 1) is a finding to register, never a pass of this test
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seeded = json.loads(summary.read_text())["seeded"]
    assert seeded["failed"] == 0
    records = [json.loads(line) for line in (out / "examples.jsonl").read_text().splitlines()]
    from_seeds = [r for r in records if r.get("kind") == "example" and "seed" in r]
    assert seeded["seeds"] >= 1 and seeded["available"] >= seeded["seeds"]
    assert len(from_seeds) == seeded["seeds"] + seeded["mutants"]
    on_paths = {k.id for k in known_issues.KNOWN_ISSUES if k.affects_path("eager") or k.affects_path("owned")}
    assert {r["seed"] for r in from_seeds} <= on_paths
    assert "started from known bugs:" in done.stdout
    # within its share of the budget: the fuzzing that follows checked examples of its own
    assert sum(r.get("kind") == "example" and "seed" not in r for r in records) >= 1


def test_no_seeds_turns_them_off(tmp_path):
    out, summary = tmp_path / "campaign", tmp_path / "summary.json"
    # (40 s: on a loaded two-core machine 20 s went to start-up with no example checked, exit 3)
    done = subprocess.run([sys.executable, "-m", "harness", "fuzz", "--paths", "eager", "--budget", "40s",
                           "--out", str(out), "--json", str(summary), "--no-seeds"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert json.loads(summary.read_text())["seeded"] == {}
    assert "seed" not in (out / "examples.jsonl").read_text()


def test_a_new_cause_met_on_a_seed_is_saved_under_it_for_shrinking():
    database, records, known = InMemoryExampleDatabase(), [], set()
    with installed("wrong_backward"):
        seeds.check_seeds([paths.get("eager")], "cpu", database, False, until=time.perf_counter() + 30,
                          on_record=records.append, known=known, rng=random.Random(1))
    assert records[-1]["kind"] == "seeded" and records[-1]["failed"] >= 1
    assert known, "the seeded fault's cause was found on a seed or a mutant"
    for cause in known:
        assert list(CauseDatabase(database, [cause]).fetch(graph_test_key() + b".secondary"))


def test_the_seeds_command_prints_which_entries_have_one():
    done = subprocess.run([sys.executable, "-m", "harness", "seeds"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["entry", "default", "dynamo", "torch_func", "dynamo+torch_func"]
    assert lines[-1] == f"{len(SEEDS)} of {len(known_issues.KNOWN_ISSUES)} entries have a seed under at least one drawing"


def test_writing_the_seeds_of_one_entry_keeps_the_others(tmp_path):
    """`seeds --write ID` as the CLI runs it, into a copy of the file: the entry's seeds are found
    again (they trigger it), every other entry's are kept as they were."""
    copy = tmp_path / "seeds.json"
    copy.write_text(seeds.SEEDS_FILE.read_text())
    entry = "eager-dirty-view-not-first-input"  # a common trigger: found in a second or two
    content = seeds.write_seeds(copy, ids=[entry], seconds=10)
    assert {k: v for k, v in content["seeds"].items() if k != entry} == {k: v for k, v in SEEDS.items() if k != entry}
    issue = next(k for k in known_issues.KNOWN_ISSUES if k.id == entry)
    for name, seed in content["seeds"][entry].items():
        assert seeds.triggered_anywhere(issue, decode(base64.b64decode(seed["choices"]), "cpu", DRAWN[name]))
