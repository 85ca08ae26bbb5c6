"""Fixtures for the native path tests: a built extension, a per-path apply, and
an exact comparator. (Helpers are fixtures: test modules never import conftest.)"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

PATHS = ("eager", "owned", "borrowed")


@pytest.fixture(scope="session")
def native() -> Any:
    import harness.native as native

    native.build()
    return native


@pytest.fixture(scope="session")
def apply_on(native: Any) -> Callable[..., Any]:
    """apply_on(path, cls, *args): run cls.apply(*args) on one execution path."""

    def apply_on(path: str, cls: type, *args: Any) -> Any:
        if path == "eager":
            return cls.apply(*args)
        return native.apply(cls, *args, holder=path)

    return apply_on


def _describe(value: Any) -> Any:
    """A comparable description of an apply/backward result, tensors by exact bits."""
    if isinstance(value, torch.Tensor):
        grad_fn = value.grad_fn
        return (
            "tensor",
            value.dtype,
            tuple(value.shape),
            value.stride(),
            value.requires_grad,
            value.is_leaf,
            None if grad_fn is None else grad_fn.name(),
            value._base is not None,
            value._version,
            value.detach().clone(),
        )
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_describe(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _describe(v)) for k, v in sorted(value.items())))
    return ("value", value)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    return bool(a == b)


@pytest.fixture(scope="session")
def same() -> Callable[[Any, Any], bool]:
    """same(a, b): exact (bitwise) equality of two results, metadata included."""
    return lambda a, b: _same(_describe(a), _describe(b))


@pytest.fixture(scope="session")
def assert_all_paths_equal(
    same: Callable[[Any, Any], bool],
) -> Callable[[Callable[[str], Any]], Any]:
    """assert_all_paths_equal(scenario): scenario(path) gives equal results on every path."""

    def check(scenario: Callable[[str], Any]) -> Any:
        results = {path: scenario(path) for path in PATHS}
        for path in PATHS[1:]:
            assert same(results["eager"], results[path]), (
                f"{path} differs from eager:\n{_describe(results[path])}\n"
                f"!=\n{_describe(results['eager'])}"
            )
        return results["eager"]

    return check


class MulSaveInputs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


class ExpSaveOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


@pytest.fixture(scope="session")
def mul_save_inputs() -> type[torch.autograd.Function]:
    """x * y, saving both inputs for backward."""
    return MulSaveInputs


@pytest.fixture(scope="session")
def exp_save_output() -> type[torch.autograd.Function]:
    """x.exp(), saving its output for backward."""
    return ExpSaveOutput


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Lifetime checks run with the cyclic GC off: a cycle must show as a leak."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
