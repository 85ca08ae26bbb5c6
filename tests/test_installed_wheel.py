"""`python -m harness known` from a non-editable install: the reproducers are package data
(harness/known_issues/reproducers/), so an installed wheel runs them without a checkout.

The wheel is built from this checkout and installed with --no-deps into a fresh venv; its
dependencies (torch==2.13.0 and the rest) come from the running venv through a .pth line, which
adds that directory to sys.path without running its own .pth files, so the checkout's editable
install is not seen. The command runs outside the checkout, and the test checks that `harness`
was imported from the fresh venv."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from harness.known_issues import KNOWN_ISSUES, REPRODUCERS

ROOT = Path(__file__).resolve().parent.parent
CHEAP = "eager-dirty-view-not-first-input"  # plain eager, about 3 s


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of a fresh venv with this checkout's wheel installed (not editable)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # built from a copy of the files git sees, as from a fresh clone: the checkout's egg-info
    # (left by the editable install) lists files setuptools would otherwise add to the wheel
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    for name in listed:
        if (ROOT / name).is_file():
            (tmp / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp / "src" / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp / "dist"), str(tmp / "src")], check=True, timeout=600)
    (wheel,) = (tmp / "dist").glob("autograd_function_harness-*.whl")
    venv.create(tmp / "venv", with_pip=False)
    python = tmp / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                    str(wheel)], check=True, timeout=600)
    (site / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=cwd, timeout=600)


def test_the_wheel_carries_every_reproducer(installed: Path, tmp_path: Path) -> None:
    done = run(installed, "-c", "import harness.known_issues as k; print(k.__file__); print(k.REPRODUCERS)",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    module, reproducers = done.stdout.split()
    assert module.startswith(str(installed.parent.parent)), f"imported from {module}, not the installed wheel"
    assert {p.name for p in Path(reproducers).glob("*.py")} == {p.name for p in REPRODUCERS.glob("*.py")}


def test_known_runs_a_reproducer_from_the_installed_wheel(installed: Path, tmp_path: Path) -> None:
    """The documented flow, `python -m harness known`, for one cheap entry; --list for all."""
    done = run(installed, "-m", "harness", "known", CHEAP, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    issue = next(k for k in KNOWN_ISSUES if k.id == CHEAP)
    (line,) = [ln for ln in done.stdout.splitlines() if CHEAP in ln]
    assert line.split()[0] == "present" and "(as the registry says)" in line, line
    assert line.endswith(f"upstream: {issue.upstream_text()}"), line
    listed = run(installed, "-m", "harness", "known", "--list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [ln.split()[0] for ln in listed.stdout.splitlines()] == [k.id for k in KNOWN_ISSUES]
    assert all(f"upstream: {k.upstream_text()}" in listed.stdout for k in KNOWN_ISSUES)
