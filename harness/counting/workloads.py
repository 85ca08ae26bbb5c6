"""What a counted case runs: a `Workload`, and the factories of the built-in scenarios.

A factory (named ``"module:function"`` in a `CaseSpec`) is called in the callgrind
worker with the case's JSON params and returns a `Workload`. Two shapes:

- ``Workload(make_inputs, function=F)``: one Function; the forward region is the bare
  ``apply(*inputs)`` of each path (``F.apply`` for eager), nothing around it.
- ``Workload(make_inputs, graph=g)``: several Functions; ``g(applier, inputs)`` builds
  the graph and returns its outputs, applying every Function through
  ``applier(n, cls, args)`` (the same signature as `harness.build.Applier`), so one
  graph runs on every path.

`make_inputs()` returns fresh inputs (leaves) each call: backward regions need a new
graph per repetition.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

Applier = Callable[[int, type, Sequence[Any]], Any]


@dataclass(frozen=True)
class Workload:
    make_inputs: Callable[[], tuple[Any, ...]]
    function: type[torch.autograd.Function] | None = None
    graph: Callable[[Applier, Sequence[Any]], Any] | None = None

    def __post_init__(self) -> None:
        if (self.function is None) == (self.graph is None):
            raise ValueError("a Workload takes exactly one of function= or graph=; "
                             f"got function={self.function!r}, graph={self.graph!r}")


#: the device of every workload's leaves: `bench --device cuda` sets it for the callgrind
#: worker, which then counts the host-side instructions of applies on CUDA tensors
DEVICE_ENV = "HARNESS_BENCH_DEVICE"


def _leaves(count: int) -> tuple[torch.Tensor, ...]:
    # Values never influence these counts (no data-dependent branches), but keep them fixed.
    device = os.environ.get(DEVICE_ENV) or "cpu"
    return tuple(torch.full((2,), 0.5, device=device, requires_grad=True) for _ in range(count))


def returning_inputs(inputs: int, outputs: int = 2) -> Workload:
    """The seed benchmark's Function at any input count.

    `inputs` tensors requiring grad go in; the first ``min(outputs, inputs)`` come back
    as-is (a tuple); nothing is saved; backward passes the output grads through and
    returns None for every other input.
    """
    kept = min(outputs, inputs)
    nones = (None,) * (inputs - kept)

    class ReturnInputs(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, *xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
            return xs[:kept]

        @staticmethod
        def backward(ctx: Any, *grads: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            return grads + nones

    ReturnInputs.__name__ = ReturnInputs.__qualname__ = f"ReturnInputs{inputs}x{kept}"
    return Workload(lambda: _leaves(inputs), function=ReturnInputs)


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, k: float) -> torch.Tensor:
        ctx.k = k
        return x * k

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad * ctx.k, None


class _Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = ctx.saved_tensors
        return grad * b, grad * a


class _Add(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a + b

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return grad, grad


def _diamond(apply: Applier, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
    x, y = inputs
    a = apply(0, _Scale, (x, 2.0))
    b = apply(1, _Mul, (a, y))
    return apply(2, _Add, (a, b))


def diamond_graph() -> Workload:
    """Three Functions over two leaves: a = 2x; b = a*y (saves a, y); out = a + b.

    `a` feeds two Functions, one Function saves tensors, one takes a float argument.
    """
    return Workload(lambda: _leaves(2), graph=_diamond)


class _PassThrough(torch.autograd.Function):
    """One Function node and nothing else: forward copies, backward hands the grad on."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> torch.Tensor:
        return grad


def chain_graph(nodes: int) -> Workload:
    """One leaf through `nodes` pass-through Functions in a row. The backward runs one
    Function node per link and no other op, so its cost over `nodes` is what the engine
    (or compiled autograd's cached graph) spends per Function node."""

    def chain(apply: Applier, inputs: Sequence[torch.Tensor]) -> torch.Tensor:
        (value,) = inputs
        for n in range(nodes):
            value = apply(n, _PassThrough, (value,))
        return value

    return Workload(lambda: _leaves(1), graph=chain)


__all__ = ["Applier", "Workload", "chain_graph", "diamond_graph", "returning_inputs"]
