"""pytest plugin: check a project's own autograd.Functions with one line each.

Registered through the `pytest11` entry point (pyproject.toml), so installing the harness
is enough. Two forms, both running `harness.function_check.check_function`:

    @pytest.mark.autograd_function(MyFunction, samples=my_samples)
    def test_my_function():
        pass

    def test_my_function(check_autograd_function):
        check_autograd_function(MyFunction, my_samples, checks=["outputs", "gradients"])

A failure is reported as pytest reports an assertion: the failed checks, each with a
standalone reproducer, without the harness's own frames. A check where nothing failed but a path
or a check asked for judged nothing (all unsupported, say) fails too, naming what was not checked. The terminal summary lists what
was checked and what it cost. Light at import: torch and the harness load inside the hooks.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

MARKER = "autograd_function"
_REPORTS = pytest.StashKey[list]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(function, samples, *, paths=None, checks=None, device=None, max_examples=None): "
        "check a torch.autograd.Function on every execution path (harness.check_function)")
    config.stash[_REPORTS] = []


def _check(config: pytest.Config, function: type, samples: Any, **options: Any) -> Any:
    __tracebackhide__ = True
    from harness.function_check import FunctionCheckError, NothingChecked, check_function

    try:
        report = check_function(function, samples, **options)
    except (FunctionCheckError, NothingChecked) as error:
        config.stash[_REPORTS].append(error.report)
        raise
    config.stash[_REPORTS].append(report)
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """A test marked autograd_function runs its check before its own body."""
    __tracebackhide__ = True
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    args, kwargs = list(marker.args), dict(marker.kwargs)
    if not args:
        pytest.fail(f"@pytest.mark.{MARKER} needs the Function as its first argument, "
                    f"e.g. @pytest.mark.{MARKER}(MyFunction, samples=...).", pytrace=False)
    function = args.pop(0)
    if "samples" not in kwargs:
        if not args:
            pytest.fail(f"@pytest.mark.{MARKER}({function.__name__}) needs samples=, "
                        "e.g. samples=[(torch.randn(3, requires_grad=True),)].", pytrace=False)
        kwargs["samples"] = args.pop(0)
    _check(item.config, function, kwargs.pop("samples"), **kwargs)


@pytest.fixture
def check_autograd_function(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """check_autograd_function(MyFunction, samples, **options) -> the report; fails the test
    with every failed check and its reproducer."""

    def check(function: type, samples: Any, **options: Any) -> Any:
        __tracebackhide__ = True
        return _check(request.config, function, samples, **options)
    return check


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A failed check reads as the check's own message (plus Hypothesis' falsifying example),
    not as a traceback through the harness."""
    report = yield
    excinfo = call.excinfo
    if excinfo is not None and report.failed and type(excinfo.value).__name__ in ("FunctionCheckError",
                                                                                  "NothingChecked"):
        report.longrepr = CheckFailure(excinfo.value)
    return report


class CheckFailure:
    """A failed check as pytest prints an assertion: "E   " lines, and the first line as the
    short summary's message."""

    def __init__(self, error: BaseException) -> None:
        message = str(error)
        self.lines = ["E   " + line for line in message.splitlines()] + list(getattr(error, "__notes__", []))
        self.reprcrash = _Crash(message.splitlines()[0])

    def toterminal(self, tw: Any) -> None:
        for line in self.lines:
            tw.line(line, red=line.startswith("E   "), bold=line.startswith("E   "))

    def __str__(self) -> str:
        return "\n".join(self.lines)


class _Crash:
    def __init__(self, message: str) -> None:
        self.message = message


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    reports = config.stash.get(_REPORTS, [])
    if not reports:
        return
    terminalreporter.section("autograd Functions checked")
    for report in reports:
        seconds = report.seconds_by_check()
        ran = ", ".join(f"{c} {seconds.get(c, 0.0):.2f}s" for c in report.checks_run())
        unchecked = report.unchecked()
        status = (f"{len({(r.check, r.path) for r in report.failures})} failed" if report.failures else
                  f"nothing checked {'; '.join(unchecked)}" if unchecked else "ok")
        terminalreporter.write_line(f"{report.function}: {status}; {len(report.samples)} sample(s); {ran}")
