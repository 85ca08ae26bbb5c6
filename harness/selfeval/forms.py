"""Faults in how torch handles one *form* of writing a custom Function, on eager.

Each fault hits one form only (setup_context style, a `vjp` method, a single output
returned alone, `@once_differentiable`, `set_materialize_grads(False)`), as torch sees it
(the class's methods, what apply returns, the ctx flag), and only where the math oracle is
blind: what node hooks saw (compared between paths, never with the math oracle, whose graph
has other nodes), a None gradient against an all-zero one (equal against the math oracle,
whose graph differs in structure), and a last-bit rounding difference (within the math
oracle's error bounds). An eager-only campaign sees none of them without the twin-form
oracle (harness/oracles/twins.py), which compares eager with eager's run of the twin
exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch.autograd.function import BackwardCFunction, _is_setup_context_defined

from harness.selfeval._patching import Patches


class _NoHandle:
    """What a dropped registration returns in place of a RemovableHandle."""

    def remove(self) -> None:
        pass


def _user_backward(node: BackwardCFunction):
    """The backward torch calls for this node: `vjp` where the class defines it."""
    cls = node._forward_cls
    return cls.vjp if cls.vjp is not torch.autograd.Function.vjp else cls.backward


def setup_context_pre_hooks_dropped(p: Patches) -> None:
    """Pre-hooks registered on the node of a Function written with setup_context are
    dropped (forward(ctx, ...) Functions keep theirs)."""
    def make(original):
        def register_prehook(self, fn):
            if _is_setup_context_defined(self._forward_cls.setup_context):
                return _NoHandle()
            return original(self, fn)
        return register_prehook
    p.wrap(BackwardCFunction, "register_prehook", make)


def vjp_grads_last_bit(p: Patches) -> None:
    """The gradients the backward of a Function that defines `vjp` (torch's alias of
    `backward`) returns come back one ulp up where not zero (torch.nextafter towards +inf)."""
    _bump_gradients(p, lambda node: node._forward_cls.vjp is not torch.autograd.Function.vjp)


def single_output_pre_hooks_twice(p: Patches) -> None:
    """A Function that returns one tensor alone (not in a tuple): every pre-hook registered
    on its node is called twice (a 1-tuple's node is unaffected)."""
    original = torch.autograd.Function.__dict__["apply"].__func__

    def apply(cls, *args, **kwargs):
        out = original(cls, *args, **kwargs)
        if isinstance(out, torch.Tensor) and isinstance(out.grad_fn, BackwardCFunction):
            out.grad_fn.__dict__["_selfeval_single_output"] = True  # a flag: no reference back to anything
        return out
    p.set(torch.autograd.Function, "apply", classmethod(apply))

    def make(register):
        def register_prehook(self, fn):
            if self.__dict__.get("_selfeval_single_output"):
                register(self, fn)
            return register(self, fn)
        return register_prehook
    p.wrap(BackwardCFunction, "register_prehook", make)


def materialize_off_zero_grads_dropped(p: Patches) -> None:
    """For a Function that called ctx.set_materialize_grads(False), the engine drops every
    all-zero gradient its backward returns (as if it had returned None)."""
    # the ctx's flag is write-only from Python (a C++ setter): remember what the forward set
    def make_setter(original):
        def set_materialize_grads(self, value):
            self.__dict__["_selfeval_materialize_grads"] = value
            return original(self, value)
        return set_materialize_grads
    p.wrap(BackwardCFunction, "set_materialize_grads", make_setter)

    def make(original):
        def apply(self, *grads):
            result = original(self, *grads)
            if self.__dict__.get("_selfeval_materialize_grads", True):
                return result

            def dropped(g):
                return None if isinstance(g, torch.Tensor) and g.numel() and not bool(g.any()) else g
            return tuple(dropped(g) for g in result) if isinstance(result, tuple) else dropped(result)
        return apply
    p.wrap(BackwardCFunction, "apply", make)


def once_differentiable_grads_last_bit(p: Patches) -> None:
    """The gradients a @once_differentiable backward returns come back one ulp up where not
    zero (torch.nextafter towards +inf), a last-bit rounding error."""
    # once_differentiable wraps the backward with functools.wraps, which sets __wrapped__
    _bump_gradients(p, lambda node: hasattr(_user_backward(node), "__wrapped__"))


def _bump_gradients(p: Patches, hit: Callable[[BackwardCFunction], bool]) -> None:
    """The float gradients the backward of a node `hit` accepts returns, one ulp up where they
    are not zero (a rounding error keeps an exact zero): within the math oracle's error bounds,
    never bit-identical."""
    def bumped(g):
        if isinstance(g, torch.Tensor) and g.is_floating_point() and g.numel():
            return torch.where(g != 0, torch.nextafter(g, torch.full_like(g, float("inf"))), g)
        return g

    def make(original):
        def apply(self, *grads):
            result = original(self, *grads)
            if not hit(self):
                return result
            return tuple(bumped(g) for g in result) if isinstance(result, tuple) else bumped(result)
        return apply
    p.wrap(BackwardCFunction, "apply", make)
