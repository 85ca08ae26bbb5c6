"""The compiled paths' slow tests (other modes, a one-minute campaign) run in the `dev` and
`nightly` profiles, or with `-m slow`; the `ci` profile skips them (2 cores, 20 minutes)."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _slow_only_outside_ci(request: pytest.FixtureRequest) -> None:
    asked = "slow" in (request.config.getoption("markexpr") or "")
    if request.node.get_closest_marker("slow") and os.environ.get("HARNESS_PROFILE") == "ci" and not asked:
        pytest.skip("slow: runs outside the ci profile, or with -m slow")
