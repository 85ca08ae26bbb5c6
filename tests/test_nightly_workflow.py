"""The nightly GitHub Actions workflow, checked here since it cannot run here: its schedule, its
matrix against tox.ini, its uploads, every `python -m harness` command through the real parser,
the local runner's view of it (scripts/nightly_local.py), and the github: example database
that carries failures from night to night, read from an artifact without GitHub."""

from __future__ import annotations

import configparser
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis.database import (
    DirectoryBasedExampleDatabase,
    GitHubArtifactDatabase,
    MultiplexedDatabase,
    ReadOnlyDatabase,
)
from hypothesis.errors import HypothesisWarning

from harness.cli import build_parser
from harness.cluster import ClusterError, example_database

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "nightly.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SHELL_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}?")


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _job() -> dict:
    return _workflow()["jobs"]["campaign"]


def _run_steps() -> dict[str, str]:
    return {step.get("id", step.get("name")): step["run"] for step in _job()["steps"] if "run" in step}


def _uploads() -> list[dict]:
    return [step for step in _job()["steps"] if step.get("uses", "").startswith("actions/upload-artifact@")]


def _sample_values() -> dict[str, str]:
    """What `${{ ... }}` and the shell variables of the run steps would hold on GitHub, for one
    matrix entry: the job's env with its expressions evaluated, then what the steps set."""
    matrix = _job()["strategy"]["matrix"]["toxenv"][0]
    expressions = {"matrix.toxenv": matrix, "github.token": "ghs_sample", "secrets.NIGHTLY_DATABASE": ""}
    budget = EXPRESSION.fullmatch(_job()["env"]["BUDGET"]).group(1)  # inputs.budget || vars... || 'default'
    expressions[budget] = re.search(r"'([^']+)'\s*$", budget).group(1)
    env = {name: EXPRESSION.sub(lambda m: expressions[m.group(1)], str(value))
           for name, value in _job()["env"].items()}
    return {**env, "GITHUB_REPOSITORY": "octo/harness", "GITHUB_WORKSPACE": "/home/runner/work/harness",
            "HARNESS_DATABASE": f"github:octo/harness/{env['DATABASE_ARTIFACT']}"}


def _substituted(script: str, values: dict[str, str]) -> str:
    script = EXPRESSION.sub(lambda m: values[m.group(1)], script)
    return SHELL_VARIABLE.sub(lambda m: values.get(m.group(1), m.group(0)), script)


def _harness_commands(script: str) -> list[list[str]]:
    """The argument lists of every `python -m harness ...` in a step's script."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        for i in range(len(words) - 2):
            if words[i:i + 3] == ["python", "-m", "harness"]:
                rest = words[i + 3:]
                ends = [j for j, w in enumerate(rest) if w in ("||", "&&", "|", ";")]
                commands.append(rest[:ends[0]] if ends else rest)
    return commands


def test_it_runs_every_night_and_on_demand():
    triggers = _workflow()[True]  # YAML 1.1 reads the key `on` as true
    crons = [entry["cron"] for entry in triggers["schedule"]]
    assert crons and all(len(cron.split()) == 5 for cron in crons)
    assert "workflow_dispatch" in triggers


def test_its_matrix_is_the_torch_envs_of_tox_ini():
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    torch_envs = [s.split(":", 1)[1] for s in tox.sections() if re.fullmatch(r"testenv:torch\d+", s)]
    assert len(torch_envs) >= 3
    assert sorted(_job()["strategy"]["matrix"]["toxenv"]) == sorted(torch_envs)
    assert _job()["strategy"]["fail-fast"] is False  # one release's failures do not stop the others


def test_torch_comes_from_the_cpu_wheels():
    assert _job()["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def test_every_harness_command_parses_with_the_real_parser():
    values = _sample_values()
    parser = build_parser()
    seen = {}
    for step, script in _run_steps().items():
        script = _substituted(script, values)
        for argv in _harness_commands(script):
            assert "$" not in " ".join(argv), f"step {step}: an unknown variable in {argv}"
            try:
                seen[argv[0]] = parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"step {step}: `python -m harness {shlex.join(argv)}` does not parse")
    assert {"fuzz", "report", "diff", "build-native"} <= set(seen)
    fuzz = seen["fuzz"]
    assert fuzz.workers == 2 and fuzz.out == "campaign" and fuzz.budget >= 60
    assert (seen["report"].folder, seen["diff"].tonight) == ("campaign", "campaign")
    assert seen["diff"].last == "last"
    # the database the campaign is given is one example_database reads (without reaching GitHub)
    assert isinstance(example_database(fuzz.database, "campaign/examples-db"), MultiplexedDatabase)


def test_the_slow_tests_run_every_night_on_every_torch_env():
    """The tests marked slow are skipped everywhere but here (tests/conftest.py): the nightly runs them,
    `-m slow` through each torch release's tox env (whose command is pytest, posargs passed on)."""
    job = _workflow()["jobs"]["slow-tests"]
    assert job["strategy"]["matrix"]["toxenv"] == _job()["strategy"]["matrix"]["toxenv"]
    assert job["strategy"]["fail-fast"] is False
    (command,) = [shlex.split(step["run"]) for step in job["steps"] if step.get("id") == "slow"]
    assert command[0] == "tox" and command[command.index("-e") + 1] == "$TOXENV" and job["env"]["TOXENV"]
    assert command[command.index("--") + 1:] == ["-m", "slow"]
    tox = configparser.ConfigParser()
    tox.read(ROOT / "tox.ini")
    assert tox["testenv"]["commands"].split()[0] == "pytest" and "{posargs}" in tox["testenv"]["commands"]


