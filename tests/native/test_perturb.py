"""The comparison this suite relies on catches a perturbed native result."""

from __future__ import annotations

import torch


class Mul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        return g * y, g * x


def grads_on(path, apply_on):
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(3, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(2))
    out = apply_on(path, Mul, x, y)
    return tuple(torch.autograd.grad(out.sum(), [x, y]))


def test_swapped_gradients_are_caught(apply_on, same):
    eager = grads_on("eager", apply_on)
    for holder in ("owned", "borrowed"):
        native = grads_on(holder, apply_on)
        assert same(eager, native)
        swapped = (native[1], native[0])
        assert not same(eager, swapped), f"a swap of {holder}'s gradients went unnoticed"


def test_one_ulp_is_caught(apply_on, same):
    eager = grads_on("eager", apply_on)
    native = grads_on("borrowed", apply_on)
    nudged = (torch.nextafter(native[0], torch.full_like(native[0], float("inf"))), native[1])
    assert not same(eager, nudged)
