"""check_function's lifetime check on compiled autograd and torch.compile: torch's own leaks and
cycles there are explained by the known issues that name their holder (harness/oracles/holders.py),
and only those: a Function that keeps its inputs, or puts its ctx in a cycle of its own, fails on
every mode. Real compiled autograd and torch.compile, no fakes."""

from __future__ import annotations

import pytest
import torch

from harness import paths
from harness.function_check import check_function
from harness.paths import compiled as compiled_modes
from harness.paths import dynamo as dynamo_backends

EVERY_MODE = [f"compiled:{m}" for m in compiled_modes.MODES] + [f"dynamo:{b}" for b in dynamo_backends.BACKENDS]
#: what KeepsItsInputs keeps (emptied after each test)
KEPT: list = []


class KeepsItsInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        KEPT.append(a)
        return a * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


class CtxInACycle(torch.autograd.Function):
    """ctx.me = ctx: the ctx keeps its node (and the leaf behind it) until gc.collect(). Its jvp
    makes Dynamo run it eagerly, so the cycle is made there too (a ctx attribute that Dynamo
    traces is never set on a real ctx)."""

    @staticmethod
    def forward(ctx, a):
        ctx.me = ctx
        return a * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0

    @staticmethod
    def jvp(ctx, t):
        return t * 2.0


class SavesItsInput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2.0 * g * a


def _lifetimes_on(mode: str, function: type):
    """check_function's lifetimes record of `function` on `mode` (skipped where the mode cannot run)."""
    if paths.get(mode).available() is not None:
        pytest.skip(paths.get(mode).available())
    sample = (torch.randn(3, dtype=torch.float64, requires_grad=True),)
    try:
        report = check_function(function, [sample], paths=[mode], checks=["lifetimes"], raise_on_failure=False)
    finally:
        KEPT.clear()
    return next(r for r in report.records if r.check == "lifetimes" and r.path != "eager")


@pytest.mark.parametrize("mode", EVERY_MODE)
def test_a_function_keeping_its_inputs_fails_on_every_mode(mode):
    record = _lifetimes_on(mode, KeepsItsInputs)
    assert record.status == "failed", record
    assert "still alive after every reference was dropped (leak)" in record.detail, record


@pytest.mark.parametrize("mode", EVERY_MODE)
def test_a_function_with_a_ctx_cycle_of_its_own_fails_on_every_mode(mode):
    record = _lifetimes_on(mode, CtxInACycle)
    assert record.status == "failed", record
    assert "use count 2, was 1 before the forward" in record.detail, record
    if mode != "compiled:capture":  # (capture's leaves are out of the cycle at the end, not before)
        assert "freed only by gc.collect(): held by a reference cycle" in record.detail, record


#: where torch itself leaks or cycles what a correct Function saves, and the entry that explains it
TORCH_OWN = {"compiled:eager": "ca-eager-backend-pins-inputs", "compiled:aot_eager": "ca-dynamo-function-ctx-cycle",
             "dynamo:eager": "dynamo-eager-apply-template-cycle"}


@pytest.mark.parametrize("mode", sorted(TORCH_OWN))
def test_torchs_own_leak_or_cycle_is_explained_by_the_entry_naming_its_holder(mode):
    """No false positive on unmodified torch: a correct Function does not fail; torch's own leak or
    cycle is known, and what it damages reads unjudged (partly), never passed."""
    record = _lifetimes_on(mode, SavesItsInput)
    assert record.status == "partly", record
    assert TORCH_OWN[mode] in record.known, record
    assert f"what {', '.join(record.known)} damages was left unjudged" in record.detail, record
