"""The pytest plugin (marker and fixture, run by pytester) and `python -m harness check module:Name`."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import entry_points
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent.parent

#: a project's own Functions, as the plugin and the CLI meet them
USER_MODULE = '''
import torch


class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


class HalfSquare(Square):
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x


def samples():
    return [(torch.randn(3, requires_grad=True),)]


def samples_without_grad():
    return [(torch.randn(3),)]
'''


def test_the_plugin_is_registered_through_an_entry_point():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["pytest11"]
    assert declared == {"autograd_function": "harness.pytest_plugin"}


def _run_pytest(pytester, monkeypatch) -> pytest.RunResult:
    """A separate pytest process, as a project runs it; the plugin is loaded by module unless
    this environment installed its entry point already."""
    installed = any(e.value == "harness.pytest_plugin" for e in entry_points(group="pytest11"))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return pytester.runpytest_subprocess(*([] if installed else ["-p", "harness.pytest_plugin"]),
                                         "-p", "no:cacheprovider", "-p", "no:xdist")


def test_the_marker_and_the_fixture_check_a_function_in_one_line(pytester, monkeypatch):
    pytester.makepyfile(user_functions=USER_MODULE)
    pytester.makepyfile(test_user='''
import pytest
from user_functions import HalfSquare, Square, samples, samples_without_grad


@pytest.mark.autograd_function(Square, samples=samples, paths=["eager"])
def test_square():
    pass


@pytest.mark.autograd_function(HalfSquare, samples=samples, paths=["eager"])
def test_half_square():
    pass


def test_fixture(check_autograd_function):
    report = check_autograd_function(Square, samples, paths=["eager"], checks=["gradcheck"])
    assert report.checks_run() == ["gradcheck"]


@pytest.mark.autograd_function(Square, samples=samples_without_grad, paths=["eager"], checks=["gradients"])
def test_no_gradient_to_check():
    pass
''')
    result = _run_pytest(pytester, monkeypatch)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "*_ test_half_square _*",
        "E   HalfSquare failed 1 check(s) over 1 sample(s):",
        "E     gradcheck [[]eager float64[]] sample 0: d output 0[[]*[]] / d input 0[[]*[]] (flat indices): backward gives*",
        "E   Reproducer for gradcheck (standalone Python; exits 1 while it fails):",
        "*autograd Functions checked*",
        "Square: ok; 1 sample(s); gradcheck *",
        "HalfSquare: 1 failed; 1 sample(s); gradcheck *",
        "*FAILED test_user.py::test_half_square - HalfSquare failed 1 check(s)*",
    ])
    # nothing checked is a failing test, naming what was not checked
    result.stdout.fnmatch_lines([
        "*_ test_no_gradient_to_check _*",
        "E   Square: nothing checked at all (gradients: unsupported (no gradient to compare*",
        "Square: nothing checked at all *",
    ])
    # the failure reads as the check's message, not as a traceback through the harness
    assert "function_check.py" not in result.stdout.str()


def test_a_marker_without_samples_is_a_usage_error(pytester, monkeypatch):
    pytester.makepyfile(user_functions=USER_MODULE)
    # with a keyword argument: a marker called with one class alone would mark that class
    pytester.makepyfile(test_user='''
import pytest
from user_functions import Square


@pytest.mark.autograd_function(Square, paths=["eager"])
def test_nothing():
    pass
''')
    result = _run_pytest(pytester, monkeypatch)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*@pytest.mark.autograd_function(Square) needs samples=*"])


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    (tmp_path / "user_functions.py").write_text(USER_MODULE)
    env = {"PYTHONPATH": f"{ROOT}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "harness", "check", *argv], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path, check=False)


def test_the_cli_checks_a_function_by_name(tmp_path):
    done = _cli(tmp_path, "user_functions:Square", "--samples", "user_functions:samples", "--paths", "eager")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "gradcheck        eager float64        ok" in done.stdout

    done = _cli(tmp_path, "user_functions:HalfSquare", "--samples", "user_functions:samples", "--paths", "eager",
                "--checks", "gradcheck")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "gradcheck [eager float64] sample 0: d output 0[" in done.stdout


def test_the_cli_exits_3_when_a_function_check_judged_nothing(tmp_path):
    """Nothing failed, but no gradient could be compared: never exit 0."""
    done = _cli(tmp_path, "user_functions:Square", "--samples", "user_functions:samples_without_grad",
                "--paths", "owned", "--checks", "outputs,gradients")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Square: nothing checked for check gradients (gradients: unsupported (no gradient to compare" in done.stdout


@pytest.mark.parametrize("argv, message", [
    (["user_functions:Square"], "needs --samples module:function"),
    (["user_functions:Cube", "--samples", "user_functions:samples"], "has no attribute 'Cube'"),
    (["nowhere:Square", "--samples", "nowhere:samples"], "cannot import 'nowhere'"),
])
def test_cli_mistakes_are_one_clear_line(tmp_path, monkeypatch, argv, message):
    from harness.cli import main

    (tmp_path / "user_functions.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        main(["check", *argv])
    assert message in str(stopped.value)


def test_a_spec_file_is_still_checked_as_a_spec(tmp_path, monkeypatch):
    from harness.cli import main

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit, match="cannot read spec file 'spec.json'"):
        main(["check", "spec.json"])
