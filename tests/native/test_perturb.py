"""The comparison this suite relies on catches a perturbed native result."""

from __future__ import annotations

import torch


def grads_on(path, apply_on, mul):
    gen = torch.Generator().manual_seed(0)
    x, y = (torch.randn(3, generator=gen, dtype=torch.float64).requires_grad_() for _ in range(2))
    out = apply_on(path, mul, x, y)
    return tuple(torch.autograd.grad(out.sum(), [x, y]))


def test_swapped_gradients_are_caught(apply_on, same, mul_save_inputs):
    eager = grads_on("eager", apply_on, mul_save_inputs)
    for holder in ("owned", "borrowed"):
        native = grads_on(holder, apply_on, mul_save_inputs)
        assert same(eager, native)
        swapped = (native[1], native[0])
        assert not same(eager, swapped), f"a swap of {holder}'s gradients went unnoticed"


def test_one_ulp_is_caught(apply_on, same, mul_save_inputs):
    eager = grads_on("eager", apply_on, mul_save_inputs)
    native = grads_on("borrowed", apply_on, mul_save_inputs)
    nudged = (torch.nextafter(native[0], torch.full_like(native[0], float("inf"))), native[1])
    assert not same(eager, nudged)
