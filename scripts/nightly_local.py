"""Run the steps of .github/workflows/nightly.yml here, as GitHub Actions would run them.

The commands are read from the workflow itself, so the local run cannot drift from it. Each
`run:` step is a bash -eo pipefail script with the job's and the step's environment, and the
files GitHub gives every step: GITHUB_ENV and GITHUB_PATH (read back after it, for the next
steps), GITHUB_OUTPUT and GITHUB_STEP_SUMMARY. `uses:` steps (checkout, setup-python, the
uploads) and the machine's set-up (apt-get, installing tox) are GitHub's part and skipped.
Usage and settings: scripts/nightly-local.sh.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"
JOB = "campaign"
#: steps that set up GitHub's fresh machine (apt-get, pip install tox): never run here
MACHINE_SET_UP = {"system-packages"}
#: the step that makes the tox env and puts it on PATH: skipped with NIGHTLY_USE_VENV=1
TOX_STEP = "tox"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def load_job(workflow: Path = WORKFLOW) -> dict:
    return yaml.safe_load(workflow.read_text())["jobs"][JOB]


def job_environment(job: dict, toxenv: str, budget: str) -> dict[str, str]:
    """The job's `env:` as it is here: the values GitHub would compute from expressions are
    this run's (the tox env, the budget, the optional database; no GitHub token)."""
    own = {"TOXENV": toxenv, "BUDGET": budget, "NIGHTLY_DATABASE": os.environ.get("NIGHTLY_DATABASE", ""),
           "GH_TOKEN": "", "GITHUB_TOKEN": ""}
    values = {"matrix.toxenv": toxenv}
    env = {}
    for name, value in job.get("env", {}).items():
        if name.startswith("PIP_"):  # where GitHub's machine gets wheels; pip here keeps this machine's
            continue
        if name in own:
            env[name] = own[name]
            continue
        unknown = [e for e in EXPRESSION.findall(str(value)) if e not in values]
        if unknown:
            raise SystemExit(f"error: {WORKFLOW.name}: env {name} uses ${{{{ {unknown[0]} }}}}, which this "
                             f"script does not know; give it a local value in {Path(__file__).name}")
        env[name] = EXPRESSION.sub(lambda m: values[m.group(1)], str(value))
    return env


def _read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines, as steps write them to GITHUB_ENV (the NAME<<EOF form is not used here)."""
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {name: value for name, value in pairs}


def _skipped(step: dict, use_venv: bool, failed: bool) -> str | None:
    """Why a step does not run here, or None."""
    if "uses" in step:
        return "an action, GitHub's part"
    if step.get("id") in MACHINE_SET_UP:
        return "sets up GitHub's machine"
    if use_venv and step.get("id") == TOX_STEP:
        return "NIGHTLY_USE_VENV=1: this venv instead"
    if failed and not step.get("if"):
        return "an earlier step failed"
    return None


def run_steps(toxenv: str, budget: str, workdir: Path, use_venv: bool) -> int:
    """Every step of the job, in order, in `workdir` (the checkout's place); the last failing
    step's exit status, or 0."""
    job = load_job()
    files = workdir / ".github-files"
    files.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **job_environment(job, toxenv, budget),
           "GITHUB_WORKSPACE": str(REPO), "GITHUB_REPOSITORY": "local/nightly", "CI": "true",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    if use_venv:  # `python` is this interpreter, as the tox env's python is on GitHub
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    status = 0
    for index, step in enumerate(job["steps"]):
        name = step.get("id") or step.get("name") or step.get("uses")
        condition = str(step.get("if", "")).strip()
        if condition and condition != "always()":
            raise SystemExit(f"error: step {name}: `if: {condition}` is not emulated here")
        skip = _skipped(step, use_venv, failed=bool(status))
        if skip:
            print(f"--- {name}: skipped ({skip})", flush=True)
            continue
        script = step["run"]
        if EXPRESSION.search(script):
            raise SystemExit(f"error: step {name} has ${{{{ }}}} in its script; pass values through env")
        paths = {key: files / f"{index}-{key.lower()}" for key in
                 ("GITHUB_ENV", "GITHUB_PATH", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
        for path in paths.values():
            path.write_text("")
        step_env = {**env, **{k: str(v) for k, v in step.get("env", {}).items()},
                    **{k: str(p) for k, p in paths.items()}}
        print(f"--- {name}", flush=True)
        code = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                              cwd=workdir, env=step_env, check=False).returncode
        env.update(_read_env_file(paths["GITHUB_ENV"]))
        for directory in paths["GITHUB_PATH"].read_text().split():
            env["PATH"] = os.pathsep.join([directory, env["PATH"]])
        summary = paths["GITHUB_STEP_SUMMARY"].read_text()
        if summary:  # what GitHub would show on the run's page
            print(f"--- {name}: step summary\n{summary}", end="", flush=True)
        if code:
            print(f"--- {name}: exit status {code}", flush=True)
            status = code
    return status


def main() -> int:
    toxenv = os.environ.get("NIGHTLY_TOXENV", "torch213")
    budget = os.environ.get("NIGHTLY_BUDGET", "60s")
    workdir = Path(os.environ.get("NIGHTLY_WORKDIR", REPO / "campaigns" / "nightly-local")).resolve()
    use_venv = os.environ.get("NIGHTLY_USE_VENV", "") == "1"
    workdir.mkdir(parents=True, exist_ok=True)
    # tonight's comparison is the previous local run, as on GitHub it is last night's artifact
    previous, last = workdir / "campaign", workdir / "last"
    if (previous / "examples.jsonl").exists():
        shutil.rmtree(last, ignore_errors=True)
        previous.rename(last)
    else:  # a run that wrote no log: nothing to compare with
        shutil.rmtree(previous, ignore_errors=True)
    status = run_steps(toxenv, budget, workdir, use_venv)
    print(f"nightly steps ({toxenv}, budget {budget}, {'this venv' if use_venv else 'tox'}) "
          f"in {workdir}: exit status {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
