"""Hypothesis profiles and the command-line options that select paths and device.

Profiles (choose with HARNESS_PROFILE=ci|dev|nightly or --hypothesis-profile):
  ci       small and derandomized, for CI on 2 cores
  dev      the default: a few hundred examples per property
  nightly  long campaigns from pytest

Tests marked `slow` run only with `-m slow` or HARNESS_SLOW=1 (pytest_collection_modifyitems).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, settings

if TYPE_CHECKING:
    from harness.build import BuiltGraph
    from harness.run import RunResult
    from harness.spec import GraphSpec

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=40, derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=200, **_COMMON)
settings.register_profile("nightly", max_examples=5000, **_COMMON)
settings.load_profile(os.environ.get("HARNESS_PROFILE", "dev"))


#: slow tests (marked `slow`) run only when asked for: `-m slow` (the nightly workflow's slow-tests job)
#: or this variable set to 1; anywhere else in the suite they are skipped, saying how to run them
SLOW_ENV = "HARNESS_SLOW"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    asked = "slow" in (config.getoption("markexpr") or "") or os.environ.get(SLOW_ENV) == "1"
    if asked:
        return
    skip = pytest.mark.skip(reason=f"slow: runs with -m slow (the nightly workflow) or {SLOW_ENV}=1")
    for item in items:
        if item.get_closest_marker("slow"):
            item.add_marker(skip)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness")
    group.addoption("--paths", default=None,
                    help="comma-separated execution paths to test (default: all available here)")
    group.addoption("--device", default="cpu", choices=["cpu", "cuda"], help="device to run on")


@pytest.fixture(scope="session")
def selected_paths(request: pytest.FixtureRequest) -> list:
    from harness import paths

    text = request.config.getoption("--paths")
    try:
        chosen = paths.parse(text) if text else [paths.get(n) for n in paths.available_names()]
    except paths.UnknownPathError as e:
        raise pytest.UsageError(str(e)) from None
    for p in chosen:
        why = p.available()
        if why is not None:
            raise pytest.UsageError(f"path {p.name!r} cannot run here: {why}")
    return chosen


@pytest.fixture(scope="session")
def device(request: pytest.FixtureRequest) -> str:
    from harness.devices import cuda_unavailable_reason

    name = request.config.getoption("--device")
    if name == "cuda" and cuda_unavailable_reason() is not None:
        raise pytest.UsageError(cuda_unavailable_reason())
    return name


@pytest.fixture
def fault():
    """fault("wrong_backward") installs one of harness.selfeval's seeded faults for the test's duration."""
    from harness import selfeval

    removers = []
    yield lambda name: removers.append(selfeval.install(name))
    for remove in reversed(removers):
        remove()


# --- a rare seeded failure, for tests of shrinking and of shared example databases -----------

#: the seeded bug needs a Function with this many tensor inputs and a tanh term: rare enough
#: that the first example showing it is big, and a search from scratch rarely finds it
WIDE = 6


def seeded_bug(spec: GraphSpec) -> bool:
    return any(len(fn.tensor_slots) >= WIDE and any(t.op == "tanh" for o in fn.outputs for t in o.terms)
               for fn in spec.functions)


class _SeededPath:
    """Eager, with a wrong forward output whenever `seeded_bug` holds (a test double beside
    the real eager run, which check() always makes too)."""

    name = "eager:seeded"  # of the eager family: its results are compared as eager's are
    exact_vs_eager = True

    bug = staticmethod(seeded_bug)

    def available(self) -> str | None:
        return None

    def unsupported(self, spec: GraphSpec) -> str | None:
        return None

    def run(self, built: BuiltGraph) -> RunResult:
        from dataclasses import replace

        import torch

        from harness import paths

        result = paths.get("eager").run(built)
        if self.bug(built.spec) and result.tensors.get("forward"):
            forward = dict(result.tensors["forward"])
            role = next((r for r, t in forward.items() if isinstance(t, torch.Tensor) and t.numel()), None)
            if role is not None:  # (with empty tensors there is nothing to get wrong)
                forward[role] = forward[role] + 1
                result = replace(result, tensors={**result.tensors, "forward": forward})
        return replace(result, path=self.name)


@pytest.fixture
def seeded_path():
    """A path that fails only on rare examples (`seeded_path.bug(spec)`), registered as eager:seeded."""
    from harness import paths

    yield paths.register(_SeededPath())
    paths._REGISTRY.pop(_SeededPath.name)  # other tests select from the registry: it must not stay


# --- a real Redis server (tests/test_cluster.py, tests/test_nightly.py) ------------------------


@pytest.fixture
def redis_url(tmp_path):
    """A real redis-server of our own on a free port, without persistence; stopped after. (The tests
    that take it skip without redis-server and the redis client: their `needs_redis`.)"""
    import socket
    import subprocess
    import time

    from harness.cluster import ClusterError, example_database

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", str(tmp_path)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    deadline = time.monotonic() + 30
    while True:
        try:
            example_database(url)
            break
        except ClusterError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise
            time.sleep(0.1)
    yield url
    server.terminate()
    server.wait(timeout=30)