def test_it_uploads_the_report_the_log_the_reproducers_and_the_database():
    campaign, database = _uploads()
    assert all(step.get("if") == "always()" for step in (campaign, database))  # a red night still uploads
    paths = campaign["with"]["path"].split()
    for name in ("report.md", "report.html", "charts/", "examples.jsonl", "*.py"):
        assert f"campaign/{name}" in paths
    env = _job()["env"]
    assert campaign["with"]["name"] == "${{ env.CAMPAIGN_ARTIFACT }}"
    # the database goes up under the name the next night reads it from
    assert database["with"] == {**database["with"], "name": "${{ env.DATABASE_ARTIFACT }}",
                                "path": "campaign/examples-db"}
    assert "github:$GITHUB_REPOSITORY/$DATABASE_ARTIFACT" in _run_steps()["database"]
    assert "name=$CAMPAIGN_ARTIFACT" in _run_steps()["last-night"]  # and the log, for the diff
    assert env["DATABASE_ARTIFACT"] != env["CAMPAIGN_ARTIFACT"]


def _local_runner():
    spec = importlib.util.spec_from_file_location("nightly_local", ROOT / "scripts" / "nightly_local.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_local_runner_knows_every_step_and_expression():
    runner = _local_runner()
    ids = {step.get("id") for step in _job()["steps"]}
    assert runner.MACHINE_SET_UP | {runner.TOX_STEP} <= ids
    env = runner.job_environment(runner.load_job(), "torch213", "60s")  # exits on an unknown expression
    assert env["DATABASE_ARTIFACT"] == "examples-db-torch213" and env["BUDGET"] == "60s"
    for step, script in _run_steps().items():
        assert not EXPRESSION.search(script), f"step {step}: values reach scripts through env"


# --- --database github:OWNER/REPO[/ARTIFACT] -------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    """GitHub cannot be reached from here: any request fails at once, as it would offline."""
    calls = []

    def refuse(request, *args, **kwargs):
        calls.append(request.full_url)
        raise urllib.error.URLError("no network in this test")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


def test_a_github_database_is_the_local_folder_beside_the_artifact(tmp_path, no_network):
    local = tmp_path / "examples-db"
    database = example_database("github:octo/harness/examples-db-torch213", local)
    folder, shared = database._wrapped
    assert folder == DirectoryBasedExampleDatabase(local)
    assert shared == ReadOnlyDatabase(GitHubArtifactDatabase("octo", "harness", artifact_name="examples-db-torch213",
                                                             path=tmp_path / "github-artifact"))
    default = example_database("github:octo/harness", local)._wrapped[1]
    assert default == ReadOnlyDatabase(GitHubArtifactDatabase("octo", "harness", path=tmp_path / "github-artifact"))
    assert no_network == [] and list(tmp_path.iterdir()) == []  # made without a request or a file


@pytest.mark.parametrize("location", ["github:octo", "github:/harness", "github:octo/harness/a/b", "github:"])
def test_a_malformed_github_database_is_one_sentence(tmp_path, location):
    with pytest.raises(ClusterError, match="is not github:OWNER/REPO"):
        example_database(location, tmp_path / "examples-db")


def test_a_github_database_needs_a_local_folder():
    with pytest.raises(ClusterError, match="needs a local folder"):
        example_database("github:octo/harness", None)


def test_last_nights_artifact_is_replayed_and_tonights_writes_go_to_the_folder(tmp_path, no_network):
    key, value = b"failures-first/some-test", b"a failing choice sequence"
    # night 1: the campaign's writes land in its examples-db folder, the one the workflow uploads
    night1 = example_database("github:octo/harness/examples-db-torch213", tmp_path / "night1" / "examples-db")
    night1.save(key, value)
    # the upload: a zip of the folder's contents, as actions/upload-artifact makes it, and as
    # GitHubArtifactDatabase keeps a download (named by the time it was fetched)
    cache = tmp_path / "night2" / "github-artifact"
    cache.mkdir(parents=True)
    fetched = datetime.now(UTC).isoformat().replace(":", "_")
    with zipfile.ZipFile(cache / f"{fetched}.zip", "w") as artifact:
        for file in (tmp_path / "night1" / "examples-db").rglob("*"):
            artifact.write(file, file.relative_to(tmp_path / "night1" / "examples-db"))
    # night 2 reads it (a cache hit: no request), and writes only to its own folder
    night2 = example_database("github:octo/harness/examples-db-torch213", tmp_path / "night2" / "examples-db")
    assert list(night2.fetch(key)) == [value]
    night2.save(b"tonight", b"new")
    assert list(DirectoryBasedExampleDatabase(tmp_path / "night2" / "examples-db").fetch(b"tonight")) == [b"new"]
    assert no_network == []


def test_a_first_night_without_an_artifact_warns_and_goes_on(tmp_path, no_network):
    database = example_database("github:octo/harness/examples-db-torch213", tmp_path / "examples-db")
    with pytest.warns(HypothesisWarning) as warned:
        assert list(database.fetch(b"some-test")) == []
    assert [str(w.message).strip() for w in warned] == [
        "Could not connect to GitHub to get the latest artifact.",
        "Couldn't acquire a new or existing artifact. Disabling database."]
    assert no_network == ["https://api.github.com/repos/octo/harness/actions/artifacts"]
    database.save(b"some-test", b"found tonight")
    assert list(database.fetch(b"some-test")) == [b"found tonight"]


# --- the workflow's own steps, run here -----------------------------------------------------


def test_the_workflows_steps_run_here(tmp_path):
    """scripts/nightly-local.sh on a 20 s budget, in this venv: every step of the job that is not
    GitHub's set-up or an action runs, and the campaign's report and log are where the uploads
    take them from. (No earlier run here, so no diff: that is a first night.) About 30 s."""
    env = {**os.environ, "PYTHON": sys.executable, "NIGHTLY_USE_VENV": "1", "NIGHTLY_BUDGET": "20s",
           "NIGHTLY_WORKDIR": str(tmp_path), "NIGHTLY_DATABASE": ""}
    done = subprocess.run([str(ROOT / "scripts" / "nightly-local.sh")], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    output = done.stdout + done.stderr
    ran = re.findall(r"^--- ([\w-]+)$", done.stdout, flags=re.MULTILINE)
    assert ran == ["database", "native", "last-night", "fuzz", "report", "diff", "verdict"], output
    assert "--- fuzz: exit status" not in output and "--- report: exit status" not in output, output
    assert done.returncode in (0, 1), output  # 1: an unknown failure on a first night, a real verdict
    for name in ("report.md", "report.html", "examples.jsonl", "summary.json"):
        assert (tmp_path / "campaign" / name).exists(), output
    # the campaign was given the workflow's github: database and read it once before starting;
    # GitHub is out of reach here (or, online, has no repository local/nightly), so it goes on without
    assert re.search(r"HypothesisWarning: Could not (connect to GitHub|get the latest artifact)", output), output
