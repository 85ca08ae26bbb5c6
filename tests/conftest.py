"""Hypothesis profiles and the command-line options that select paths and device.

Profiles (choose with HARNESS_PROFILE=ci|dev|nightly or --hypothesis-profile):
  ci       small and derandomized, for CI on 2 cores
  dev      the default: a few hundred examples per property
  nightly  long campaigns from pytest
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=40, derandomize=True, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", max_examples=200, **_COMMON)
settings.register_profile("nightly", max_examples=5000, **_COMMON)
settings.load_profile(os.environ.get("HARNESS_PROFILE", "dev"))


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
    import torch

    name = request.config.getoption("--device")
    if name == "cuda" and not torch.cuda.is_available():
        raise pytest.UsageError("--device cuda needs a CUDA build of torch and a GPU; use --device cpu.")
    return name


@pytest.fixture
def fault():
    """fault("wrong_backward") installs one of harness.selfeval's seeded faults for the test's duration."""
    from harness import selfeval

    removers = []
    yield lambda name: removers.append(selfeval.install(name))
    for remove in reversed(removers):
        remove()
