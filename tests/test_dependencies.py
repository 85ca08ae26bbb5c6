"""What pyproject.toml declares is what the code needs: every third-party import is declared, the
pins cover what is installed, Hypothesis' range has every internal the harness touches, and the
seeds file says which Hypothesis wrote its choice sequences."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

import hypothesis
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from harness import seeds

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
CORE = [Requirement(r) for r in PROJECT["dependencies"]]
EXTRAS = {name: [Requirement(r) for r in reqs] for name, reqs in PROJECT["optional-dependencies"].items()}

#: import name -> distribution name, where they differ
DISTRIBUTION = {"pysource_minimize": "pysource-minimize", "yaml": "pyyaml"}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _third_party_imports(folder: Path, local: set[str]) -> dict[str, set[str]]:
    """Top-level third-party module -> the files importing it (function-level imports too)."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        if "reproducers" in path.parts:  # plain-torch scripts, run by a user as they are
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top not in sys.stdlib_module_names and top not in local:
                    found.setdefault(top, set()).add(str(path.relative_to(ROOT)))
    return found


def _declared(requirements: list[Requirement]) -> set[str]:
    return {_normal(r.name) for r in requirements}


def test_every_third_party_import_of_the_package_is_declared():
    everywhere = _declared(CORE) | set().union(*(_declared(reqs) for reqs in EXTRAS.values()))
    imports = {}
    for folder in ("harness", "strategies"):
        imports.update(_third_party_imports(ROOT / folder, {"harness", "strategies"}))
    undeclared = {m: sorted(files) for m, files in imports.items() if _normal(DISTRIBUTION.get(m, m)) not in everywhere}
    assert not undeclared, f"declare these in pyproject.toml (dependencies or an extra): {undeclared}"


def test_every_third_party_import_of_the_tests_is_in_the_extras_the_suite_runs_with():
    """tox.ini installs the project with its `extras` (test, cluster) before running the suite."""
    extras = re.search(r"^extras\s*=\s*(.+)$", (ROOT / "tox.ini").read_text(), re.MULTILINE)[1].split(",")
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {"harness", "strategies"}
    declared = _declared(CORE).union(*(_declared(EXTRAS[e.strip()]) for e in extras))
    imports = _third_party_imports(ROOT / "tests", local)
    undeclared = {m: sorted(files) for m, files in imports.items() if _normal(DISTRIBUTION.get(m, m)) not in declared}
    assert not undeclared, f"declare these in pyproject.toml's test extra: {undeclared}"


@pytest.mark.parametrize("requirement", CORE + EXTRAS["test"], ids=str)
def test_an_installed_dependency_is_within_its_pin(requirement):
    try:
        installed = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"{requirement.name} is not installed here")
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"{requirement.name} {installed} is installed, outside pyproject.toml's {requirement}: test it and "
        f"widen the pin, or install a release within it")


def test_hypothesis_pin_is_the_tested_range():
    (pin,) = [r for r in CORE if r.name == "hypothesis"]
    assert str(pin.specifier) in {">=6.133.2,<=6.170.27", "<=6.170.27,>=6.133.2"}


def test_the_internals_the_harness_uses_are_there():
    """The lower pin's claim, on the installed release (6.133.2 was checked the same way: docs/seeds.md)."""
    from hypothesis.control import BuildContext, current_build_context  # noqa: F401
    from hypothesis.database import choices_from_bytes, choices_to_bytes
    from hypothesis.internal.conjecture.data import ConjectureData, ConjectureResult
    from hypothesis.internal.reflection import function_digest

    assert callable(ConjectureData.for_choices) and callable(function_digest)
    assert hasattr(ConjectureResult, "span_comments") or hasattr(ConjectureResult, "slice_comments")
    assert hasattr(hypothesis.HealthCheck, "nested_given")
    assert choices_from_bytes(choices_to_bytes((True, 3, 1.5))) == (True, 3, 1.5)

    @hypothesis.given(hypothesis.strategies.integers())
    def test(x):
        pass
    assert test._hypothesis_internal_use_settings is not None and test.hypothesis.inner_test is not None


def test_the_seeds_say_which_hypothesis_wrote_them():
    written_by = json.loads(seeds.SEEDS_FILE.read_text())["hypothesis"]
    (low, high), = seeds.CHOICES_COMPATIBLE
    assert Version(low) <= Version(written_by) <= Version(high)
    # the seeds' range lies within the declared one
    (pin,) = [r for r in CORE if r.name == "hypothesis"]
    assert pin.specifier.contains(low) and pin.specifier.contains(high)


def test_the_seeds_are_used_exactly_where_their_choices_decode_alike():
    """(tests/test_seeds.py decodes every seed under the installed release: the range's measurement)"""
    written_by = json.loads(seeds.SEEDS_FILE.read_text())["hypothesis"]
    assert (seeds.seeds_refused() is None) == seeds.choices_compatible(written_by, hypothesis.__version__)


@pytest.mark.parametrize("stamp", ["6.100.0", "6.155.7", None])
def test_seeds_from_another_hypothesis_are_refused_in_one_sentence(stamp, tmp_path):
    data = json.loads(seeds.SEEDS_FILE.read_text())
    if stamp is None:
        del data["hypothesis"]
    else:
        data["hypothesis"] = stamp
    copy = tmp_path / "seeds.json"
    copy.write_text(json.dumps(data))
    why = seeds.seeds_refused(copy)
    assert why is not None and why.count(". ") == 0 and why.endswith(".")
    assert "`python -m harness seeds --write`" in why


def test_a_campaign_skips_refused_seeds_and_says_why(monkeypatch):
    from harness import paths
    from harness.results import CampaignResult

    monkeypatch.setattr(seeds, "seeds_refused", lambda path=seeds.SEEDS_FILE: "the reason.")
    records = []
    seeds.check_seeds([paths.get("eager")], "cpu", None, lifetimes=False, until=float("inf"),
                      on_record=records.append, known=set())
    assert [r["kind"] for r in records] == ["seeded"] and records[0]["refused"] == "the reason."
    result = CampaignResult(["eager"], "cpu")
    result.add_record(records[0])
    assert result.seed_note() == "not started from known bugs: the reason."
    assert "not started from known bugs: the reason." in result.summary()
    assert CampaignResult.from_json(result.as_json()).seeds_refused == "the reason."
